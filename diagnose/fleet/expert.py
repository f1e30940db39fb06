"""Expert load in the fleet dataset: each node counts its own dumps (the windows of a rank's dumps are all on the
node that wrote them) and stores what ``expertload.load`` gave (the loads per day, stage, rank, layer and slot,
the logical loads of SGLang dumps, the expert maps by day, each file's counting) with the EPLB lines of its logs;
the fleet puts the nodes' parts together into one ``Loaded`` and runs the same analysis as
``diagnose expert-load``.

Two decisions are the node's own rather than the fleet's: the stage-wide median block increment, which decides a
first window only when neither the file nor its rank's other dumps have one, and the rows per block of a node
whose dumps came without a map or ``model_gen_config.json`` (the period its dumps show). When the nodes agree (as
a fleet of one model does), the fleet's numbers are those of one ``diagnose expert-load`` over every node's dumps.
"""

from __future__ import annotations

import dataclasses
from datetime import date
from typing import Any

import msgspec
import polars as pl

from diagnose.expertload.inputs import natural_key
from diagnose.expertload.load import Loaded, PeriodSample, Placement, mtp_of, rows_per_block
from diagnose.fleet import schema
from diagnose.fleet.dataset import Part, collect
from diagnose.messages import words_data, words_from_data
from diagnose.model import Skipped
from diagnose.model.expertload import FileStat, Note, Refused

def to_tables(loaded: Loaded, eplb: pl.DataFrame) -> tuple[dict[str, pl.DataFrame], dict]:
    """(tables, what the manifest keeps: rows per block and where they came from, slots per rank, the maps'
    own values, notes, refusals, skipped inputs). ``eplb``: the EPLB lines of the node's logs (ts, signal,
    value)."""
    tables = {
        "expert_loads": loaded.loads,
        "expert_logical": loaded.logical,
        "expert_eplb": eplb,
        "expert_placement": _placement_frame(loaded.placements),
        "expert_files": pl.DataFrame([msgspec.structs.asdict(f) for f in loaded.files],
                                     schema=schema.TABLES["expert_files"]) if loaded.files
        else schema.empty("expert_files"),
    }
    meta = {
        "layers": loaded.n_layers, "slots": {str(k): v for k, v in loaded.slots.items()},
        "layers_source": loaded.layers_source, "layers_votes": list(loaded.layers_votes),
        "first_window_max": loaded.first_window_max, "mtp_layers": loaded.mtp_layers, "config": dict(loaded.config),
        "period_samples": [dataclasses.asdict(x) for x in loaded.period_samples],
        "maps": [{"source": p.source, "shared_id": p.shared_id, "dangling": p.dangling, "mtp_layers": p.mtp_layers,
                  "day": p.day.isoformat() if isinstance(p.day, date) else None} for p in loaded.placements],
        "notes": [[n.key, dict(n.params)] for n in loaded.notes],
        "refused": [[r.path, r.reason, dict(r.params)] for r in loaded.refused],
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
    """Every node's expert load as one ``Loaded`` and the EPLB lines of every node's logs in time order (None
    when no node had dumps)."""
    having = [p for p in parts if p.manifest.get("expert")]
    if not having:
        return None
    metas = [p.manifest["expert"] for p in having]
    slots: dict[int, int] = {}
    for m in metas:
        for rank, n in (m.get("slots") or {}).items():
            slots[int(rank)] = max(slots.get(int(rank), 0), int(n))
    placements = [p for part, m in zip(having, metas) for p in _placements(collect([part], "expert_placement"),
                                                                            m.get("maps") or [])]
    placements.sort(key=lambda p: p.day or date.min)  # stable: maps of one day stay in the nodes' walk order
    logical = collect(having, "expert_logical")
    config = _config(metas)
    samples = [PeriodSample(**x) for m in metas for x in m.get("period_samples") or []]
    # a node samples its dumps' periods whenever it has MindIE dumps and nothing else says the rows per block
    layers, source, votes, mtp = rows_per_block(None, config, placements[-1] if placements else None,
                                                samples or None)
    if logical.height and not layers:  # as load() decides it when only per-expert dumps were read
        layers, source = int(logical["layer"].max()) + 1, "logical"
        mtp = mtp_of(layers, placements[-1] if placements else None)
    files = [FileStat(**row) for row in collect(having, "expert_files").iter_rows(named=True)]
    # as load() lists them: MindIE dumps by stage, rank, day and name, then the SGLang dumps by name
    files.sort(key=lambda f: (0, f.stage, f.rank, f.day or "", natural_key(f.path)) if f.source == "mindie"
               else (1, "", 0, "", natural_key(f.path)))
    loaded = Loaded(
        loads=collect(having, "expert_loads").sort(["stage", "rank", "day"], maintain_order=True),
        n_layers=layers or 0, slots=slots, placements=placements, logical=logical,
        files=files,
        skipped=[Skipped(path, words_from_data(reason)) for m in metas for path, reason in m.get("skipped", [])],
        refused=[Refused(path, reason, params) for m in metas for path, reason, params in m.get("refused", [])],
        notes=[Note(key, params) for m in metas for key, params in m.get("notes", [])],
        layers_source=source, layers_votes=votes, first_window_max=metas[0].get("first_window_max", 2.0),
        mtp_layers=mtp, config=config, period_samples=samples,
    )
    eplb = collect(having, "expert_eplb").sort("ts", nulls_last=True, maintain_order=True)
    return loaded, eplb


def _config(metas: list[dict]) -> dict[str, int]:
    """The ``model_gen_config.json`` values most nodes read (as load() votes over the files)."""
    votes: dict[tuple, int] = {}
    for m in metas:
        if m.get("config"):
            key = tuple(sorted(m["config"].items()))
            votes[key] = votes.get(key, 0) + 1
    return dict(max(votes, key=lambda k: votes[k])) if votes else {}


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

