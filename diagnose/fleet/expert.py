"""Expert load in the fleet dataset: each node counts its own dumps (the windows of a rank's dumps are all on the
node that wrote them) and stores what ``expertload.load`` gave (the loads per day, stage, rank, layer and slot,
the logical loads of SGLang and MindSpeed-RL sources, each file's counting, what the readers refused and noted)
with the facts the rows per block were decided from (expertload/layers.py ``Facts``: every config with its folder,
every dump, the largest dumps' periods, every map read) and the EPLB values of its logs; the fleet puts the
nodes' facts together and decides the rows per block again with the same ``settle`` a single run uses, then puts
the nodes' counts together with the same ``assemble`` and runs the same analysis as ``diagnose expert-load``.

A node's dumps are in the dataset only as counted at the node's rows per block; they cannot be cut again. When
the fleet's decision is the node's (the same rows per block, the same dumps refused: any fleet of one model whose
nodes hold its config or show its period), the node's counts are used as they are and the fleet's numbers are
those of one ``diagnose expert-load`` over every node's files. When it is not, the node's dumps are refused
(``node_rows``) with both numbers, never counted at rows the fleet does not hold. One decision stays the node's
own: the stage-wide median block increment, which decides a first window only when neither the file nor its
rank's other dumps have one (``--first-window auto`` without MindIE's config).
"""

from __future__ import annotations

import dataclasses
import json
from datetime import date
from typing import Any

import msgspec
import polars as pl

from diagnose.expertload.inputs import natural_key
from diagnose.expertload.layers import DECISION_NOTES, DECISION_REFUSALS, DumpRef, Facts, PeriodSample, settle
from diagnose.expertload.load import MIXED, Loaded, Placement, assemble, logical_layers
from diagnose.expertload.readers.base import refuse
from diagnose.fleet import schema
from diagnose.fleet.dataset import Part, collect
from diagnose.messages import words_data, words_from_data
from diagnose.model import Skipped
from diagnose.model.expertload import FileStat, Note, Refused

CONFIG_KEYS = ("num_moe_layers", "num_of_experts", "num_dangling_shared_experts", "num_of_selected_experts")
ROWS_REFUSALS = ("layers_disagree", "rows_unknown")  # a dump the node's decision did not cut
DECIDED_NOTES = (*DECISION_NOTES, MIXED)  # notes the fleet says again from its own decision


def _frame(name: str, rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=schema.TABLES[name], orient="row") if rows else schema.empty(name)


def to_tables(loaded: Loaded, eplb: pl.DataFrame) -> tuple[dict[str, pl.DataFrame], dict]:
    """(tables, what the manifest keeps: the node's decision, slots per rank, the maps' own values, the first
    window's policy, skipped inputs). ``eplb``: the EPLB values of the node's logs (``pipeline.read_signals``)."""
    facts = loaded.facts
    tables = {
        "expert_loads": loaded.loads,
        "expert_logical": loaded.logical,
        "expert_eplb": eplb,
        "expert_placement": _placement_frame(facts.maps),
        "expert_files": pl.DataFrame([msgspec.structs.asdict(f) for f in loaded.files],
                                     schema=schema.TABLES["expert_files"]) if loaded.files
        else schema.empty("expert_files"),
        "expert_configs": _frame("expert_configs", [(f, *(c.get(k) for k in CONFIG_KEYS)) for f, c in facts.configs]),
        "expert_dumps": _frame("expert_dumps", [(d.display, d.folder) for d in facts.dumps]),
        "expert_samples": _frame("expert_samples", [dataclasses.astuple(x) for x in facts.samples]),
        "expert_refused": _frame("expert_refused", [(r.path, r.reason, json.dumps(r.params)) for r in loaded.refused
                                                    if r.reason not in DECISION_REFUSALS]),
        "expert_notes": _frame("expert_notes", [(n.key, json.dumps(n.params)) for n in loaded.notes
                                                if n.key not in DECIDED_NOTES]),
    }
    meta = {
        "rows": loaded.rows, "layers": loaded.n_layers, "layers_source": loaded.layers_source,
        "layers_votes": list(loaded.layers_votes), "mtp_layers": loaded.mtp_layers, "config": dict(loaded.config),
        "rows_refused": [r.path for r in loaded.refused if r.reason in ROWS_REFUSALS],
        "first_window": loaded.first_window, "first_window_max": loaded.first_window_max,
        "slots": {str(k): v for k, v in loaded.slots.items()},
        "maps": [{"source": p.source, "shared_id": p.shared_id, "dangling": p.dangling, "mtp_layers": p.mtp_layers,
                  "day": p.day.isoformat() if isinstance(p.day, date) else None} for p in facts.maps],
        "skipped": [[s.path, words_data(s.reason)] for s in loaded.skipped],
    }
    return tables, meta


def _placement_frame(placements: list[Placement]) -> pl.DataFrame:
    """Every slot of every map (the shared expert's and the dangling devices' too, which the manifest's
    ``shared_id`` and ``dangling`` name), so the map reads back as it was."""
    rows = [(i, li, r, s, e) for i, p in enumerate(placements) for li, lay in enumerate(p.layers)
            for r, dev in enumerate(lay) for s, e in enumerate(dev)]
    if not rows:
        return schema.empty("expert_placement")
    return pl.DataFrame(rows, schema=schema.TABLES["expert_placement"], orient="row")


def loaded_from(parts: list[Part]) -> tuple[Loaded, pl.DataFrame] | None:
    """Every node's expert load as one ``Loaded`` (module docstring) and the EPLB values of every node's logs in
    time order (None when no node had dumps). ``parts`` in walk order."""
    having = [p for p in parts if p.manifest.get("expert")]
    if not having:
        return None
    metas = [p.manifest["expert"] for p in having]
    maps = [p for part, m in zip(having, metas) for p in _placements(collect([part], "expert_placement"),
                                                                      m.get("maps") or [])]
    maps.sort(key=lambda p: (p.day or date.min, natural_key(p.source)))  # as load() orders them
    configs = [(row.pop("folder"), row) for row in collect(having, "expert_configs").iter_rows(named=True)]
    dumps = [DumpRef(*row) for row in collect(having, "expert_dumps").iter_rows()]
    facts = Facts(configs, dumps, [PeriodSample(*row) for row in collect(having, "expert_samples").iter_rows()], maps)
    logical = collect(having, "expert_logical")
    settled = settle(None, facts, logical_layers(logical))
    kept, refused, notes = [], [], []
    for part, m in zip(having, metas):
        own = collect([part], "expert_dumps")["path"].to_list()
        counted = {d for d in own if d not in (m.get("rows_refused") or ())}
        wanted = {d for d in own if d not in settled.refused_dumps}
        if counted == wanted and (not counted or m.get("rows") == settled.rows):
            kept.append((part, m))  # the node counted what the fleet would, at the fleet's rows per block
            continue
        # counted at rows per block the fleet does not hold, or not counted: the dataset has no dump to cut again
        node_rows, fleet_rows = m.get("rows") or "-", settled.rows or "-"
        refused += [refuse(d, "node_rows", node=part.partition.node, rows=node_rows, fleet=fleet_rows)
                    for d in own if d in wanted]
        notes.append(Note("expertload.note.node_rows", {"node": part.partition.node, "rows": str(node_rows),
                                                        "fleet": str(fleet_rows), "n": str(len(wanted))}))
    slots: dict[int, int] = {}
    for _, m in kept:
        for rank, n in (m.get("slots") or {}).items():
            slots[int(rank)] = max(slots.get(int(rank), 0), int(n))
    counted = [part for part, _ in kept]
    # as load() lists them: MindIE dumps by stage, rank, day and name, then the per-expert sources node by node
    mindie = [FileStat(**row) for row in collect(counted, "expert_files").iter_rows(named=True)
              if row["source"] == "mindie"]
    mindie.sort(key=lambda f: (f.stage, f.rank, f.day or "", natural_key(f.path)))
    files = mindie + [FileStat(**row) for row in collect(having, "expert_files").iter_rows(named=True)
                      if row["source"] != "mindie"]
    refused += [Refused(path, reason, json.loads(params))
                for path, reason, params in collect(having, "expert_refused").iter_rows()]
    notes += [Note(key, json.loads(params)) for key, params in collect(having, "expert_notes").iter_rows()]
    loads = collect(counted, "expert_loads").sort(["stage", "rank", "day"], maintain_order=True)
    skipped = [Skipped(path, words_from_data(reason)) for m in metas for path, reason in m.get("skipped", [])]
    loaded = assemble(settled, facts, loads, slots, files, logical, refused, notes, logs=[], skipped=skipped,
                      first_window_max=metas[0].get("first_window_max", 2.0),
                      first_window=metas[0].get("first_window", "auto"))
    eplb = collect(having, "expert_eplb").sort("ts", nulls_last=True, maintain_order=True)
    return loaded, eplb


def _placements(frame: pl.DataFrame, maps: list[dict[str, Any]]) -> list[Placement]:
    out = []
    for i, meta in enumerate(maps):
        layers: list[list[list[int]]] = []
        cells = frame.filter(pl.col("map") == i).sort(["layer", "rank", "slot"])
        for _, layer, rank, _slot, expert in cells.iter_rows():
            while len(layers) <= layer:
                layers.append([])
            while len(layers[layer]) <= rank:
                layers[layer].append([])
            layers[layer][rank].append(int(expert))
        day = date.fromisoformat(meta["day"]) if meta.get("day") else None
        out.append(Placement(layers, meta["source"], shared_id=meta.get("shared_id"),
                             dangling=int(meta.get("dangling") or 0), day=day,
                             mtp_layers=int(meta.get("mtp_layers") or 0)))
    return out

