"""A curve panel of many engines: their median and range as a band, and the engines furthest from the median.

A data-parallel DeepSeek deployment runs 8, 16 or 32 engines; one line each (two signals per panel for the
throughput) is a tangle in which no engine can be followed and the legend outgrows the plot. Above ``MANY``
engines a panel draws instead, per signal:

* the middle 80% of the engines (10th to 90th percentile of their values, per time bucket) as a shaded band: the
  lowest-to-highest range would stretch to the one engine out and hide how the others spread,
* their median as a line,
* the ``NAMED`` engines furthest from the median (mean absolute distance over the buckets) as their own lines,
  with every sample (downsampled like any curve), so the odd engine out is named and can be followed.

A signal with fewer than ``FEW`` samples per engine (a value derived once per engine) has nothing to band: its
values are one trace of dots, each hover naming its engine.

Buckets: the panel's time span cut into at most ``BUCKETS`` equal parts; an engine's value in a bucket is the
mean of its samples there, and a bucket counts only the engines that have a sample in it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import polars as pl

from diagnose.messages import Messages
from diagnose.report.page.kit import e
from diagnose.report.page.markup import plot_time

MANY = 6  # more engines than this in one panel: a band, the median and the named engines
NAMED = 3
BAND = (0.1, 0.9)  # the band: the middle 80% of the engines (the ones outside it are those named)
FEW = 4  # fewer samples per engine than this (a value derived once per engine): one dot per engine instead
STRAY = 0.25  # an engine is named when it is at least this fraction as far from the median as the furthest
BUCKETS = 240
_COLOURS = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b")  # band and median per signal
_NAMED_COLOURS = ("#ff7f0e", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#d4a017")  # not the thresholds' red


def engine_key() -> pl.Expr:
    """One engine of a panel: its node and its engine id (either may be missing)."""
    return pl.concat_str([pl.col("node"), pl.col("engine")], separator=" ", ignore_nulls=True).fill_null("")


def engine_count(part: pl.DataFrame) -> int:
    return part.select(engine_key().n_unique()).item()


def buckets(part: pl.DataFrame, n: int = BUCKETS) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per signal and bucket: its middle time, the engines' median, lowest and highest mean value, and per
    engine its mean (``per_engine``: signal, who, bucket, value)."""
    t0, t1 = part["ts"].min(), part["ts"].max()
    # no finer than about two samples of an engine per bucket, so every engine has a value in most buckets
    samples = part.group_by(["signal", "node", "engine"]).len()["len"].median() or 2
    n = int(max(2, min(n, samples // 2)))
    span = max((t1 - t0) / timedelta(microseconds=1), 1.0)
    width = span / n
    per_engine = (part.with_columns(who=engine_key(),
                                    bucket=((pl.col("ts") - t0).dt.total_microseconds() / width).floor()
                                    .clip(0, n - 1).cast(pl.Int32))
                  .group_by(["signal", "who", "bucket"]).agg(pl.col("value").mean()))
    stats = (per_engine.group_by(["signal", "bucket"])
             .agg(median=pl.col("value").median(), low=pl.col("value").quantile(BAND[0], "linear"),
                  high=pl.col("value").quantile(BAND[1], "linear"))
             .sort(["signal", "bucket"])
             .with_columns(mid=pl.lit(t0) + pl.duration(microseconds=((pl.col("bucket") + 0.5) * width).round())))
    return stats, per_engine


def furthest(stats: pl.DataFrame, per_engine: pl.DataFrame, k: int = NAMED) -> dict[str, list[str]]:
    """signal -> at most ``k`` engines furthest from the median (mean absolute distance over the buckets),
    furthest first. Only engines at least ``STRAY`` as far as the furthest are named, so one odd engine out in
    a crowd that agrees stands alone; engines that never leave the median are not named."""
    dist = (per_engine.join(stats.select("signal", "bucket", "median"), on=["signal", "bucket"])
            .group_by(["signal", "who"]).agg(d=(pl.col("value") - pl.col("median")).abs().mean())
            .filter(pl.col("d") > 0)
            .filter(pl.col("d") >= STRAY * pl.col("d").max().over("signal"))
            .sort(["signal", "d", "who"], descending=[False, True, False]))
    return {sig: g["who"].head(k).to_list() for (sig,), g in dist.group_by("signal", maintain_order=True)}


def crowd_traces(part: pl.DataFrame, sigs: tuple[str, ...], max_points: int, msg: Messages,
                 downsample: Callable[[list, list, int], tuple[list, list]]
                 ) -> tuple[list[Any], list[float], list[str], int, dict[str, list[str]]]:
    """The traces of a crowded panel, the values they span, their first and last times, the samples cut by
    downsampling (``downsample`` is the curves' own) and the engines named per banded signal (a signal drawn
    as dots has no entry)."""
    import plotly.graph_objects as go  # deferred: plotly (only for the HTML pages)

    n = engine_count(part)
    stats, per_engine = buckets(part, max(2, min(BUCKETS, max_points // 2)))
    named = {sig: [] for sig in sigs} | furthest(stats, per_engine)
    traces: list[Any] = []
    values: list[float] = []
    times: list[str] = []
    cut = 0
    for i, sig in enumerate(s for s in sigs if s in set(stats["signal"].to_list())):
        prefix = f"{sig} " if len(sigs) > 1 else ""
        rows = part.filter(pl.col("signal") == sig).with_columns(who=engine_key())
        if (rows.group_by("who").len()["len"].median() or 0) < FEW:
            named.pop(sig, None)
            dots = e(prefix + msg("page.curves.engines", n=n))
            xs = [plot_time(t) for t in rows["ts"].to_list()]
            traces.append(go.Scatter(x=xs, y=rows["value"].to_list(), mode="markers", name=dots,
                                     text=[e(w) for w in rows["who"].to_list()],
                                     marker={"color": _COLOURS[i % len(_COLOURS)], "size": 7},
                                     meta={"kind": "curve", "signal": sig, "engines": n},
                                     hovertemplate="%{x}<br>%{y}<extra>%{text}</extra>"))
            values += [rows["value"].min(), rows["value"].max()]
            times += [min(xs), max(xs)]
            continue
        st = stats.filter(pl.col("signal") == sig)
        xs = [plot_time(t) for t in st["mid"].to_list()]
        low, high, med = st["low"].to_list(), st["high"].to_list(), st["median"].to_list()
        colour = _COLOURS[i % len(_COLOURS)]
        band = e(prefix + msg("page.curves.band", n=n))
        traces.append(go.Scatter(x=xs, y=low, mode="lines", line={"width": 0, "color": colour}, showlegend=False,
                                 hoverinfo="skip", legendgroup=f"band-{sig}", meta={"kind": "band-low", "signal": sig}))
        traces.append(go.Scatter(x=xs, y=high, mode="lines", line={"width": 0, "color": colour}, fill="tonexty",
                                 fillcolor=_translucent(colour), name=band, legendgroup=f"band-{sig}",
                                 customdata=low, meta={"kind": "band", "signal": sig, "engines": n},
                                 hovertemplate="%{customdata:.4g} – %{y:.4g}<extra>" + band + "</extra>"))
        median = e(prefix + msg("page.curves.median", n=n))
        traces.append(go.Scatter(x=xs, y=med, mode="lines", name=median, line={"color": colour, "width": 2},
                                 meta={"kind": "median", "signal": sig, "engines": n},
                                 hovertemplate="%{y:.4g}<extra>" + median + "</extra>"))
        values += [min(low), max(high)]
        times += [xs[0], xs[-1]]
        for j, who in enumerate(named.get(sig, [])):
            g = part.filter((pl.col("signal") == sig) & (engine_key() == who)).sort("ts")
            gx, gy = [plot_time(t) for t in g["ts"].to_list()], g["value"].to_list()
            if len(gx) > max_points:
                cut += len(gx) - max_points
                gx, gy = downsample(gx, gy, max_points)
            name = e(prefix + who)
            colour_j = _NAMED_COLOURS[(i * NAMED + j) % len(_NAMED_COLOURS)]
            traces.append(go.Scatter(x=gx, y=gy, mode="lines+markers" if len(gx) < 60 else "lines", name=name,
                                     line={"color": colour_j, "width": 1.5},
                                     meta={"kind": "curve", "signal": sig, "furthest": j + 1},
                                     hovertemplate="%{x}<br>%{y}<extra>" + name + "</extra>"))
            values += [min(gy), max(gy)]
            times += [gx[0], gx[-1]]
    return traces, values, times, cut, named


def _translucent(colour: str, alpha: float = 0.2) -> str:
    r, g, b = (int(colour[k:k + 2], 16) for k in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"
