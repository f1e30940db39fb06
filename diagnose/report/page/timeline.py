"""The timeline of the incident page: one lane per node/rank (page/lanes.py), a dot per warning/error record,
a diamond per finding at its first time, a star for the root cause.

Labels (the rule ids beside the diamonds) are laid out before plotly draws them, for a plot about
``PLOT_PX`` wide: marks of one lane closer than their label's width share one label (``ENG010, ENG011``), and
the time axis gets room on the right for the last label, so no label is drawn over another or cut at the
edge of the plot. A bundle whose events all fall at one instant gets a window of ``MIN_SPAN_S`` around it,
not plotly's autorange of a millisecond. Dots whose message has the signature of an "Unrecognised errors"
entry say so in their hover text and legend.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import polars as pl

from diagnose.knowledge.masks import mask
from diagnose.messages import Messages
from diagnose.model import Report
from diagnose.report.page.kit import e
from diagnose.report.page.lanes import finding_lane, lane_order, with_lanes
from diagnose.report.page.markup import plot_time

LEVELS = ("WARNING", "ERROR", "CRITICAL")
LEVEL_COLOR = {"WARNING": "#e0a800", "ERROR": "#d62728", "CRITICAL": "#7b0000"}
SEVERITY_COLOR = {"critical": "#7b0000", "error": "#d62728", "warning": "#e0a800", "info": "#1f77b4"}
PLOT_PX = 900  # the width labels are laid out for (narrower than the page's plot: the layout errs safe)
CHAR_PX = 7.5  # a 12 px label character, generously
LABEL_GAP_PX = 8
MIN_SPAN_S = 60.0


def _label_px(text: str, root: bool) -> float:
    return (22 if root else 13) / 2 + LABEL_GAP_PX + CHAR_PX * len(text)


def _unrecognised_index(frame: pl.DataFrame, report: Report) -> pl.DataFrame:
    """``_uno``: the number (1-based) of the Unrecognised errors entry whose signature a row's message has."""
    items = report.unrecognised
    if not items or frame.height == 0:
        return frame.with_columns(_uno=pl.lit(None, pl.Int32))

    sigs = pl.DataFrame({"_sig": [u.signature for u in items], "_uno": list(range(1, len(items) + 1))},
                        schema={"_sig": pl.String, "_uno": pl.Int32}).unique("_sig", keep="first")
    with_sig = frame.with_columns(_sig=mask(pl.col("message").fill_null("")))
    return with_sig.join(sigs, on="_sig", how="left", maintain_order="left").drop("_sig")


def _groups(marks: list[dict[str, Any]], x0: datetime, span_s: float) -> list[dict[str, Any]]:
    """Marks of one lane whose labels would touch share one label (at the first mark's position)."""
    px_per_s = PLOT_PX / span_s
    out: list[dict[str, Any]] = []
    for m in sorted(marks, key=lambda m: (m["lane"], m["ts"], not m["root"])):
        g = out[-1] if out and out[-1]["lane"] == m["lane"] else None
        if g is not None and (m["ts"] - g["ts"]).total_seconds() * px_per_s < _label_px(g["text"], g["root"]):
            if m["rule"] not in g["rules"]:
                g["rules"].append(m["rule"])
                g["text"] = ", ".join(g["rules"])
            continue
        out.append({"lane": m["lane"], "ts": m["ts"], "rules": [m["rule"]], "text": m["rule"], "root": m["root"]})
    return out


def _x_range(times: list[datetime], marks: list[dict[str, Any]]) -> tuple[datetime, datetime, list[dict[str, Any]]]:
    """The time axis (with room for the labels) and the label groups laid out on it."""
    lo, hi = min(times), max(times)
    span = (hi - lo).total_seconds()
    if span <= 0:
        half = timedelta(seconds=MIN_SPAN_S / 2)
        return lo - half, hi + half, _groups(marks, lo - half, MIN_SPAN_S)
    total = span / 0.94
    groups: list[dict[str, Any]] = []
    for _ in range(4):  # the range depends on the labels and their grouping on the range: settle it
        x0 = lo - timedelta(seconds=0.03 * total)
        groups = _groups(marks, x0, total)
        need = total
        for g in groups:
            room = 1 - (_label_px(g["text"], g["root"]) + LABEL_GAP_PX) / PLOT_PX
            need = max(need, (g["ts"] - x0).total_seconds() / max(room, 0.2))
        need = max(need, span / 0.94)
        if abs(need - total) < 1e-9 * max(total, 1):
            break
        total = need
    x0 = lo - timedelta(seconds=0.03 * total)
    return x0, x0 + timedelta(seconds=total), groups


def timeline_figure(report: Report, msg: Messages, max_marks: int, notes: list[str]):
    import plotly.graph_objects as go  # deferred: plotly (4 MB of JS; sections use this module without it)

    frame = getattr(report, "timeline", None)
    findings = report.findings
    if frame is not None and frame.height:
        lanes_total = frame.filter(pl.col("lane_total") > 0).unique(["node", "rank", "proc"])["lane_total"].sum()
        shown = frame.filter(pl.col("level").is_in(list(LEVELS)).fill_null(False)).height
        if lanes_total and lanes_total > shown:
            notes.append(msg("page.notes.timeline_events", left=lanes_total - shown, total=lanes_total))
        frame = _unrecognised_index(with_lanes(frame, msg), report)
    rows = frame.to_dicts() if frame is not None and frame.height else []
    if len(rows) > max_marks:
        rows.sort(key=lambda r: (not r["evidence"], r["ts"]))
        notes.append(msg("page.notes.timeline_marks", n=len(rows) - max_marks, limit=max_marks))
        rows = rows[:max_marks]
    rules_at: dict[tuple[str, int], list[str]] = {}
    for f in findings:
        for ev in f.evidence:
            rules_at.setdefault((ev.file, ev.line), []).append(f.rule_id)
    where: dict[tuple[str, int], str] = {}
    for r in rows:
        r["rules"] = ",".join(dict.fromkeys(rules_at.get((r["file"], r["line"]), [])))
        where[(r["file"], r["line"])] = r["lane"]
    # The root cause's chain (diagnose/analysis/chains.py): its start may have no time (a driver version), so
    # the star marks the chain's first dated finding (the kernel timeout it led to).
    chain = [findings[0]] if findings else []
    for f in findings[1:]:
        if f.linked and f.caused_by in {c.rule_id for c in chain}:
            chain.append(f)
    star = next((f for f in chain if f.first_seen is not None), None)
    marks = []  # findings: at first_seen, on the lane of their first dated evidence line
    for i, f in enumerate(findings):
        if f.first_seen is None:
            continue
        lane = next((where[(ev.file, ev.line)] for ev in f.evidence if (ev.file, ev.line) in where), None)
        marks.append({"i": i, "f": f, "rule": f.rule_id, "lane": lane or finding_lane(f.nodes, f.ranks, msg),
                      "ts": f.first_seen, "root": f is star})
    if not rows and not marks:
        return None
    # Lane order: first the lanes with evidence of the incident (the root cause and the findings caused by
    # it), by their earliest such mark, so the lane that failed first is on top; then lanes with evidence of
    # other warning+ findings; then the rest by their first warning/error (background noise sinks).
    roots = {f.rule_id for f in chain}
    incident = {f.rule_id for f in findings if f.rule_id in roots or f.caused_by in roots}
    serious = {f.rule_id for f in findings if f.severity != "info"}

    def tier(rules: set[str]) -> int:
        return 0 if rules & incident else 1 if rules & serious else 2

    first: dict[str, tuple[int, str]] = {}
    for r in rows:
        key = (tier(set(r["rules"].split(",")) if r["rules"] else set()), plot_time(r["ts"]))
        first[r["lane"]] = min(first.get(r["lane"], key), key)
    for m in marks:
        key = (tier({m["rule"]}), plot_time(m["ts"]))
        first[m["lane"]] = min(first.get(m["lane"], key), key)
    lanes = lane_order(first)
    x0, x1, groups = _x_range([r["ts"] for r in rows] + [m["ts"] for m in marks], marks)
    # The page opens on the incident (the root cause's chain and its echoes), the whole span one click away:
    # on a 28-hour bundle a 10-minute incident is otherwise a thin strip.
    near = [r["ts"] for r in rows if r["rules"] and set(r["rules"].split(",")) & incident]
    near += [m["ts"] for m in marks if m["rule"] in incident]
    view = None
    if near and (max(near) - min(near)) < (x1 - x0) * 0.5:
        inc = [m for m in marks if m["rule"] in incident]
        v0, v1, _ = _x_range(near, inc)
        pad = max((v1 - v0) * 0.05, timedelta(seconds=MIN_SPAN_S / 4))
        view = (max(x0, v0 - pad), min(x1, v1 + pad))
        if view[1] > view[0]:  # labels laid out for the view; marks outside it keep their hover text
            groups = [g for g in _groups([m for m in marks if view[0] <= m["ts"] <= view[1]], view[0],
                                         (view[1] - view[0]).total_seconds())]
        else:
            view = None

    fig = go.Figure()
    for level in LEVELS:
        for cls in ("evidence", "unrecognised", "other"):
            pts = [r for r in rows if r["level"] == level and _class(r) == cls]
            if pts:
                fig.add_trace(_record_trace(go, pts, level, cls, msg))
    ev_rows = [r for r in rows if r["evidence"] and r["level"] not in LEVELS]
    if ev_rows:
        fig.add_trace(go.Scatter(
            x=[plot_time(r["ts"]) for r in ev_rows], y=[r["lane"] for r in ev_rows], mode="markers",
            name=msg("page.timeline.evidence_info"), meta={"kind": "evidence"}, customdata=[r["rules"] for r in ev_rows],
            marker={"color": "#1f77b4", "size": 12, "symbol": "line-ns-open", "line": {"width": 2, "color": "#1f77b4"}},
            hovertext=[e(f"{r['file']}:{r['line']}") + "<br>" + e((r["message"] or "")[:200]) for r in ev_rows],
            hoverinfo="x+text",
        ))
    others = [m for m in marks if not m["root"]]
    if others:
        fig.add_trace(go.Scatter(
            x=[plot_time(m["ts"]) for m in others], y=[m["lane"] for m in others], mode="markers",
            name=msg("page.timeline.finding"), meta={"kind": "findings", "rules": [m["rule"] for m in others]},
            marker={"symbol": "diamond", "size": 13, "color": [SEVERITY_COLOR[m["f"].severity] for m in others],
                    "line": {"color": "black", "width": 1}},
            hovertext=[e(f"#{m['i'] + 1} {m['rule']} {msg.say(m['f'].title)}")
                       + ("<br>" + e(msg("page.timeline.caused_by", rule=m["f"].caused_by)) if m["f"].caused_by else "")
                       for m in others],
            hoverinfo="x+text",
        ))
    root = next((m for m in marks if m["root"]), None)
    shapes, annotations = [], []
    if root is not None:
        f, t = root["f"], plot_time(root["ts"])
        fig.add_trace(go.Scatter(
            x=[t], y=[root["lane"]], mode="markers", name=msg("page.timeline.root"),
            meta={"kind": "root", "rule": f.rule_id},
            marker={"symbol": "star", "size": 22, "color": "#ff7f0e", "line": {"color": "black", "width": 1.5}},
            hovertext=[e(msg("page.timeline.root_hover", rule=f.rule_id, title=msg.say(f.title)))], hoverinfo="x+text",
        ))
        shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": t, "x1": t, "y0": 0, "y1": 1,
                       "line": {"color": "#ff7f0e", "width": 2, "dash": "dot"}})
        annotations.append({"x": t, "y": 1, "xref": "x", "yref": "paper", "yanchor": "bottom",
                            "text": e(msg("page.timeline.root_label", rule=f.rule_id)), "showarrow": False,
                            "font": {"color": "#b35900"}})
    if groups:  # the labels, laid out above: invisible markers of the marks' size keep them clear of the mark
        fig.add_trace(go.Scatter(
            x=[plot_time(g["ts"]) for g in groups], y=[g["lane"] for g in groups], mode="markers+text",
            text=[e(g["text"]) for g in groups], textposition="middle right", showlegend=False, hoverinfo="skip",
            meta={"kind": "labels", "rules": [g["rules"] for g in groups]},
            marker={"size": [22 if g["root"] else 13 for g in groups], "opacity": 0}, textfont={"size": 12},
        ))
    fig.update_layout(
        height=max(320, 150 + 24 * len(lanes)), hovermode="closest", dragmode="zoom",
        yaxis={"type": "category", "categoryorder": "array", "categoryarray": list(reversed(lanes)),
               "automargin": True, "range": [-0.7, len(lanes) - 0.3]},
        xaxis={"title": {"text": msg("page.timeline.axis")},
               "range": [plot_time(view[0]), plot_time(view[1])] if view else [plot_time(x0), plot_time(x1)],
               "hoverformat": "%Y-%m-%d %H:%M:%S.%L"},
        legend={"orientation": "h", "y": -0.18, "yanchor": "top"},
        shapes=shapes, annotations=annotations,
    )
    if view:
        spans = [("page.timeline.view_incident", view[0], view[1]), ("page.timeline.view_all", x0, x1)]
        fig.update_layout(meta={"incident": [plot_time(view[0]), plot_time(view[1])],
                                "whole": [plot_time(x0), plot_time(x1)]},
                          updatemenus=[{"type": "buttons", "direction": "right", "showactive": True, "active": 0,
                                        "x": 1, "xanchor": "right", "y": 1.02, "yanchor": "bottom",
                                        "buttons": [{"label": msg(key), "method": "relayout",
                                                     "args": [{"xaxis.range": [plot_time(a), plot_time(b)]}]}
                                                    for key, a, b in spans]}])
    return fig


def _class(r: dict[str, Any]) -> str:
    if r["rules"]:
        return "evidence"
    return "unrecognised" if r.get("_uno") is not None else "other"


def _record_trace(go, pts: list[dict[str, Any]], level: str, cls: str, msg: Messages):
    linked = cls == "evidence"
    word = msg(f"page.timeline.level_{level.lower()}")
    name = {"evidence": msg("page.timeline.level_evidence", level=word),
            "unrecognised": msg("page.timeline.level_unrecognised", level=word), "other": word}[cls]

    def hover(r: dict[str, Any]) -> str:
        text = e(f"{r['file']}:{r['line']}  {word}" + (f" {r['code']}" if r["code"] else ""))
        text += "<br>" + e((r["message"] or "")[:200])
        if r["rules"]:
            text += "<br>" + e(msg("page.timeline.evidence_of", rules=r["rules"]))
        elif r.get("_uno") is not None:
            text += "<br>" + e(msg("page.timeline.unrecognised_hover", n=r["_uno"]))
        return text

    return go.Scatter(
        x=[plot_time(r["ts"]) for r in pts], y=[r["lane"] for r in pts], mode="markers", name=name,
        meta={"kind": "records", "level": level, "evidence": linked, "class": cls},
        customdata=[r["rules"] for r in pts],
        marker={"color": LEVEL_COLOR[level], "size": (8 if level == "WARNING" else 10) if linked else 6,
                "opacity": 1 if linked else 0.45 if cls == "other" else 0.8,
                "symbol": "circle" if cls != "unrecognised" else "x",
                "line": {"width": 1.2 if linked else 0, "color": "black"}},
        hovertext=[hover(r) for r in pts], hoverinfo="x+text",
    )
