"""Preflight inside ``diagnose PATH`` (the tap): find a model directory's JSON files, a launch script, a MindIE
``config.json`` or vLLM's ``non-default args`` line in a bundle and add the preflight facts to the run.

``Tap.wrap`` sits between ingest and the parsers: a file whose name says it may be a preflight input is read
once here and handed on as an in-memory copy, so archive members (read as streams) need no second read.
``Tap.finish`` builds the facts and hands them on as records and signals (``diagnose/preflight/factsource.py``);
they appear as one derived input per model directory or launch, ``<dir>/preflight.facts`` (not a file on disk,
not counted as a file read), and each fact records the file and line it came from
(``diagnose/preflight/origins.py``), where findings on it point.
"""

from __future__ import annotations

import io
import posixpath
import re
from dataclasses import dataclass, field, replace

import polars as pl

from diagnose.ingest.decode import decode
from diagnose.ingest.metered import Prefixed
from diagnose.model import note
from diagnose.preflight import checks, launch as launch_mod, modelcard
from diagnose.preflight.factsource import FactSource
from diagnose.preflight.origins import Sources, fact_origins
from diagnose.model.memberpath import base_name

MAX_TAP_BYTES = 64 * 1024 * 1024
_MODEL_FILES = {modelcard.CONFIG, modelcard.INDEX, modelcard.QUANT_DESC}
_SCRIPT = re.compile(r"(?i)\.(?:sh|bash)$|^(?:run|start|serve|launch)[\w-]*$")
_NON_DEFAULT = r"non-default args: \{"


@dataclass
class Tap:
    target: checks.Target = field(default_factory=checks.Target)
    files: dict[str, str] = field(default_factory=dict)  # display path (without .gz) -> text
    shown: dict[str, str] = field(default_factory=dict)  # that key -> the display path as read (with .gz)

    def wrap(self, sources):
        for item in sources:
            # `rel` drops a `.gz` suffix: a compressed weight map is the same input.
            shown = getattr(item, "path", "")
            rel = getattr(item, "rel", None) or shown
            name = base_name(rel)
            key = shown[:-3] if shown.endswith(".gz") and not rel.endswith(".gz") else shown
            size = getattr(item, "size", None)
            if hasattr(item, "open") and (name in _MODEL_FILES or _SCRIPT.search(name)) and (size or 0) <= MAX_TAP_BYTES:
                try:
                    stream = item.open()
                    # At most the tap's limit: a .gz (no size known) may hold gigabytes.
                    data = stream.read(MAX_TAP_BYTES + 1)
                except Exception:  # noqa: BLE001 - the normal parse reports the read error
                    yield item
                    continue
                if len(data) > MAX_TAP_BYTES:  # no preflight input: read on from where the tap stopped
                    yield replace(item, open=lambda data=data, stream=stream: io.BufferedReader(Prefixed(data, stream)))
                    continue
                stream.close()
                self.files[key] = decode(data)[0]
                self.shown[key] = shown
                yield replace(item, open=lambda data=data: io.BytesIO(data))
            else:
                yield item

    def finish(self, records: pl.DataFrame) -> FactSource:
        """The facts of each model directory (with the launch that names it) and of each launch left over."""
        launches = self._launches(records)
        out = FactSource()
        used: set[int] = set()
        for path, card in self._cards():
            idx = _pick(card, launches)
            launch = launches[idx] if idx is not None else None
            if idx is not None:
                used.add(idx)
            facts = checks.compute(card, launch, self.target)
            out.add(f"{path}/preflight.facts", facts, fact_origins(facts, self._sources(path), launch),
                    checks.render(facts, card.path, launch.source if launch else None), note("preflight"))
        for i, launch in enumerate(launches):
            if i in used:
                continue
            facts = checks.compute(None, launch, self.target)
            if len(facts) > 1:
                where = posixpath.dirname(launch.source.split(" line ")[0]) or "."
                out.add(f"{where}/preflight-{i + 1}.facts", facts, fact_origins(facts, self._sources(None), launch),
                        checks.render(facts, None, launch.source), note("preflight"))
        return out

    def _sources(self, folder: str | None) -> Sources:
        """The texts behind one model directory's facts, and every launch file's text."""
        def held(name: str):
            key = f"{folder}/{name}" if folder not in (None, ".") else name
            return (self.shown.get(key, key), self.files.get(key)) if key in self.files else None

        sources = Sources(launch_text=dict(self.files))
        if folder is not None:
            sources.config, sources.index, sources.quant = (held(modelcard.CONFIG), held(modelcard.INDEX),
                                                            held(modelcard.QUANT_DESC))
        return sources

    def _cards(self) -> list[tuple[str, modelcard.ModelCard]]:
        dirs: dict[str, dict[str, str]] = {}
        for path, text in self.files.items():
            folder, name = posixpath.split(path.replace("\\", "/"))
            if name in _MODEL_FILES:
                dirs.setdefault(folder, {})[name] = text
        out = []
        for folder, found in sorted(dirs.items()):
            config = found.get(modelcard.CONFIG)
            if config is not None and launch_mod.looks_like_mindie_config(config):
                config = None
            if config is None and modelcard.INDEX not in found:
                continue
            card = modelcard.from_texts(folder or ".", config, found.get(modelcard.INDEX), found.get(modelcard.QUANT_DESC))
            out.append((folder or ".", card))
        return out

    def _launches(self, records: pl.DataFrame) -> list[launch_mod.Launch]:
        found: list[launch_mod.Launch] = []
        for path, text in sorted(self.files.items()):
            name = posixpath.basename(path)
            if name == modelcard.CONFIG and launch_mod.looks_like_mindie_config(text):
                found.append(launch_mod.parse_mindie_config(text, f"{path}", self.target.npus))
            elif _SCRIPT.search(name) and re.search(r"vllm\s+serve|vllm\.entrypoints\.openai\.api_server", text):
                found.append(launch_mod.parse_serve_script(text, path))
        seen: set[str] = set()
        if records.height and "message" in records.columns:
            lines = records.filter(pl.col("message").str.contains(_NON_DEFAULT)).select("file", "line", "message")
            for file, line, message in lines.iter_rows():
                parsed = launch_mod.parse_non_default_args(message, f"{file} line {line}")
                key = repr(sorted(parsed.args.items(), key=lambda kv: kv[0])) if parsed else ""
                if parsed is not None and key not in seen:
                    seen.add(key)
                    found.append(parsed)
        return found


def _pick(card: modelcard.ModelCard, launches: list[launch_mod.Launch]) -> int | None:
    """The launch that names this model directory, else the first (launch scripts and MindIE configs come
    before the `non-default args` lines of logs)."""
    for i, launch in enumerate(launches):
        if launch.model and posixpath.basename(launch.model.rstrip("/")) == card.name:
            return i
    return 0 if launches else None
