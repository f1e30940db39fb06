"""A suggested expert map from measured loads, and what it would do to the per-rank load.

Method (per MoE layer, on the window's token counts per logical expert):

1. Replication: every expert gets one replica; then, ``n_redundant`` times, the expert with the highest load
   per replica gets one more (ties: lower expert id). An expert never gets more replicas than there are
   ranks (two replicas of one expert on one NPU is an error in vllm-ascend).
2. Placement: longest-processing-time bin packing. Replicas, sorted by their load (an expert's load split
   evenly over its replicas) from high to low, each go to the least-loaded rank that still has a free slot
   and does not already hold that expert (ties: lower rank id). Every rank gets
   ``(experts + n_redundant) / ranks`` slots; vllm-ascend requires that division to be exact.
3. The number of redundant experts is the smallest multiple of the rank count (0, R, 2R, ...) whose
   placement brings the worst layer's rank max/mean under the target.

The "after" numbers assume a replicated expert's tokens split evenly over its replicas, which is how
vllm-ascend and MindIE route to redundant experts on average.
"""

from __future__ import annotations

import heapq
from typing import Any


def replicate(loads: list[float], n_redundant: int, n_ranks: int) -> list[int]:
    counts = [1] * len(loads)
    heap = [(-w, e) for e, w in enumerate(loads)]
    heapq.heapify(heap)
    for _ in range(n_redundant):
        while heap:
            _, e = heapq.heappop(heap)
            if counts[e] < n_ranks:
                break
        else:
            break
        counts[e] += 1
        if counts[e] < n_ranks:
            heapq.heappush(heap, (-loads[e] / counts[e], e))
    return counts


def place_layer(loads: list[float], n_ranks: int, n_redundant: int) -> list[list[int]]:
    """Device -> logical experts (slot order: by expert id) for one layer."""
    n_exp = len(loads)
    per_rank = (n_exp + n_redundant) // n_ranks
    counts = replicate(loads, n_redundant, n_ranks)
    items = sorted(((loads[e] / counts[e], e) for e in range(n_exp) for _ in range(counts[e])),
                   key=lambda x: (-x[0], x[1]))
    devices: list[list[int]] = [[] for _ in range(n_ranks)]
    held: list[set[int]] = [set() for _ in range(n_ranks)]
    rank_load = [0.0] * n_ranks
    heap = [(0.0, r) for r in range(n_ranks)]  # (load, rank) of ranks with a free slot
    for w, e in items:
        skipped, best = [], None
        while heap:
            load, r = heapq.heappop(heap)
            if load != rank_load[r] or len(devices[r]) >= per_rank:
                continue  # stale entry
            if e in held[r]:
                skipped.append((load, r))
                continue
            best = r
            break
        for item in skipped:
            heapq.heappush(heap, item)
        if best is None:  # every rank with room holds e already: swap with a rank that does not
            best = _make_room(devices, held, rank_load, loads, counts, e, per_rank)
            heap = [(rank_load[r], r) for r in range(n_ranks) if len(devices[r]) < per_rank and r != best]
            heapq.heapify(heap)
        devices[best].append(e)
        held[best].add(e)
        rank_load[best] += w
        if len(devices[best]) < per_rank:
            heapq.heappush(heap, (rank_load[best], best))
    return [sorted(d) for d in devices]


def _make_room(devices, held, rank_load, loads, counts, e, per_rank) -> int:
    free = next(r for r in range(len(devices)) if len(devices[r]) < per_rank)
    for q in range(len(devices)):
        if e in held[q]:
            continue
        for x in list(devices[q]):
            if x not in held[free]:
                devices[q].remove(x)
                held[q].discard(x)
                devices[free].append(x)
                held[free].add(x)
                shift = loads[x] / counts[x]
                rank_load[q] -= shift
                rank_load[free] += shift
                return q
    return free


def rank_loads(loads: list[float], devices: list[list[int]]) -> list[float]:
    """Per-rank tokens when each expert's load splits evenly over its replicas."""
    counts: dict[int, int] = {}
    for dev in devices:
        for e in dev:
            counts[e] = counts.get(e, 0) + 1
    return [sum(loads[e] / counts[e] for e in dev if e < len(loads)) for dev in devices]


def max_over_mean(values: list[float]) -> float | None:
    if not values:
        return None
    mean = sum(values) / len(values)
    return max(values) / mean if mean > 0 else None


def recommend(layer_loads: list[list[float]], n_ranks: int, target: float, max_redundant: int | None = None) -> dict[str, Any]:
    """Try 0, R, 2R, ... redundant experts; return the first placement whose worst layer is under ``target``."""
    n_exp = len(layer_loads[0]) if layer_loads else 0
    if n_ranks <= 0 or n_exp == 0:
        return {"reached": False, "reason": "no load data"}
    cap = max_redundant if max_redundant is not None else n_exp
    start = (-n_exp) % n_ranks  # make (experts + redundant) divisible by the rank count
    tried = []
    best = None
    for n_red in range(start, cap + 1, n_ranks):
        maps = [place_layer(w, n_ranks, n_red) for w in layer_loads]
        ratios = [max_over_mean(rank_loads(w, m)) for w, m in zip(layer_loads, maps)]
        vals = [r for r in ratios if r is not None]
        worst = max(vals) if vals else 1.0
        mean = sum(vals) / len(vals) if vals else 1.0
        tried.append({"redundant_experts": n_red, "max_over_mean_worst_layer": round(worst, 4),
                      "max_over_mean_layer_mean": round(mean, 4)})
        cand = {"redundant_experts": n_red, "maps": maps, "ratios": ratios, "worst": worst, "mean": mean}
        if best is None or worst < best["worst"] - 1e-9:
            best = cand
        if worst <= target:
            best = cand
            break
    assert best is not None
    return {
        "reached": best["worst"] <= target,
        "redundant_experts": best["redundant_experts"],
        "slots_per_rank": (n_exp + best["redundant_experts"]) // n_ranks,
        "per_layer_after": best["ratios"],
        "after_worst": best["worst"],
        "after_mean": best["mean"],
        "tried": tried,
        "maps": best["maps"],
    }
