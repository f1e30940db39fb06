"""Expert load in the fleet dataset: each node counts its own hotspot dumps (the windows of a rank's dumps are
all on the node that wrote them) and stores the loads per day, stage, rank, layer and slot, its EPLB lines and
its placement; the fleet puts the nodes' loads together and runs the same analysis as ``diagnose expert-load``.

One difference from a single ``diagnose expert-load`` over every node's dumps: the stage-wide median block
increment, which decides a first window only when neither the file nor its rank's other dumps have one, is the
node's own.
"""

from __future__ import annotations

import dataclasses
from datetime import date

import polars as pl

from diagnose.expertload.inputs import Placement
from diagnose.expertload.load import Loaded
from diagnose.expertload.windows import FileStat
from diagnose.fleet import schema
from diagnose.fleet.dataset import Part, collect
from diagnose.model import Skipped


def to_tables(loaded: Loaded) -> tuple[dict[str, pl.DataFrame], dict]:
    """(tables, what the manifest keeps: layers, slots per rank, notes, how the layers were found)."""
    files = [dataclasses.asdict(f) for f in loaded.files]
    tables = {
        "expert_loads": loaded.loads,
        "expert_eplb": loaded.eplb,
        "expert_placement": loaded.placement.frame() if loaded.placement is not None else schema.empty("expert_placement"),
        "expert_files": pl.DataFrame(files, schema=schema.TABLES["expert_files"]) if files
        else schema.empty("expert_files"),
    }
    meta = {"layers": loaded.n_layers, "slots": {str(k): v for k, v in loaded.slots.items()},
            "notes": [[key, values] for key, values in loaded.notes], "layers_source": loaded.layers_source,
            "layers_votes": list(loaded.layers_votes), "first_window_max": loaded.first_window_max,
            "skipped": [[s.path, s.reason] for s in loaded.skipped], "placement": loaded.placement.source if loaded.placement is not None else None}
    return tables, meta


def loaded_from(parts: list[Part]) -> Loaded | None:
    """Every node's expert load as one ``Loaded`` (None when no node had dumps)."""
    having = [p for p in parts if p.manifest.get("expert")]
    if not having:
        return None
    metas = [p.manifest["expert"] for p in having]
    layers = max((m.get("layers") or 0 for m in metas), default=0)
    slots: dict[int, int] = {}
    for m in metas:
        for rank, n in (m.get("slots") or {}).items():
            slots[int(rank)] = max(slots.get(int(rank), 0), int(n))
    placement = None
    for p, m in zip(having, metas):
        if m.get("placement"):
            placement = _placement(collect([p], "expert_placement"), m["placement"])
            break
    files = [FileStat(**row) for row in collect(having, "expert_files").iter_rows(named=True)]
    source = next((m for m in metas if m.get("layers_source")), {})
    loads = collect(having, "expert_loads").sort(["stage", "rank", "day"], maintain_order=True)
    return Loaded(
        loads=loads, n_layers=layers, slots=slots, placement=placement,
        eplb=collect(having, "expert_eplb").sort("ts", nulls_last=True, maintain_order=True),
        files=files, skipped=[Skipped(path, reason) for m in metas for path, reason in m.get("skipped", [])],
        notes=[(key, values) for m in metas for key, values in m.get("notes", [])],
        layers_source=source.get("layers_source", ""), layers_votes=tuple(source.get("layers_votes", (0, ""))),
        first_window_max=metas[0].get("first_window_max", 2.0),
    )


def _placement(frame: pl.DataFrame, source: str) -> Placement | None:
    if frame.height == 0:
        return None
    frame = frame.sort(["layer", "rank", "slot"])
    layers: list[list[list[int]]] = []
    for layer, rank, _slot, expert in frame.iter_rows():
        while len(layers) <= layer:
            layers.append([])
        while len(layers[layer]) <= rank:
            layers[layer].append([])
        layers[layer][rank].append(int(expert))
    return Placement(layers, source)


def days(loaded: Loaded) -> tuple[date | None, date | None]:
    got = loaded.loads["day"].drop_nulls()
    return (got.min(), got.max()) if got.len() else (None, None)
