"""MindIE Benchmark results (the ``benchmark`` CLI of MindIE-Service up to 2.2): the two console tables of its
log (``The BenchMark test performance metric result is:`` then ``| Metric | average | max | ... |`` rows, and
``The BenchMark test common metric result is:`` then ``| Common Metric | Value |`` rows) and the CSV files it
writes (``result_perf_<ts>.csv``: one column per metric, one row per statistic and no label column;
``result_common_<ts>.csv``: one row of run totals). Layouts and names: the MindIE-Service docs
(hiascend mindie 1.0.0 mindie_service0154, 2.2.RC1 mindie_service0111) and Ascend/MindIE-Motor
``tests/sys_perf_test/utils.py``.

Values become the ``bench_*`` signals of ``parsers.bench_results`` (milliseconds, tokens/s, req/s), mapped as the
MindIE docs map them to AISBench: ``FirstTokenTime`` is TTFT, ``DecodeTime`` is the inter-chunk latency (ITL; with
MTP a chunk carries several tokens), ``GenerateTime`` the end-to-end latency. MindIE prints no TPOT;
``bench_mean_tpot_ms`` is estimated as (GenerateTime - FirstTokenTime) / (GeneratedTokens - 1) from the averages.
"""

from __future__ import annotations

import polars as pl

from diagnose.model import conform_signals, empty_signals
from diagnose.parsers.kinds.bench_results import name_setup, records_frame, run_label
from diagnose.parsers.lineframe import FileContext
from diagnose.parsers.kind import SourceKind

KIND = "mindie-bench"

# metric row -> the metric part of bench_<stat>_<metric>_ms
_LATENCIES = {"FirstTokenTime": "ttft", "DecodeTime": "itl", "GenerateTime": "e2el"}
# statistic (perf table header, or perf CSV row by position) -> the stat part; SLO_P90 is not a percentile
_STATS = {"average": "mean", "P90": "p90", "P99": "p99"}
_ROWS_WITH_SLO = ["average", "max", "min", "P75", "P90", "SLO_P90", "P99", "N"]
_ROWS_OLD = ["average", "max", "min", "P75", "P99", "N"]  # 1.0.RC2: no P90, no SLO_P90
# common metric -> signal (the value's first number; `Failed` reads `3( 0.3% )`)
_COMMON = {
    "Failed": "bench_failed_requests",
    "Returned": "bench_completed",
    "Total": "bench_num_prompts",
    "TimeElapsed": "bench_duration_s",
    "Concurrency": "bench_max_concurrency",
    "Throughput": "bench_request_throughput",
    "OutputGenerateSpeed": "bench_output_throughput",
    "GenerateSpeed": "bench_output_throughput",  # before OutputGenerateSpeed existed
    "TotalGenerateSpeed": "bench_total_throughput",
}
_NUMBER = r"^\s*(-?\d+(?:\.\d+)?)"


def _cells(text: pl.Expr) -> pl.Expr:
    """A table row (``| a | b |``) or a CSV line as a list of trimmed cells."""
    row = text.str.strip_chars().str.strip_chars("|").str.replace_all(r"\s*[|,]\s*", "\x1f").str.strip_chars()
    return row.str.split("\x1f")


def _value(cell: pl.Expr) -> pl.Expr:
    """A number with its unit as MindIE prints it (`394.7728 ms`, `9.5827 s`, `162.8 μs`) in ms for times."""
    v = cell.str.extract(_NUMBER, 1).cast(pl.Float64, strict=False)
    unit = cell.str.extract(r"\d\s*(ms|s|μs|us)\s*$", 1)
    return pl.when(unit == "s").then(v * 1000.0).when(unit.is_in(["μs", "us"])).then(v / 1000.0).otherwise(v)


def _table_rows(lines: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(perf rows: line, metric, stat, cell) and (common rows: line, metric, cell) of the console tables."""
    frame = lines.filter(pl.col("text").str.contains(r"^\s*\|")).with_columns(cells=_cells(pl.col("text")))
    frame = frame.with_columns(c0=pl.col("cells").list.get(0, null_on_oob=True),
                               c1=pl.col("cells").list.get(1, null_on_oob=True))
    head = pl.when((pl.col("c0") == "Metric") & (pl.col("c1") == "average")).then(pl.lit("perf")) \
        .when((pl.col("c0") == "Common Metric") & (pl.col("c1") == "Value")).then(pl.lit("common"))
    frame = frame.with_columns(_h=head).with_columns(
        table=pl.col("_h").forward_fill(),
        header=pl.when(pl.col("_h").is_not_null()).then(pl.col("cells")).forward_fill(),
    ).filter(pl.col("_h").is_null() & pl.col("table").is_not_null())
    perf = frame.filter(pl.col("table") == "perf").with_columns(stat=pl.col("header").list.slice(1),
                                                                 cell=pl.col("cells").list.slice(1))
    perf = perf.filter(pl.col("stat").list.len() == pl.col("cell").list.len()).explode(["stat", "cell"])
    common = frame.filter(pl.col("table") == "common").select("line", "c0", cell=pl.col("c1"))
    return perf.select("line", metric=pl.col("c0"), stat=pl.col("stat"), cell=pl.col("cell")), common.rename(
        {"c0": "metric"})


def _csv_rows(lines: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The same rows from ``result_perf_*.csv`` (header of metric names, then statistics by position) and
    ``result_common_*.csv`` (header of names, one row of values; names may carry a unit in parentheses)."""
    frame = lines.with_columns(cells=_cells(pl.col("text"))).filter(pl.col("cells").list.len() > 1)
    if frame.height < 2:
        return pl.DataFrame(), pl.DataFrame()
    header = [c.split("(")[0].strip() for c in frame["cells"][0].to_list()]
    body = frame.slice(1)
    if "FirstTokenTime" in header:
        stats = _ROWS_WITH_SLO if body.height >= len(_ROWS_WITH_SLO) else _ROWS_OLD
        body = body.head(len(stats)).with_columns(stat=pl.Series(stats[: min(body.height, len(stats))]))
        perf = body.with_columns(metric=pl.lit(header)).explode(["metric", "cells"])
        return perf.select("line", "metric", "stat", cell=pl.col("cells")), pl.DataFrame()
    if "Concurrency" in header or "Throughput" in header:
        common = body.head(1).with_columns(metric=pl.lit(header)).explode(["metric", "cells"])
        return pl.DataFrame(), common.select("line", "metric", cell=pl.col("cells"))
    return pl.DataFrame(), pl.DataFrame()


def _signals(perf: pl.DataFrame, common: pl.DataFrame) -> pl.DataFrame:
    parts = []
    if perf.height:
        lat = perf.filter(pl.col("metric").is_in(list(_LATENCIES)) & pl.col("stat").is_in(list(_STATS)))
        parts.append(lat.select(
            "line", signal=pl.format("bench_{}_{}_ms", pl.col("stat").replace_strict(_STATS, default=None),
                                     pl.col("metric").replace_strict(_LATENCIES, default=None)),
            value=_value(pl.col("cell")), text=pl.lit(None, pl.String)))
        avg = perf.filter(pl.col("stat") == "average").with_columns(v=_value(pl.col("cell")))
        wide = {m: avg.filter(pl.col("metric") == m) for m in ("FirstTokenTime", "GenerateTime", "GeneratedTokens")}
        if all(f.height for f in wide.values()):
            ttft, e2el, tokens = (wide[m]["v"][0] for m in ("FirstTokenTime", "GenerateTime", "GeneratedTokens"))
            if None not in (ttft, e2el, tokens) and tokens > 1:
                parts.append(pl.DataFrame({"line": [wide["GenerateTime"]["line"][0]], "signal": ["bench_mean_tpot_ms"],
                                           "value": [(e2el - ttft) / (tokens - 1)], "text": [None]},
                                          schema_overrides={"text": pl.String}))
    if common.height:
        com = common.filter(pl.col("metric").is_in(list(_COMMON)))
        time_s = pl.col("metric") == "TimeElapsed"
        value = _value(pl.col("cell"))
        parts.append(com.select(
            "line", signal=pl.col("metric").replace_strict(_COMMON, default=None),
            value=pl.when(time_s).then(value / 1000.0).otherwise(value), text=pl.lit(None, pl.String)))
        parts.append(common.filter(pl.col("metric") == "ModelName").select(
            "line", signal=pl.lit("bench_model"), value=pl.lit(None, pl.Float64), text=pl.col("cell")))
    parts = [p.with_columns(pl.col("line").cast(pl.Int64)) for p in parts if p.height]
    if not parts:
        return pl.DataFrame()
    return pl.concat(parts, how="vertical_relaxed").drop_nulls("signal").filter(
        pl.col("value").is_not_null() | pl.col("text").is_not_null())


def parse(lines: pl.DataFrame, ctx: FileContext) -> tuple[pl.DataFrame, pl.DataFrame]:
    perf, common = _table_rows(lines)
    if perf.height == 0 and common.height == 0:
        perf, common = _csv_rows(lines)
    found = _signals(perf, common)
    if found.height == 0:
        return records_frame(lines, ctx, False), empty_signals()
    found = found.with_columns(file=pl.lit(ctx.path), source=pl.lit(ctx.kind), node=pl.lit(ctx.node, pl.String),
                               engine=pl.lit(run_label(ctx.path))).unique(["line", "signal"], keep="first",
                                                                          maintain_order=True).sort("line")
    return records_frame(lines, ctx, True), name_setup(conform_signals(found), run_label(ctx.path))


SOURCE = SourceKind(
    name=KIND,
    parse=parse,
    summary="MindIE Benchmark results (its console tables and result_perf/result_common CSV files)",
    file_name=r"(?i)^result_(?:perf|common)_\d+|^benchmark_run",
    sniff=r"The BenchMark test (?:performance|common) metric result is|^\|\s*Metric\s*\|\s*average\s*\|"
    r"|^\|\s*Common Metric\s*\|\s*Value\s*\||^\|\s*(?:FirstTokenTime|DecodeTime|GenerateTime)\s*\|\s*[\d.]+ ms"
    r"|^FirstTokenTime,DecodeTime,|^CurrentTime,TimeElapsed",
    signals={},  # the bench_* signals of parsers.bench_results
)
