"""The incident page: one self-contained HTML file (plotly.js embedded once; opens offline, fetches nothing).

Sections: the root cause (the first finding) highlighted; the ranked findings with the same content as the
text report (summary, evidence lines with file:line, remediation, references); a timeline with one lane per
node/rank (or process) and a mark per warning/error record and per finding, zoomable; the signal curves the
findings rest on (KV cache usage, running/waiting requests, speculative acceptance, throughput, and the signal
of any threshold rule that fired), one trace per engine, with the rule thresholds drawn.

Safety: every string from the logs is HTML-escaped before it goes into the page, including the hover texts
given to plotly (plotly renders a few tags in them); figure data is embedded as JSON in
``<script type="application/json">`` blocks whose ``<``, ``>`` and ``&`` are JSON-escaped, and drawn by one
small script with ``JSON.parse`` — never string-built JavaScript.

Large bundles: curves are downsampled to ``max_points`` per trace (per bucket the minimum and the maximum are
kept, so peaks and threshold crossings survive), the timeline to ``max_marks`` marks and evidence to
``max_evidence`` lines per finding; the page says what it left out. plotly is imported only in ``render``.
"""

from __future__ import annotations

import html
import json
from datetime import datetime
from typing import Any

import polars as pl

from diagnose.coverage import lines_for as coverage_lines
from diagnose.model import Finding, Report

LEVELS = ("WARNING", "ERROR", "CRITICAL")
LEVEL_COLOR = {"WARNING": "#e0a800", "ERROR": "#d62728", "CRITICAL": "#7b0000"}
SEVERITY_COLOR = {"critical": "#7b0000", "error": "#d62728", "warning": "#e0a800", "info": "#1f77b4"}


# Page headings; finding texts come in the report's language already.
LABELS = {
    "en": {"title": "Incident report", "root": "Root cause", "findings": "Findings", "timeline": "Timeline",
           "signals": "Signals behind the findings", "details": "Details", "evidence": "Evidence",
           "fix": "What to do", "refs": "References", "none": "No findings.", "left": "Left out",
           "skipped": "Skipped", "errors": "Internal errors (the run is incomplete)", "inputs": "Inputs",
           "more": "details and what to do", "caused": "caused by"},
    "zh": {"title": "故障报告", "root": "根因", "findings": "发现的问题", "timeline": "时间线",
           "signals": "问题背后的指标曲线", "details": "详情", "evidence": "证据", "fix": "处理建议",
           "refs": "参考", "none": "未发现问题。", "left": "未显示的内容", "skipped": "已跳过",
           "errors": "内部错误（结果不完整）", "inputs": "输入文件", "more": "详情与处理建议",
           "caused": "起因"},
}

# --- helpers ------------------------------------------------------------------------------------------

def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _ts(value: datetime | None) -> str | None:
    return value.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] if value is not None else None


def _json(obj: Any) -> str:
    """JSON safe inside a <script type="application/json"> element."""
    text = json.dumps(obj, ensure_ascii=False, default=str, allow_nan=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def lane_label(node: str | None, rank: int | None, proc: str | None, source: str | None) -> str:
    parts = [node or "?"]
    if rank is not None:
        parts.append(f"rank {rank}")
    if proc and (source != "plog" or rank is None):
        parts.append(proc)
    return " · ".join(parts)


def downsample(xs: list, ys: list, max_points: int) -> tuple[list, list]:
    """At most ``max_points`` points: per bucket of consecutive points, its minimum and its maximum."""
    n = len(xs)
    if n <= max_points:
        return xs, ys
    buckets = max(1, max_points // 2)
    keep: set[int] = set()
    for b in range(buckets):
        lo, hi = b * n // buckets, (b + 1) * n // buckets
        if hi <= lo:
            continue
        seg = range(lo, hi)
        keep.add(min(seg, key=lambda i: ys[i]))
        keep.add(max(seg, key=lambda i: ys[i]))
    idx = sorted(keep)
    return [xs[i] for i in idx], [ys[i] for i in idx]


def _thresholds(catalog, findings: list[Finding]) -> dict[str, list[dict]]:
    """signal -> [{rule, value, op, fired, plain}] from the threshold rules' [match] tables (plain: the value
    alone decides, no `also` conditions on other signals and no engine filter)."""
    if catalog is None:
        try:
            from diagnose.engine import builtin_rules_dir, load_rules

            catalog, _ = load_rules([builtin_rules_dir()])
        except Exception:  # noqa: BLE001 - no thresholds is better than no page
            catalog = []
    fired = {f.rule_id for f in findings}
    out: dict[str, list[dict]] = {}
    for rule in catalog:
        m = getattr(rule, "match", None)
        if getattr(m, "kind", None) != "threshold":
            continue
        for op in ("above", "below"):
            if getattr(m, op) is not None:
                out.setdefault(m.signal, []).append(
                    {"rule": rule.id, "value": float(getattr(m, op)), "op": op, "fired": rule.id in fired,
                     "plain": not m.also and m.engine_regex is None})
    return out


# --- figures ------------------------------------------------------------------------------------------

def _timeline_figure(report: Report, max_marks: int, notes: list[str]):
    import plotly.graph_objects as go

    frame = getattr(report, "timeline", None)
    findings = report.findings
    rows = frame.to_dicts() if frame is not None and frame.height else []
    if frame is not None and frame.height:
        lanes_total = frame.filter(pl.col("lane_total") > 0).unique(["node", "rank", "proc"])["lane_total"].sum()
        shown = frame.filter(pl.col("level").is_in(list(LEVELS)).fill_null(False)).height
        if lanes_total and lanes_total > shown:
            notes.append(f"Timeline: {lanes_total - shown} of {lanes_total} warning/error events left out "
                         "(beyond the first ones of each node/rank; traceback bodies are never drawn).")
    if len(rows) > max_marks:
        rows.sort(key=lambda r: (not r["evidence"], r["ts"]))
        notes.append(f"Timeline: {len(rows) - max_marks} more marks left out (limit {max_marks}).")
        rows = rows[:max_marks]
    rules_at: dict[tuple[str, int], list[str]] = {}
    for f in findings:
        for e in f.evidence:
            rules_at.setdefault((e.file, e.line), []).append(f.rule_id)
    where: dict[tuple[str, int], str] = {}
    for r in rows:
        r["lane"] = lane_label(r["node"], r["rank"], r["proc"], r["source"])
        r["rules"] = ",".join(dict.fromkeys(rules_at.get((r["file"], r["line"]), [])))
        where[(r["file"], r["line"])] = r["lane"]
    marks = []  # findings: at first_seen, on the lane of their first dated evidence line
    for i, f in enumerate(findings):
        lane = next((where[(e.file, e.line)] for e in f.evidence if (e.file, e.line) in where), None)
        ts = f.first_seen
        if ts is None:
            continue
        if lane is None:
            lane = (f.nodes[0] if f.nodes else "?") + (f" · rank {f.ranks[0]}" if f.ranks else "")
        marks.append((i, f, lane, ts))
    if not rows and not marks:
        return None
    # Lane order: first the lanes with evidence of the incident (the root cause and the findings caused by
    # it), by their earliest such mark, so the lane that failed first is on top; then lanes with evidence of
    # other warning+ findings; then the rest by their first warning/error (background noise sinks).
    root_id = findings[0].rule_id if findings else None
    incident = {f.rule_id for f in findings if root_id in (f.rule_id, f.caused_by)}
    serious = {f.rule_id for f in findings if f.severity != "info"}

    def tier(rules: set[str]) -> int:
        return 0 if rules & incident else 1 if rules & serious else 2

    first: dict[str, tuple[int, str]] = {}
    for r in rows:
        key = (tier(set(r["rules"].split(",")) if r["rules"] else set()), _ts(r["ts"]))
        first[r["lane"]] = min(first.get(r["lane"], key), key)
    for _, f, lane, ts in marks:
        key = (tier({f.rule_id}), _ts(ts))
        first[lane] = min(first.get(lane, key), key)
    lanes = sorted(first, key=lambda k: (first[k], k))
    fig = go.Figure()
    for level in LEVELS:
        for linked in (True, False):
            pts = [r for r in rows if r["level"] == level and bool(r["rules"]) == linked]
            if not pts:
                continue
            fig.add_trace(go.Scatter(
                x=[_ts(r["ts"]) for r in pts], y=[r["lane"] for r in pts], mode="markers",
                name=level.lower() + (" (evidence)" if linked else ""),
                meta={"kind": "records", "level": level, "evidence": linked},
                customdata=[r["rules"] for r in pts],
                marker={"color": LEVEL_COLOR[level], "size": (8 if level == "WARNING" else 10) if linked else 6,
                        "opacity": 1 if linked else 0.45, "symbol": "circle",
                        "line": {"width": 1.2 if linked else 0, "color": "black"}},
                hovertext=[_e(f"{r['file']}:{r['line']}  {r['level']}" + (f" {r['code']}" if r["code"] else ""))
                           + "<br>" + _e((r["message"] or "")[:200])
                           + (f"<br>evidence of {_e(r['rules'])}" if r["rules"] else "") for r in pts],
                hoverinfo="x+text",
            ))
    ev_rows = [r for r in rows if r["evidence"] and r["level"] not in LEVELS]
    if ev_rows:
        fig.add_trace(go.Scatter(
            x=[_ts(r["ts"]) for r in ev_rows], y=[r["lane"] for r in ev_rows], mode="markers",
            name="evidence (info)", meta={"kind": "evidence"}, customdata=[r["rules"] for r in ev_rows],
            marker={"color": "#1f77b4", "size": 12, "symbol": "line-ns-open", "line": {"width": 2, "color": "#1f77b4"}},
            hovertext=[_e(f"{r['file']}:{r['line']}") + "<br>" + _e((r["message"] or "")[:200]) for r in ev_rows],
            hoverinfo="x+text",
        ))
    others = [m for m in marks if m[0] != 0]
    if others:
        fig.add_trace(go.Scatter(
            x=[_ts(ts) for _, _, _, ts in others], y=[lane for _, _, lane, _ in others], mode="markers+text",
            name="finding", meta={"kind": "findings", "rules": [f.rule_id for _, f, _, _ in others]},
            text=[_e(f.rule_id) for _, f, _, _ in others], textposition="middle right",
            marker={"symbol": "diamond", "size": 13, "color": [SEVERITY_COLOR[f.severity] for _, f, _, _ in others],
                    "line": {"color": "black", "width": 1}},
            hovertext=[_e(f"#{i + 1} {f.rule_id} {f.title}")
                       + (f"<br>caused by {_e(f.caused_by)}" if f.caused_by else "") for i, f, _, _ in others],
            hoverinfo="x+text",
        ))
    root = next((m for m in marks if m[0] == 0), None)
    shapes, annotations = [], []
    if root is not None:
        _, f, lane, ts = root
        fig.add_trace(go.Scatter(
            x=[_ts(ts)], y=[lane], mode="markers", name="root cause",
            meta={"kind": "root", "rule": f.rule_id},
            marker={"symbol": "star", "size": 22, "color": "#ff7f0e", "line": {"color": "black", "width": 1.5}},
            hovertext=[_e(f"root cause: {f.rule_id} {f.title}")], hoverinfo="x+text",
        ))
        shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": _ts(ts), "x1": _ts(ts), "y0": 0, "y1": 1,
                       "line": {"color": "#ff7f0e", "width": 2, "dash": "dot"}})
        annotations.append({"x": _ts(ts), "y": 1, "xref": "x", "yref": "paper", "yanchor": "bottom",
                            "text": _e(f"root cause {f.rule_id}"), "showarrow": False,
                            "font": {"color": "#b35900"}})
    fig.update_layout(
        title="Timeline: one lane per node/rank (first failure on top); drag to zoom, double-click to reset",
        height=max(380, 160 + 24 * len(lanes)), hovermode="closest", dragmode="zoom",
        yaxis={"type": "category", "categoryorder": "array", "categoryarray": list(reversed(lanes)),
               "automargin": True},
        xaxis={"title": "time (node wall clock)", "rangeslider": {"visible": len(lanes) <= 40}},
        shapes=shapes, annotations=annotations,
    )
    return fig


def _curve_figures(report: Report, thresholds: dict[str, list[dict]], findings: list[Finding], max_points: int,
                   notes: list[str]) -> list[tuple[str, Any]]:
    import plotly.graph_objects as go

    from diagnose.series import with_series

    signals = with_series(report.signals, report.series)  # every periodic sample, not only those rules saw
    if signals is None or signals.height == 0:
        return []
    timed = signals.filter(pl.col("ts").is_not_null() & pl.col("value").is_not_null() & pl.col("value").is_finite())
    if timed.height == 0:
        return []
    counts = timed.group_by("signal").len()
    present = {s for s, n in counts.iter_rows() if n >= 2}
    fired = {f.rule_id for f in findings}
    panels = [p for p in report.panels if present & set(p[2])]
    listed = {s for p in report.panels for s in p[2]}
    for sig, ths in sorted(thresholds.items()):
        if sig in present and sig not in listed and any(t["rule"] in fired for t in ths):
            panels.append((sig.replace("_", " "), "", (sig,)))
    figs = []
    cut = 0
    for title, unit, sigs in panels:
        fig = go.Figure()
        part = timed.filter(pl.col("signal").is_in(list(sigs))).sort("ts")
        groups = part.group_by(["signal", "node", "engine"], maintain_order=True)
        ymin, ymax, xs_all = None, None, []
        for (sig, node, engine), g in groups:
            xs = [_ts(t) for t in g["ts"].to_list()]
            ys = g["value"].to_list()
            if len(xs) > max_points:
                cut += len(xs) - max_points
                xs, ys = downsample(xs, ys, max_points)
            name = " ".join(str(p) for p in (sig if len(sigs) > 1 else None, node, engine) if p)
            fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers" if len(xs) < 60 else "lines",
                                     name=_e(name or sig), meta={"kind": "curve", "signal": sig},
                                     hovertemplate="%{x}<br>%{y}<extra>" + _e(name or sig) + "</extra>"))
            xs_all += [xs[0], xs[-1]]
            ymin = min(ys) if ymin is None else min(ymin, min(ys))
            ymax = max(ys) if ymax is None else max(ymax, max(ys))
        if not xs_all:
            continue
        x0, x1 = min(xs_all), max(xs_all)
        for sig in sigs:
            for th in thresholds.get(sig, []):
                if not th["fired"] and not th["plain"]:
                    continue  # a conditional threshold that did not fire would mislead on its own
                color = "#d62728" if th["fired"] else "#888888"
                label = (f"{th['rule']} threshold: {th['op']} {th['value']:g}"
                         + ("" if th["plain"] else " (with conditions)") + ("" if th["fired"] else " (did not fire)"))
                fig.add_trace(go.Scatter(
                    x=[x0, x1], y=[th["value"], th["value"]], mode="lines", name=_e(label),
                    meta={"kind": "threshold", "signal": sig, "rule": th["rule"], "value": th["value"],
                          "op": th["op"], "fired": th["fired"]},
                    line={"color": color, "dash": "dash", "width": 2}, hoverinfo="name",
                ))
        fig.update_layout(title=_e(title), height=340, yaxis_title=_e(unit), xaxis_title="time",
                          hovermode="x unified", legend={"orientation": "h", "y": -0.3})
        figs.append((title, fig))
    if cut:
        notes.append(f"Curves: {cut} points left out by downsampling (at most {max_points} per curve; "
                     "each bucket keeps its minimum and maximum, so peaks and threshold crossings stay).")
    return figs


# --- page ---------------------------------------------------------------------------------------------

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans CJK SC",sans-serif;margin:24px auto;
max-width:1320px;color:#222;padding:0 16px}
h1{font-size:1.5em;margin-bottom:4px}h2{margin-top:32px;border-bottom:1px solid #ddd;padding-bottom:4px}
.meta{color:#666;font-size:.9em}
.root{border:3px solid #ff7f0e;background:#fff6ec;border-radius:8px;padding:12px 18px;margin:18px 0}
.root h2{border:0;margin:0 0 6px 0;color:#b35900}
table{border-collapse:collapse;font-size:.92em;width:100%}
th,td{border-bottom:1px solid #eee;padding:4px 8px;text-align:left;vertical-align:top}
.sev{color:#fff;border-radius:4px;padding:1px 6px;font-size:.85em;font-weight:600}
.finding{border:1px solid #ddd;border-radius:8px;padding:10px 16px;margin:14px 0}
.finding.first{border:3px solid #ff7f0e}
.ev{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.82em;background:#f7f7f7;padding:6px 8px;
overflow-x:auto;white-space:pre-wrap;word-break:break-all}
.ev .loc{color:#777}
.note{background:#f4f4ff;border-left:4px solid #88a;padding:6px 10px;margin:6px 0;font-size:.9em}
.plot{margin:12px 0}
"""


def _sev(severity: str) -> str:
    return f"<span class=\"sev\" style=\"background:{SEVERITY_COLOR.get(severity, '#555')}\">{_e(severity)}</span>"


def _where(f: Finding) -> str:
    return f.short_where(',') or "-"


def _markdown(text: str) -> str:
    try:
        from markdown_it import MarkdownIt

        return MarkdownIt("commonmark", {"html": False}).render(text)  # raw HTML in the source is escaped
    except Exception:  # noqa: BLE001 - plain text is fine
        return f"<pre>{_e(text)}</pre>"


def _finding_html(i: int, f: Finding, max_evidence: int, notes: list[str], lab: dict[str, str]) -> str:
    out = [f"<div class=\"finding{' first' if i == 1 else ''}\" id=\"finding-{i}\">",
           f"<h3>{i}. {_sev(f.severity)} {_e(f.rule_id)} {_e(f.name)}: {_e(f.title)}</h3>",
           f"<div class=\"meta\">{_e(f.category)} · {_e(f.count)} times · {_e(_where(f))} · first seen "
           f"{_e(_ts(f.first_seen) or '-')} · last seen {_e(_ts(f.last_seen) or '-')}</div>",
           f"<p>{_e(f.summary)}</p>"]
    if f.caused_by:
        out.append(f"<p><i>{lab['caused']} {_e(f.caused_by)}</i></p>")
    if f.evidence:
        out.append(f"<b>{lab['evidence']}</b><div class=\"ev\">")
        for e in f.evidence[:max_evidence]:
            out.append(f"<div><span class=\"loc\">{_e(e.file)}:{_e(e.line)}:</span> {_e(e.text[:600])}</div>")
        out.append("</div>")
        if len(f.evidence) > max_evidence:
            more = len(f.evidence) - max_evidence
            out.append(f"<div class=\"note\">{more} more evidence lines left out (see --format json).</div>")
            notes.append(f"{f.rule_id}: {more} evidence lines left out.")
    if f.remediation:
        out.append(f"<b>{lab['fix']}</b>" + _markdown(f.remediation))
    if f.references:
        out.append(f"<div class=\"meta\">{lab['refs']}: " + " · ".join(_e(r) for r in f.references) + "</div>")
    out.append("</div>")
    return "\n".join(out)


def render(report: Report, lang: str = "en", catalog=None, max_points: int = 1500, max_marks: int = 5000,
           max_evidence: int = 20, **_options) -> str:
    import plotly.io as pio
    from plotly.offline import get_plotlyjs

    findings = report.findings
    lab = LABELS.get(lang, LABELS["en"])
    notes: list[str] = []
    figs: list[tuple[str, Any]] = []
    try:  # a drawing problem must not cost the findings: say so on the page instead
        timeline = _timeline_figure(report, max_marks, notes)
    except Exception as exc:  # noqa: BLE001
        timeline = None
        notes.append(f"The timeline could not be drawn: {type(exc).__name__}: {exc}")
    if timeline is not None:
        figs.append(("timeline", timeline))
    try:
        curves = _curve_figures(report, _thresholds(catalog, findings), findings, max_points, notes)
    except Exception as exc:  # noqa: BLE001
        curves = []
        notes.append(f"The signal curves could not be drawn: {type(exc).__name__}: {exc}")
    for n, (_, fig) in enumerate(curves):
        figs.append((f"curve-{n}", fig))

    lines = sum(i.lines for i in report.inputs)
    parts = ["<!DOCTYPE html><html lang=\"" + _e(lang) + "\"><head><meta charset=\"utf-8\">",
             "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
             f"<title>diagnose: incident report</title><style>{CSS}</style>",
             "<script>window.__errors=[];window.addEventListener('error',"
             "function(e){window.__errors.push(String(e.message))});</script>",
             f"<script type=\"text/javascript\">{get_plotlyjs()}</script>" if figs else "",
             "</head><body>",
             f"<h1>{lab['title']}</h1>",
             f"<div class=\"meta\">read {len(report.inputs)} files, {lines} lines; {len(report.skipped)} skipped; "
             f"{len(findings)} findings</div>"]
    # A run that analysed nothing, or not every input, says so first (diagnose/coverage.py).
    parts += [f"<div class=\"note\" id=\"coverage\">{_e(t)}</div>" for _, t in coverage_lines(report, lang, 10)]
    if findings:
        f = findings[0]
        parts.append(f"<div class=\"root\" id=\"root-cause\"><h2>{lab['root']}: "
                     f"{_sev(f.severity)} {_e(f.rule_id)} {_e(f.title)}</h2><p>{_e(f.summary)}</p>"
                     f"<div class=\"meta\">{_e(_where(f))} · first seen {_e(_ts(f.first_seen) or '-')} · "
                     f"<a href=\"#finding-1\">{lab['more']}</a></div></div>")
        parts.append(f"<h2>{lab['findings']}</h2><table><tr><th>#</th><th>severity</th><th>rule</th><th>category</th>"
                     "<th>title</th><th>count</th><th>where</th><th>first seen</th></tr>")
        for i, f in enumerate(findings, 1):
            parts.append(f"<tr><td>{i}</td><td>{_sev(f.severity)}</td>"
                         f"<td><a href=\"#finding-{i}\">{_e(f.rule_id)}</a></td>"
                         f"<td>{_e(f.category)}</td><td>{_e(f.title)}"
                         f"{(' ← ' + _e(f.caused_by)) if f.caused_by else ''}</td><td>{_e(f.count)}</td>"
                         f"<td>{_e(_where(f))}</td><td>{_e(_ts(f.first_seen) or '-')}</td></tr>")
        parts.append("</table>")
    elif (report.coverage or {}).get("status") != "nothing-analysed":
        parts.append(f"<p>{lab['none']}</p>")

    details = [_finding_html(i, f, max_evidence, notes, lab) for i, f in enumerate(findings, 1)]
    plot_html = []
    for key, fig in list(figs):
        fig.update_layout(template="plotly_white", margin={"l": 60, "r": 30, "t": 60, "b": 50})
        try:
            data = _json(json.loads(pio.to_json(fig, validate=False)))
        except (TypeError, ValueError) as exc:  # e.g. a NaN that JSON cannot carry
            notes.append(f"Plot {key} could not be drawn: {type(exc).__name__}: {exc}")
            figs.remove((key, fig))
            if key == "timeline":
                timeline = None
            continue
        plot_html.append(f"<div class=\"plot\" id=\"plot-{key}\"></div>"
                         f"<script type=\"application/json\" id=\"fig-{key}\" class=\"fig-data\">"
                         f"{data}</script>")
    if notes:
        parts.append(f"<h2>{lab['left']}</h2>" + "".join(f"<div class=\"note\">{_e(n)}</div>" for n in notes))
    if timeline is not None:
        parts.append(f"<h2>{lab['timeline']}</h2>" + plot_html[0])
    if len(plot_html) > (1 if timeline is not None else 0):
        parts.append(f"<h2>{lab['signals']}</h2>"
                     "<div class=\"meta\">One trace per engine; dashed lines are rule thresholds "
                     "(red: the rule fired).</div>")
        parts += plot_html[1 if timeline is not None else 0:]
    if details:
        parts.append(f"<h2>{lab['details']}</h2>")
        parts += details
    if report.skipped:
        parts.append(f"<h2>{lab['skipped']} ({len(report.skipped)})</h2><ul>"
                     + "".join(f"<li>{_e(s.path)}: {_e(s.reason)}</li>" for s in report.skipped[:200]) + "</ul>")
        if len(report.skipped) > 200:
            parts.append(f"<div class=\"note\">{len(report.skipped) - 200} more skipped files "
                         "(see --format json).</div>")
    if report.errors:
        parts.append(f"<h2>{lab['errors']}</h2><ul>"
                     + "".join(f"<li>{_e(e)}</li>" for e in report.errors) + "</ul>")
    if report.inputs:
        parts.append(f"<h2>{lab['inputs']}</h2><details><summary>{len(report.inputs)} files</summary><table>"
                     "<tr><th>file</th><th>kind</th><th>node</th><th>lines</th><th>kept raw</th><th>note</th></tr>"
                     + "".join(f"<tr><td>{_e(i.path)}</td><td>{_e(i.kind)}</td><td>{_e(i.node or '')}</td>"
                               f"<td>{i.lines}</td><td>{i.raw_lines}</td><td>{_e(i.note or '')}</td></tr>"
                               for i in report.inputs[:2000])
                     + "</table></details>")
    parts.append(
        "<script>(function(){var cfg={displaylogo:false,responsive:true,scrollZoom:true};"
        "document.querySelectorAll('script.fig-data').forEach(function(s){"
        "try{var f=JSON.parse(s.textContent);var div=document.getElementById(s.id.replace(/^fig-/,'plot-'));"
        "Plotly.newPlot(div,f.data,f.layout,cfg);}catch(err){window.__errors.push(String(err));}});"
        "window.addEventListener('load',function(){document.body.setAttribute('data-plots',"
        "String(document.querySelectorAll('.js-plotly-plot').length));"
        "document.body.setAttribute('data-errors',String(window.__errors.length));});})();</script>")
    parts.append("</body></html>")
    return "\n".join(p for p in parts if p)
