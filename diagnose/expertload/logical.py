"""Loads that arrive per logical expert rather than per physical slot: SGLang recorder dumps (``.pt``) and the JSON
form SGLang accepts back, and MindSpeed-RL's token-collect snapshots. One frame of (day, stage, layer, expert,
tokens) for the analysis, and a ``FileStat`` per file for the reports.

* SGLang: ``/dump_expert_distribution_record`` resets the recorder, so a dump is a window of its own and counts
  whole; a ``{"logical_count": ...}`` JSON is one window too.
* MindSpeed-RL: the writer adds into the file it finds, so snapshots of one rank's file over days are running
  totals (readers/mindspeed.py). A snapshot whose every count is at least the previous one's continues it (the
  difference counts); one with a count that fell starts over (a new folder: counted whole). The first snapshot of
  a chain follows ``--first-window``: ``count`` and ``skip`` as said; ``auto`` uses the size test of windows.py
  (these files can begin mid-run: they keep growing across runs), except for a lone snapshot, which has nothing
  to measure against and is counted whole as everything since the counts began (``whole``).
"""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import polars as pl

from diagnose.expertload.inputs import day_of, natural_key
from diagnose.expertload.readers import mindspeed, sglang
from diagnose.expertload.readers.base import MAX_JSON_BYTES, refuse
from diagnose.expertload.windows import FIRST_WINDOW_MAX_INTERVALS, median
from diagnose.ingest.metered import SourceFile
from diagnose.model.expertload import COUNTED, FileStat, Note, Refused

LOGICAL = {"day": pl.Date, "stage": pl.String, "layer": pl.Int32, "expert": pl.Int32, "tokens": pl.Int64}


def _note(key: str, **params: Any) -> Note:
    return Note(key, {k: str(v) for k, v in params.items()})


def _window(frame: pl.DataFrame, day: date | None) -> pl.DataFrame:
    return frame.with_columns(day=pl.lit(day, pl.Date), stage=pl.lit("mixed")).select(list(LOGICAL))


def sglang_dumps(items: list[tuple[SourceFile, date | None]], files: list[FileStat], refused: list[Refused],
                 notes: list[Note]) -> list[pl.DataFrame]:
    """Each SGLang dump is a window of its own (the recorder resets when it dumps): counted whole."""
    frames = []
    for src, day in sorted(items, key=lambda x: natural_key(x[0].path)):
        got, info = sglang.read_dump(src)
        if isinstance(got, Refused):
            refused.append(got)
            continue
        files.append(FileStat(path=src.path, stage="mixed", rank=int(info.get("rank", 0) or 0),
                              day=day.isoformat() if day else None, blocks=1, windows=1, counted=1, first="start",
                              first_counted=True, source="sglang"))
        if info.get("mode") == 0 and info.get("rows") and info.get("filled") == info.get("rows"):
            notes.append(_note("expertload.note.sglang_buffer_full", path=src.path, rows=info["rows"]))
        frames.append(_window(got, day))
    return frames


def json_loads(others: list[SourceFile], files: list[FileStat], refused: list[Refused], notes: list[Note],
               policy: str, max_intervals: float = FIRST_WINDOW_MAX_INTERVALS) -> list[pl.DataFrame]:
    """The JSON files that are not expert maps: SGLang's ``logical_count`` form and MindSpeed-RL snapshots."""
    frames = []
    chains: dict[int, list[tuple[date | None, str, pl.DataFrame]]] = {}
    for src in sorted(others, key=lambda s: natural_key(s.path)):
        day = day_of(src.rel or src.path, src.mtime)
        if (src.size or 0) > MAX_JSON_BYTES:
            refused.append(refuse(src.path, "too_big", max=MAX_JSON_BYTES))
            continue
        try:
            data = json.loads(src.read().decode("utf-8", errors="replace"))
        except (ValueError, RecursionError, OSError):
            if mindspeed.NAME.search(src.path.replace("\\", "/")):
                refused.append(refuse(src.path, "bad_json"))
            continue  # some other broken JSON: not an input of this command
        got, info = sglang.read_json(src, data)
        if isinstance(got, Refused):
            refused.append(got)
            continue
        if isinstance(got, pl.DataFrame):
            files.append(FileStat(path=src.path, stage="mixed", rank=0, day=day.isoformat() if day else None, blocks=1,
                                  windows=1, counted=1, first="start", first_counted=True, source="sglang"))
            frames.append(_window(got, day))
            continue
        if info.get("placement"):
            notes.append(_note("expertload.note.sglang_placement", path=src.path))
            continue
        snap = mindspeed.read(src, data)
        if isinstance(snap, Refused):
            refused.append(snap)
        elif isinstance(snap, pl.DataFrame):
            chains.setdefault(mindspeed.rank_of(src.path), []).append((day, src.path, snap))
    for rank, chain in sorted(chains.items()):
        frames += _chain(rank, chain, files, policy, max_intervals)
    return frames


def _chain(rank: int, chain: list[tuple[date | None, str, pl.DataFrame]], files: list[FileStat], policy: str,
           max_intervals: float) -> list[pl.DataFrame]:
    """The windows of one rank's snapshots, in day order (module docstring)."""
    chain.sort(key=lambda x: (x[0] or date.min, natural_key(x[1])))
    keys = ["layer", "expert"]
    steps: list[tuple[str, pl.DataFrame, int]] = []  # (code, window, total) per snapshot
    prev: pl.DataFrame | None = None
    for _day, _path, snap in chain:
        if prev is None:
            steps.append(("first", snap, int(snap["tokens"].sum())))
        else:
            both = snap.join(prev, on=keys, how="full", coalesce=True, suffix="_p").fill_null(0)
            if (both["tokens"] >= both["tokens_p"]).all():
                window = both.select(*keys, tokens=pl.col("tokens") - pl.col("tokens_p"))
                steps.append(("continues", window, int(window["tokens"].sum())))
            else:
                steps.append(("restart", snap, int(snap["tokens"].sum())))
        prev = snap
    typical = median([float(t) for code, _, t in steps if code == "continues" and t > 0])
    out = []
    for (day, path, _snap), (code, window, total) in zip(chain, steps):
        ratio = None
        if code == "first":
            if policy == "count":
                code = "count"
            elif policy == "skip":
                code = "skip"
            elif len(chain) == 1:
                code = "whole"
            elif typical is None:
                code = "unknown"
            else:
                ratio = round(total / typical, 4)
                code = "start" if total <= max_intervals * typical else "mid-run"
        counted = code in COUNTED
        files.append(FileStat(path=path, stage="mixed", rank=rank, day=day.isoformat() if day else None, blocks=1,
                              windows=1, counted=int(counted), first=code, first_counted=counted, ratio=ratio,
                              chained=code in ("continues", "restart"), source="mindspeed"))
        if counted:
            out.append(_window(window, day))
    return out
