"""The Prometheus text format: the ``.prom`` file node_exporter's textfile collector reads, and watch's
``/metrics`` page.

node_exporter parses the file with classic metric-name validation and rejects a whole file in which any
sample carries a timestamp, so names are plain ``diagnose_*`` names and no sample has a timestamp. Label
cardinality is bounded whatever the logs hold: rules come from the catalog, categories and severities are
fixed sets, and nodes, engines and layers are capped (``MAX_NODES``, ``MAX_ENGINES``, ``MAX_LAYERS``), the
rest counted under ``other``.

    render(report, status=RunStatus(...), lang="en") -> text

``report`` is the window's Report (occurrences, the latest signal values, expert load per layer); ``status``
(diagnose/model/live.py) is what the live run knows over time: the open findings, the opened counters, the
run's time, duration and exit code. Without a status (a batch report), the run-level metrics say what the
report says and the active findings are its findings.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict

import polars as pl

from diagnose.messages import messages
from diagnose.model import Report
from diagnose.model.live import RunStatus

MAX_NODES = 64
MAX_ENGINES = 64
MAX_LAYERS = 128
OTHER = "other"
INCOMPLETE = 3  # the exit code of a run whose stage failed: its judgement is not to be trusted

# (metric, signal, scale): the latest value of each, per node and engine.
SIGNALS = (
    ("diagnose_kv_cache_usage_ratio", "kv_cache_usage_pct", 0.01),
    ("diagnose_spec_acceptance_ratio", "spec_acceptance_pct", 0.01),
    ("diagnose_generation_throughput_tokens_per_second", "gen_throughput", 1.0),
    ("diagnose_prompt_throughput_tokens_per_second", "prompt_throughput", 1.0),
    ("diagnose_requests_running", "running_reqs", 1.0),
    ("diagnose_requests_waiting", "waiting_reqs", 1.0),
)
_LAYER = re.compile(r"layer (\d+)")


def render(report: Report, status: RunStatus | None = None, lang: str = "en", **_options) -> str:
    msg = messages(lang)
    node = status.node if status is not None else "localhost"
    out: list[str] = []

    def family(name: str, kind: str, samples: list[tuple[dict[str, str], float]]) -> None:
        out.append(f"# HELP {name} {_help(msg(f'prom.{name}'))}")
        out.append(f"# TYPE {name} {kind}")
        for labels, value in samples:
            out.append(f"{name}{_labels(labels)} {_number(value)}")

    one = {"node": node}
    family("diagnose_up", "gauge", [(one, 0.0 if status is not None and status.exit_code == INCOMPLETE else 1.0)])
    if status is not None:
        family("diagnose_last_run_timestamp_seconds", "gauge", [(one, round(status.finished, 3))])
        family("diagnose_last_run_duration_seconds", "gauge", [(one, round(status.duration_s, 3))])
        family("diagnose_exit_code", "gauge", [(one, float(status.exit_code))])
        family("diagnose_unread_inputs", "gauge", [(one, float(status.unread_inputs))])
    active = status.active if status is not None else report.findings
    family("diagnose_findings_active", "gauge", _by_rule(active, node, lambda _f: 1))
    family("diagnose_finding_occurrences", "gauge", _by_rule(report.findings, node, lambda f: f.count))
    if status is not None:
        family("diagnose_findings_opened_total", "counter",
               [({"rule": r, "category": c, "severity": s}, float(n))
                for (r, c, s), n in sorted(status.opened_total.items())])
    latest = _latest(report)
    nodes = _capped(sorted({n for n, _, _ in latest}), MAX_NODES)
    for name, signal, scale in SIGNALS:
        per: dict[tuple[str, str], float] = {}
        engines: dict[str, list[str]] = defaultdict(list)
        for (n, engine, sig), value in sorted(latest.items()):
            if sig == signal:
                engines[nodes.get(n, OTHER)].append(engine)
        for (n, engine, sig), value in sorted(latest.items()):
            if sig != signal:
                continue
            shown_node = nodes.get(n, OTHER)
            shown_engine = _capped(engines[shown_node], MAX_ENGINES).get(engine, OTHER)
            per[(shown_node, shown_engine)] = value * scale
        family(name, "gauge", [({"node": n or node, "engine": e}, v) for (n, e), v in sorted(per.items())])
    family("diagnose_expert_load_imbalance_ratio", "gauge", _layers(report, node))
    return "\n".join(out) + "\n"


def _by_rule(findings, node: str, weight) -> list[tuple[dict[str, str], float]]:
    counts: Counter = Counter()
    all_nodes = sorted({n for f in findings for n in (f.nodes or [node])})
    shown = _capped(all_nodes, MAX_NODES)
    for f in findings:
        for n in sorted(set(f.nodes or [node])):
            counts[(shown.get(n, OTHER), f.rule_id, f.category, f.severity)] += weight(f)
    return [({"node": n, "rule": r, "category": c, "severity": s}, float(v))
            for (n, r, c, s), v in sorted(counts.items())]


def _latest(report: Report) -> dict[tuple[str, str, str], float]:
    """(node, engine, signal) -> the latest value of the selected signals, from the series and the signals."""
    wanted = [s for _, s, _ in SIGNALS]
    frames = []
    for frame in (report.series, report.signals):
        if frame is not None and frame.height:
            frames.append(frame.select(pl.col("node").cast(pl.String), pl.col("engine").cast(pl.String),
                                       pl.col("signal").cast(pl.String), "ts", "line", "value"))
    if not frames:
        return {}
    rows = pl.concat(frames).filter(pl.col("signal").is_in(wanted) & pl.col("value").is_not_null()
                                    & pl.col("value").is_finite())
    if rows.height == 0:
        return {}
    rows = rows.with_columns(pl.col("node").fill_null(""), pl.col("engine").fill_null(""))
    last = rows.sort("ts", "line", nulls_last=False).group_by("node", "engine", "signal").agg(pl.col("value").last())
    return {(n, e, s): float(v) for n, e, s, v in last.iter_rows()}


def _layers(report: Report, node: str) -> list[tuple[dict[str, str], float]]:
    """Expert-load imbalance (busiest expert over the mean) per MoE layer: the worst rank of each layer."""
    frame = report.signals
    if frame is None or frame.height == 0:
        return []
    rows = frame.filter(pl.col("signal") == "expert_hotspot_max_over_mean").select("node", "engine", "value")
    per: dict[tuple[str, int], float] = {}
    for n, engine, value in rows.iter_rows():
        m = _LAYER.search(engine or "")
        if m is None or value is None or not math.isfinite(value):
            continue
        key = (n or node, int(m.group(1)))
        per[key] = max(per.get(key, 0.0), float(value))
    nodes = _capped(sorted({n for n, _ in per}), MAX_NODES)
    out: dict[tuple[str, str], float] = {}
    for (n, layer), value in sorted(per.items()):
        shown = str(layer) if layer < MAX_LAYERS else OTHER
        key = (nodes.get(n, OTHER), shown)
        out[key] = max(out.get(key, 0.0), value)
    return [({"node": n, "layer": layer}, v) for (n, layer), v in sorted(out.items())]


def _capped(names, limit: int) -> dict[str, str]:
    """The first ``limit`` names stand for themselves; the rest are shown as ``other``."""
    return {name: (name if i < limit else OTHER) for i, name in enumerate(dict.fromkeys(names))}


def _labels(labels: dict[str, str]) -> str:
    if not labels:
        return ""
    inner = ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items())
    return "{" + inner + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))
