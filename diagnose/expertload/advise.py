"""``--advise``: is an EPLB trial worth running on this load, from loads collected with EPLB off?

The question and the shape of the answer follow vllm-ascend RFC #16795 and PR #16800 (reference
live-and-fleet.md §5): look at complete windows only, ask whether the rank imbalance and the hot experts persist
from one window to the next, fit a placement on one window and score it on the next, and answer
``recommend_trial``, ``not_recommended_now`` or ``insufficient_evidence``. Here a window is a day of the report.

* ``windows``: at least ``MIN_WINDOWS`` days with load, else the evidence is insufficient.
* ``rank_imbalance``: the share of layers whose measured rank max/mean is over the target on at least two thirds
  of the days (it supports a trial from ``MIN_PERSISTENT_SHARE``).
* ``hot_overlap``: per layer, the hot experts (at least twice the layer mean) of one day against the next
  (Jaccard), averaged; a placement fitted on yesterday helps today only when the hot set stays.
* ``holdout``: for each pair of consecutive days, a placement fitted on the first (placement.py, with the
  current redundancy, then one more expert per rank) is scored on the second, against the second day's measured
  ratio. The smallest redundancy whose held-out worst layer reaches the target is reported.
* ``eplb_running``: EPLB log lines were found, so loads may already be rebalanced (the evidence is then weaker).

A trial is recommended when the held-out placement lowers the measured mean over layers of the rank max/mean by
``MIN_GAIN`` or more (MoE step time follows the slowest rank of each layer, summed over layers) and either the
imbalance or the hot set persists; else it is not recommended now. Timing (the cost of moving weights against the gain in step time) is not collected: the answer says so.
"""

from __future__ import annotations

from diagnose.expertload.placement import max_over_mean, place_layer, rank_loads
from diagnose.model.expertload import Advice, AdviceCheck

MIN_WINDOWS = 2
MIN_PERSISTENT_SHARE = 0.25
MIN_OVERLAP = 0.5
MIN_GAIN = 0.05
HOT = 2.0


def _hot(row: list[float]) -> set[int]:
    mean = sum(row) / len(row) if row else 0.0
    return {e for e, v in enumerate(row) if mean > 0 and v >= HOT * mean}


def _holdout(days: list[list[list[float]]], measured: list[list[float | None]], n_ranks: int,
             redundant: int) -> tuple[float, float, float]:
    """(measured mean, estimated mean, estimated worst) of the held-out days, over layers and day pairs."""
    got_m, got_e, worst = [], [], 0.0
    for i in range(len(days) - 1):
        fit, score = days[i], days[i + 1]
        for li, (w_fit, w_next) in enumerate(zip(fit, score)):
            m = measured[i + 1][li] if li < len(measured[i + 1]) else None
            if m is None or not sum(w_fit) or not sum(w_next):
                continue
            est = max_over_mean(rank_loads(w_next, place_layer(w_fit, n_ranks, redundant)))
            if est is None:
                continue
            got_m.append(m)
            got_e.append(est)
            worst = max(worst, est)
    if not got_m:
        return 0.0, 0.0, 0.0
    return sum(got_m) / len(got_m), sum(got_e) / len(got_e), worst


def advise(days: list[list[list[float]]], measured: list[list[float | None]], n_ranks: int, target: float,
           current_redundant: int, eplb_running: bool) -> Advice:
    """``days``: per day, per main layer, the tokens of each logical expert; ``measured``: per day, per layer,
    the measured rank max/mean."""
    checks = [AdviceCheck("windows", len(days) >= MIN_WINDOWS, {"n": float(len(days)), "min": float(MIN_WINDOWS)})]
    if len(days) < MIN_WINDOWS or n_ranks < 2 or not days[0]:
        return Advice(verdict="insufficient_evidence", windows=len(days), checks=checks)
    n_layers = len(days[0])
    over = 0
    for li in range(n_layers):
        vals = [m[li] for m in measured if li < len(m) and m[li] is not None]
        if vals and sum(v > target for v in vals) >= 2 * len(vals) / 3:
            over += 1
    share = over / n_layers
    imbalance = share >= MIN_PERSISTENT_SHARE
    checks.append(AdviceCheck("rank_imbalance", imbalance, {"layers": float(over), "of": float(n_layers),
                                                            "share": round(100 * share, 1), "target": target}))
    overlaps, persistent = [], 0
    for li in range(n_layers):
        sets = [_hot(d[li]) for d in days]
        if all(sets) and set.intersection(*sets):
            persistent += 1
        for a, b in zip(sets, sets[1:]):
            if a or b:
                overlaps.append(len(a & b) / len(a | b))
    overlap = sum(overlaps) / len(overlaps) if overlaps else 0.0
    stable = overlap >= MIN_OVERLAP and persistent > 0
    checks.append(AdviceCheck("hot_overlap", stable if overlaps else None,
                              {"overlap": round(overlap, 3), "layers": float(persistent)}))
    step = n_ranks
    best = None
    red = current_redundant
    for red in (current_redundant, current_redundant + step, current_redundant + 2 * step):
        n_exp = len(days[0][0])
        if (n_exp + red) % n_ranks:
            continue
        m, e, worst = _holdout(days, measured, n_ranks, red)
        best = (red, m, e, worst)
        if worst <= target:
            break
    if best is None:
        return Advice(verdict="insufficient_evidence", windows=len(days), checks=checks)
    red, m, e, worst = best
    gain = (m - e) / m if m else 0.0
    helps = gain >= MIN_GAIN
    checks.append(AdviceCheck("holdout", helps, {"measured": round(m, 4), "estimated": round(e, 4),
                                                 "worst": round(worst, 4), "gain": round(100 * gain, 1),
                                                 "redundant": float(red)}))
    if eplb_running:
        checks.append(AdviceCheck("eplb_running", None, {}))
    # The held-out gain is the evidence that counts (it is the step time lost to the slowest rank, summed over
    # layers); persistence, of the imbalance or of the hot set, says the gain will hold past the next day.
    verdict = "recommend_trial" if helps and (imbalance or stable) else "not_recommended_now"
    return Advice(verdict=verdict, windows=len(days), checks=checks, redundant_experts=red if helps else None)
