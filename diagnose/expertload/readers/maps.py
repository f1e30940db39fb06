"""The expert map JSON that vllm-ascend (``expert_map_path``, the record path) and MindIE (``expert_map_file``)
read and write, in every variant they produce, and several of them over time.

Schema (vllm-ascend ``vllm_ascend/eplb/adaptor/vllm_adaptor.py``; reference profiling-and-expert-load.md §D2, §D4):
``{"moe_layer_count": L, "layer_list": [{"layer_id", "device_count", "device_list": [{"device_id",
"device_expert": [logical ids in local slot order]}]}]}``. An id that appears twice in a layer is a redundant copy.
MindIE variants (``moe_utils.py:171-216``): with ``mix_shared_routing`` every device's list carries the shared
expert as id ``n_routed`` (256 for DeepSeek-V3/R1), and a table may start with "dangling" devices whose list is
``[0]`` and which hold only the shared expert. Both are kept out of the routed-expert measures (``Placement``).

A map written by the record path is rewritten after each EPLB cycle; copies collected over a week (dated by a
``YYYY-MM-DD`` in their path, else their mtime) say which placement was in force on which day.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from diagnose.bounded import json_loads
from diagnose.expertload.readers.base import MAX_EXPERTS, MAX_JSON_BYTES, MAX_LAYERS, MAX_RANKS, MAX_SLOTS, refuse
from diagnose.ingest.metered import SourceFile
from diagnose.model.expertload import Refused

MAX_IDS = 8 * 1024 * 1024  # ids in one map: 61 layers x 64 devices x 20 slots is 78,080


@dataclass
class Placement:
    """layer -> device -> logical expert ids in local slot order, with what is not a routed expert marked."""

    layers: list[list[list[int]]]
    source: str  # "map:<path>" or "contiguous"
    shared_id: int | None = None  # the shared expert's id in the table (MindIE mix_shared_routing), else None
    dangling: int = 0  # leading devices that hold only the shared expert
    day: object = None  # the day the map was written (a date), when known
    mtp_layers: int = 0  # trailing dump layers the map has no row for (placed contiguously)
    extra: dict = field(default_factory=dict)

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    @property
    def n_ranks(self) -> int:
        return len(self.layers[0]) if self.layers else 0

    def n_experts(self) -> int:
        """Routed experts: the highest routed id + 1."""
        ids = (e for lay in self.layers for dev in lay for e in dev if e != self.shared_id)
        return 1 + max(ids, default=-1)

    def redundant(self) -> int:
        """Routed slots beyond one per routed expert, in layer 0."""
        if not self.layers:
            return 0
        routed = sum(1 for dev in self.layers[0][self.dangling:] for e in dev if e != self.shared_id)
        return routed - self.n_experts()

    def shared_frame(self) -> pl.DataFrame:
        """(layer, rank, slot) of the slots that are no routed expert: the shared expert's, and every slot of a
        dangling device."""
        rows: dict[str, list[int]] = {"layer": [], "rank": [], "slot": []}
        for li, lay in enumerate(self.layers):
            for r, dev in enumerate(lay):
                for s, e in enumerate(dev):
                    if r < self.dangling or e == self.shared_id:
                        rows["layer"].append(li)
                        rows["rank"].append(r)
                        rows["slot"].append(s)
        return pl.DataFrame(rows, schema={"layer": pl.Int32, "rank": pl.Int32, "slot": pl.Int32})

    def frame(self) -> pl.DataFrame:
        """(layer, rank, slot, expert) of every routed slot; shared-expert slots and dangling devices left out."""
        rows: dict[str, list[int]] = {"layer": [], "rank": [], "slot": [], "expert": []}
        for li, lay in enumerate(self.layers):
            for r, dev in enumerate(lay):
                if r < self.dangling:
                    continue
                for s, e in enumerate(dev):
                    if e == self.shared_id:
                        continue
                    rows["layer"].append(li)
                    rows["rank"].append(r)
                    rows["slot"].append(s)
                    rows["expert"].append(e)
        return pl.DataFrame(rows, schema={"layer": pl.Int32, "rank": pl.Int32, "slot": pl.Int32, "expert": pl.Int32})


def _shared(layers: list[list[list[int]]], dangling: int, n_routed: int | None) -> int | None:
    """The shared expert's id: ``n_routed`` when the table holds it, else the highest id when it sits on every
    device of every layer and the ids below it are all present (MindIE ``mix_shared_routing``)."""
    top = max((e for lay in layers for dev in lay for e in dev), default=-1)
    if n_routed is not None:
        return n_routed if top >= n_routed else None
    if top <= 0:
        return None
    for lay in layers:
        devs = lay[dangling:]
        if not devs or not all(top in dev for dev in devs):
            return None
        if {e for dev in devs for e in dev} != set(range(top + 1)):
            return None
    return top


def read_map(src: SourceFile, n_routed: int | None = None, dangling: int | None = None) -> Placement | Refused | None:
    """The map of ``src``, checked: a list of layers, each with the same number of devices, ids that are
    experts; None for a JSON without ``layer_list`` (not a map). ``n_routed`` and ``dangling`` come from
    ``model_gen_config.json`` when there is one."""
    if (src.size or 0) > MAX_JSON_BYTES:
        return refuse(src.path, "too_big", max=MAX_JSON_BYTES)
    try:
        data = json_loads(src.read())  # bounded: depth, digits, non-finite numbers (diagnose/bounded.py)
        if not isinstance(data, dict) or "layer_list" not in data:
            return None  # some other JSON: not a map at all
        layers = sorted(data["layer_list"], key=lambda x: int(x.get("layer_id", 0)))
        out: list[list[list[int]]] = []
        ids = 0
        for lay in layers:
            devs = sorted(lay["device_list"], key=lambda x: int(x["device_id"]))
            row = []
            for d in devs:
                got = d["device_expert"]
                if not isinstance(got, list) or len(got) > MAX_SLOTS:
                    return refuse(src.path, "bad_map", layer=len(out))
                if any(isinstance(e, bool) or not isinstance(e, int) or not 0 <= e <= MAX_EXPERTS for e in got):
                    return refuse(src.path, "bad_map", layer=len(out))
                ids += len(got)
                row.append(list(got))
            out.append(row)
            if ids > MAX_IDS or len(out) > MAX_LAYERS or len(row) > MAX_RANKS:
                return refuse(src.path, "too_big", max=MAX_IDS)
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return refuse(src.path, "bad_map", layer="-")
    if not out or not out[0] or any(len(lay) != len(out[0]) for lay in out):
        return refuse(src.path, "bad_map", layer="-")
    if dangling is None:  # leading [0] devices, when the other devices hold more than one slot
        dangling = 0
        while dangling < len(out[0]) - 1 and all(lay[dangling] == [0] for lay in out) and len(out[0][-1]) > 1:
            dangling += 1
    return Placement(out, f"map:{src.path}", _shared(out, dangling, n_routed), dangling)


def contiguous(n_layers: int, slots: dict[int, int], n_routed: int | None = None, dangling: int = 0) -> Placement:
    """Expert ids in rank order, one per slot: the placement when no map is given. With ``model_gen_config.json``
    (``n_routed`` = ``num_of_experts``, ``dangling`` = ``num_dangling_shared_experts``) the MindIE layout is kept:
    the first ``dangling`` devices hold only the shared expert, and when the other devices have one slot each
    beyond the routed experts, that last slot is the shared expert (MindIE's own table appends id ``n_routed`` to
    every device list with mix_shared_routing: MindIE-LLM ``moe_utils.py:171-199``)."""
    ranks = sorted(slots)
    n_ranks = (max(ranks) + 1) if ranks else 0
    width = max(slots.values(), default=0)
    per_rank = [slots.get(r, width) for r in range(n_ranks)]
    dangling = min(dangling, n_ranks)
    routed_ranks = range(dangling, n_ranks)
    shared = bool(n_routed) and sum(per_rank[r] for r in routed_ranks) == n_routed + len(routed_ranks)
    layer: list[list[int]] = [[n_routed or 0] * per_rank[r] for r in range(dangling)]
    nxt = 0
    for r in routed_ranks:
        k = per_rank[r] - (1 if shared else 0)
        layer.append(list(range(nxt, nxt + k)) + ([n_routed] if shared else []))
        nxt += k
    shared_id = n_routed if (shared or dangling) else None
    return Placement([layer for _ in range(n_layers)], "contiguous", shared_id, dangling)


def map_json(maps: list[list[list[int]]], shared_id: int | None = None, dangling: int = 0) -> dict:
    """The map schema, with the shared expert and dangling devices of the current map carried over."""
    layer_list = []
    for li, devs in enumerate(maps):
        full = [[0] for _ in range(dangling)] + [list(d) + ([shared_id] if shared_id is not None else []) for d in devs]
        layer_list.append({"layer_id": li, "device_count": len(full),
                           "device_list": [{"device_id": d, "device_expert": exps} for d, exps in enumerate(full)]})
    return {"moe_layer_count": len(maps), "layer_list": layer_list}
