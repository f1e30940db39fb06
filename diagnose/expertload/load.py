"""The expert-load inputs read and counted: ``load`` sends each file to its reader (inputs.py, readers/), decides
the rows per block, counts every MindIE dump's windows (windows.py) into one frame of loads per day, stage, rank,
layer and slot, and gathers the logical loads of the sources that count per expert (logical.py: SGLang dumps and
JSON, MindSpeed-RL snapshots).

Rows per block, in order of trust: ``--layers``; ``num_moe_layers`` of ``model_gen_config.json``; the period the
dumps show; the map's layer count. When they disagree the inconsistent input is refused, never cut at a guessed
row (layers.py). The facts that decision is taken from are kept in ``Loaded.facts`` and the result is put
together by ``assemble``, so a fleet that gathers every node's facts and counts decides and reports as one run
over every node's files (diagnose/fleet/expert.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Any

import polars as pl

from diagnose.expertload import logical
from diagnose.expertload.inputs import DumpFile, Inputs, classify, day_of, folder_of, natural_key
from diagnose.expertload.layers import DumpRef, Facts, Settled, samples_of, settle, vote_config
from diagnose.expertload.logical import LOGICAL
from diagnose.expertload.readers import mindie_dumps as mindie
from diagnose.expertload.readers.maps import Placement, read_map
from diagnose.expertload.windows import FIRST_WINDOW_MAX_INTERVALS, Scan, chain_loads, median, scan
from diagnose.ingest.metered import SourceFile
from diagnose.ingest.walk import iter_sources
from diagnose.model import Skipped
from diagnose.model.expertload import FileStat, Note, Refused

__all__ = ["FIRST_WINDOW_MAX_INTERVALS", "FileStat", "Loaded", "Placement", "assemble", "load"]

PHYSICAL = {"day": pl.Date, "stage": pl.String, "rank": pl.Int32, "layer": pl.Int32, "slot": pl.Int32, "tokens": pl.Int64}
MIXED = "expertload.note.mixed_sources"  # MindIE dumps and per-expert loads read together


@dataclass
class Loaded:
    loads: pl.DataFrame  # PHYSICAL: one row per cell, per file/day
    n_layers: int  # rows per block (MTP layers included); without dumps, the logical loads' layers
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
    rows: int | None = None  # rows per block the MindIE dumps were cut at (None: none could be)
    facts: Facts = field(default_factory=Facts)  # what the rows per block were decided from (layers.py)

    @property
    def placement(self) -> Placement | None:
        return self.placements[-1] if self.placements else None


def _note(key: str, **params: Any) -> Note:
    return Note(key, {k: str(v) for k, v in params.items()})


def _configs(inputs: Inputs) -> list[tuple[str, dict[str, int]]]:
    """Every ``model_gen_config.json`` read, with its folder, in the order read."""
    out = []
    for src in inputs.configs:
        got = mindie.read_config(src)
        if got is not None:
            out.append((folder_of(src.path), got))
    return out


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


def load(paths: list[str], layers: int | None = None, expert_map: str | None = None,
         first_window_max: float = FIRST_WINDOW_MAX_INTERVALS, first_window: str = "auto") -> Loaded:
    """Read every source under ``paths`` (module docstring); nothing is raised for bad input, it is refused."""
    inputs = classify(paths)
    refused: list[Refused] = []
    notes: list[Note] = []
    configs = _configs(inputs)
    others: list[SourceFile] = []
    maps = _maps(inputs, expert_map, vote_config(configs)[0], refused, notes, others)
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
    facts = Facts(configs, [DumpRef(d.display, d.folder) for d in inputs.dumps if d.display in checked],
                  samples_of(inputs.dumps, checked), maps)
    # the loads per logical expert do not depend on the rows per block; their layers do when no dump has rows
    files_l: list[FileStat] = []
    frames_l = logical.sglang_dumps(inputs.sglang, files_l, refused, notes)
    frames_l += logical.json_loads(others, files_l, refused, notes, first_window, first_window_max)
    logical_loads = pl.concat(frames_l) if frames_l else pl.DataFrame(schema=LOGICAL)
    settled = settle(layers, facts, logical_layers(logical_loads))
    loads, slots, files = _count(inputs.dumps, checked, settled, refused, first_window_max, first_window)
    return assemble(settled, facts, loads, slots, files + files_l, logical_loads, refused, notes, logs=inputs.logs,
                    skipped=inputs.skipped, first_window_max=first_window_max, first_window=first_window)


def logical_layers(logical_loads: pl.DataFrame) -> int | None:
    """The layers of the loads counted per logical expert (None without any)."""
    return int(logical_loads["layer"].max()) + 1 if logical_loads.height else None


def _count(dumps: list[DumpFile], checked: dict[str, int], settled: Settled, refused: list[Refused],
           first_window_max: float, first_window: str) -> tuple[pl.DataFrame, dict[int, int], list[FileStat]]:
    """Every MindIE dump that passed its check and the decision, cut at the rows per block and counted window
    by window (windows.py): (loads, slots per rank, a FileStat per dump)."""
    frames: list[pl.DataFrame] = []
    files: list[FileStat] = []
    slots: dict[int, int] = {}
    chains: dict[tuple[str, int], list[Scan]] = {}
    layers = settled.rows
    for d in dumps:
        if d.display not in checked or d.display in settled.refused_dumps or not layers:
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
            frames.append(long.with_columns(day=pl.lit(d.day, pl.Date), stage=pl.lit(d.stage),
                                            rank=pl.lit(d.rank, pl.Int32)))
        for sc in chain:
            sc.blocks.clear()
    loads = pl.concat([f.select(list(PHYSICAL)) for f in frames]) if frames else pl.DataFrame(schema=PHYSICAL)
    return loads, slots, files


def assemble(settled: Settled, facts: Facts, loads: pl.DataFrame, slots: dict[int, int], files: list[FileStat],
             logical_loads: pl.DataFrame, refused: list[Refused], notes: list[Note], **rest: Any) -> Loaded:
    """The ``Loaded`` of a decision and what was counted under it. ``refused`` and ``notes``: the readers' (the
    decision adds its own). Refusals are listed by path and the readers' notes by the path they name, so the
    list does not depend on the order the files were read in (nor on how a fleet split them over nodes)."""
    said = sorted(notes, key=lambda n: natural_key(n.params.get("path", "")))
    if logical_loads.height and loads.height:  # two kinds of source in one run: their loads add up layer by layer
        said.append(_note(MIXED))
    every = [*refused, *settled.refused, *settled.refused_dumps.values()]
    return Loaded(loads, settled.layers, slots, settled.placements, logical_loads, files=files,
                  refused=sorted(every, key=lambda r: natural_key(r.path)), notes=[*settled.notes, *said],
                  layers_source=settled.source, layers_votes=settled.votes, mtp_layers=settled.mtp,
                  config=settled.config, rows=settled.rows, facts=facts, **rest)
