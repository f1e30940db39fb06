"""Which input is which: every file under the paths goes to the reader of its source (readers/), or to the
EPLB log lines the command reads through the normal parsers, or is left alone.

A file is dated by a ``YYYY-MM-DD`` (or ``YYYYMMDD``) folder or name in its path, else by a time stamp its
source puts in the name (SGLang), else by its mtime.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime

import regex

from diagnose.expertload.readers.mindie_dumps import CONFIG_NAME, DUMP_NAME
from diagnose.expertload.readers.mindspeed import NAME as MINDSPEED_NAME
from diagnose.expertload.readers.sglang import NAME as SGLANG_NAME
from diagnose.expertload.readers.sglang import day_of_name
from diagnose.ingest.metered import SourceFile
from diagnose.ingest.walk import iter_sources
from diagnose.model import Skipped
from diagnose.model.memberpath import folder

DAY_IN_PATH = regex.compile(r"(?<!\d)(20\d\d)-?(0[1-9]|1[0-2])-?(0[1-9]|[12]\d|3[01])(?!\d)")
LOG_SUFFIXES = (".log", ".txt", ".out", ".err", ".prom")  # and files named metrics: /metrics snapshots


@dataclass
class DumpFile:
    stage: str
    rank: int
    day: date | None
    display: str
    src: SourceFile
    # Its folder holds model_gen_config.json: MindIE rank 0 writes that file at start-up into a folder that must
    # hold no CSV (start-up fails otherwise), so every dump in the folder began with that start (windows.py).
    with_service: bool = False

    @property
    def folder(self) -> str:
        return folder_of(self.src.path)


@dataclass
class Inputs:
    dumps: list[DumpFile] = field(default_factory=list)  # MindIE hotspot CSVs
    configs: list[SourceFile] = field(default_factory=list)  # MindIE model_gen_config.json
    maps: list[SourceFile] = field(default_factory=list)  # *.json that may be expert maps
    sglang: list[tuple[SourceFile, date | None]] = field(default_factory=list)
    logs: list[SourceFile] = field(default_factory=list)  # EPLB lines and metrics, read through the parsers
    skipped: list[Skipped] = field(default_factory=list)


def day_of(rel: str, mtime: float | None) -> date | None:
    found = DAY_IN_PATH.findall(rel.replace("\\", "/"))
    for y, m, d in reversed(found):
        try:
            return date(int(y), int(m), int(d))
        except ValueError:
            continue
    if mtime is not None:
        return datetime.fromtimestamp(mtime).date()
    return None


def classify(paths: list[str]) -> Inputs:
    out = Inputs()
    for item in iter_sources(paths):
        if isinstance(item, Skipped):
            out.skipped.append(item)
            continue
        rel = (item.rel or item.path).replace("\\", "/")
        low = rel.lower()
        m = DUMP_NAME.search(rel)
        if m:
            out.dumps.append(DumpFile(m.group(1).lower(), int(m.group(2)), day_of(rel, item.mtime), item.path, item))
        elif CONFIG_NAME.search(rel):
            out.configs.append(item)
        elif SGLANG_NAME.search(rel):
            day = day_of(rel, None) if DAY_IN_PATH.search(rel) else day_of_name(rel)
            out.sglang.append((item, day or day_of(rel, item.mtime)))
        elif low.endswith(".json"):
            out.maps.append(item)
        elif low.endswith(LOG_SUFFIXES) or low.rsplit("/", 1)[-1] == "metrics":
            out.logs.append(item)
    started = {folder_of(c.path) for c in out.configs}
    for d in out.dumps:
        # MindIE writes the config into each stage folder; a collected bundle may keep one beside the stage folders
        d.with_service = folder_of(d.src.path) in started or folder_of(folder_of(d.src.path)) in started
    return out


def holds_loads(rel: str) -> bool:
    """Whether a file is one whose name says it holds expert loads: a MindIE dump, an SGLang recorder dump, a
    MindSpeed-RL token-collect JSON (a fleet's extraction loads the expert load only for a node that has one)."""
    rel = rel.replace("\\", "/")
    return bool(DUMP_NAME.search(rel) or SGLANG_NAME.search(rel) or MINDSPEED_NAME.search(rel))


def folder_of(rel: str) -> str:
    """The folder of a path (inside an archive too: ``a.zip!day/decode/decode_0.csv`` -> ``a.zip!day/decode``)."""
    return folder(rel)


def natural_key(text: str) -> tuple:
    """``dump2`` before ``dump10``: digit runs compare as numbers."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in regex.split(r"(\d+)", text.replace("\\", "/")) if p)
