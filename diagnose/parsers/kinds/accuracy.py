"""Accuracy and AISBench results: AISBench summaries (``summary_<ts>.csv|.md|.txt`` and the console table),
AISBench performance output (``performances/<model>/<dataset>.csv|.json`` and the ``fancy_grid`` console
tables), the AISBench model config the run used (``configs/<ts>_<pid>.py``: temperature, max_out_len,
model), and lm-evaluation-harness results (``results_<date>.json`` and its console table).

Tables are read with one vectorised pass: every line is split into cells (``|``/``│`` rows, CSV, or columns
separated by two or more spaces, as tabulate prints them); header rows (``dataset version metric mode ...``,
``Performance Parameters Stage ...``, ``Common Metric Stage Value``, ``Tasks Version Filter ...``) are carried
down to the rows below them. A ``.txt`` summary repeats one table in four forms; the first value of a
dataset wins.

Accuracy is in percent (``accuracy_pct``, ``engine`` = the dataset name as written); lm-eval fractions are
scaled by 100. Performance values use the ``bench_*`` signals of ``parsers.bench_results``.
"""

from __future__ import annotations

import re

import polars as pl

from diagnose.scan.fastregex import dfa_safe
from diagnose.model import conform_signals, empty_signals
from diagnose.parsers.kinds.bench_results import (
    Signals,
    json_documents,
    key_lines,
    name_setup,
    number,
    records_frame,
    run_label,
)
from diagnose.parsers.lineframe import FileContext
from diagnose.parsers.kind import SourceKind

AISBENCH = "aisbench"
LMEVAL = "lm-eval"

# AISBench per-request statistics rows → metric name of the bench_<stat>_<metric>_ms signals.
_PERF_ROWS = {"TTFT": "ttft", "TPOT": "tpot", "ITL": "itl", "E2EL": "e2el"}
_PERF_STATS = {"Average": "mean", "Median": "median", "P90": "p90", "P99": "p99"}

# AISBench common metrics (JSON keys and console rows) → signal, scale.
_COMMON = {
    "Failed Requests": ("bench_failed_requests", 1.0),
    "Success Requests": ("bench_completed", 1.0),
    "Successful Requests": ("bench_completed", 1.0),
    "Total Requests": ("bench_num_prompts", 1.0),
    "Benchmark Duration": ("bench_duration_s", 0.001),
    "Request Throughput": ("bench_request_throughput", 1.0),
    "Output Token Throughput": ("bench_output_throughput", 1.0),
    "Total Token Throughput": ("bench_total_throughput", 1.0),
    "Max Concurrency": ("bench_max_concurrency", 1.0),
}

# lm-eval metric keys, the one reported for a task first.
_LMEVAL_PREFERRED = ("exact_match,strict-match", "exact_match,flexible-extract", "acc,none", "acc_norm,none",
                     "exact_match,none", "pass@1,none")

_CELL_SPLIT = r"\s*[|│,]\s*|\s{2,}"


def parse(lines: pl.DataFrame, ctx: FileContext) -> tuple[pl.DataFrame, pl.DataFrame]:
    records, signals = _parse(lines, ctx)
    return records, name_setup(signals)


def _parse(lines: pl.DataFrame, ctx: FileContext) -> tuple[pl.DataFrame, pl.DataFrame]:
    text = "\n".join(lines["text"].to_list())
    docs = json_documents(text)
    out = Signals(ctx)
    if docs:
        where = key_lines(lines)
        for start, doc in docs:
            if not isinstance(doc, dict):
                continue
            if isinstance(doc.get("results"), dict):
                lmeval_document(out, doc, where, start)
            else:
                aisbench_common(out, doc, where, start, run_label(ctx.path))
        return records_frame(lines, ctx, True), out.frame()
    frames = [out.frame(), table_signals(lines, ctx), config_signals(lines, ctx)]
    signals = pl.concat([f for f in frames if f.height], how="vertical_relaxed") if any(f.height for f in frames) \
        else empty_signals()
    return records_frame(lines, ctx, signals.height > 0), conform_signals(signals)


# --- JSON ------------------------------------------------------------------------------------------------

def lmeval_document(out: Signals, doc: dict, where: dict[str, int], start: int) -> None:
    for task, metrics in doc["results"].items():
        if not isinstance(metrics, dict):
            continue
        keys = [k for k in _LMEVAL_PREFERRED if k in metrics]
        keys += [k for k in metrics if "," in k and "_stderr" not in k and k not in keys]
        for key in keys:
            value = number(metrics[key])
            if value is not None:
                out.add("accuracy_pct", value * 100.0, where.get(task, start), str(task), key)
                break
    config = doc.get("config") if isinstance(doc.get("config"), dict) else {}
    gen = config.get("gen_kwargs")
    if isinstance(gen, str):
        gen = dict(re.findall(r"(\w+)=([^,]+)", gen))
    if isinstance(gen, dict):
        out.add("bench_temperature", number(gen.get("temperature")), where.get("gen_kwargs", start), None)
        for key in ("max_gen_toks", "max_tokens", "max_new_tokens"):
            if key in gen:
                out.add("bench_max_tokens", number(gen[key]), where.get("gen_kwargs", start), None)
                break
    args = config.get("model_args")
    model = None
    if isinstance(args, str):
        m = re.search(r"(?:^|,)(?:pretrained|model|path)=([^,]+)", args)
        model = m.group(1) if m else None
    elif isinstance(args, dict):
        model = args.get("pretrained") or args.get("model") or args.get("path")
    model = model or doc.get("model_name")
    if isinstance(model, str) and model:
        out.add("bench_model", None, where.get("model_args", where.get("model_name", start)), None, model)


def aisbench_common(out: Signals, doc: dict, where: dict[str, int], start: int, label: str) -> None:
    """``performances/<model>/<dataset>.json``: ``{metric: {stage: value}}``."""
    for key, (signal, scale) in _COMMON.items():
        cell = doc.get(key)
        if isinstance(cell, dict):
            cell = cell.get("total", next(iter(cell.values()), None))
        value = number(cell)
        if value is not None:
            out.add(signal, value * scale, where.get(key, start), label)


# --- tables ------------------------------------------------------------------------------------------------

def table_signals(lines: pl.DataFrame, ctx: FileContext) -> pl.DataFrame:
    label = run_label(ctx.path)
    frame = lines.with_columns(
        cells=pl.col("text").str.strip_chars().str.strip_chars("|│ ").str.replace_all(_CELL_SPLIT, "\x1f")
        .str.split("\x1f")
    ).with_columns(c0=pl.col("cells").list.get(0, null_on_oob=True), c1=pl.col("cells").list.get(1, null_on_oob=True))
    header_kind = (
        pl.when((pl.col("c0") == "dataset") & (pl.col("c1") == "version")).then(pl.lit("acc"))
        .when((pl.col("c0") == "Performance Parameters") & (pl.col("c1") == "Stage")).then(pl.lit("perf"))
        .when((pl.col("c0") == "Common Metric") & (pl.col("c1") == "Stage")).then(pl.lit("common"))
        .when((pl.col("c0") == "Tasks") & (pl.col("c1") == "Version")).then(pl.lit("lmeval"))
    )
    frame = frame.with_columns(_hk=header_kind).with_columns(
        hkind=pl.col("_hk").forward_fill(),
        header=pl.when(pl.col("_hk").is_not_null()).then(pl.col("cells")).forward_fill(),
    ).filter(pl.col("_hk").is_null() & pl.col("hkind").is_not_null())
    # Rule lines (----, ====, ^^^^) and empty lines carry no cells worth reading.
    frame = frame.filter(~pl.col("text").str.contains(r"^[\s|│+\-=:^$╒╞╘═╪╤╧├┼┤─]*$"))
    parts = [_accuracy_rows(frame), _perf_rows(frame), _common_rows(frame), _lmeval_rows(frame)]
    found = pl.concat([p for p in parts if p.height], how="vertical_relaxed") if any(p.height for p in parts) else None
    if found is None:
        return empty_signals()
    found = found.with_columns(
        file=pl.lit(ctx.path), source=pl.lit(ctx.kind), node=pl.lit(ctx.node, pl.String),
        engine=pl.coalesce(pl.col("engine"), pl.lit(label)),
    ).unique(["signal", "engine"], keep="first", maintain_order=True).sort("line")
    return conform_signals(found)


def _accuracy_rows(frame: pl.DataFrame) -> pl.DataFrame:
    acc = frame.filter((pl.col("hkind") == "acc") & (pl.col("cells").list.len() == pl.col("header").list.len()))
    if acc.height == 0:
        return acc.select("line")
    first = pl.when(pl.col("header").list.get(4, null_on_oob=True) == "total_count").then(5).otherwise(4)
    acc = acc.with_columns(
        model=pl.col("header").list.slice(first), score=pl.col("cells").list.slice(first)
    ).explode(["model", "score"])
    value = pl.col("score").str.extract(r"^\s*(-?\d+(?:\.\d+)?)", 1).cast(pl.Float64, strict=False)
    return acc.select(
        "line", signal=pl.lit("accuracy_pct"), engine=pl.col("c0"), value=value, text=pl.col("model"),
    ).drop_nulls("value")


def _perf_rows(frame: pl.DataFrame) -> pl.DataFrame:
    perf = frame.filter((pl.col("hkind") == "perf") & pl.col("c0").is_in(list(_PERF_ROWS)))
    if perf.height == 0:
        return perf.select("line")
    perf = perf.with_columns(stat=pl.col("header"), cell=pl.col("cells")).explode(["stat", "cell"]).filter(
        pl.col("stat").is_in(list(_PERF_STATS))
    )
    return perf.select(
        "line",
        signal=pl.format("bench_{}_{}_ms", pl.col("stat").replace_strict(_PERF_STATS, default=None),
                         pl.col("c0").replace_strict(_PERF_ROWS, default=None)),
        engine=pl.lit(None, pl.String),
        value=_cell_ms(pl.col("cell")),
        text=pl.lit(None, pl.String),
    ).drop_nulls("value")


def _cell_ms(cell: pl.Expr) -> pl.Expr:
    v = cell.str.extract(r"^\s*(-?\d+(?:\.\d+)?)", 1).cast(pl.Float64, strict=False)
    return pl.when(cell.str.contains(r"\d\s*s\s*$") & ~cell.str.contains(r"ms\s*$")).then(v * 1000.0).otherwise(v)


def _common_rows(frame: pl.DataFrame) -> pl.DataFrame:
    com = frame.filter((pl.col("hkind") == "common") & pl.col("c0").is_in(list(_COMMON)))
    if com.height == 0:
        return com.select("line")
    signal = pl.col("c0").replace_strict({k: s for k, (s, _) in _COMMON.items()}, default=None)
    scale = pl.col("c0").replace_strict({k: c for k, (_, c) in _COMMON.items()}, default=1.0, return_dtype=pl.Float64)
    value = pl.col("cells").list.get(2, null_on_oob=True).str.extract(r"^\s*(-?\d+(?:\.\d+)?)", 1) \
        .cast(pl.Float64, strict=False)
    return com.select("line", signal=signal, engine=pl.lit(None, pl.String), value=value * scale,
                      text=pl.lit(None, pl.String)).drop_nulls("value")


def _lmeval_rows(frame: pl.DataFrame) -> pl.DataFrame:
    """``|Tasks|Version|Filter|n-shot|Metric| |Value| |Stderr|``; the first row of a task is its score."""
    lm = frame.filter(pl.col("hkind") == "lmeval")
    if lm.height == 0:
        return lm.select("line")
    # Read the row again with `|` only: empty cells (arrow columns, continued tasks) matter here.
    lm = lm.with_columns(raw=pl.col("text").str.strip_chars().str.strip_chars("|").str.split("|"))
    lm = lm.with_columns(
        task=pl.col("raw").list.get(0, null_on_oob=True).str.strip_chars().str.strip_chars("- ").replace("", None),
        value=pl.col("raw").list.get(6, null_on_oob=True).str.strip_chars().cast(pl.Float64, strict=False),
        metric=pl.col("raw").list.get(4, null_on_oob=True).str.strip_chars(),
    ).filter(pl.col("task").is_not_null() & pl.col("value").is_not_null())
    return lm.select("line", signal=pl.lit("accuracy_pct"), engine=pl.col("task"), value=pl.col("value") * 100.0,
                     text=pl.col("metric"))


# --- AISBench model config and lm-eval console header ------------------------------------------------------

_CONFIG_NUMBERS = [
    ("bench_temperature", r"""['"]?temperature['"]?\s*[=:]\s*([\d.]+)"""),
    ("bench_max_tokens", r"""\b(?:max_out_len|max_gen_toks|max_tokens)['"]?\s*[=:]\s*(\d+)"""),
    ("bench_max_concurrency", r"""\bbatch_size\s*=\s*(\d+)"""),
]
_CONFIG_TEXTS = [
    ("bench_model", r"""^\s*model\s*=\s*['"]([^'"]+)['"]"""),
    ("bench_model", r"""\((?:pretrained|model|path)=([^,)]+)"""),
]


def config_signals(lines: pl.DataFrame, ctx: FileContext) -> pl.DataFrame:
    cand = lines.filter(pl.col("text").str.contains(r"temperature|max_out_len|max_gen_toks|max_tokens|batch_size|model"))
    if cand.height == 0:
        return empty_signals()
    parts = []
    for signal, pattern in _CONFIG_NUMBERS:
        parts.append(cand.select("line", signal=pl.lit(signal), engine=pl.lit(None, pl.String),
                                 value=pl.col("text").str.extract(dfa_safe(pattern), 1).cast(pl.Float64, strict=False),
                                 text=pl.lit(None, pl.String)).drop_nulls("value"))
    for signal, pattern in _CONFIG_TEXTS:
        parts.append(cand.select("line", signal=pl.lit(signal), engine=pl.lit(None, pl.String),
                                 value=pl.lit(None, pl.Float64),
                                 text=pl.col("text").str.extract(pattern, 1).str.strip_chars()).filter(
            pl.col("text").is_not_null() & (pl.col("text") != "")))
    frame = pl.concat(parts, how="vertical_relaxed")
    if frame.height == 0:
        return empty_signals()
    frame = frame.unique(["signal"], keep="first", maintain_order=True).with_columns(
        file=pl.lit(ctx.path), source=pl.lit(ctx.kind), node=pl.lit(ctx.node, pl.String)
    ).sort("line")
    return conform_signals(frame)


_ACCURACY_SIGNALS = {
    "accuracy_pct": "accuracy of one dataset in percent (AISBench score, lm-eval fraction × 100); engine = dataset",
}

SOURCES = (
    SourceKind(
        name=AISBENCH,
        parse=parse,
        summary="AISBench accuracy summaries, performance results and model configs",
        file_name=r"(?i)^summary_\d|^performances?$|aisbench|ais_bench",
        sniff=r"^\|?\s*dataset\s*(?:\||,|\s{2,})\s*version\s*(?:\||,|\s{2,})\s*metric\b"
        r"|Performance Parameters\s*[,│|]\s*Stage|Common Metric\s*[│|]\s*Stage"
        r'|"(?:Benchmark Duration|Output Token Throughput|Failed Requests|Total Requests)"\s*:\s*\{'
        r"|^\s*(?:max_out_len|generation_kwargs)\s*=",
        signals=_ACCURACY_SIGNALS,
        sniff_rank=110,
    ),
    SourceKind(
        name=LMEVAL,
        parse=parse,
        summary="lm-evaluation-harness results (JSON and the printed table)",
        file_name=r"(?i)^results[_.]|lm[_-]?eval",
        sniff=r'"(?:lm_eval_version|higher_is_better|n-samples|group_subtasks)"\s*:|^\|\s*Tasks\s*\|\s*Version\s*\|',
        signals=_ACCURACY_SIGNALS,
        sniff_rank=120,
    ),
)
