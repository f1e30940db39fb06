"""The inputs of the expert-load report: which files are hotspot dumps, the expert map JSON and EPLB logs,
the day of a dump, the rows per block, and a dump's cells as integer columns.

MindIE hotspot dumps are ``<dump>/prefill/prefill_<rank>.csv`` and ``<dump>/decode/decode_<rank>.csv``,
without a header: each write appends a block of ``layers`` rows x ``local slots`` columns of running totals
(how they are counted: windows.py). ``*_bak.csv`` copies and ``*_topk_*`` id dumps are not load dumps (the
name does not match). A file is dated by a ``YYYY-MM-DD`` (or ``YYYYMMDD``) folder or name in its path, else
by its mtime. The expert map is the vllm-ascend / MindIE JSON (``moe_layer_count``,
``layer_list[].device_list[].device_expert``).
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import polars as pl
import regex

from diagnose.bounded import json_loads
from diagnose.ingest.walk import SourceFile, iter_sources
from diagnose.model import Skipped
from diagnose.parsers.kinds.expert_hotspot import block_period

DUMP_NAME = regex.compile(r"(?:^|[/!\\])(prefill|decode)_(\d+)\.csv$", regex.IGNORECASE)
DAY_IN_PATH = regex.compile(r"(?<!\d)(20\d\d)-?(0[1-9]|1[0-2])-?(0[1-9]|[12]\d|3[01])(?!\d)")
LOG_SUFFIXES = (".log", ".txt", ".out", ".err")
MAX_MAP_BYTES = 32 * 1024 * 1024  # an expert map of 61 layers x 64 devices is well under 1 MB

# DeepSeek-V3/R1 have 58 MoE layers (61 decoder layers, the first 3 dense); with MTP one more.
PREFERRED_LAYERS = (58, 59, 61, 60, 57, 26, 27, 47, 48, 94)


@dataclass
class DumpFile:
    stage: str
    rank: int
    day: date | None
    display: str
    src: SourceFile


@dataclass
class Placement:
    """layer -> rank -> list of logical expert ids, in local slot order."""

    layers: list[list[list[int]]]
    source: str  # "map:<path>" or "contiguous"

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    @property
    def n_ranks(self) -> int:
        return len(self.layers[0]) if self.layers else 0

    def n_experts(self) -> int:
        return 1 + max((e for lay in self.layers for dev in lay for e in dev), default=-1)

    def frame(self) -> pl.DataFrame:
        rows = {"layer": [], "rank": [], "slot": [], "expert": []}
        for li, lay in enumerate(self.layers):
            for r, dev in enumerate(lay):
                for s, e in enumerate(dev):
                    rows["layer"].append(li)
                    rows["rank"].append(r)
                    rows["slot"].append(s)
                    rows["expert"].append(e)
        return pl.DataFrame(rows, schema={"layer": pl.Int32, "rank": pl.Int32, "slot": pl.Int32, "expert": pl.Int32})


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


def classify(paths: list[str]) -> tuple[list[DumpFile], list[SourceFile], list[SourceFile], list[Skipped]]:
    """Split the inputs into hotspot dumps, expert map JSON candidates and log files."""
    dumps, maps, logs, skipped = [], [], [], []
    for item in iter_sources(paths):
        if isinstance(item, Skipped):
            skipped.append(item)
            continue
        rel = (item.rel or item.path).replace("\\", "/")
        m = DUMP_NAME.search(rel)
        if m:
            stage = m.group(1).lower()
            dumps.append(DumpFile(stage, int(m.group(2)), day_of(rel, item.mtime), item.path, item))
        elif rel.lower().endswith(".json") and (item.size or 0) <= MAX_MAP_BYTES:
            maps.append(item)
        elif rel.lower().endswith(LOG_SUFFIXES):
            logs.append(item)
    return dumps, maps, logs, skipped


IN_MEMORY_BYTES = 16 * 1024 * 1024  # a dump file up to this size is parsed once and counted in memory


def cells(src: SourceFile, in_memory: bool = False) -> pl.LazyFrame:
    """The cells as Int64 columns s0, s1, ...; streamed from disk unless ``in_memory`` and the file is small."""
    opts: dict[str, Any] = dict(has_header=False, infer_schema=False, truncate_ragged_lines=True)
    path = src.path
    small = in_memory and (src.size or 0) <= IN_MEMORY_BYTES
    if "!" not in path and not path.lower().endswith(".gz") and os.path.isfile(path):
        lf = pl.read_csv(path, **opts).lazy() if small else pl.scan_csv(path, **opts)
    else:
        lf = pl.read_csv(io.BytesIO(src.read()), **opts).lazy()
        small = True
    cols = lf.collect_schema().names()
    lf = lf.select([pl.col(c).str.strip_chars().cast(pl.Int64, strict=False).fill_null(0).alias(f"s{i}")
                    for i, c in enumerate(cols)])
    return lf.collect().lazy() if small else lf


def detect_layers(src: SourceFile) -> int | None:
    """Rows per block of one file (see ``block_period``); None when the file does not tell."""
    lf = cells(src)
    head = lf.head(4096).collect()
    n = lf.select(pl.len()).collect().item()
    if n == 0 or head.width == 0:
        return None
    width, shown = head.width, head.height
    flat = head.select(pl.concat_list(pl.all()).alias("v"))["v"].explode()  # the cells row by row
    if shown < n:  # the period must divide the whole file: pad the head to a divisor-compatible view
        cands = [d for d in range(1, shown // 2 + 1) if n % d == 0]
        for d in sorted(cands, key=lambda d: (d not in PREFERRED_LAYERS, d)):
            got = block_period(flat.slice(0, (shown // d) * d * width), width)
            if got == d:
                return d
        return None
    return block_period(flat, width)


def read_map(src: SourceFile) -> Placement | None:
    """The vllm-ascend / MindIE expert map (``moe_layer_count``, ``layer_list[].device_list[].device_expert``)."""
    try:
        data = json_loads(src.read())
        layers = sorted(data["layer_list"], key=lambda x: int(x.get("layer_id", 0)))
        out = []
        for lay in layers:
            devs = sorted(lay["device_list"], key=lambda x: int(x["device_id"]))
            out.append([[int(e) for e in d["device_expert"]] for d in devs])
        if not out or not out[0]:
            return None
        return Placement(out, f"map:{src.path}")
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def natural_key(text: str) -> tuple:
    """``dump2`` before ``dump10``: digit runs compare as numbers."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in regex.split(r"(\d+)", text.replace("\\", "/")) if p)


EPLB_SIGNALS = ("eplb_imbalance_current_mean", "eplb_imbalance_current_max", "eplb_imbalance_updated_mean",
                "eplb_imbalance_updated_max", "eplb_balancedness")


def read_eplb(logs: list[SourceFile]) -> pl.DataFrame:
    """EPLB imbalance signals of the log files, through the normal parsers (dated by the timeline)."""
    empty = pl.DataFrame(schema={"ts": pl.Datetime("us"), "signal": pl.String, "value": pl.Float64, "file": pl.String})
    if not logs:
        return empty
    from diagnose.pipeline import RuleFilters, Settings, read

    try:
        parsed = read(logs, Settings(), RuleFilters())
    except Exception:  # noqa: BLE001
        return empty
    sig = parsed.signals.filter(pl.col("signal").is_in(EPLB_SIGNALS))
    return sig.select("ts", "signal", "value", "file").sort("ts", nulls_last=True)
