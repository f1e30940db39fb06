"""The signal curves of the incident page: the panels the source kinds declare (and the signal of any threshold
rule that fired), one trace per engine, with the rule thresholds drawn.

The y axis shows the scale of the metric, not the spread of its noise: it starts at zero (or below, for a
negative value or threshold), reaches the largest value or threshold with a margin, and a percentage runs to
100. A mean acceptance length between 1.80 and 1.84 is a flat line near 1.8 on a 0-2 axis, not a square wave.

Large bundles: every curve is cut to ``max_points`` (per bucket of consecutive points the minimum and the
maximum are kept, so peaks and threshold crossings survive).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from diagnose.messages import Messages
from diagnose.model import Finding, Report
from diagnose.report.page.crowd import MANY, NAMED, crowd_traces, engine_count
from diagnose.model.series import timed_counts, with_series
from diagnose.report.page.kit import e
from diagnose.report.page.markup import plot_time


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


def thresholds(report: Report) -> dict[str, list[dict]]:
    """signal -> [{rule, value, op, fired, plain}] from the threshold rules that ran (plain: the value alone
    decides, no `also` conditions on other signals and no engine filter)."""
    fired = {f.rule_id for f in report.findings}
    out: dict[str, list[dict]] = {}
    for rule in report.rules_checked:
        for th in rule.thresholds:
            out.setdefault(th.signal, []).append(
                {"rule": rule.id, "value": th.value, "op": th.op, "fired": rule.id in fired, "plain": th.plain})
    return out


def y_range(unit: str, ymin: float, ymax: float, lines: list[float]) -> list[float]:
    """From zero (or the lowest negative value or threshold) to the top value or threshold, with a margin."""
    lo = min([0.0, ymin, *lines])
    hi = max([ymax, *lines])
    if unit == "%" and lo >= 0 and hi <= 100:
        hi = 100.0
    if hi <= lo:
        hi = lo + 1.0
    pad = (hi - lo) * 0.06
    return [lo - (pad if lo < 0 else pad / 3), hi + pad]


def _lines(fig: Any, part: pl.DataFrame, sigs: tuple[str, ...], max_points: int) -> tuple[list, list, int]:
    """One line per signal and engine; the values they span, their first and last times, the samples cut."""
    import plotly.graph_objects as go  # deferred: plotly (only for the HTML pages)

    values: list[float] = []
    xs_all: list[str] = []
    cut = 0
    for (sig, node, engine), g in part.group_by(["signal", "node", "engine"], maintain_order=True):
        xs = [plot_time(t) for t in g["ts"].to_list()]
        ys = g["value"].to_list()
        if len(xs) > max_points:
            cut += len(xs) - max_points
            xs, ys = downsample(xs, ys, max_points)
        name = " ".join(str(p) for p in (sig if len(sigs) > 1 else None, node, engine) if p)
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers" if len(xs) < 60 else "lines",
                                 name=e(name or sig), meta={"kind": "curve", "signal": sig},
                                 hovertemplate="%{x}<br>%{y}<extra>" + e(name or sig) + "</extra>"))
        xs_all += [xs[0], xs[-1]]
        values += [min(ys), max(ys)]
    return values, xs_all, cut


def curve_figures(report: Report, ths: dict[str, list[dict]], findings: list[Finding], max_points: int,
                  notes: list[str], msg: Messages) -> list[tuple[str, Any]]:
    import plotly.graph_objects as go  # deferred: plotly (4 MB of JS, only for the incident page's curves)

    # Every periodic sample, not only those rules saw; counted on the compact series, and each panel's rows
    # made strings on their own (the whole series as strings was three times its size).
    counts = timed_counts(report.signals, report.series)
    if not counts:
        return []
    present = {s for s, n in counts.items() if n >= 2}
    fired = {f.rule_id for f in findings}
    panels = [p for p in report.panels if present & set(p[2])]
    listed = {s for p in report.panels for s in p[2]}
    for sig, lines in sorted(ths.items()):
        if sig in present and sig not in listed and any(t["rule"] in fired for t in lines):
            panels.append((sig, "", (sig,)))  # titled by the finding that fired on it (below)
    figs = []
    cut = 0
    for title, unit, sigs in panels:
        fig = go.Figure()
        part = with_series(report.signals, report.series, list(sigs))
        part = part.filter(pl.col("ts").is_not_null() & pl.col("value").is_not_null()
                           & pl.col("value").is_finite()).sort("ts")
        crowd = engine_count(part)
        if crowd > MANY:  # a band, the median and the engines furthest from it (page/crowd.py)
            traces, values, xs_all, n_cut, named = crowd_traces(part, sigs, max_points, msg, downsample)
            fig.add_traces(traces)
        else:
            values, xs_all, n_cut = _lines(fig, part, sigs, max_points)
        cut += n_cut
        if not xs_all:
            continue
        ymin, ymax = min(values), max(values)
        x0, x1 = min(xs_all), max(xs_all)
        drawn: list[float] = []
        for sig in sigs:
            for th in ths.get(sig, []):
                if not th["fired"] and not th["plain"]:
                    continue  # a conditional threshold that did not fire would mislead on its own
                drawn.append(th["value"])
                color = "#d62728" if th["fired"] else "#888888"
                label = msg("page.curves.threshold", rule=th["rule"], op=msg(f"page.curves.{th['op']}"),
                            value=f"{th['value']:g}")
                if not th["plain"]:
                    label += msg("page.curves.with_conditions")
                if not th["fired"]:
                    label += msg("page.curves.did_not_fire")
                fig.add_trace(go.Scatter(
                    x=[x0, x1], y=[th["value"], th["value"]], mode="lines", name=e(label),
                    meta={"kind": "threshold", "signal": sig, "rule": th["rule"], "value": th["value"],
                          "op": th["op"], "fired": th["fired"]},
                    line={"color": color, "dash": "dash", "width": 2}, hoverinfo="name",
                ))
        # A panel the kinds do not declare reads as the title of the finding whose threshold it shows, not as
        # a raw signal name.
        by_rule = next((f for t in ths.get(sigs[0], []) for f in findings if f.rule_id == t["rule"]), None)
        shown = msg.get(f"panel.{sigs[0]}", msg.say(by_rule.title) if by_rule is not None else title)
        fig.update_layout(title={"text": e(shown)}, height=340, hovermode="x unified",
                          yaxis={"title": {"text": e(msg.get(f"unit.{unit}", unit))},
                                 "range": y_range(unit, ymin, ymax, drawn)},
                          xaxis={"title": {"text": msg("page.curves.axis")}},
                          legend={"orientation": "h", "y": -0.3})
        figs.append((title, fig))
        if crowd > MANY and named:  # drawn as bands: say which engines have lines of their own
            who = ", ".join(dict.fromkeys(w for ws in named.values() for w in ws)) or msg("page.notes.none_stray")
            notes.append(msg("page.notes.crowded", panel=shown, n=crowd, k=NAMED, named=who))
    if cut:
        notes.append(msg("page.notes.downsampled", n=cut, max_points=max_points))
    return figs
