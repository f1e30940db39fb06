"""Snapshots of vLLM's Prometheus ``/metrics`` endpoint (``curl host:8000/metrics > metrics.txt``), one or
several per file (a later ``# HELP`` of a metric already seen starts the next snapshot).

V1 engines log no line when they preempt a request, but ``/metrics`` counts preemptions, KV cache usage and
speculative-decoding drafts and acceptances. The text is read with ``prometheus_client``'s parser; this
module only finds each snapshot's lines and time, and names the values as the vLLM log parser does, so the
same rules can read them. Metric names (vLLM ``v1/metrics/loggers.py``; older names in brackets):
``vllm:kv_cache_usage_perc`` [``vllm:gpu_cache_usage_perc``] (a fraction), ``vllm:num_requests_running``,
``vllm:num_requests_waiting``, ``vllm:num_preemptions`` [``vllm:num_preemptions_total``],
``vllm:spec_decode_num_drafts``, ``vllm:spec_decode_num_draft_tokens``, ``vllm:spec_decode_num_accepted_tokens``,
``vllm:prompt_tokens``, ``vllm:generation_tokens`` (counters; the text shows them with ``_total``).

The expert-load metrics of vllm-ascend (``eplb:expert_hotness:*``) and SGLang (``sglang:eplb_gpu_physical_count``)
are read by ``prometheus_eplb.py``: the same snapshots, one module per concern.

A snapshot's time is the sample timestamp when the exposition carries one, else the last full date printed
above it (``date; curl ... >> metrics.txt``), else none (the file's order still orders the snapshots).
``engine`` is ``Engine NNN`` from the ``engine`` label, as the log's ``Engine 000:`` lines name it.
"""

from __future__ import annotations

import math

import re
from datetime import datetime

import polars as pl

from diagnose.model import conform_records, conform_signals, empty_signals
from diagnose.parsers.lineframe import FULL_DATE, FileContext
from diagnose.parsers.kind import SourceKind
from diagnose.parsers.kinds import prometheus_eplb

KIND = "vllm-metrics"

# A sample line: name, labels, a number (and a millisecond timestamp).
_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?Inf|NaN"
_SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+(?:" + _NUMBER + r")(?:\s+-?\d+)?\s*$")
_HELP = re.compile(r"^# (?:HELP|TYPE) ([A-Za-z_:][A-Za-z0-9_:]*)")
_DATE = re.compile(FULL_DATE)
# `date`'s default output: `Wed Sep  3 14:21:00 CST 2025`
_DATE_CMD = re.compile(r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +(\d{1,2}) "
                       r"(\d\d):(\d\d):(\d\d)(?: [A-Z][A-Za-z+0-9]{1,5})? (\d{4})")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")

# family name as prometheus_client reports it (counters without `_total`) -> (signal, scale)
_GAUGES = {
    "vllm:kv_cache_usage_perc": ("kv_cache_usage_pct", 100.0),
    "vllm:gpu_cache_usage_perc": ("kv_cache_usage_pct", 100.0),
    "vllm:num_requests_running": ("running_reqs", 1.0),
    "vllm:num_requests_waiting": ("waiting_reqs", 1.0),
}
_COUNTERS = {
    "vllm:num_preemptions": "preemptions_total",
    "vllm:spec_decode_num_drafts": "spec_drafts_total",
    "vllm:spec_decode_num_draft_tokens": "spec_draft_tokens_total",
    "vllm:spec_decode_num_accepted_tokens": "spec_accepted_tokens_total",
    "vllm:prompt_tokens": "prompt_tokens_total",
    "vllm:generation_tokens": "generation_tokens_total",
}

# Fewer drafted tokens than this say nothing about acceptance (a warm-up, an idle interval).
MIN_DRAFTED = 100

SIGNALS: dict[str, str] = {
    "kv_cache_usage_pct": "KV cache usage in percent at the snapshot (`vllm:kv_cache_usage_perc` x 100)",
    "running_reqs": "requests running at the snapshot (`vllm:num_requests_running`)",
    "waiting_reqs": "requests waiting at the snapshot (`vllm:num_requests_waiting`)",
    "preemptions_total": "preemptions since the engine started (`vllm:num_preemptions_total`)",
    "spec_drafts_total": "speculative drafts since start (`vllm:spec_decode_num_drafts_total`)",
    "spec_draft_tokens_total": "draft tokens proposed since start (`vllm:spec_decode_num_draft_tokens_total`)",
    "spec_accepted_tokens_total": "draft tokens accepted since start (`vllm:spec_decode_num_accepted_tokens_total`)",
    "prompt_tokens_total": "prompt tokens since start (`vllm:prompt_tokens_total`)",
    "generation_tokens_total": "generated tokens since start (`vllm:generation_tokens_total`)",
    "spec_acceptance_pct": "accepted / drafted tokens in percent (at least 100 drafted): since start on each "
    "snapshot, over the interval on a later snapshot of the same engine (the bundle pass)",
    "spec_mean_acceptance_len": "1 + accepted tokens / drafts since start (1.00 = no draft token accepted)",
    "preemptions_delta": "preemptions between two snapshots of one engine (bundle pass)",
    "interval_s": "seconds between two snapshots of one engine, when both are dated (bundle pass)",
    "eplb_imbalance_current_mean": "vllm-ascend EPLB gauge `eplb:expert_hotness:current_mean`: mean over layers of the "
    "rank max/mean, current placement (the log line's value)",
    "eplb_imbalance_current_max": "vllm-ascend EPLB gauge `eplb:expert_hotness:current_max`: worst layer, current placement",
    "eplb_imbalance_updated_mean": "vllm-ascend EPLB gauge `eplb:expert_hotness:update_mean`: mean over layers, planned placement",
    "eplb_imbalance_updated_max": "vllm-ascend EPLB gauge `eplb:expert_hotness:update_max`: worst layer, planned placement",
    **prometheus_eplb.SIGNALS,
}


def _snapshots(texts: list[str]) -> list[tuple[int, int]]:
    """(first, last) 0-based line index of each snapshot."""
    starts, seen = [0], set()
    for i, line in enumerate(texts):
        m = _HELP.match(line)
        if m:
            name = m.group(1)
            if name in seen and line.startswith("# HELP"):
                starts.append(i)
                seen = set()
            seen.add(name)
    # A date line printed just before a snapshot (`date; curl`) belongs to it.
    starts = [s - 1 if s > 0 and _date_of(texts[s - 1]) and not texts[s - 1].startswith("#") and
              not _SAMPLE.match(texts[s - 1]) else s for s in starts]
    ends = starts[1:] + [len(texts)]
    return [(a, b) for a, b in zip(starts, ends) if a < b]


def _date_of(line: str) -> datetime | None:
    try:
        m = _DATE.search(line)
        if m:
            return datetime(*(int(m.group(i)) for i in range(1, 7)))
        m = _DATE_CMD.search(line)
        if m:
            mon, day, hh, mi, ss, year = m.groups()
            return datetime(int(year), _MONTHS.index(mon) + 1, int(day), int(hh), int(mi), int(ss))
    except ValueError:
        return None
    return None


def _when(texts: list[str], first: int, last: int) -> datetime | None:
    for line in texts[first:last]:
        if line.startswith("#") or _SAMPLE.match(line):
            continue
        when = _date_of(line)
        if when is not None:
            return when
    return None


def _engine(labels: dict[str, str]) -> str:
    engine = labels.get("engine")
    if engine is None:
        return "engine"
    return f"Engine {int(engine):03d}" if engine.isdigit() else f"Engine {engine}"


_ENGINE_LABEL = re.compile(r'[{,]\s*engine="([^"]*)"')


def _line_of(texts: list[str], first: int, last: int) -> dict[tuple[str, str | None], int]:
    """The line (1-based) of each (metric name, engine label) in the snapshot."""
    out: dict[tuple[str, str | None], int] = {}
    for i in range(first, last):
        m = _SAMPLE.match(texts[i])
        if m:
            engine = _ENGINE_LABEL.search(m.group(2) or "")
            out.setdefault((m.group(1), engine.group(1) if engine else None), i + 1)
    return out


def parse(lines: pl.DataFrame, ctx: FileContext) -> tuple[pl.DataFrame, pl.DataFrame]:
    from prometheus_client.parser import text_string_to_metric_families  # deferred: start-up (/metrics files only)

    texts = lines["text"].to_list()
    rows: list[dict] = []
    errors: dict[int, str] = {}
    for first, last in _snapshots(texts):
        when = _when(texts, first, last)
        where = _line_of(texts, first, last)
        body = "\n".join(t for t in texts[first:last] if t.startswith("#") or _SAMPLE.match(t)) + "\n"
        try:
            families = list(text_string_to_metric_families(body))
        except Exception as exc:  # noqa: BLE001 - a cut or mangled snapshot: keep its lines as raw records
            errors[first + 1] = f"{type(exc).__name__}: {exc}"
            continue
        rows += prometheus_eplb.eplb_rows(families, prometheus_eplb.sample_lines(texts, first, last), when, first)
        totals: dict[tuple[str, str], float] = {}
        for fam in families:
            # Counters come as `x_total` under TYPE `x_total` (classic text) or TYPE `x` (OpenMetrics style).
            base = fam.name.removesuffix("_total")
            gauge, counter = _GAUGES.get(base), _COUNTERS.get(base)
            if gauge is None and counter is None:
                continue
            for sample in fam.samples:
                if counter is not None and not sample.name.endswith("_total"):
                    continue  # `_created` samples of a counter
                value = float(sample.value)
                if not math.isfinite(value):
                    continue  # NaN or +-Inf is no measurement (an engine not ready, a 0/0 ratio): unknown, not a signal
                signal, scale = gauge if gauge is not None else (counter, 1.0)
                engine = _engine(sample.labels)
                ts = datetime.fromtimestamp(sample.timestamp) if sample.timestamp else when
                line = where.get((sample.name, sample.labels.get("engine"))) or first + 1
                rows.append({"line": line, "ts": ts, "engine": engine, "signal": signal,
                             "value": value * scale})
                if counter is not None:
                    totals[(engine, signal)] = value
                    totals[(engine, "_line_" + signal)] = line
                    totals[(engine, "_ts")] = ts
        for engine in {e for e, _ in totals}:
            drafted = totals.get((engine, "spec_draft_tokens_total"))
            accepted = totals.get((engine, "spec_accepted_tokens_total"))
            drafts = totals.get((engine, "spec_drafts_total"))
            line = totals.get((engine, "_line_spec_accepted_tokens_total"), first + 1)
            ts = totals.get((engine, "_ts"))
            if drafted and drafted >= MIN_DRAFTED and accepted is not None:
                rows.append({"line": line, "ts": ts, "engine": engine, "signal": "spec_acceptance_pct",
                             "value": accepted / drafted * 100.0})
            if drafts and accepted is not None:
                rows.append({"line": line, "ts": ts, "engine": engine, "signal": "spec_mean_acceptance_len",
                             "value": 1.0 + accepted / drafts})
    text = pl.col("text")
    records = lines.with_columns(
        file=pl.lit(ctx.path), source=pl.lit(KIND), node=pl.lit(ctx.node, pl.String), message=text,
        parsed=text.str.contains(r"^#") | text.str.contains(_SAMPLE.pattern),
        event=pl.col("line"), year_known=pl.lit(False),
    )
    if errors:  # say which snapshot could not be read, on its first line
        records = records.with_columns(
            level=pl.when(pl.col("line").is_in(list(errors))).then(pl.lit("WARNING")),
            message=pl.when(pl.col("line").is_in(list(errors)))
            .then(pl.format("metrics snapshot not readable: {}", pl.col("line").replace_strict(errors, default="")))
            .otherwise(text),
        )
    if not rows:
        return conform_records(records), empty_signals()
    signals = pl.DataFrame(rows, schema={"line": pl.UInt32, "ts": pl.Datetime("us"), "engine": pl.String,
                                         "signal": pl.String, "value": pl.Float64}, orient="row")
    signals = signals.with_columns(file=pl.lit(ctx.path), source=pl.lit(KIND), node=pl.lit(ctx.node, pl.String),
                                   text=pl.lit(None, pl.String))
    return conform_records(records), conform_signals(signals.sort("line", maintain_order=True))


def _rates(signals: pl.DataFrame, series: pl.DataFrame | None) -> pl.DataFrame:
    """Between consecutive snapshots of one engine (files and snapshots in order): preemptions in the
    interval, acceptance over the interval, the interval's length. Counters that went down restarted."""
    mine = signals.filter(pl.col("source") == KIND)
    if mine.height == 0:
        return signals
    # Snapshots of one engine on one node, in time order (then file and line: a file of several snapshots).
    wide = (mine.filter(pl.col("signal").is_in(["preemptions_total", "spec_draft_tokens_total",
                                                 "spec_accepted_tokens_total"]))
            .sort(["ts", "file", "line"], nulls_last=True)
            .group_by(["node", "engine", "signal"], maintain_order=True)
            .agg(pl.col("file"), pl.col("line"), pl.col("ts"), pl.col("value")))
    out = []
    for node, engine, signal, files, lines_, tss, values in wide.iter_rows():
        for i in range(1, len(values)):
            delta = values[i] - values[i - 1]
            if delta < 0:  # the engine restarted between the snapshots
                delta = values[i]
            out.append((files[i], lines_[i], node, tss[i], engine, signal, delta, tss[i - 1]))
    if not out:
        return signals
    d = pl.DataFrame(out, schema={"file": pl.String, "line": pl.UInt32, "node": pl.String, "ts": pl.Datetime("us"),
                                  "engine": pl.String, "signal": pl.String, "value": pl.Float64,
                                  "_prev": pl.Datetime("us")}, orient="row")
    extra = [d.filter(pl.col("signal") == "preemptions_total").with_columns(signal=pl.lit("preemptions_delta"))]
    drafted = d.filter(pl.col("signal") == "spec_draft_tokens_total").select(
        "file", "node", "engine", "ts", "line", _d=pl.col("value"), _prev=pl.col("_prev"))
    accepted = d.filter(pl.col("signal") == "spec_accepted_tokens_total").select(
        "file", "node", "engine", "ts", _a=pl.col("value"))
    both = drafted.join(accepted, on=["file", "node", "engine", "ts"], how="inner", nulls_equal=True)
    # (the interval rows of one snapshot share its file and time)
    extra.append(both.filter(pl.col("_d") >= MIN_DRAFTED).select(
        "file", "line", "node", "ts", "engine", signal=pl.lit("spec_acceptance_pct"),
        value=pl.col("_a") / pl.col("_d") * 100.0))
    extra.append(d.filter((pl.col("signal") == "preemptions_total") & pl.col("ts").is_not_null()
                          & pl.col("_prev").is_not_null()).with_columns(
        signal=pl.lit("interval_s"), value=(pl.col("ts") - pl.col("_prev")).dt.total_seconds().cast(pl.Float64)))
    frame = pl.concat([e.select("file", "line", "node", "ts", "engine", "signal", "value") for e in extra],
                      how="vertical_relaxed").with_columns(source=pl.lit(KIND), text=pl.lit(None, pl.String))
    return pl.concat([signals, conform_signals(frame)], how="vertical_relaxed")


SOURCE = SourceKind(
    name=KIND,
    parse=parse,
    summary="vLLM `/metrics` snapshots (Prometheus text exposition), one or several per file, with the EPLB "
    "gauges of vllm-ascend and SGLang",
    file_name=r"(?i)metrics[\w.-]*\.(?:txt|prom|log)$|\.prom$|^metrics$",
    sniff=r"^# (?:HELP|TYPE) (?:vllm:|eplb:|sglang:eplb_)|^(?:vllm|eplb):[a-z_:]+(?:\{[^}]*\})? [-+0-9.eEinfNa]+$",
    signals=SIGNALS,
    bundle_pass=_rates,
    sniff_rank=125,
)
