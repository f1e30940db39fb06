"""The expert-load report's inputs read and counted: ``load`` finds the dumps, the expert map and the EPLB
log lines among the paths (inputs.py), decides the rows per block, and counts every dump's windows
(windows.py: the counting rule) into one frame of loads per day, stage, rank, layer and slot.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Any

import polars as pl

from diagnose.expertload.inputs import (
    Placement, SourceFile, classify, detect_layers, natural_key, read_eplb, read_map,
)
from diagnose.expertload.windows import FIRST_WINDOW_MAX_INTERVALS, FileStat, Scan, chain_loads, median, scan
from diagnose.ingest.walk import iter_sources
from diagnose.model import Skipped, skip

__all__ = ["FIRST_WINDOW_MAX_INTERVALS", "FileStat", "Loaded", "Placement", "load"]

# A note for the report: a catalog key and its values (expertload/texts.py puts it in words).
Note = tuple[str, dict[str, Any]]


@dataclass
class Loaded:
    loads: pl.DataFrame  # day, stage, rank, layer, slot, tokens (one row per cell, per file/day)
    n_layers: int
    slots: dict[int, int]  # rank -> physical slots (columns)
    placement: Placement | None  # from an expert map file, when one was given or found
    eplb: pl.DataFrame  # ts, signal, value (EPLB log lines)
    files: list[FileStat] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    layers_source: str = ""  # "option" (--layers), "map" (the expert map's moe_layer_count), "detected", ""
    layers_votes: tuple[int, str] = (0, "")  # detected: how many files agreed, and one of them
    first_window_max: float = 2.0  # the size test of a file's first window (FIRST_WINDOW_MAX_INTERVALS)


def load(paths: list[str], layers: int | None = None, expert_map: str | None = None,
         first_window_max: float = FIRST_WINDOW_MAX_INTERVALS) -> Loaded:
    """Read the dumps, the expert map and EPLB lines; count the windows (module docstring).

    ``first_window_max``: a file's first window with no observed predecessor is counted when it is at most this
    many median block-to-block increments (rule 4).
    """
    dumps, maps, logs, skipped = classify(paths)
    notes: list[Note] = []
    placement = None
    if expert_map:
        srcs = [s for s in iter_sources([expert_map]) if isinstance(s, SourceFile)]
        placement = read_map(srcs[0]) if srcs else None
        if placement is None:
            notes.append(("expertload.note.map_unreadable", {"path": expert_map}))
    else:
        for m in maps:
            placement = read_map(m)
            if placement is not None:
                break
    layers_source, layers_votes = ("option" if layers else ""), (0, "")
    if layers is None and placement is not None:
        layers, layers_source = placement.n_layers, "map"
    dumps.sort(key=lambda d: (d.stage, d.rank, d.day or date.min, natural_key(d.display)))
    if layers is None:
        # Vote over a few files: a file with a counter reset in its head does not tell.
        votes: dict[int, list[str]] = {}
        for d in sorted(dumps, key=lambda d: -(d.src.size or 0))[:8]:
            try:
                got = detect_layers(d.src)
            except Exception:  # noqa: BLE001 - a bad file is reported below
                got = None
            if got:
                votes.setdefault(got, []).append(d.display)
        if votes:
            layers = max(votes, key=lambda k: (len(votes[k]), -k))
            layers_source, layers_votes = "detected", (len(votes[layers]), votes[layers][0])
    frames: list[pl.DataFrame] = []
    files: list[FileStat] = []
    slots: dict[int, int] = {}
    chains: dict[tuple[str, int], list[Scan]] = {}
    for d in dumps:
        if not layers:
            skipped.append(Skipped(d.display, skip("layers_unknown")))
            continue
        stat = FileStat(d.display, d.stage, d.rank, d.day.isoformat() if d.day else None, 0, 0, False)
        try:
            sc = scan(d, layers, stat)
        except Exception as exc:  # noqa: BLE001 - unreadable input is reported, never raised
            skipped.append(Skipped(d.display, skip("bad_dump", error=f"{type(exc).__name__}: {exc}")))
            continue
        files.append(stat)
        if sc is None:  # no complete block: nothing to count
            continue
        chains.setdefault((d.stage, d.rank), []).append(sc)
    stage_inc = {st: median([s.inc for (s2, _), ch in chains.items() if s2 == st for s in ch if s.inc])
                 for st in {k[0] for k in chains}}
    for (st, rank), chain in chains.items():
        for sc, long in chain_loads(chain, layers, stage_inc.get(st), first_window_max):
            if long is None:
                continue
            d = sc.f
            slots[d.rank] = max(slots.get(d.rank, 0), int(long["slot"].max()) + 1)
            frames.append(long.with_columns(day=pl.lit(d.day, pl.Date), stage=pl.lit(d.stage), rank=pl.lit(d.rank, pl.Int32)))
        for sc in chain:
            sc.blocks.clear()
    schema = {"day": pl.Date, "stage": pl.String, "rank": pl.Int32, "layer": pl.Int32, "slot": pl.Int32, "tokens": pl.Int64}
    loads = pl.concat([f.select(list(schema)) for f in frames]) if frames else pl.DataFrame(schema=schema)
    return Loaded(loads, layers or 0, slots, placement, read_eplb(logs), files, skipped, notes, layers_source,
                  layers_votes, first_window_max)


