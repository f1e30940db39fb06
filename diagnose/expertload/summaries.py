"""The parts of the expert-load result that describe the inputs rather than the load: which windows were
counted (``counting``), which files are missing (``missing``), and the EPLB log values (``EPLB_SIGNALS``,
``eplb``)."""

from __future__ import annotations

from datetime import date

import polars as pl

from diagnose.expertload import gauges
from diagnose.model.expertload import (
    Counting, Eplb, EplbPoint, EplbSignal, FileStat, Missing, NotCounted, RankFile,
)


def rnd(x: float | None, n: int = 8) -> float | None:
    return None if x is None else round(float(x), n)


def counting(files: list[FileStat], since: date, until: date, stage: str, max_intervals: float,
             first_window: str = "auto") -> Counting:
    """Which windows (one per dump block) were counted, in the report window, and why the others were not."""
    lo, hi = since.isoformat(), until.isoformat()
    inside = [f for f in files if f.day and lo <= f.day <= hi and (stage == "all" or f.stage == stage)]
    first: dict[str, int] = {}
    for f in inside:
        if f.first:
            first[f.first] = first.get(f.first, 0) + 1
    not_counted = [NotCounted(path=f.path, day=f.day, stage=f.stage, rank=f.rank, first=f.first, ratio=f.ratio,
                              previous_day=f.previous_day, repeated=f.repeated)
                   for f in inside if f.first and not f.first_counted]
    windows = sum(f.windows for f in inside)
    counted = sum(f.counted for f in inside)
    repeated = sum(f.repeated for f in inside if f.first == "repeat")
    return Counting(max_intervals=max_intervals, first_window=first_window, files=len(inside), windows=windows, counted=counted,
                    not_counted=windows - counted - repeated, repeated=repeated, first_windows=dict(sorted(first.items())),
                    first_windows_not_counted=not_counted)


def missing(loads: pl.DataFrame, files: list[FileStat], cal: list[date], win_days: list[date], since: date,
            until: date) -> Missing:
    """Calendar days without a dump, and rank files absent on a day that other ranks of the stage have."""
    out = []
    per_stage = loads.select("stage", "rank").unique()
    for st in sorted(set(per_stage["stage"].to_list())):
        ranks_seen = set(per_stage.filter(pl.col("stage") == st)["rank"].to_list())
        ranks_seen |= {f.rank for f in files if f.stage == st}
        present = {(f.day, f.rank) for f in files if f.stage == st}
        for d in sorted({f.day for f in files if f.stage == st and f.day}):
            if since.isoformat() <= d <= until.isoformat():
                out += [RankFile(d, st, r) for r in sorted(ranks_seen) if (d, r) not in present]
    return Missing(days=[d.isoformat() for d in cal if d not in win_days], rank_files=out)


# The EPLB values of the serving logs and /metrics snapshots that the report shows, read through the parsers
# (pipeline.read_signals) by ``diagnose expert-load`` and by a fleet's extraction alike: vllm-ascend's hotness
# imbalance (log line or gauges), vLLM's and SGLang's balancedness, MindIE FlashLB's ratios
# (parsers/kinds/vllm_signals.py, mindie.py, prometheus_eplb.py); and the per-layer metrics that give days without
# a dump their trend (gauges.py).
EPLB_SIGNALS = ("eplb_imbalance_current_mean", "eplb_imbalance_current_max", "eplb_imbalance_updated_mean",
                "eplb_imbalance_updated_max", "eplb_balancedness", "eplb_pass_balancedness",
                "eplb_balancedness_last_1000", "flashlb_cur_par", "flashlb_new_par", *gauges.SIGNALS)
# Values where lower is worse (an even load is 1.0); for the others (imbalance, peak-to-average) higher is worse.
BALANCEDNESS = ("eplb_balancedness", "eplb_pass_balancedness", "eplb_balancedness_last_1000")
PER_LAYER = gauges.SIGNALS  # per layer: the trend's, not the summary's


def eplb(frame: pl.DataFrame | None) -> Eplb:
    """EPLB values (vllm-ascend hotness imbalance, vLLM and SGLang balancedness, MindIE FlashLB): per signal count,
    last, worst; series. The per-layer metrics go to the trend instead (gauges.py)."""
    if frame is not None and frame.height:
        frame = frame.filter(~pl.col("signal").is_in(PER_LAYER))
    if frame is None or frame.height == 0:
        return Eplb()
    signals = {}
    for name in sorted(set(frame["signal"].to_list())):
        v = frame.filter(pl.col("signal") == name)["value"]
        worst = v.min() if name in BALANCEDNESS else v.max()
        signals[name] = EplbSignal(v.len(), rnd(v[-1]), rnd(worst))
    series = [EplbPoint(r["ts"].isoformat(sep=" ") if r["ts"] else None, r["signal"], rnd(r["value"]))
              for r in frame.head(5000).iter_rows(named=True)]
    return Eplb(signals, series)
