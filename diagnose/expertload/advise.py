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
* ``today``: the last day's measured rank max/mean (mean and worst layer): what the imbalance costs now.
* ``phases``: per layer, the hot experts of prefill against decode (Jaccard), averaged: a placement serves both
  phases only when they share their hot experts (MindIE dumps them apart; sources without stages say nothing).
* ``holdout``: for each pair of consecutive days, a placement fitted on the first (placement.py) is scored on the
  second, against the second day's measured ratio, with the current redundancy, one and two more experts per
  rank (0, 16 and 32 on 16 ranks): every option is in ``options``. The smallest redundancy whose held-out worst
  layer reaches the target is the one reported, else the one with the best gain.
* ``conditions``: what would change the answer, with the levels it is decided at and the values measured.
* ``eplb_running``: EPLB log lines were found, so loads may already be rebalanced (the evidence is then weaker).

A trial is recommended when the held-out placement lowers the measured mean over layers of the rank max/mean by
``MIN_GAIN`` or more (MoE step time follows the slowest rank of each layer, summed over layers) and either the
imbalance or the hot set persists; else it is not recommended now. Timing (the cost of moving weights against the gain in step time) is not collected: the answer says so.
"""

from __future__ import annotations

from diagnose.expertload.placement import max_over_mean, place_layer, rank_loads
from diagnose.model.expertload import Advice, AdviceCheck, AdviceOption

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
           current_redundant: int, eplb_running: bool, phases: dict[str, list[list[float]]] | None = None) -> Advice:
    """``days``: per day, per main layer, the tokens of each logical expert; ``measured``: per day, per layer,
    the measured rank max/mean; ``phases``: per stage (prefill, decode), per main layer, the window's tokens of
    each logical expert."""
    checks = [AdviceCheck("windows", len(days) >= MIN_WINDOWS, {"n": float(len(days)), "min": float(MIN_WINDOWS)})]
    if len(days) < MIN_WINDOWS or n_ranks < 2 or not days[0]:
        return Advice(verdict="insufficient_evidence", windows=len(days), checks=checks,
                      conditions=[AdviceCheck("needs_data", None, {"min": float(MIN_WINDOWS)})])
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
    checks += _today(measured, target)
    checks += _phases(phases or {})
    step = n_ranks
    n_exp = len(days[0][0])
    options = []
    for red in (current_redundant, current_redundant + step, current_redundant + 2 * step):
        if (n_exp + red) % n_ranks:
            continue
        m, e, worst = _holdout(days, measured, n_ranks, red)
        options.append(AdviceOption(red, round(m, 4), round(e, 4), round(worst, 4),
                                    round(100 * (m - e) / m, 1) if m else 0.0))
    if not options:
        return Advice(verdict="insufficient_evidence", windows=len(days), checks=checks,
                      conditions=[AdviceCheck("needs_data", None, {"min": float(MIN_WINDOWS)})])
    # the smallest redundancy whose held-out worst layer reaches the target, else the best held-out gain
    best = next((o for o in options if o.worst <= target), max(options, key=lambda o: o.gain))
    helps = best.gain >= 100 * MIN_GAIN
    checks.append(AdviceCheck("holdout", helps, {"measured": best.measured, "estimated": best.estimated,
                                                 "worst": best.worst, "gain": best.gain,
                                                 "redundant": float(best.redundant_experts)}))
    if eplb_running:
        checks.append(AdviceCheck("eplb_running", None, {}))
    # The held-out gain is the evidence that counts (it is the step time lost to the slowest rank, summed over
    # layers); persistence, of the imbalance or of the hot set, says the gain will hold past the next day.
    verdict = "recommend_trial" if helps and (imbalance or stable) else "not_recommended_now"
    levels = {"gain": best.gain, "min_gain": 100 * MIN_GAIN, "share": round(100 * share, 1),
              "min_share": 100 * MIN_PERSISTENT_SHARE, "overlap": round(overlap, 3), "min_overlap": MIN_OVERLAP,
              "redundant": float(best.redundant_experts)}
    conditions = [AdviceCheck("if_recommended" if verdict == "recommend_trial" else "if_not_recommended", None, levels)]
    return Advice(verdict=verdict, windows=len(days), checks=checks, options=options, conditions=conditions,
                  redundant_experts=best.redundant_experts if helps else None)


def _today(measured: list[list[float | None]], target: float) -> list[AdviceCheck]:
    """The imbalance of the last day: what the hot experts cost now, before any rebalancing."""
    last = [m for m in (measured[-1] if measured else []) if m is not None]
    if not last:
        return []
    over = sum(m > target for m in last)
    return [AdviceCheck("today", over > 0, {"mean": round(sum(last) / len(last), 4), "worst": round(max(last), 4),
                                            "over": float(over), "of": float(len(last)), "target": target})]


def _phases(phases: dict[str, list[list[float]]]) -> list[AdviceCheck]:
    """Whether prefill and decode make the same experts hot: one placement serves both only when they do."""
    if not {"prefill", "decode"} <= set(phases):
        return []
    overlaps, same = [], 0
    for a_row, b_row in zip(phases["prefill"], phases["decode"]):
        a, b = _hot(a_row), _hot(b_row)
        if a or b:
            overlaps.append(len(a & b) / len(a | b))
            same += bool(a & b)
    if not overlaps:
        return [AdviceCheck("phases", None, {"overlap": 0.0, "layers": 0.0})]
    overlap = sum(overlaps) / len(overlaps)
    return [AdviceCheck("phases", overlap >= MIN_OVERLAP, {"overlap": round(overlap, 3), "layers": float(same)})]
