"""The expert-load report as one self-contained HTML page (plotly.js embedded: opens offline, no CDN).

Every string that comes from the data (paths, notes, dates) goes through ``html.escape``; the plots carry
only numbers and ISO dates.
"""

from __future__ import annotations

import base64
import html
import json
import math
from datetime import date, timedelta
from typing import Any

HEAT_FLOOR = 1 / 4  # the layer x expert colours: load / layer mean on a log2 scale, capped below at 1/4


def _calendar(w: dict[str, Any]) -> list[str]:
    """Every day of the report window (ISO), so that days without data show as gaps."""
    try:
        lo, hi = date.fromisoformat(w["since"]), date.fromisoformat(w["until"])
    except (KeyError, TypeError, ValueError):
        return []
    return [(lo + timedelta(days=i)).isoformat() for i in range((hi - lo).days + 1)]


def _shift(day: str, days: float) -> str:
    from datetime import datetime

    return (datetime.fromisoformat(day) + timedelta(days=days)).isoformat()

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1320px;color:#1f2933;padding:0 16px}
h1{font-size:24px;margin-bottom:4px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #d9e2ec;padding-bottom:4px}
.meta{color:#52606d;font-size:13px}.kpis{display:flex;gap:12px;flex-wrap:wrap;margin:16px 0}
.kpi{border:1px solid #d9e2ec;border-radius:6px;padding:10px 14px;min-width:150px}.kpi b{display:block;font-size:22px}
.kpi span{color:#52606d;font-size:12px}.bad b{color:#c53030}.good b{color:#2f855a}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #d9e2ec;padding:4px 8px;text-align:right}
th{background:#f0f4f8}td.l,th.l{text-align:left}tr.hot td{background:#fff5f5}
pre{background:#f7fafc;border:1px solid #d9e2ec;padding:8px;max-height:320px;overflow:auto;font-size:12px}
.note{color:#975a16}td.n{white-space:nowrap}
"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _f(x: float | None, fmt: str = "{:.2f}") -> str:
    return "n/a" if x is None else fmt.format(x)


FIRST_LABEL = {
    "start": "starts with the service (first block counted)",
    "continues": "continues the previous dump (difference counted)",
    "restart": "counters reset since the previous dump (first block counted)",
    "repeat": "repeats the previous dump (repeated blocks skipped)",
    "mid-run": "begins mid-run (first block not counted)",
    "gap": "counters ran on across missing days (first window not counted)",
    "unknown": "too few blocks to tell (first block not counted)",
    "slots": "slot count changed (first block not counted)",
}


def _counting(c: dict[str, Any]) -> list[str]:
    """Which windows were counted and why the others were not (section of the page)."""
    if not c:
        return []
    rep = f", {c['repeated']} blocks that repeat an earlier dump skipped" if c.get("repeated") else ""
    out = ["<h2 id=\"counting\">Counted windows</h2>",
           f"<p><b>{c['counted']:,}</b> of {c['windows']:,} windows (one per dump block) in {c['files']} dump files of the "
           f"report window are counted; <b>{c['not_counted']}</b> not counted{rep}.</p>"]
    fw = c.get("first_windows") or {}
    if fw:
        out.append("<p>First window of each file: " + "; ".join(f"{n} {_e(FIRST_LABEL.get(k, k))}" for k, n in fw.items()) + ".</p>")
    out.append(f"<p class=\"meta\">Rule: {_e(c.get('rule'))}</p>")
    nc = c.get("first_windows_not_counted") or []
    if nc:
        days = sorted({x["day"] for x in nc if x["day"]})
        summary = (f"{len(nc)} file{'s' if len(nc) != 1 else ''} not counted from the first block"
                   f" ({', '.join(days[:7])}{' …' if len(days) > 7 else ''})")
        out.append(f"<details{' open' if len(nc) <= 16 else ''}><summary>{_e(summary)}</summary>"
                   "<table id=\"not-counted\"><tr><th class=\"l\">file</th><th>day</th>"
                   "<th>stage</th><th>rank</th><th class=\"l\">first window</th><th class=\"l\">why</th></tr>")
        for x in nc[:200]:
            out.append(f"<tr><td class=\"l\">{_e(x['path'])}</td><td class=\"n\">{_e(x['day'])}</td><td>{_e(x['stage'])}</td>"
                       f"<td>{_e(x['rank'])}</td><td class=\"l n\">{_e(x['first'])}</td><td class=\"l\">{_e(x['why'])}</td></tr>")
        if len(nc) > 200:
            out.append(f"<tr><td class=\"l\" colspan=\"6\">… and {len(nc) - 200} more (see the JSON report)</td></tr>")
        out.append("</table></details>")
    return out


def render(result: dict[str, Any]) -> str:
    import plotly.graph_objects as go  # heavy: only here

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
                "tickfont": {"size": 10 if n > 24 else 12}, "title": {"text": "MoE layer"}}

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
            colorbar={"title": {"text": f"load / layer mean<br>(log scale, 2× per step;<br>capped below at 1/{round(1 / HEAT_FLOOR)}×)"},
                      "tickmode": "array", "tickvals": ticks, "ticktext": labels},
            hovertemplate="layer %{y}, expert %{x}: %{customdata:.2f}× mean<extra></extra>"))
        fig.update_layout(title="Tokens per logical expert (window), relative to the layer mean; log colour scale",
                          xaxis_title="logical expert", yaxis=layer_axis(len(z)), height=max(320, row_px * len(z) + 160))
        figs.append(("heatmap", fig))
    trend = result.get("trend") or []
    if trend:
        cal = _calendar(w)
        days = cal or sorted({t["day"] for t in trend})
        layers = list(range(n_layers)) if n_layers else sorted({t["layer"] for t in trend})
        idx = {(t["day"], t["layer"]): t["rank_max_over_mean"] for t in trend}
        missing = set((result.get("missing") or {}).get("days") or [])
        fig = go.Figure(go.Heatmap(z=[[idx.get((d, li)) for d in days] for li in layers], x=days, y=layers,
                                   colorscale="Reds", colorbar={"title": {"text": "rank max/mean"}}, hoverongaps=False,
                                   hovertemplate="%{x}, layer %{y}: %{z:.3f}<extra></extra>"))
        for d in sorted(missing & set(days)):
            fig.add_annotation(x=d, y=0, yref="paper", yanchor="bottom", text="no dump", showarrow=False,
                               font={"size": 10, "color": "#975a16"})
        fig.update_layout(title="Rank-level imbalance (max/mean) per layer and day", xaxis_title="day",
                          yaxis=layer_axis(len(layers)), height=max(300, row_px * len(layers) + 160),
                          xaxis={"type": "category"})
        figs.append(("trend", fig))
        per_day = {d["day"]: d for d in result.get("days") or []}
        xs = days
        fig = go.Figure()
        for key, name in (("rank_max_over_mean_worst_layer", "worst layer"), ("rank_max_over_mean_layer_mean", "mean over layers")):
            fig.add_trace(go.Scatter(x=xs, y=[per_day[d][key] if d in per_day else None for d in xs],
                                     mode="lines+markers", name=name, connectgaps=False))
        for d in sorted(missing & set(xs)):
            fig.add_vrect(x0=_shift(d, -0.5), x1=_shift(d, 0.5), fillcolor="#fefcbf", opacity=0.6, line_width=0,
                          annotation_text="no dump", annotation_position="top left")
        if rec.get("target"):
            fig.add_hline(y=rec["target"], line_dash="dash", annotation_text=f"target {rec['target']}")
        fig.update_layout(title="Rank max/mean over the week (gaps: days without a dump)", xaxis_title="day",
                          yaxis_title="max/mean", height=340, xaxis={"type": "date", "dtick": 86400000, "tickformat": "%m-%d"})
        figs.append(("days", fig))
    ranks = result.get("ranks") or []
    if ranks:
        fig = go.Figure()
        fig.add_trace(go.Bar(x=[r["rank"] for r in ranks], y=[r["prefill_tokens"] for r in ranks], name="prefill"))
        fig.add_trace(go.Bar(x=[r["rank"] for r in ranks], y=[r["decode_tokens"] for r in ranks], name="decode"))
        fig.update_layout(barmode="stack", title="Tokens per rank (window, all layers)", xaxis_title="rank",
                          yaxis_title="expert-tokens", height=340, xaxis={"dtick": 1})
        figs.append(("ranks", fig))
    per_layer = rec.get("per_layer") or []
    if per_layer:
        fig = go.Figure()
        fig.add_trace(go.Bar(x=[p["layer"] for p in per_layer], y=[p["before"] for p in per_layer], name="current placement (measured)"))
        fig.add_trace(go.Bar(x=[p["layer"] for p in per_layer], y=[p["after"] for p in per_layer], name="suggested map (on the measured loads)"))
        fig.add_hline(y=rec["target"], line_dash="dash", annotation_text=f"target {rec['target']}")
        fig.update_layout(barmode="group", title="Rank max/mean per layer: before and after", xaxis_title="MoE layer",
                          yaxis_title="max/mean", height=360)
        figs.append(("before-after", fig))

    eplb = (result.get("eplb") or {}).get("series") or []
    if eplb:
        fig = go.Figure()
        for name in sorted({e["signal"] for e in eplb}):
            pts = [e for e in eplb if e["signal"] == name and e["ts"]]
            fig.add_trace(go.Scatter(x=[e["ts"] for e in pts], y=[e["value"] for e in pts], mode="lines+markers",
                                     name=name.replace("eplb_", "")))
        fig.update_layout(title="EPLB log lines: imbalance (max/mean) and balancedness", xaxis_title="time",
                          yaxis_title="value", height=340)
        figs.append(("eplb", fig))
    # plotly.js goes once into <head>, so every plot below can use it wherever it sits in the page.
    from plotly.offline import get_plotlyjs

    plots = {}
    for key, fig in figs:
        fig.update_layout(margin={"l": 60, "r": 30, "t": 50, "b": 50}, template="plotly_white")
        plots[key] = fig.to_html(full_html=False, include_plotlyjs=False, div_id=f"plot-{key}",
                                 config={"displaylogo": False, "responsive": True})

    parts = ["<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
             "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
             f"<title>Expert load {_e(w.get('since'))} – {_e(w.get('until'))}</title><style>{CSS}</style>",
             "<script>window.__errors=[];window.addEventListener('error',function(e){window.__errors.push(String(e.message))});</script>",
             f"<script type=\"text/javascript\">{get_plotlyjs()}</script>" if plots else "",
             "</head><body>",
             f"<h1>Expert load, {_e(w.get('since'))} – {_e(w.get('until'))}</h1>",
             f"<div class=\"meta\">stage {_e(w.get('stage'))} · {_e(w.get('layers'))} MoE layers ({_e(w.get('layers_from'))}) · "
             f"{_e(w.get('experts'))} logical experts · {_e(w.get('ranks'))} ranks · placement {_e(w.get('placement'))} · "
             f"days with data: {_e(', '.join(w.get('days_with_data', [])))}"
             f"{' · previous week: ' + _e(', '.join(w['previous_window_days'])) if w.get('previous_window_days') else ''}</div>"]
    before, after = rec.get("before", {}), rec.get("after", {})
    hot = result.get("hot_experts") or []
    n_hot = sum(1 for h in hot if h.get("hot"))
    worst_b = before.get("max_over_mean_worst_layer")
    cur_red = rec.get("current_redundant_experts")
    now = f"current placement{'' if cur_red is None else f' ({cur_red} redundant)'}, measured"
    parts.append("<div class=\"kpis\">"
                 f"<div class=\"kpi {'bad' if (worst_b or 0) > rec.get('target', 9e9) else 'good'}\" id=\"kpi-now-worst\"><b>{_f(worst_b)}</b><span>rank max/mean now, worst layer ({_e(now)})</span></div>"
                 f"<div class=\"kpi\" id=\"kpi-now-mean\"><b>{_f(before.get('max_over_mean_layer_mean'))}</b><span>rank max/mean now, mean over layers ({_e(now)})</span></div>"
                 f"<div class=\"kpi good\" id=\"kpi-after-worst\"><b>{_f(after.get('max_over_mean_worst_layer'))}</b><span>with the suggested map, worst layer (estimated)</span></div>"
                 f"<div class=\"kpi good\" id=\"kpi-after-mean\"><b>{_f(after.get('max_over_mean_layer_mean'))}</b><span>with the suggested map, mean over layers (estimated)</span></div>"
                 f"<div class=\"kpi\"><b>{n_hot}</b><span>hot experts (≥ 2× layer mean) in the top {len(hot)}</span></div>"
                 f"<div class=\"kpi\"><b>{_e(rec.get('redundant_experts', 'n/a'))}</b><span>redundant experts suggested</span></div>"
                 "</div>")
    miss = result.get("missing", {})
    warn = []
    if miss.get("days"):
        warn.append("no dump on " + ", ".join(miss["days"]))
    if miss.get("rank_files"):
        warn.append("missing rank files: " + ", ".join(f"{m['day']} {m['stage']} rank {m['rank']}" for m in miss["rank_files"]))
    if result.get("resets"):
        warn.append(f"{result['resets']} counter resets (restarts) inside dump files handled: no negative loads")
    warn += result.get("notes", [])
    for text in warn:
        parts.append(f"<p class=\"note\">⚠ {_e(text)}</p>")
    parts += _counting(result.get("counting") or {})

    parts.append("<h2>Hot experts</h2>")
    if hot:
        parts.append("<table><tr><th>layer</th><th>expert</th><th>tokens</th><th>load / layer mean</th><th>share of layer</th>"
                     "<th class=\"l\">on ranks</th><th>prefill</th><th>decode</th><th>days hot</th><th>previous week</th></tr>")
        for h in hot:
            parts.append(f"<tr class=\"{'hot' if h.get('hot') else ''}\"><td>{_e(h['layer'])}</td><td>{_e(h['expert'])}</td>"
                         f"<td>{h['tokens']:,}</td><td>{_f(h['load_over_mean'])}</td>"
                         f"<td>{_f(h['share'] * 100 if h['share'] is not None else None, '{:.2f}%')}</td>"
                         f"<td class=\"l\">{_e(', '.join(map(str, h['ranks'])))}</td><td>{h['prefill_tokens']:,}</td>"
                         f"<td>{h['decode_tokens']:,}</td><td>{h['days_hot']}/{h['days_seen']}</td>"
                         f"<td>{_f(h['previous_load_over_mean'])}</td></tr>")
        parts.append("</table>")
    else:
        parts.append("<p>No load data in the window.</p>")
    parts.append("<h2>Recommendation</h2>")
    if "before" in rec:
        mp = json.dumps(rec["expert_map"], separators=(",", ":"))
        b64 = base64.b64encode(mp.encode()).decode()
        parts.append(
            f"<p>Deploy <b>{_e(rec['redundant_experts'])}</b> redundant experts ({_e(rec['slots_per_rank'])} expert slots per rank; "
            f"now {_e(rec['current_redundant_experts'])}) with the expert map below. On the measured loads of the window it brings "
            f"the rank-level max/mean from <b>{_f(before['max_over_mean_layer_mean'])}</b> (mean over layers; worst layer "
            f"<b>{_f(before['max_over_mean_worst_layer'])}</b>) to <b>{_f(after['max_over_mean_layer_mean'])}</b> (worst layer "
            f"<b>{_f(after['max_over_mean_worst_layer'])}</b>); target {_e(rec['target'])}"
            f"{'' if rec['reached'] else ' (not reached with up to one extra slot per expert)'}.</p>")
        parts.append(f"<p>Method: {_e(rec['method'])}. The after-numbers assume a replicated expert's tokens split evenly over its replicas.</p>")
        parts.append("<p>Use it with vllm-ascend: <code>--additional-config '{\"eplb_config\": {\"expert_map_path\": \"expert_map.json\", "
                     f"\"num_redundant_experts\": {int(rec['redundant_experts'])}}}}}'</code>; with MindIE: "
                     "<code>models.deepseekv2.eplb.level = 1</code> and <code>expert_map_file</code> in <code>atb_llm/conf/config.json</code>.</p>")
        cur = rec.get("current") or {}
        rows = [f"<tr class=\"current\" id=\"row-current\"><td class=\"l\">{_e(cur.get('label', 'current placement, measured'))}</td>"
                f"<td>{_e(cur.get('redundant_experts'))}</td><td>{_f(cur.get('max_over_mean_layer_mean'), '{:.3f}')}</td>"
                f"<td>{_f(cur.get('max_over_mean_worst_layer'), '{:.3f}')}</td></tr>"] if cur else []
        rows += [f"<tr><td class=\"l\">{_e(t.get('label', 'suggested map'))}</td><td>{t['redundant_experts']}</td>"
                 f"<td>{_f(t['max_over_mean_layer_mean'], '{:.3f}')}</td><td>{_f(t['max_over_mean_worst_layer'], '{:.3f}')}</td></tr>"
                 for t in rec.get("tried", [])]
        parts.append("<table id=\"tried\"><tr><th class=\"l\">placement</th><th>redundant experts</th>"
                     "<th>rank max/mean, mean over layers</th><th>rank max/mean, worst layer</th></tr>"
                     f"{''.join(rows)}</table>")
        if rec.get("tried_note"):
            parts.append(f"<p class=\"meta\">{_e(rec['tried_note'])}</p>")
        if "before-after" in plots:
            parts.append(plots["before-after"])
        parts.append(f"<p><a download=\"expert_map.json\" href=\"data:application/json;base64,{b64}\">Download expert_map.json</a></p>")
        parts.append(f"<details><summary>expert_map.json</summary><pre>{_e(json.dumps(rec['expert_map'], indent=1))}</pre></details>")
    else:
        parts.append(f"<p>{_e(rec.get('reason', 'no recommendation'))}</p>")

    layers = result.get("layers") or []
    summ = result.get("summary") or {}
    if layers:
        parts.append("<h2>Layers</h2>")
        if summ.get("previous_week_rank_max_over_mean_layer_mean") is not None:
            parts.append(f"<p>Against the previous week: rank max/mean (mean over layers) "
                         f"{_f(summ['previous_week_rank_max_over_mean_layer_mean'])} → {_f(summ['rank_max_over_mean_layer_mean'])}, "
                         f"worst layer {_f(summ['previous_week_rank_max_over_mean_worst_layer'])} → {_f(summ['rank_max_over_mean_worst_layer'])}.</p>")
        over = result.get("over_threshold") or []
        parts.append(f"<p>{len(summ.get('layers_over_target', []))} layers and {len(over)} day×layer cells over the target "
                     f"rank max/mean {_e(rec.get('target'))}.</p>")
        parts.append("<details><summary>per-layer table</summary><table><tr><th>layer</th><th>tokens</th><th>expert max/mean</th>"
                     "<th>expert cv</th><th>rank max/mean</th><th>rank cv</th><th>previous week rank max/mean</th></tr>")
        for x in layers:
            parts.append(f"<tr><td>{_e(x['layer'])}</td><td>{x['tokens']:,}</td><td>{_f(x['imbalance_max_over_mean'])}</td>"
                         f"<td>{_f(x['cv'], '{:.3f}')}</td><td>{_f(x['rank_max_over_mean'], '{:.3f}')}</td>"
                         f"<td>{_f(x['rank_cv'], '{:.3f}')}</td><td>{_f(x['previous_rank_max_over_mean'], '{:.3f}')}</td></tr>")
        parts.append("</table></details>")
    for key, title in (("heatmap", "Layer × expert load"), ("trend", "Imbalance per layer over the week"),
                       ("days", None), ("ranks", "Per-rank load"), ("eplb", "EPLB log lines")):
        if key in plots:
            if title:
                parts.append(f"<h2>{_e(title)}</h2>")
            parts.append(plots[key])
    sig = (result.get("eplb") or {}).get("signals") or {}
    if sig:
        parts.append("<table><tr><th class=\"l\">signal</th><th>lines</th><th>last</th><th>worst</th></tr>")
        for name, v in sig.items():
            parts.append(f"<tr><td class=\"l\">{_e(name)}</td><td>{_e(v['count'])}</td><td>{_f(v['last'], '{:.3f}')}</td>"
                         f"<td>{_f(v['worst'], '{:.3f}')}</td></tr>")
        parts.append("</table>")

    files = result.get("files") or []
    if files:
        parts.append("<h2>Inputs</h2><details><summary>"
                     f"{len(files)} dump files</summary><table><tr><th class=\"l\">file</th><th>day</th><th>blocks</th>"
                     "<th>windows counted</th><th>resets</th><th class=\"l\">first window</th><th class=\"l\">why</th>"
                     "<th class=\"l\">note</th></tr>")
        for f in files:
            first = f.get("first") or ""
            mark = "counted" if f.get("first_counted") else "not counted"
            parts.append(f"<tr><td class=\"l\">{_e(f['path'])}</td><td class=\"n\">{_e(f['day'])}</td><td>{_e(f['blocks'])}</td>"
                         f"<td>{_e(f.get('counted'))}</td><td>{_e(f['resets'])}</td>"
                         f"<td class=\"l\">{_e(first)}{': ' + mark if first else ''}</td><td class=\"l\">{_e(f.get('why'))}</td>"
                         f"<td class=\"l\">{_e(f['note'])}</td></tr>")
        parts.append("</table></details>")
    parts.append("<script>window.addEventListener('load',function(){document.body.setAttribute('data-plots',"
                 "String(document.querySelectorAll('.js-plotly-plot').length));"
                 "document.body.setAttribute('data-errors',String(window.__errors.length));});</script>")
    parts.append("</body></html>")
    return "\n".join(parts)
