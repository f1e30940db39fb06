"""The numbers a validation run compares: metric groups, tolerances, the rows read from a signals frame
and the baseline they are compared with."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import polars as pl

VIRTUAL_FILE = "<validation>"
DEFAULT_TOL = {"accuracy": 3.0, "latency": 10.0, "throughput": 5.0, "failed": 0.0}

# Canonical metric name (signal without `bench_`) → group; others are set-up values, not compared.
THROUGHPUTS = ("output_throughput", "total_throughput", "request_throughput")
SETUP_METRICS = ("max_concurrency", "num_prompts", "request_rate")
QUANT_IN_NAME = re.compile(r"(?i)(?:^|[^a-z0-9])(w8a8c8|w8a8|w4a8|w4a16|w8a16|fp8|bf16|fp16|int8|int4|mxfp4)(?:[^a-z0-9]|$)")


def group_of(metric: str) -> str | None:
    if metric == "accuracy":
        return "accuracy"
    if metric == "failed_requests":
        return "failed"
    if metric in THROUGHPUTS:
        return "throughput"
    if metric.endswith("_ms"):
        return "latency"
    return None


def norm_dataset(name: str) -> str:
    key = re.sub(r"[^a-z0-9]", "", name.lower())
    return re.sub(r"dataset$", "", key) or key


@dataclass
class Baseline:
    rows: list[dict[str, Any]]  # metric, scope, value, tol (None = default)
    source: str  # "run", "toml" or "report"
    quantization: str | None = None
    setup: dict[tuple[str, str], float] = field(default_factory=dict)  # (metric, scope) -> value
    tolerance: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_TOL))
    errors: list[str] = field(default_factory=list)


# --- reading values from a signals frame ---------------------------------------------------------------------

def metric_rows(signals: pl.DataFrame) -> list[dict[str, Any]]:
    """Compared values of one bundle: the first value of each (metric, scope)."""
    frame = signals.filter(
        (pl.col("signal").str.starts_with("bench_") | (pl.col("signal") == "accuracy_pct"))
        & pl.col("value").is_not_null() & pl.col("value").is_finite()
    )
    if frame.height == 0:
        return []
    frame = frame.with_columns(
        metric=pl.when(pl.col("signal") == "accuracy_pct").then(pl.lit("accuracy"))
        .otherwise(pl.col("signal").str.strip_prefix("bench_")),
        scope=pl.col("engine").fill_null(""),
    ).unique(["metric", "scope"], keep="first", maintain_order=True)
    rows = []
    for r in frame.select("metric", "scope", "value", "file", "line").iter_rows(named=True):
        if group_of(r["metric"]) or r["metric"] in SETUP_METRICS:
            rows.append(r)
    return rows


def quant_policy(signals: pl.DataFrame) -> str | None:
    """The quantization policy of a bundle: from model names (…-W8A8, …-FP8), else the `quantization` keys."""
    texts = signals.filter(pl.col("signal").is_in(["bench_model", "bench_quantization", "quantization"])).select(
        "signal", "text").drop_nulls("text")
    for signal in ("bench_model", "bench_quantization", "quantization"):
        for t in texts.filter(pl.col("signal") == signal)["text"].to_list():
            m = QUANT_IN_NAME.search(t) or (re.fullmatch(r"(?i)\s*(fp8|w8a8|bf16|int8)\s*", t) if signal != "bench_model" else None)
            if m:
                return m.group(1).upper()
    return None


def fmt(v: float | None) -> str:
    if v is None:
        return "-"
    if v == math.inf:
        return "inf"
    return f"{v:.2f}".rstrip("0").rstrip(".") if abs(v) < 1e6 else f"{v:.0f}"
