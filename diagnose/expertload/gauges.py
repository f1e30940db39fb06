"""A per-layer daily rank imbalance from the EPLB metrics, for the days no dump covers.

Two metrics carry one layer's rank-level load (parsers/kinds/prometheus_eplb.py, where their sources are named):

* vllm-ascend's gauge ``eplb:expert_hotness:imbalance{phase="current",layer}`` (signal ``eplb_layer_imbalance``):
  the layer's rank max/mean in the last EPLB cycle, each expert's hotness split over its replicas, which is the
  report's ``rank_max_over_mean``. A snapshot holds the value of the last cycle, so the day's value is the mean of
  the day's snapshots (a time-weighted mean of the cycles when the scrapes are regular).
* SGLang's histogram ``sglang:eplb_gpu_physical_count{layer}`` (signal ``eplb_gpu_physical_count``, engine
  ``layer <n> rank <r>``): selections per GPU rank since the server started. Between two snapshots a rank served
  the difference (the counts of a snapshot where one fell restarted, and count whole); a day's increments per
  layer and rank give the layer's rank max/mean of that day. The first snapshot covers an unknown span since the
  start and is a baseline, unless it is the only one.

The layer numbers are the metrics' own: vllm-ascend numbers MoE layers, SGLang its model's decoder layers.
"""

from __future__ import annotations

import polars as pl

from diagnose.model.expertload import DayLayer, DayStats, ExpertLoadResult, LayerStats, Summary, TrendCell

LAYER_GAUGE = "eplb_layer_imbalance"
GPU_COUNT = "eplb_gpu_physical_count"
SIGNALS = (LAYER_GAUGE, GPU_COUNT)
SCHEMA = {"day": pl.Date, "layer": pl.Int32, "rank_max_over_mean": pl.Float64, "samples": pl.Int64}


def layer_days(eplb: pl.DataFrame | None) -> pl.DataFrame:
    """(day, layer, rank_max_over_mean, samples) from the per-layer EPLB metrics of ``eplb`` (ts, signal, value,
    engine); empty when there are none or they are not dated."""
    if eplb is None or eplb.height == 0 or "engine" not in eplb.columns:
        return pl.DataFrame(schema=SCHEMA)
    rows = eplb.filter(pl.col("signal").is_in(SIGNALS) & pl.col("ts").is_not_null())
    parts = [_gauge(rows.filter(pl.col("signal") == LAYER_GAUGE)), _counts(rows.filter(pl.col("signal") == GPU_COUNT))]
    out = pl.concat([p for p in parts if p.height], how="vertical_relaxed") if any(p.height for p in parts) else None
    if out is None:
        return pl.DataFrame(schema=SCHEMA)
    # both kinds for one day and layer (unlikely): the gauge's value, which EPLB itself computed
    return out.sort("day", "layer", "kind").unique(["day", "layer"], keep="first", maintain_order=True).select(list(SCHEMA))


def _gauge(rows: pl.DataFrame) -> pl.DataFrame:
    if rows.height == 0:
        return rows
    return (rows.with_columns(day=pl.col("ts").dt.date(),
                              layer=pl.col("engine").str.extract(r"^layer (\d+)$", 1).cast(pl.Int32, strict=False))
            .filter(pl.col("layer").is_not_null())
            .group_by("day", "layer").agg(rank_max_over_mean=pl.col("value").mean(), samples=pl.len())
            .with_columns(kind=pl.lit(0)))


def _counts(rows: pl.DataFrame) -> pl.DataFrame:
    if rows.height == 0:
        return rows
    parts = pl.col("engine").str.extract_groups(r"^layer (?<layer>\d+) rank (?<rank>\d+)$")
    c = (rows.with_columns(p=parts).with_columns(layer=pl.col("p").struct.field("layer").cast(pl.Int32, strict=False),
                                                  rank=pl.col("p").struct.field("rank").cast(pl.Int32, strict=False))
         .filter(pl.col("layer").is_not_null() & pl.col("rank").is_not_null())
         .group_by("file", "ts", "layer", "rank").agg(pl.col("value").last())
         .sort("ts", "file"))
    snaps = c.select("ts", "file").unique(maintain_order=True).with_row_index("snap")
    c = c.join(snaps, on=["ts", "file"]).sort("snap")
    c = c.with_columns(prev=pl.col("value").shift(1).over("layer", "rank", order_by="snap"))
    # a snapshot where any count fell follows a restart: its counts are all since that restart
    fell = c.group_by("snap").agg(fell=(pl.col("value") < pl.col("prev")).any())
    c = c.join(fell, on="snap")
    lone = snaps.height == 1
    inc = (pl.when(pl.col("prev").is_null()).then(pl.col("value") if lone else None)
           .when(pl.col("fell")).then(pl.col("value"))
           .otherwise(pl.col("value") - pl.col("prev")))
    day = (c.with_columns(inc=inc, day=pl.col("ts").dt.date()).filter(pl.col("inc").is_not_null())
           .group_by("day", "layer", "rank").agg(pl.col("inc").sum(), n=pl.col("snap").n_unique()))
    return (day.group_by("day", "layer").agg(mx=pl.col("inc").max(), mean=pl.col("inc").mean(), samples=pl.col("n").max())
            .filter(pl.col("mean") > 0)
            .select("day", "layer", rank_max_over_mean=pl.col("mx") / pl.col("mean"), samples="samples", kind=pl.lit(1)))


def fill(result: ExpertLoadResult, days: pl.DataFrame, target: float, main: int | None) -> None:
    """Put the metrics' days (those no dump covers) into ``result``: trend cells and day rows
    marked ``gauge``; with no dump at all (``main`` None), the window's layers and summary as the mean of the days.
    """
    if days.height == 0:
        return
    n_layers = int(days["layer"].max()) + 1
    main = n_layers if main is None else main
    for (day,), part in days.sort("day", "layer").group_by(["day"], maintain_order=True):
        d = day.isoformat()
        vals = {li: round(v, 8) for li, v in part.select("layer", "rank_max_over_mean").iter_rows()}
        result.trend += [TrendCell(d, li, v, None, "gauge") for li, v in sorted(vals.items())]
        main_vals = [v for li, v in vals.items() if li < main]
        layers = [DayLayer(layer=li, tokens=0, prefill_tokens=0, decode_tokens=0, imbalance_max_over_mean=None, cv=None,
                           rank_max_over_mean=v, rank_cv=None) for li, v in sorted(vals.items())]
        result.days.append(DayStats(day=d, tokens=0, layers=layers, source="gauge",
                                    rank_max_over_mean_layer_mean=round(sum(main_vals) / len(main_vals), 8) if main_vals else None,
                                    rank_max_over_mean_worst_layer=round(max(main_vals), 8) if main_vals else None))
        result.window.gauge_days.append(d)
    result.days.sort(key=lambda x: x.day)
    result.trend.sort(key=lambda t: (t.day, t.layer))
    gauge_days = set(result.window.gauge_days)
    result.missing.days = [d for d in result.missing.days if d not in gauge_days]
    result.over_threshold = [t for t in result.trend if t.layer < main and (t.rank_max_over_mean or 0) > target]
    if result.layers:
        return
    per_layer = days.group_by("layer").agg(pl.col("rank_max_over_mean").mean()).sort("layer")
    result.window.layers = n_layers
    result.window.layers_source = "gauge"
    result.layers = [LayerStats(layer=li, tokens=0, prefill_tokens=0, decode_tokens=0, imbalance_max_over_mean=None,
                                cv=None, rank_max_over_mean=round(v, 8), rank_cv=None)
                     for li, v in per_layer.iter_rows()]
    now = [x.rank_max_over_mean for x in result.layers]
    result.summary = Summary(rank_max_over_mean_layer_mean=round(sum(now) / len(now), 8) if now else None,
                             rank_max_over_mean_worst_layer=round(max(now), 8) if now else None,
                             layers_over_target=[x.layer for x in result.layers if (x.rank_max_over_mean or 0) > target])
