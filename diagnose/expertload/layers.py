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
against it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from diagnose.expertload.readers.base import refuse
from diagnose.expertload.readers.maps import Placement
from diagnose.model.expertload import Note, Refused


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
                   dumps: list, period: int | None, votes: tuple[int, str], current: Placement | None) -> Rows:
    """The rows per block and the dumps that cannot be cut at it (module docstring). ``dumps`` are
    ``inputs.DumpFile``; ``folder_configs`` maps a dump folder to the config read there."""
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
