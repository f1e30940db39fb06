"""The plots of the expert-load page (plotly; imported only here and only when the page is drawn).

* layer x expert heatmap: load over the layer mean on a log2 colour scale, capped below at ``HEAT_FLOOR``, so a
  2.35x expert shows next to an 18.7x one;
* imbalance per layer and day, and the weekly line: every day of the window on the axis, so a day without a
  dump is a gap (and says so), never a straight line across it;
* both heatmaps label every layer, the layers over the target or with a hot expert in bold.
"""

from __future__ import annotations

import math
from datetime import date, datetime, timedelta
from typing import Any

from diagnose.messages import Messages
from diagnose.report.page.kit import e

HEAT_FLOOR = 1 / 4  # the layer x expert colours: load / layer mean on a log2 scale, capped below at 1/4


def calendar(w: dict[str, Any]) -> list[str]:
    """Every day of the report window (ISO), so that days without data show as gaps."""
    try:
        lo, hi = date.fromisoformat(w["since"]), date.fromisoformat(w["until"])
    except (KeyError, TypeError, ValueError):
        return []
    return [(lo + timedelta(days=i)).isoformat() for i in range((hi - lo).days + 1)]


def _shift(day: str, days: float) -> str:
    return (datetime.fromisoformat(day) + timedelta(days=days)).isoformat()


def figures(result: dict[str, Any], msg: Messages) -> list[tuple[str, Any]]:
    import plotly.graph_objects as go  # deferred: plotly (4 MB of JS, only for the expert-load page)

    w = result["window"]
    rec = result.get("recommendation", {})
    figs: list[tuple[str, Any]] = []
    heat = result.get("heatmap") or []
    target = rec.get("target") or 0
    layer_rows = result.get("layers") or []
    over = {x["layer"] for x in layer_rows if (x.get("rank_max_over_mean") or 0) > target}
    hot_layers = {h["layer"] for h in result.get("hot_experts") or [] if h.get("hot")}
    n_layers = len(heat) or len(layer_rows)

    def layer_axis(n: int) -> dict[str, Any]:
        """A tick and a label for every layer; layers over the target or with a hot expert in bold."""
        text = [f"<b>{i}</b>" if (i in over or i in hot_layers) else str(i) for i in range(n)]
        return {"tickmode": "array", "tickvals": list(range(n)), "ticktext": text, "autorange": "reversed",
                "tickfont": {"size": 10 if n > 24 else 12}, "title": {"text": e(msg("expertload.fig.layer"))}}

    row_px = 15 if n_layers > 24 else 24
    if heat:
        z, ratio = [], []
        for row in heat:
            mean = sum(row) / len(row) if row and sum(row) else 0
            rr = [v / mean if mean else 0.0 for v in row]
            ratio.append([round(x, 3) for x in rr])
            z.append([round(math.log2(max(x, HEAT_FLOOR)), 4) for x in rr])
        top = max((max(r) for r in ratio if r), default=1.0)
        lo, hi = math.log2(HEAT_FLOOR), max(3.0, float(math.ceil(math.log2(max(top, 1.0)))))
        ticks = list(range(int(lo), int(hi) + 1))
        labels = [f"≤1/{2 ** -t}×" if t == ticks[0] else (f"1/{2 ** -t}×" if t < 0 else f"{2 ** t}×") for t in ticks]
        stops = [(lo, "#2c5282"), (0.0, "#f7f7f7"), (1.0, "#fdae61"), (2.0, "#e6550d"), (3.0, "#a50f15"), (hi, "#67000d")]
        scale = [[(v - lo) / (hi - lo), c] for v, c in stops[:-1] if v < hi] + [[1.0, stops[-1][1]]]
        fig = go.Figure(go.Heatmap(
            z=z, customdata=ratio, x=list(range(len(z[0]))), y=list(range(len(z))), colorscale=scale,
            zmin=lo, zmax=hi,
            colorbar={"title": {"text": msg.html("expertload.fig.heat_bar", floor=round(1 / HEAT_FLOOR))},
                      "tickmode": "array", "tickvals": ticks, "ticktext": labels},
            hovertemplate=e(msg("expertload.fig.heat_hover")) + "<extra></extra>"))
        fig.update_layout(title={"text": e(msg("expertload.fig.heat_title"))},
                          xaxis_title=e(msg("expertload.fig.expert")), yaxis=layer_axis(len(z)),
                          height=max(320, row_px * len(z) + 160))
        figs.append(("heatmap", fig))
    trend = result.get("trend") or []
    if trend:
        cal = calendar(w)
        days = cal or sorted({t["day"] for t in trend})
        layers = list(range(n_layers)) if n_layers else sorted({t["layer"] for t in trend})
        idx = {(t["day"], t["layer"]): t["rank_max_over_mean"] for t in trend}
        missing = set((result.get("missing") or {}).get("days") or [])
        fig = go.Figure(go.Heatmap(z=[[idx.get((d, li)) for d in days] for li in layers], x=days, y=layers,
                                   colorscale="Reds", colorbar={"title": {"text": e(msg("expertload.fig.rank_ratio"))}},
                                   hoverongaps=False, hovertemplate=e(msg("expertload.fig.trend_hover")) + "<extra></extra>"))
        for d in sorted(missing & set(days)):
            fig.add_annotation(x=d, y=0, yref="paper", yanchor="bottom", text=e(msg("expertload.fig.no_dump")),
                               showarrow=False, font={"size": 10, "color": "#975a16"})
        fig.update_layout(title={"text": e(msg("expertload.fig.trend_title"))}, xaxis_title=e(msg("expertload.fig.day")),
                          yaxis=layer_axis(len(layers)), height=max(300, row_px * len(layers) + 160),
                          xaxis={"type": "category"})
        figs.append(("trend", fig))
        per_day = {d["day"]: d for d in result.get("days") or []}
        fig = go.Figure()
        for key, name in (("rank_max_over_mean_worst_layer", "expertload.fig.worst_layer"),
                          ("rank_max_over_mean_layer_mean", "expertload.fig.mean_over_layers")):
            fig.add_trace(go.Scatter(x=days, y=[per_day[d][key] if d in per_day else None for d in days],
                                     mode="lines+markers", name=e(msg(name)), connectgaps=False))
        for d in sorted(missing & set(days)):
            fig.add_vrect(x0=_shift(d, -0.5), x1=_shift(d, 0.5), fillcolor="#fefcbf", opacity=0.6, line_width=0,
                          annotation_text=e(msg("expertload.fig.no_dump")), annotation_position="top left")
        if rec.get("target"):
            fig.add_hline(y=rec["target"], line_dash="dash", annotation_text=e(msg("expertload.fig.target", target=rec["target"])))
        fig.update_layout(title={"text": e(msg("expertload.fig.days_title"))}, xaxis_title=e(msg("expertload.fig.day")),
                          yaxis_title=e(msg("expertload.fig.ratio")), height=340,
                          xaxis={"type": "date", "dtick": 86400000, "tickformat": "%m-%d"})
        figs.append(("days", fig))
    ranks = result.get("ranks") or []
    if ranks:
        fig = go.Figure()
        fig.add_trace(go.Bar(x=[r["rank"] for r in ranks], y=[r["prefill_tokens"] for r in ranks],
                             name=e(msg("expertload.fig.prefill"))))
        fig.add_trace(go.Bar(x=[r["rank"] for r in ranks], y=[r["decode_tokens"] for r in ranks],
                             name=e(msg("expertload.fig.decode"))))
        fig.update_layout(barmode="stack", title={"text": e(msg("expertload.fig.ranks_title"))},
                          xaxis_title=e(msg("expertload.fig.rank")), yaxis_title=e(msg("expertload.fig.expert_tokens")),
                          height=340, xaxis={"dtick": 1})
        figs.append(("ranks", fig))
    per_layer = rec.get("per_layer") or []
    if per_layer:
        fig = go.Figure()
        fig.add_trace(go.Bar(x=[p["layer"] for p in per_layer], y=[p["before"] for p in per_layer],
                             name=e(msg("expertload.fig.before"))))
        fig.add_trace(go.Bar(x=[p["layer"] for p in per_layer], y=[p["after"] for p in per_layer],
                             name=e(msg("expertload.fig.after"))))
        fig.add_hline(y=rec["target"], line_dash="dash", annotation_text=e(msg("expertload.fig.target", target=rec["target"])))
        fig.update_layout(barmode="group", title={"text": e(msg("expertload.fig.before_after_title"))},
                          xaxis_title=e(msg("expertload.fig.layer")), yaxis_title=e(msg("expertload.fig.ratio")), height=360)
        figs.append(("before-after", fig))
    eplb = (result.get("eplb") or {}).get("series") or []
    if eplb:
        fig = go.Figure()
        for name in sorted({x["signal"] for x in eplb}):
            pts = [x for x in eplb if x["signal"] == name and x["ts"]]
            fig.add_trace(go.Scatter(x=[x["ts"] for x in pts], y=[x["value"] for x in pts], mode="lines+markers",
                                     name=e(name)))
        fig.update_layout(title={"text": e(msg("expertload.fig.eplb_title"))}, xaxis_title=e(msg("expertload.fig.time")),
                          yaxis_title=e(msg("expertload.fig.value")), height=340)
        figs.append(("eplb", fig))
    return figs
