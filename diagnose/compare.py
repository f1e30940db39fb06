"""Validation runs: compare this bundle's benchmark and accuracy results with a baseline.

Runs between parsing and the rules (``pipeline.diagnose_parsed``). It reads the ``bench_*`` and
``accuracy_pct`` signals of the result-file parsers (``parsers.bench_results``, ``parsers.accuracy``), pairs
them with the baseline's, and

- builds the comparison table (metric, scope, baseline, this run, change, tolerance, verdict) that goes on
  ``Report.comparisons`` and into the text, JSON and Markdown reports (``comparison_markdown``);
- writes what it concluded as validation facts (format in ``parsers.comparison``) into a virtual file
  ``<validation>`` that joins the records and signals, so the VAL rules are plain threshold rules whose
  evidence lines carry the numbers;
- adds facts that need the whole bundle: the benchmark's TP / model differing from the server's
  (``tensor_parallel_size`` and ``served_model`` of the vLLM parser). An accuracy drop in a bundle whose
  server log shows a fallback to float weights is rule VAL002 (the log line and the drop fact together).

A baseline (``--baseline``) is one of:
- a folder or result file of an earlier run (read with the same parsers);
- a TOML file of expected numbers::

      model = "DeepSeek-R1-W8A8"          # optional
      quantization = "W8A8"               # optional: compared with this run's policy (like for like)
      [tolerance]                         # optional defaults
      accuracy_points = 3.0               # absolute percentage points
      latency_pct = 10.0                  # relative, lower is better (TTFT, TPOT, ITL, E2EL)
      throughput_pct = 5.0                # relative, higher is better
      [accuracy."DeepSeek-R1-W8A8"]       # datasets, optionally under a model name
      AIME2024 = { value = 80.0, tol = 3 }
      GPQA = { value = 72.2, tol = 3 }
      [performance]                       # metrics by canonical name; tol in percent
      p99_tpot_ms = { value = 50.0, tol = 10 }
      output_throughput = 650.0

- a previous ``diagnose --format json`` report: its ``comparisons`` rows (``this`` column) are the
  baseline values. Reports list the rows whenever result files were read, with or without a baseline.

Tolerances: accuracy ±3 points, latencies +10 %, throughputs −5 % unless the TOML says otherwise; failed
requests compare absolutely (any increase). A comparison between different quantization policies (FP8 vs
W8A8 in the model names, ``quantization`` keys) or different load settings (concurrency, prompts, request
rate) is marked "not comparable" and raises no regression.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from diagnose.model import conform_records
from diagnose.parsers import comparison
from diagnose.parsers.common import FileContext, lines_frame

VIRTUAL_FILE = "<validation>"
DEFAULT_TOL = {"accuracy": 3.0, "latency": 10.0, "throughput": 5.0, "failed": 0.0}

# Canonical metric name (signal without `bench_`) → group; others are set-up values, not compared.
_THROUGHPUTS = ("output_throughput", "total_throughput", "request_throughput")
_SETUP = ("max_concurrency", "num_prompts", "request_rate")
_QUANT = re.compile(r"(?i)(?:^|[^a-z0-9])(w8a8c8|w8a8|w4a8|w4a16|w8a16|fp8|bf16|fp16|int8|int4|mxfp4)(?:[^a-z0-9]|$)")


def group_of(metric: str) -> str | None:
    if metric == "accuracy":
        return "accuracy"
    if metric == "failed_requests":
        return "failed"
    if metric in _THROUGHPUTS:
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
        if group_of(r["metric"]) or r["metric"] in _SETUP:
            rows.append(r)
    return rows


def quant_policy(signals: pl.DataFrame) -> str | None:
    """The quantization policy of a bundle: from model names (…-W8A8, …-FP8), else the `quantization` keys."""
    texts = signals.filter(pl.col("signal").is_in(["bench_model", "bench_quantization", "quantization"])).select(
        "signal", "text").drop_nulls("text")
    for signal in ("bench_model", "bench_quantization", "quantization"):
        for t in texts.filter(pl.col("signal") == signal)["text"].to_list():
            m = _QUANT.search(t) or (re.fullmatch(r"(?i)\s*(fp8|w8a8|bf16|int8)\s*", t) if signal != "bench_model" else None)
            if m:
                return m.group(1).upper()
    return None


# --- baseline loading -----------------------------------------------------------------------------------------

def load_baseline(path: str, options) -> Baseline:
    p = Path(path)
    if p.is_file() and p.suffix.lower() == ".toml":
        return _toml_baseline(p)
    if p.is_file() and p.suffix.lower() == ".json":
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            data = None
        if isinstance(data, dict) and "findings" in data and "inputs" in data:
            rows = [{"metric": r["metric"], "scope": r.get("scope") or "", "value": r.get("this"), "tol": None}
                    for r in data.get("comparisons", []) if isinstance(r, dict) and r.get("this") is not None]
            return Baseline(rows, "report", quantization=data.get("quantization"))
    from diagnose.pipeline import Options, read_inputs

    sub = Options(since=options.since, until=options.until, lang=options.lang, budget=options.budget)
    parsed = read_inputs([path], sub)
    rows = metric_rows(parsed.signals)
    base = Baseline([{**r, "tol": None} for r in rows if group_of(r["metric"])], "run",
                    quantization=quant_policy(parsed.signals))
    base.setup = {(r["metric"], r["scope"]): r["value"] for r in rows if r["metric"] in _SETUP}
    if not parsed.inputs:
        base.errors.append(f"baseline {path}: nothing could be read")
    return base


def _toml_baseline(p: Path) -> Baseline:
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return Baseline([], "toml", errors=[f"baseline {p}: {exc}"])
    base = Baseline([], "toml")
    tol = data.get("tolerance", {})
    if isinstance(tol, dict):
        for key, group in (("accuracy_points", "accuracy"), ("latency_pct", "latency"), ("throughput_pct", "throughput"),
                           ("failed_requests", "failed")):
            if isinstance(tol.get(key), (int, float)):
                base.tolerance[group] = float(tol[key])
    model = str(data.get("model", ""))
    q = data.get("quantization")
    base.quantization = str(q).upper() if q else (_QUANT.search(model).group(1).upper() if _QUANT.search(model) else None)

    def entry(metric: str, scope: str, spec: Any) -> None:
        if isinstance(spec, (int, float)) and not isinstance(spec, bool):
            base.rows.append({"metric": metric, "scope": scope, "value": float(spec), "tol": None})
        elif isinstance(spec, dict) and isinstance(spec.get("value"), (int, float)):
            t = spec.get("tol", spec.get("tol_pct", spec.get("tol_points")))
            base.rows.append({"metric": metric, "scope": scope, "value": float(spec["value"]),
                              "tol": float(t) if isinstance(t, (int, float)) else None})
        else:
            base.errors.append(f"baseline {p}: {metric} {scope}: expected a number or {{ value = …, tol = … }}")

    for name, spec in (data.get("accuracy") or {}).items():
        if isinstance(spec, dict) and "value" not in spec:  # a model table of datasets
            if not base.quantization and _QUANT.search(name):
                base.quantization = _QUANT.search(name).group(1).upper()
            for ds, s in spec.items():
                entry("accuracy", ds, s)
        else:
            entry("accuracy", name, spec)
    for name, spec in (data.get("performance") or {}).items():
        metric = name.removeprefix("bench_")
        if group_of(metric):
            entry(metric, "", spec)
        else:
            base.errors.append(f"baseline {p}: performance.{name}: unknown metric")
    return base


# --- comparison ------------------------------------------------------------------------------------------------

def _pair(run: list[dict], base: list[dict]) -> list[tuple[dict | None, dict | None]]:
    """Pair run and baseline rows: same metric and scope (datasets normalised); a scope-less baseline row
    (TOML) or a metric that both sides have exactly once pairs regardless of scope."""
    def key(r):
        return (r["metric"], norm_dataset(r["scope"]) if r["metric"] == "accuracy" else r["scope"])

    pairs, used = [], set()
    by_key = {key(b): i for i, b in enumerate(base)}
    for r in run:
        i = by_key.get(key(r))
        if i is None and r["metric"] == "accuracy":
            k = key(r)[1]
            cands = [j for j, b in enumerate(base) if b["metric"] == "accuracy" and j not in used
                     and (norm_dataset(b["scope"]).startswith(k) or k.startswith(norm_dataset(b["scope"])))]
            i = cands[0] if len(cands) == 1 else None
        if i is None and r["metric"] != "accuracy":
            same = [j for j, b in enumerate(base) if b["metric"] == r["metric"]]
            mine = [x for x in run if x["metric"] == r["metric"]]
            if len(same) == 1 and (base[same[0]]["scope"] == "" or len(mine) == 1):
                i = same[0]
        if i is not None:
            used.add(i)
        pairs.append((r, base[i] if i is not None else None))
    for j, b in enumerate(base):
        if j not in used:
            pairs.append((None, b))
    return pairs


def compare_rows(run: list[dict], baseline: Baseline | None, not_comparable: set[str]) -> list[dict[str, Any]]:
    """The comparison table; ``not_comparable`` holds scopes (or ``*``) whose rows must not be judged."""
    out = []
    run = [r for r in run if group_of(r["metric"])]
    pairs = _pair(run, baseline.rows) if baseline else [(r, None) for r in run]
    for r, b in pairs:
        metric = (r or b)["metric"]
        scope = (r or b)["scope"] if r is None or r["metric"] != "accuracy" else r["scope"]
        group = group_of(metric)
        tol = (b or {}).get("tol")
        tol = baseline.tolerance[group] if tol is None and baseline else (tol if tol is not None else DEFAULT_TOL[group])
        row = {"metric": metric, "scope": scope or None, "baseline": b["value"] if b else None,
               "this": r["value"] if r else None, "change": None,
               "unit": {"accuracy": "pt", "failed": ""}.get(group, "%"), "tolerance": tol, "verdict": "-",
               "file": r["file"] if r else None, "line": r["line"] if r else None}
        if b is None:
            row["verdict"] = "no baseline" if baseline else "-"
        elif r is None:
            row["verdict"] = "missing in this run"
        elif "*" in not_comparable or (group != "accuracy" and (scope or "") in not_comparable):
            row["verdict"] = "not comparable"
        else:
            row.update(_judge(group, b["value"], r["value"], tol))
        out.append(row)
    return out


def _judge(group: str, base: float, this: float, tol: float) -> dict[str, Any]:
    if group in ("accuracy", "failed"):
        change = this - base
        worse = -change if group == "accuracy" else change
    else:
        if base == 0:
            return {"change": None, "verdict": "ok" if this == base else "changed"}
        change = (this - base) / abs(base) * 100.0
        worse = change if group == "latency" else -change
    verdict = "regressed" if worse > tol + 1e-9 else ("improved" if worse < -tol - 1e-9 else "ok")
    return {"change": round(change, 4), "verdict": verdict}


def _setup_differences(run: list[dict], baseline: Baseline) -> list[tuple[str, str, float, float]]:
    diffs = []
    for r in run:
        if r["metric"] in _SETUP:
            b = baseline.setup.get((r["metric"], r["scope"]))
            if b is not None and not math.isclose(b, r["value"], rel_tol=1e-6):
                diffs.append((r["metric"], r["scope"], b, r["value"]))
    return diffs


# --- facts -----------------------------------------------------------------------------------------------------

def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    if v == math.inf:
        return "inf"
    return f"{v:.2f}".rstrip("0").rstrip(".") if abs(v) < 1e6 else f"{v:.0f}"


def _token(text: str) -> str:
    text = re.sub(r"\s+", "_", str(text).replace('"', "'"))
    return text or "-"


def facts_lines(rows: list[dict], notes: list[str]) -> list[str]:
    lines = ["# diagnose validation facts v1"]
    lines += notes
    for row in rows:
        if row["baseline"] is None or row["this"] is None:
            continue
        where = (f" dataset={_token(row['scope'])}" if row["metric"] == "accuracy"
                 else (f" run={_token(row['scope'])}" if row["scope"] else ""))
        change = "-" if row["change"] is None else (f"{row['change']:+.2f}{row['unit']}" if row["unit"]
                                                     else f"{row['change']:+g}")
        lines.append(
            f"compare metric={row['metric']}{where} baseline={_fmt(row['baseline'])} this={_fmt(row['this'])} "
            f"change={change} tolerance={_fmt(row['tolerance'])}{row['unit']} verdict={row['verdict'].replace(' ', '-')}"
        )
    return lines


def _server_mismatches(parsed) -> list[str]:
    """The benchmark's TP and model name against what the server logs in the same bundle say."""
    sig = parsed.signals
    notes = []
    bench_tp = set(sig.filter(pl.col("signal") == "bench_tp")["value"].drop_nulls().to_list())
    server_tp = set(sig.filter(pl.col("signal") == "tensor_parallel_size")["value"].drop_nulls().to_list())
    if bench_tp and server_tp and not bench_tp & server_tp:
        notes.append(f"mismatch what=tp bench={_fmt(min(bench_tp))} server={_fmt(min(server_tp))}")
    bench_models = {_base(t) for t in sig.filter(pl.col("signal") == "bench_model")["text"].drop_nulls().to_list()}
    names = {_base(t) for t in sig.filter(pl.col("signal") == "served_model")["text"].drop_nulls().to_list()}
    names.discard("")
    if bench_models and names and not bench_models & names:
        notes.append(f"mismatch what=model bench={_token(sorted(bench_models)[0])} server={_token(sorted(names)[0])}")
    return notes


def _base(name: str) -> str:
    return name.strip().strip("'\"").rstrip("/").rsplit("/", 1)[-1].lower()


def apply_validation(parsed, options) -> tuple[Any, list[dict[str, Any]]]:
    """The pipeline hook: returns the parsed bundle with the validation facts joined, and the table."""
    baseline_path = getattr(options, "baseline", None)
    run = metric_rows(parsed.signals)
    mismatch_notes = _server_mismatches(parsed) if run else []
    if not run and not baseline_path:
        return parsed, []
    baseline = load_baseline(baseline_path, options) if baseline_path else None
    notes = list(mismatch_notes)
    not_comparable: set[str] = set()
    if baseline:
        parsed.errors.extend(baseline.errors)
        mine = quant_policy(parsed.signals)
        if mine and baseline.quantization and mine != baseline.quantization:
            notes.append(f"not-comparable what=quantization baseline={baseline.quantization} this={mine}")
            not_comparable.add("*")
        for metric, scope, b, t in _setup_differences(run, baseline):
            notes.append(f"not-comparable what={metric} run={_token(scope or '-')} baseline={_fmt(b)} this={_fmt(t)}")
            not_comparable.add(scope)
    rows = compare_rows(run, baseline, not_comparable)
    lines = facts_lines(rows, notes)
    extra_signals = []
    if len(lines) > 1:
        ctx = FileContext(path=VIRTUAL_FILE, node=None, kind=comparison.KIND, mtime=None)
        recs, sigs = comparison.parse(lines_frame(lines), ctx)
        parsed.records = pl.concat([parsed.records, conform_records(recs)], how="vertical_relaxed")
        extra_signals.append(sigs)
    if extra_signals:
        parsed.signals = pl.concat([parsed.signals, *extra_signals], how="vertical_relaxed")
    table = [{k: v for k, v in r.items() if k not in ("file", "line")} for r in rows]
    return parsed, table


# --- rendering ---------------------------------------------------------------------------------------------------

_HEAD = {
    "en": ("metric", "scope", "baseline", "this run", "change", "verdict", "Comparison with the baseline",
           "Benchmark and accuracy results (no --baseline)"),
    "zh": ("指标", "范围", "基线", "本次", "变化", "结论", "与基线对比", "压测与精度结果（未指定 --baseline）"),
}


def _title(rows: list[dict[str, Any]], head: tuple[str, ...]) -> str:
    return head[6] if any(r.get("baseline") is not None for r in rows) else head[7]


def table_cells(rows: list[dict[str, Any]]) -> list[list[str]]:
    out = []
    for r in rows:
        unit = {"%": "%", "pt": " pt"}.get(r["unit"], "")
        change = "-" if r.get("change") is None else f"{r['change']:+.2f}{unit}"
        if r["unit"] == "" and r.get("change") is not None:
            change = f"{r['change']:+g}"
        tol = r.get("tolerance")
        verdict = r["verdict"]
        if verdict in ("regressed", "ok", "improved") and tol is not None:
            verdict += f" (±{_fmt(tol)}{unit})"
        out.append([r["metric"], r.get("scope") or "-", _fmt(r.get("baseline")), _fmt(r.get("this")), change, verdict])
    return out


def comparison_markdown(report, lang: str = "en") -> str:
    """The comparison table as GitHub Markdown ('' when the report has none), for the Markdown reporter."""
    rows = getattr(report, "comparisons", None) or []
    if not rows:
        return ""
    head = _HEAD.get(lang, _HEAD["en"])
    out = [f"### {_title(rows, head)}", "", "| " + " | ".join(head[:6]) + " |", "|" + "---|" * 6]
    for cells in table_cells(rows):
        cells = [c.replace("|", "\\|") for c in cells]
        if cells[5].startswith("regressed"):
            cells[5] = f"**{cells[5]}**"
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def comparison_table(report, lang: str = "en"):
    """The comparison table for the terminal report (a rich Table), or None."""
    rows = getattr(report, "comparisons", None) or []
    if not rows:
        return None
    from rich import box
    from rich.table import Table
    from rich.text import Text

    head = _HEAD.get(lang, _HEAD["en"])
    table = Table(title=_title(rows, head), box=box.SIMPLE_HEAVY, title_justify="left", expand=False)
    for i, name in enumerate(head[:6]):
        if i == 1:
            table.add_column(name, max_width=24, overflow="ellipsis", no_wrap=True)
        elif i in (0, 5):
            table.add_column(name, no_wrap=True)
        else:
            table.add_column(name, justify="right" if 2 <= i <= 4 else "left", overflow="fold")
    style = {"regressed": "bold red", "improved": "green", "not comparable": "yellow", "missing in this run": "yellow"}
    for r, cells in zip(rows, table_cells(rows)):
        table.add_row(*cells[:5], Text(cells[5], style=style.get(r["verdict"], "")))
    return table
