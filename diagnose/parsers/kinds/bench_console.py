"""The console summary of `vllm bench serve|latency|throughput`: `Label:   value` lines of the
``Serving Benchmark Result`` block (its ``Speculative Decoding`` section too), the `Throughput:` and latency lines,
and the ``Namespace(...)`` line of the arguments. The labels and their layout are those vllm/benchmarks/serve.py
prints (``{:<40} {:<10.2f}``); pasted copies lose the padding, so any run of spaces separates label and value.
"""

from __future__ import annotations

import polars as pl

from diagnose.scan.fastregex import dfa_safe
from diagnose.model import conform_signals, empty_signals
from diagnose.parsers.lineframe import FileContext

# Console summary labels (lower-cased, without the trailing colon) → signal, scale.
_SUMMARY = {
    "successful requests": ("bench_completed", 1.0),
    "failed requests": ("bench_failed_requests", 1.0),
    "benchmark duration (s)": ("bench_duration_s", 1.0),
    "total input tokens": ("bench_input_tokens", 1.0),
    "total generated tokens": ("bench_output_tokens", 1.0),
    "request throughput (req/s)": ("bench_request_throughput", 1.0),
    "output token throughput (tok/s)": ("bench_output_throughput", 1.0),
    "total token throughput (tok/s)": ("bench_total_throughput", 1.0),
    "maximum request concurrency": ("bench_max_concurrency", 1.0),
    "request rate configured (rps)": ("bench_request_rate", 1.0),
    # the `Speculative Decoding` section (vllm/benchmarks/serve.py prints it when the server drafts tokens)
    "acceptance rate (%)": ("bench_spec_acceptance_pct", 1.0),
    "acceptance length": ("bench_spec_acceptance_length", 1.0),
    "drafts": ("bench_spec_drafts", 1.0),
    "draft tokens": ("bench_spec_draft_tokens", 1.0),
    "accepted tokens": ("bench_spec_accepted_tokens", 1.0),
}
_SUMMARY_LINE = r"^(?P<k>[^:]+):\s+(?P<v>\S+)\s*$"
_SUMMARY_METRIC = r"(?i)^(mean|median|p[\d.]+) (ttft|tpot|itl|e2el) \(ms\)$"
_THROUGHPUT_LINE = r"^Throughput: ([\d.]+) requests/s, ([\d.]+) total tokens/s(?:, ([\d.]+) output tokens/s)?"
_LATENCY_LINE = r"^(Avg|(\d+)% percentile) latency: ([\d.]+) seconds"
_NAMESPACE = r"^Namespace\((.*)\)\s*$"
_POSITION_LINE = r"^\s*Position (\d+):\s+([\d.]+)"  # under `Per-position acceptance (%):`



def summary_signals(lines: pl.DataFrame, ctx: FileContext, label: str) -> pl.DataFrame:
    """The console text: `Label:   value` lines of the summary, `Throughput:` and latency lines of
    latency/throughput, and the Namespace(...) line (model, concurrency)."""
    kv = lines.with_columns(g=pl.col("text").str.extract_groups(_SUMMARY_LINE)).select(
        "line", k=pl.col("g").struct.field("k").str.strip_chars().str.to_lowercase(),
        v=pl.col("g").struct.field("v"),
    ).drop_nulls("k")
    mapping = pl.DataFrame(
        {"k": list(_SUMMARY), "signal": [s for s, _ in _SUMMARY.values()], "scale": [c for _, c in _SUMMARY.values()]}
    )
    plain = kv.join(mapping, on="k", how="inner").select(
        "line", "signal", value=pl.col("v").cast(pl.Float64, strict=False) * pl.col("scale")
    )
    metric = kv.with_columns(m=pl.col("k").str.extract_groups(_SUMMARY_METRIC)).filter(
        pl.col("m").struct.field("1").is_not_null()
    ).select(
        "line",
        signal=pl.format("bench_{}_{}_ms", pl.col("m").struct.field("1").str.to_lowercase(),
                         pl.col("m").struct.field("2").str.to_lowercase()),
        value=pl.col("v").cast(pl.Float64, strict=False),
    )
    tp = lines.with_columns(g=pl.col("text").str.extract_groups(_THROUGHPUT_LINE)).filter(
        pl.col("g").struct.field("1").is_not_null()
    )
    thr = pl.concat([
        tp.select("line", signal=pl.lit("bench_request_throughput"), value=pl.col("g").struct.field("1").cast(pl.Float64)),
        tp.select("line", signal=pl.lit("bench_total_throughput"), value=pl.col("g").struct.field("2").cast(pl.Float64)),
        tp.select("line", signal=pl.lit("bench_output_throughput"),
                  value=pl.col("g").struct.field("3").cast(pl.Float64, strict=False)),
    ])
    lt = lines.with_columns(g=pl.col("text").str.extract_groups(_LATENCY_LINE)).filter(
        pl.col("g").struct.field("1").is_not_null()
    ).select(
        "line",
        signal=pl.when(pl.col("g").struct.field("2").is_null()).then(pl.lit("bench_latency_avg_ms"))
        .otherwise(pl.format("bench_latency_p{}_ms", pl.col("g").struct.field("2"))),
        value=pl.col("g").struct.field("3").cast(pl.Float64, strict=False) * 1000.0,
    ).filter(pl.col("signal").is_in(["bench_latency_avg_ms", "bench_latency_p50_ms", "bench_latency_p90_ms",
                                     "bench_latency_p99_ms"]))
    ns = lines.filter(pl.col("text").str.contains(_NAMESPACE))
    ns_num = []
    for name, signal in (("max_concurrency", "bench_max_concurrency"), ("temperature", "bench_temperature"),
                         ("max_tokens", "bench_max_tokens"), ("tensor_parallel_size", "bench_tp")):
        ns_num.append(ns.select("line", signal=pl.lit(signal),
                                value=pl.col("text").str.extract(dfa_safe(rf"\b{name}=([\d.]+)"), 1).cast(pl.Float64, strict=False)))
    numeric = pl.concat([plain, metric, thr, lt, *ns_num, second_position(lines)],
                        how="vertical_relaxed").drop_nulls("value")
    numeric = numeric.with_columns(text=pl.lit(None, pl.String))
    model = ns.select("line", signal=pl.lit("bench_model"), value=pl.lit(None, pl.Float64),
                      text=pl.col("text").str.extract(dfa_safe(r"\bmodel='([^']+)'"), 1)).drop_nulls("text")
    frame = pl.concat([numeric, model], how="vertical_relaxed")
    if frame.height == 0:
        return empty_signals()
    frame = frame.with_columns(
        file=pl.lit(ctx.path), source=pl.lit(ctx.kind), node=pl.lit(ctx.node, pl.String), engine=pl.lit(label),
    ).unique(["line", "signal"], keep="first", maintain_order=True).sort("line")
    return conform_signals(frame)


def second_position(lines: pl.DataFrame) -> pl.DataFrame:
    """``bench_spec_pos1_of_pos0_pct``: acceptance at draft position 1 as a share of position 0, on the line of
    position 1. Each position 1 pairs with the position 0 just above it (a paste may hold several runs)."""
    pos = lines.with_columns(g=pl.col("text").str.extract_groups(_POSITION_LINE)).filter(
        pl.col("g").struct.field("1").is_not_null()
    ).select("line", n=pl.col("g").struct.field("1").cast(pl.Int32), v=pl.col("g").struct.field("2").cast(pl.Float64))
    return second_of_first(pos)


def second_of_first(pos: pl.DataFrame) -> pl.DataFrame:
    """Rows ``line, n, v`` (position n accepted v %) in order → the position-1 share of position 0."""
    return pos.with_columns(prev_n=pl.col("n").shift(1), prev_v=pl.col("v").shift(1)).filter(
        (pl.col("n") == 1) & (pl.col("prev_n") == 0) & (pl.col("prev_v") > 0)
    ).select("line", signal=pl.lit("bench_spec_pos1_of_pos0_pct"), value=pl.col("v") / pl.col("prev_v") * 100.0)
