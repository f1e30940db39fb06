"""The expert-load inputs read and counted: ``load`` sends each file to its reader (inputs.py, readers/), decides
the rows per block, counts every MindIE dump's windows (windows.py) into one frame of loads per day, stage, rank,
layer and slot, and gathers the logical loads of the sources that count per expert (logical.py: SGLang dumps and
JSON, MindSpeed-RL snapshots).

Rows per block, in order of trust: ``--layers``; ``num_moe_layers`` of ``model_gen_config.json``; the period the
dumps show; the map's layer count. When they disagree the inconsistent input is refused, never cut at a guessed
row (layers.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Any

import polars as pl

from diagnose.expertload.inputs import Inputs, classify, day_of, folder_of, natural_key
from diagnose.expertload.layers import check_maps, rows_per_block
from diagnose.expertload import logical
from diagnose.expertload.logical import LOGICAL
from diagnose.expertload.readers import mindie_dumps as mindie
from diagnose.expertload.readers.maps import Placement, read_map
from diagnose.expertload.windows import FIRST_WINDOW_MAX_INTERVALS, Scan, chain_loads, median, scan
from diagnose.ingest.metered import SourceFile
from diagnose.ingest.walk import iter_sources
from diagnose.model import Skipped
from diagnose.model.expertload import FileStat, Note, Refused

__all__ = ["FIRST_WINDOW_MAX_INTERVALS", "FileStat", "Loaded", "Placement", "load"]

PHYSICAL = {"day": pl.Date, "stage": pl.String, "rank": pl.Int32, "layer": pl.Int32, "slot": pl.Int32, "tokens": pl.Int64}


@dataclass
class Loaded:
    loads: pl.DataFrame  # PHYSICAL: one row per cell, per file/day
    n_layers: int  # rows per block (MTP layers included)
    slots: dict[int, int]  # rank -> physical slots (columns)
    placements: list[Placement]  # expert maps, by day (the one given with --expert-map alone)
    logical: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=LOGICAL))  # SGLang: per logical expert
    logs: list[SourceFile] = field(default_factory=list)  # files that may hold EPLB lines
    files: list[FileStat] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    layers_source: str = ""  # "option", "config", "map", "detected", "logical"
    layers_votes: tuple[int, str] = (0, "")  # detected: how many files agreed, and one of them
    first_window_max: float = FIRST_WINDOW_MAX_INTERVALS
    mtp_layers: int = 0
    first_window: str = "auto"  # --first-window (windows.py)
    config: dict[str, int] = field(default_factory=dict)

    @property
    def placement(self) -> Placement | None:
        return self.placements[-1] if self.placements else None


def _note(key: str, **params: Any) -> Note:
    return Note(key, {k: str(v) for k, v in params.items()})


def _config(inputs: Inputs) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """The ``model_gen_config.json`` most folders hold, and each folder's own."""
    votes: dict[tuple, int] = {}
    folders: dict[str, dict[str, int]] = {}
    for src in inputs.configs:
        got = mindie.read_config(src)
        if got is not None:
            key = tuple(sorted(got.items()))
            votes[key] = votes.get(key, 0) + 1
            folders[folder_of(src.path)] = got
    return (dict(max(votes, key=lambda k: votes[k])) if votes else {}), folders


def _maps(inputs: Inputs, expert_map: str | None, config: dict[str, int], refused: list[Refused],
          notes: list[Note], others: list[SourceFile]) -> list[Placement]:
    """The expert maps among the JSON inputs, by day (or the one given); the other JSON files go to ``others``."""
    n_routed = config.get("num_of_experts") or None
    dangling = config.get("num_dangling_shared_experts") if config else None
    if expert_map:
        srcs = [s for s in iter_sources([expert_map]) if isinstance(s, SourceFile)]
        got = read_map(srcs[0], n_routed, dangling) if srcs else None
        if isinstance(got, Placement):
            others.extend(m for m in inputs.maps if m.path != srcs[0].path)
            return [got]
        if isinstance(got, Refused):
            refused.append(got)
        notes.append(_note("expertload.note.map_unreadable", path=expert_map))
        others.extend(inputs.maps)
        return []
    out = []
    for src in sorted(inputs.maps, key=lambda s: natural_key(s.path)):
        got = read_map(src, n_routed, dangling)
        if isinstance(got, Placement):
            got.day = day_of((src.rel or src.path), src.mtime)
            out.append(got)
        elif isinstance(got, Refused):
            refused.append(got)  # a JSON with no layer_list is no map (None); a broken map is said
        else:
            others.append(src)
    out.sort(key=lambda p: (p.day or date.min))
    return out


def _rows(dumps: list, checked: dict[str, int]) -> tuple[int | None, tuple[int, str]]:
    """The period most of a few large dumps show."""
    votes: dict[int, list[str]] = {}
    for d in sorted(dumps, key=lambda d: -(d.src.size or 0))[:8]:
        if d.display not in checked:
            continue
        try:
            got = mindie.detect_layers(d.src, checked[d.display])
        except Exception:  # noqa: BLE001 - a file that cannot be read is reported when it is counted
            got = None
        if got:
            votes.setdefault(got, []).append(d.display)
    if not votes:
        return None, (0, "")
    best = max(votes, key=lambda k: (len(votes[k]), -k))
    return best, (len(votes[best]), votes[best][0])


def load(paths: list[str], layers: int | None = None, expert_map: str | None = None,
         first_window_max: float = FIRST_WINDOW_MAX_INTERVALS, first_window: str = "auto") -> Loaded:
    """Read every source under ``paths`` (module docstring); nothing is raised for bad input, it is refused."""
    inputs = classify(paths)
    refused: list[Refused] = []
    notes: list[Note] = []
    config, folder_configs = _config(inputs)
    others: list[SourceFile] = []
    placements = _maps(inputs, expert_map, config, refused, notes, others)
    current = placements[-1] if placements else None
    inputs.dumps.sort(key=lambda d: (d.stage, d.rank, d.day or date.min, natural_key(d.display)))
    checked: dict[str, int] = {}
    for d in inputs.dumps:
        try:
            bad, lines = mindie.check(d.src)
        except Exception as exc:  # noqa: BLE001 - unreadable input is reported, never raised
            bad, lines = Refused(d.display, "unreadable", {"detail": type(exc).__name__}), 0
        if bad is not None:
            refused.append(bad)
        else:
            checked[d.display] = lines
    period, pvotes = _rows(inputs.dumps, checked) if inputs.dumps else (None, (0, ""))
    rows = rows_per_block(layers, config, folder_configs, [d for d in inputs.dumps if d.display in checked],
                          period, pvotes, current)
    layers, source, votes = rows.layers, rows.source, rows.votes
    notes += rows.notes
    for path, why in rows.refused_dumps.items():
        refused.append(why)
        checked.pop(path, None)
    if layers and placements:
        placements, bad, said = check_maps(placements, layers)
        refused += bad
        notes += said
        current = placements[-1] if placements else None
    mtp = layers - current.n_layers if layers and current is not None else 0
    frames: list[pl.DataFrame] = []
    files: list[FileStat] = []
    slots: dict[int, int] = {}
    chains: dict[tuple[str, int], list[Scan]] = {}
    for d in inputs.dumps:
        if d.display not in checked:
            continue
        if not layers:
            refused.append(Refused(d.display, "rows_unknown", {}))
            continue
        stat = FileStat(path=d.display, stage=d.stage, rank=d.rank, day=d.day.isoformat() if d.day else None)
        try:
            sc = scan(d, layers, stat, checked[d.display])
        except Exception as exc:  # noqa: BLE001 - unreadable input is reported, never raised
            refused.append(Refused(d.display, "unreadable", {"detail": type(exc).__name__}))
            continue
        files.append(stat)
        if sc is not None:
            chains.setdefault((d.stage, d.rank), []).append(sc)
    stage_inc = {st: median([s.inc for (s2, _), ch in chains.items() if s2 == st for s in ch if s.inc])
                 for st in {k[0] for k in chains}}
    for (st, _rank), chain in chains.items():
        for sc, long in chain_loads(chain, layers, stage_inc.get(st), first_window_max, first_window):
            if long is None:
                continue
            d = sc.f
            slots[d.rank] = max(slots.get(d.rank, 0), int(long["slot"].max()) + 1)
            frames.append(long.with_columns(day=pl.lit(d.day, pl.Date), stage=pl.lit(d.stage), rank=pl.lit(d.rank, pl.Int32)))
        for sc in chain:
            sc.blocks.clear()
    loads = pl.concat([f.select(list(PHYSICAL)) for f in frames]) if frames else pl.DataFrame(schema=PHYSICAL)
    frames_l = logical.sglang_dumps(inputs.sglang, files, refused, notes)
    frames_l += logical.json_loads(others, files, refused, notes, first_window, first_window_max)
    logical_loads = pl.concat(frames_l) if frames_l else pl.DataFrame(schema=LOGICAL)
    if logical_loads.height and loads.height:  # two kinds of source in one run: their loads add up layer by layer
        notes.append(_note("expertload.note.mixed_sources"))
    if logical_loads.height and not layers:
        layers, source = int(logical_loads["layer"].max()) + 1, "logical"
        if placements:
            placements, bad, said = check_maps(placements, layers)
            refused += bad
            notes += said
            current = placements[-1] if placements else None
        mtp = layers - current.n_layers if current is not None else 0
    return Loaded(loads, layers or 0, slots, placements, logical_loads, inputs.logs, files, inputs.skipped, refused, notes,
                  source, votes, first_window_max, mtp, config=config, first_window=first_window)
