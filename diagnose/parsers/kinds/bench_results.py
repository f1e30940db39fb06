"""vLLM benchmark results: `vllm bench serve --save-result` JSON (current and the legacy
``benchmark_serving.py`` output, also ``--append-result`` JSON Lines), `vllm bench latency|throughput
--output-json` and the console summary `vllm bench serve` prints (``Serving Benchmark Result``).

A result file is one document, not a log: the JSON is decoded once per file, and each value becomes a signal
on the line where its key stands (a ``--save-result`` file is a single line, so everything sits on line 1).
Every line is kept as a record. Values keep the units of the ``bench_*`` signals in ``diagnose.model``:
milliseconds for latencies (latency JSON seconds are scaled), tokens/s and req/s for throughputs.

``engine`` of a benchmark signal is the run label: the file stem with its timestamp removed
(``openai-infqps-concurrency64-DeepSeek-R1-W8A8``), so that a baseline run and this run of the same test
pair up, and a folder with several tests keeps them apart.
"""

from __future__ import annotations

import math
import re
from typing import Any

import polars as pl

from diagnose.bounded import json_loads, json_raw_decode, unpaired_surrogates
from diagnose.model import conform_records, conform_signals, empty_signals
from diagnose.parsers.kinds.bench_console import summary_signals
from diagnose.parsers.lineframe import FileContext
from diagnose.parsers.kind import SourceKind
from diagnose.model.memberpath import base_name

KIND = "vllm-bench"

_STAMP = re.compile(r"[-_]?(?:\d{8}[-_T]\d{6}(?:\.\d+)?|\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d(?:\.\d+)?|\d{14,17})")
_METRIC_KEY = re.compile(r"^(mean|median|std|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el)_ms$")

# Plain numeric keys of the serve JSON.
_SERVE_KEYS = {
    "completed": "bench_completed",
    "failed": "bench_failed_requests",
    "num_prompts": "bench_num_prompts",
    "duration": "bench_duration_s",
    "request_throughput": "bench_request_throughput",
    "output_throughput": "bench_output_throughput",
    "total_token_throughput": "bench_total_throughput",
    "max_concurrency": "bench_max_concurrency",
    "request_rate": "bench_request_rate",
    "total_input_tokens": "bench_input_tokens",
    "total_output_tokens": "bench_output_tokens",
    "spec_decode_acceptance_rate": "bench_spec_acceptance_pct",
    "spec_decode_acceptance_length": "bench_spec_acceptance_length",
    "spec_decode_num_drafts": "bench_spec_drafts",
    "spec_decode_draft_tokens": "bench_spec_draft_tokens",
    "spec_decode_accepted_tokens": "bench_spec_accepted_tokens",
}

# Keys a run may carry as --metadata KEY=VALUE (strings) or as its own keys: numbers about the run set-up.
_SETUP_NUMBERS = {
    "temperature": "bench_temperature",
    "max_tokens": "bench_max_tokens",
    "max_out_len": "bench_max_tokens",
    "max_gen_toks": "bench_max_tokens",
    "output_len": "bench_max_tokens",
    "tp": "bench_tp",
    "tensor_parallel_size": "bench_tp",
}
_SETUP_TEXTS = {"model_id": "bench_model", "model_name": "bench_model", "model": "bench_model",
                "quantization": "bench_quantization"}

def run_label(path: str) -> str:
    """The file stem without timestamps: what pairs a baseline result file with this run's."""
    base = base_name(path)
    stem = re.sub(r"\.(?:json|jsonl|txt|log|csv|md|out)$", "", base, flags=re.I)
    return _STAMP.sub("", stem) or stem


def number(value: Any) -> float | None:
    """A float from a JSON number or a string with a unit (``"41.6 token/s"``, ``"inf"``); else None."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        m = re.match(r"^\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|inf|nan)", value.strip(), re.I)
        if m:
            try:
                return float(m.group(1))
            except ValueError:
                return None
    return None


def records_frame(lines: pl.DataFrame, ctx: FileContext, parsed: bool) -> pl.DataFrame:
    """Every line as a record; ``parsed`` says whether the document as a whole was understood."""
    return conform_records(
        lines.with_columns(
            file=pl.lit(ctx.path),
            source=pl.lit(ctx.kind),
            node=pl.lit(ctx.node, pl.String),
            message=pl.col("text"),
            parsed=pl.lit(parsed),
            year_known=pl.lit(False),
            event=pl.col("line"),
        )
    )


def key_lines(lines: pl.DataFrame) -> dict[str, int]:
    """First line on which each JSON key ``"key":`` appears (one vectorised scan)."""
    keys = (
        lines.select("line", k=pl.col("text").str.extract_all(r'"([^"\\]{1,80})"\s*:'))
        .explode("k")
        .drop_nulls("k")
        .with_columns(k=pl.col("k").str.extract(r'^"(.*)"', 1))
        .group_by("k")
        .agg(pl.col("line").min())
    )
    return dict(zip(keys["k"].to_list(), keys["line"].to_list()))


def json_documents(text: str) -> list[tuple[int, Any]]:
    """The JSON values in ``text``: one document, or several (JSON Lines, --append-result). Each with the line
    it starts on. Undecodable text gives an empty list."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return []
    try:
        return [(text[: len(text) - len(text.lstrip())].count("\n") + 1, json_loads(stripped))]
    except ValueError:
        pass
    out, pos = [], 0
    text = unpaired_surrogates(text)  # (same length: positions agree)
    while pos < len(text):
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        if pos >= len(text):
            break
        try:
            obj, end = json_raw_decode(text, pos)
        except ValueError:
            break
        out.append((text.count("\n", 0, pos) + 1, obj))
        pos = end
    return out


class Signals:
    """Collects one file's signals (a handful per document, not per line)."""

    def __init__(self, ctx: FileContext):
        self.ctx = ctx
        self.rows: list[dict[str, Any]] = []

    def add(self, signal: str, value: float | None, line: int, engine: str | None, text: str | None = None):
        if value is None and text is None:
            return
        if value is not None and math.isnan(value):
            return
        self.rows.append({"file": self.ctx.path, "line": int(line), "source": self.ctx.kind, "node": self.ctx.node,
                          "engine": engine, "signal": signal, "value": value, "text": text})

    def frame(self) -> pl.DataFrame:
        if not self.rows:
            return empty_signals()
        schema = {"file": pl.String, "line": pl.UInt32, "source": pl.String, "node": pl.String, "engine": pl.String,
                  "signal": pl.String, "value": pl.Float64, "text": pl.String}
        return conform_signals(pl.DataFrame(self.rows, schema=schema))


def setup_signals(out: Signals, data: dict, line_of, engine: str) -> None:
    """Run set-up values (model, TP, temperature, max tokens, quantization) from top-level keys or metadata."""
    for key, signal in _SETUP_NUMBERS.items():
        if key in data:
            out.add(signal, number(data[key]), line_of(key), engine)
    for key, signal in _SETUP_TEXTS.items():
        value = data.get(key)
        if isinstance(value, str) and value.strip():
            out.add(signal, None, line_of(key), engine, value.strip())


_SETUP_BY_MODEL = ["bench_temperature", "bench_max_tokens", "bench_tp"]


def name_setup(signals: pl.DataFrame, fallback: str | None = None) -> pl.DataFrame:
    """Set-up values (temperature, max tokens, TP) belong to the model the file names: ``engine`` = model
    (else ``fallback``), so a rule can ask for DeepSeek-R1 runs with ``engine_regex``."""
    if signals.height == 0:
        return signals
    models = signals.filter(pl.col("signal") == "bench_model")["text"].drop_nulls()
    model = models[0] if models.len() else fallback
    if model is None:
        return signals
    return signals.with_columns(
        engine=pl.when(pl.col("signal").is_in(_SETUP_BY_MODEL)).then(pl.lit(model)).otherwise(pl.col("engine"))
    )


def parse(lines: pl.DataFrame, ctx: FileContext) -> tuple[pl.DataFrame, pl.DataFrame]:
    records, signals = _parse(lines, ctx)
    return records, name_setup(signals, run_label(ctx.path))


def _parse(lines: pl.DataFrame, ctx: FileContext) -> tuple[pl.DataFrame, pl.DataFrame]:
    text = "\n".join(lines["text"].to_list())
    docs = json_documents(text)
    if docs:
        out = Signals(ctx)
        label = run_label(ctx.path)
        where = key_lines(lines) if len(docs) == 1 else {}
        for i, (start, doc) in enumerate(docs):
            if isinstance(doc, dict):
                engine = label if len(docs) == 1 else f"{label}#{i + 1}"
                line_of = (lambda k, s=start: where.get(k, s)) if where else (lambda k, s=start: s)
                bench_document(out, doc, line_of, engine)
        return records_frame(lines, ctx, True), out.frame()
    signals = summary_signals(lines, ctx, run_label(ctx.path))
    return records_frame(lines, ctx, signals.height > 0), signals


def bench_document(out: Signals, doc: dict, line_of, engine: str) -> None:
    """One result object of serve, latency or throughput."""
    if "avg_latency" in doc or ("percentiles" in doc and "latencies" in doc):
        out.add("bench_latency_avg_ms", _ms(doc.get("avg_latency")), line_of("avg_latency"), engine)
        pct = doc.get("percentiles") or {}
        if isinstance(pct, dict):
            for p, v in pct.items():
                if str(p) in ("50", "90", "99"):
                    out.add(f"bench_latency_p{p}_ms", _ms(v), line_of(str(p)), engine)
    elif "requests_per_second" in doc or "elapsed_time" in doc:
        out.add("bench_request_throughput", number(doc.get("requests_per_second")), line_of("requests_per_second"), engine)
        out.add("bench_total_throughput", number(doc.get("tokens_per_second")), line_of("tokens_per_second"), engine)
        out.add("bench_duration_s", number(doc.get("elapsed_time")), line_of("elapsed_time"), engine)
        out.add("bench_num_prompts", number(doc.get("num_requests")), line_of("num_requests"), engine)
    else:
        serve_document(out, doc, line_of, engine)
    setup_signals(out, doc, line_of, engine)
    meta = doc.get("metadata")
    if isinstance(meta, dict):
        setup_signals(out, meta, line_of, engine)


def _ms(value: Any) -> float | None:
    v = number(value)
    return None if v is None else v * 1000.0


def serve_document(out: Signals, doc: dict, line_of, engine: str) -> None:
    for key, signal in _SERVE_KEYS.items():
        if key in doc:
            out.add(signal, number(doc[key]), line_of(key), engine)
    for key, value in doc.items():
        m = _METRIC_KEY.match(key)
        if m and m.group(1) != "std":
            out.add(f"bench_{m.group(1)}_{m.group(2)}_ms", number(value), line_of(key), engine)
    if "failed" not in doc:
        # Legacy files have no `failed`: count the requests that did not complete.
        errors = doc.get("errors")
        failed = None
        if isinstance(errors, list) and errors:
            failed = float(sum(1 for e in errors if e))
        elif number(doc.get("num_prompts")) is not None and number(doc.get("completed")) is not None:
            failed = number(doc["num_prompts"]) - number(doc["completed"])
        if failed is not None:
            out.add("bench_failed_requests", max(failed, 0.0), line_of("errors" if "errors" in doc else "completed"),
                    engine)
    rates = doc.get("spec_decode_per_position_acceptance_rates")  # fractions, position 0 first
    if isinstance(rates, list) and len(rates) > 1 and (number(rates[0]) or 0) > 0 and number(rates[1]) is not None:
        out.add("bench_spec_pos1_of_pos0_pct", number(rates[1]) / number(rates[0]) * 100.0,
                line_of("spec_decode_per_position_acceptance_rates"), engine)
    _climb(out, doc, line_of, engine)
    _capped(out, doc, line_of, engine)


def _climb(out: Signals, doc: dict, line_of, engine: str) -> None:
    """Latency climb through a stress run: mean end-to-end latency of the last quarter of the requests (in
    start order) against the first quarter, in percent."""
    lat = doc.get("latencies")
    key = "latencies"
    if not isinstance(lat, list) or len(lat) < 8:
        lat, key = doc.get("ttfts"), "ttfts"
    if not isinstance(lat, list) or len(lat) < 8:
        return
    values = [number(x) for x in lat]
    starts = doc.get("start_times")
    order = list(range(len(values)))
    if isinstance(starts, list) and len(starts) == len(values):
        order.sort(key=lambda i: number(starts[i]) or 0.0)
    ok = [values[i] for i in order if values[i] is not None and values[i] > 0]
    if len(ok) < 8:
        return
    q = len(ok) // 4
    first, last = sum(ok[:q]) / q, sum(ok[-q:]) / q
    if first > 0:
        out.add("bench_latency_climb_pct", (last - first) / first * 100.0, line_of(key), engine)


def _capped(out: Signals, doc: dict, line_of, engine: str) -> None:
    """Share of completed outputs that stopped at the max-tokens limit (when the limit is known)."""
    lens = doc.get("output_lens")
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    limit = None
    for key in ("max_tokens", "max_out_len", "max_gen_toks"):
        limit = limit or number(doc.get(key)) or number(meta.get(key))
    if not isinstance(lens, list) or not lens or not limit:
        return
    done = [number(x) for x in lens if number(x)]
    if done:
        share = sum(1 for x in done if x >= limit) / len(done) * 100.0
        out.add("bench_length_capped_pct", share, line_of("output_lens"), engine)


# `engine` = run label (file stem without timestamp) for bench_*, the model name for set-up values.
SIGNALS: dict[str, str] = {
    "bench_completed": "benchmark requests completed (`completed`, `Successful requests:`, AISBench Success Requests)",
    "bench_failed_requests": "benchmark requests failed (`failed`, or num_prompts − completed / errors in legacy files)",
    "bench_num_prompts": "benchmark requests sent (`num_prompts`, AISBench Total Requests)",
    "bench_duration_s": "benchmark duration, s",
    "bench_request_throughput": "benchmark request throughput, req/s",
    "bench_output_throughput": "benchmark output token throughput, tokens/s",
    "bench_total_throughput": "benchmark total (prompt + output) token throughput, tokens/s",
    "bench_input_tokens": "benchmark total input tokens",
    "bench_output_tokens": "benchmark total generated tokens",
    "bench_max_concurrency": "benchmark max concurrency (`--max-concurrency`, AISBench batch_size)",
    "bench_request_rate": "benchmark request rate, req/s (inf = all at once)",
    "bench_<stat>_<m>_ms": "latency statistic, ms: stat mean|median|p99|p90..., m ttft|tpot|itl|e2el (e.g. bench_p99_tpot_ms)",
    "bench_latency_avg_ms": "`vllm bench latency` average batch latency, ms (also bench_latency_p50_ms/p90/p99)",
    "bench_latency_climb_pct": "end-to-end latency of the last quarter of a stress run's requests over the first quarter, %",
    "bench_spec_acceptance_pct": "benchmark share of drafted tokens accepted, % (`Acceptance rate (%):`)",
    "bench_spec_acceptance_length": "benchmark mean tokens per verification step, the bonus token included (1 = no draft accepted)",
    "bench_spec_drafts": "benchmark speculative steps (`Drafts:`)",
    "bench_spec_draft_tokens": "benchmark drafted tokens",
    "bench_spec_accepted_tokens": "benchmark accepted drafted tokens",
    "bench_spec_pos1_of_pos0_pct": "acceptance at draft position 1 as a share of position 0, % (healthy drafts decay gently)",
    "bench_length_capped_pct": "share of outputs that stopped at the max-tokens limit, %",
    "bench_temperature": "sampling temperature of a benchmark/accuracy run",
    "bench_max_tokens": "output-token limit of a run (max_tokens, AISBench max_out_len, lm-eval max_gen_toks)",
    "bench_tp": "tensor-parallel size the benchmark says it ran against (metadata)",
    "bench_model": "model name the benchmark used (text)",
    "bench_quantization": "quantization the benchmark run declares (text, metadata)",
}

SOURCE = SourceKind(
    name=KIND,
    parse=parse,
    summary="`vllm bench serve|latency|throughput` results (`--save-result` JSON and the printed summary)",
    file_name=r"(?i)bench|^serving_|^latency_|^throughput_|qps",
    sniff=r'"(?:completed|request_throughput|output_throughput|p99_tpot_ms|mean_ttft_ms|avg_latency|requests_per_second'
    r'|elapsed_time)"\s*:|^=+ Serving Benchmark Result =+$|^(?:Successful requests|Failed requests'
    r"|Benchmark duration \(s\)|Request throughput \(req/s\)|Output token throughput \(tok/s\)"
    r"|(?:Mean|Median|P[\d.]+) (?:TTFT|TPOT|ITL|E2EL) \(ms\)|Acceptance rate \(%\)|Acceptance length):\s"
    r"|^Throughput: [\d.]+ requests/s|^Avg latency: ",
    signals=SIGNALS,
    sniff_rank=100,
)
