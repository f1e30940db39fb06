"""How many rows a MindIE dump block has, and whether the expert maps, ``model_gen_config.json`` and the dumps
themselves agree on it. A block cut at the wrong row moves every layer's load to another layer (a hot expert
planted at layer 10 shows at layer 15) without any number looking wrong, so a disagreement is never settled by
guessing: the input that cannot be cut consistently is refused and every format says why.

Three witnesses, in order of trust:

* ``--layers`` (the user's word: it wins; a disagreement with the dumps is noted);
* ``num_moe_layers`` of ``model_gen_config.json``, which MindIE rank 0 writes at start-up beside the dumps
  (MindIE-LLM ``flash_causal_deepseekv2.py:432-457``: the MoE layers, plus one with MTP);
* the period the dumps show (``readers/mindie_dumps.detect_layers``: running totals grow block over block, so a
  period at which every cell is at least the one a period before is the block; files of two blocks or more);
* the map's ``moe_layer_count``, which may be one layer short of the blocks: vllm-ascend accepts a map one layer
  short of an MTP model (``vllm_ascend/eplb/core/eplb_utils.py:27-43``: index ``moe_layer_count`` is allowed and
  gets layer 0's slots, a larger one raises ``Invalid EPLB Table``).

Decisions: a config whose ``num_moe_layers`` differs from the detected period refuses the dumps (``layers_disagree``;
dumps under a folder config that differs from the others are refused the same way); a map that is not the rows
per block or one fewer is refused (``map_layers``) and the placement falls back to the next map or contiguous.
Without config, the detected period wins over the map (it is what the data shows) and the map is checked
against it. Without any rows per block the dumps are refused (``rows_unknown``) and the logical loads' layers
(SGLang, MindSpeed-RL) are the report's.

``settle`` takes every decision from facts a node can write down (each config with its folder, each dump's name
and folder, the largest dumps' periods, the maps read), so a fleet decides over every node's facts exactly as one
run over every node's files does (diagnose/fleet/expert.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from diagnose.expertload.inputs import natural_key
from diagnose.expertload.readers import mindie_dumps as mindie
from diagnose.expertload.readers.base import refuse
from diagnose.expertload.readers.maps import Placement
from diagnose.model.expertload import Note, Refused

PERIOD_SAMPLES = 8  # the largest dumps whose period is the dumps' own witness
# What the decision itself refuses and notes (a fleet decides again over every node's facts and drops the nodes')
DECISION_REFUSALS = ("layers_disagree", "map_layers", "rows_unknown")
DECISION_NOTES = ("expertload.note.layers_option", "expertload.note.layers_disagree",
                  "expertload.note.configs_disagree", "expertload.note.map_layers")


@dataclass(frozen=True)
class PeriodSample:
    """One of the largest dumps, where it sorts among the dumps, and the period its rows showed."""

    stage: str
    rank: int
    day: str | None
    display: str
    size: int
    period: int | None  # None: refused, or no period found

    def order(self) -> tuple:
        """The order of ``load``'s dumps: stage, rank, day, then the name."""
        return (self.stage, self.rank, self.day or "", natural_key(self.display))


@dataclass(frozen=True)
class DumpRef:
    """What the decision needs of a dump that passed the reader's check: its name and its folder."""

    display: str
    folder: str


@dataclass
class Facts:
    """What the rows per block are decided from, as a node can write it down: every config read with its folder
    (in the order read), every dump that passed the reader's check, the largest dumps' periods, and every map
    read (by day, before ``check_maps``)."""

    configs: list[tuple[str, dict[str, int]]] = field(default_factory=list)
    dumps: list[DumpRef] = field(default_factory=list)
    samples: list[PeriodSample] = field(default_factory=list)
    maps: list[Placement] = field(default_factory=list)


def samples_of(dumps: list, checked: dict[str, int]) -> list[PeriodSample]:
    """The period each of a few large dumps shows (``dumps``: ``inputs.DumpFile`` in load's order; ``checked``:
    the line counts of those that passed the reader's check)."""
    out = []
    for d in sorted(dumps, key=lambda d: -(d.src.size or 0))[:PERIOD_SAMPLES]:
        got = None
        if d.display in checked:
            try:
                got = mindie.detect_layers(d.src, checked[d.display])
            except Exception:  # noqa: BLE001 - a file that cannot be read is reported when it is counted
                got = None
        out.append(PeriodSample(d.stage, d.rank, d.day.isoformat() if d.day else None, d.display,
                                int(d.src.size or 0), got or None))
    return out


def period_of(samples: list[PeriodSample]) -> tuple[int | None, tuple[int, str]]:
    """The period most of the largest dumps show, with how many showed it and the first of them. ``samples``
    may come from several nodes: the largest of all are taken, in load's order."""
    ordered = sorted(sorted(samples, key=PeriodSample.order), key=lambda x: -x.size)[:PERIOD_SAMPLES]
    votes: dict[int, list[str]] = {}
    for x in ordered:
        if x.period:
            votes.setdefault(x.period, []).append(x.display)
    if not votes:
        return None, (0, "")
    best = max(votes, key=lambda k: (len(votes[k]), -k))
    return best, (len(votes[best]), votes[best][0])


def vote_config(configs: list[tuple[str, dict[str, int]]]) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """The ``model_gen_config.json`` most of ``configs`` (folder, values; in the order read) say, and each
    folder's own."""
    votes: dict[tuple, int] = {}
    folders: dict[str, dict[str, int]] = {}
    for folder, got in configs:
        key = tuple(sorted(got.items()))
        votes[key] = votes.get(key, 0) + 1
        folders[folder] = dict(got)
    return (dict(max(votes, key=lambda k: votes[k])) if votes else {}), folders


@dataclass
class Rows:
    layers: int | None  # rows per block (None: unknown)
    source: str  # "option", "config", "detected", "map", ""
    votes: tuple[int, str] = (0, "")
    refused_dumps: dict[str, Refused] = field(default_factory=dict)  # dump path -> why it is not cut
    notes: list[Note] = field(default_factory=list)


def _note(key: str, **params: Any) -> Note:
    return Note(key, {k: str(v) for k, v in params.items()})


def rows_per_block(option: int | None, config: dict[str, int], folder_configs: dict[str, dict[str, int]],
                   dumps: list, samples: list[PeriodSample], current: Placement | None) -> Rows:
    """The rows per block and the dumps that cannot be cut at it (module docstring). ``dumps`` have a
    ``display`` and a ``folder`` (``inputs.DumpFile``, ``DumpRef``); ``folder_configs`` maps a dump folder to the
    config read there; ``samples`` are the largest dumps' periods (``period_of``)."""
    period, votes = period_of(samples)
    map_layers = current.n_layers if current is not None else None
    if option:
        out = Rows(option, "option")
        if period and period != option:
            out.notes.append(_note("expertload.note.layers_option", option=option, detected=period, example=votes[1]))
        return out
    if config:
        want = config["num_moe_layers"]
        out = Rows(want, "config", votes)
        for d in dumps:
            own = folder_configs.get(d.folder, config)
            if own["num_moe_layers"] != want:
                out.refused_dumps[d.display] = refuse(d.display, "layers_disagree", config=own["num_moe_layers"],
                                                      detected=want, map=map_layers if map_layers else "-")
        if period and period != want:
            for d in dumps:
                out.refused_dumps.setdefault(d.display, refuse(d.display, "layers_disagree", config=want, detected=period,
                                                               map=map_layers if map_layers else "-"))
            out.notes.append(_note("expertload.note.layers_disagree", config=want, detected=period, example=votes[1],
                                   map=map_layers if map_layers else "-", n=len(out.refused_dumps)))
        elif out.refused_dumps:
            out.notes.append(_note("expertload.note.configs_disagree", config=want, n=len(out.refused_dumps)))
        return out
    if period:
        return Rows(period, "map" if period == map_layers else "detected", votes)
    if map_layers:
        return Rows(map_layers, "map")
    return Rows(None, "")


def check_maps(placements: list[Placement], layers: int) -> tuple[list[Placement], list[Refused], list[Note]]:
    """The maps that fit blocks of ``layers`` rows (the same layers, or one fewer: the MTP layer), the refusals
    of the others, and a note for each."""
    keep, refused, notes = [], [], []
    for p in placements:
        if p.n_layers in (layers, layers - 1):
            keep.append(p)
            continue
        path = p.source[4:] if p.source.startswith("map:") else p.source
        refused.append(refuse(path, "map_layers", map=p.n_layers, rows=layers))
        notes.append(_note("expertload.note.map_layers", path=path, map=p.n_layers, rows=layers))
    return keep, refused, notes


@dataclass
class Settled:
    """Every decision about the rows per block (``settle``)."""

    rows: int | None  # rows per block the MindIE dumps are cut at (None: they cannot be)
    layers: int  # the report's layers: ``rows``, else those of the logical loads, else 0
    source: str  # "option", "config", "detected", "map", "logical", ""
    votes: tuple[int, str]
    config: dict[str, int]  # the config most folders hold
    placements: list[Placement]  # the maps that fit, by day
    mtp: int  # rows per block beyond the current map's layers (the MTP layer)
    refused_dumps: dict[str, Refused] = field(default_factory=dict)  # dump name -> why it is not cut
    refused: list[Refused] = field(default_factory=list)  # maps that do not fit
    notes: list[Note] = field(default_factory=list)


def settle(option: int | None, facts: Facts, logical_layers: int | None) -> Settled:
    """The rows per block of the dumps of ``facts``, the maps that fit them, and the report's layers (module
    docstring). ``option``: ``--layers``; ``logical_layers``: the layers of the loads counted per logical expert
    (None without)."""
    config, folders = vote_config(facts.configs)
    current = facts.maps[-1] if facts.maps else None
    rows = rows_per_block(option, config, folders, facts.dumps, facts.samples, current)
    out = Settled(rows.layers, rows.layers or 0, rows.source, rows.votes, config, list(facts.maps), 0,
                  dict(rows.refused_dumps), [], list(rows.notes))
    if not rows.layers:
        for d in facts.dumps:
            out.refused_dumps.setdefault(d.display, refuse(d.display, "rows_unknown"))
        if logical_layers:
            out.layers, out.source = logical_layers, "logical"
    if out.layers and out.placements:
        out.placements, out.refused, said = check_maps(out.placements, out.layers)
        out.notes += said
    current = out.placements[-1] if out.placements else None
    out.mtp = out.layers - current.n_layers if out.layers and current is not None else 0
    return out
