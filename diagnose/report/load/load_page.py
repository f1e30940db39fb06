"""The expert-load report as one self-contained HTML page (plotly.js embedded: opens offline, no CDN), in the
language of the result (``result["lang"]``; every heading, label and sentence from the message catalog).

Every string that comes from the data (paths, notes, dates) goes through ``html.escape``; the plots
(page_figures.py) carry only numbers, ISO dates and catalog texts.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from diagnose.report.load.load_figures import figures
from diagnose.report.load.load_texts import worded
from diagnose.model.expertload import ExpertLoadResult
from diagnose.messages import Messages, messages
from diagnose.report.page.kit import ERROR_HOOK, LOADED_MARK, e, font_stack, plot_config, plot_font, plotly_locale

CSS = """
body{font-family:%(font)s;margin:24px auto;max-width:1320px;color:#1f2933;padding:0 16px}
h1{font-size:24px;margin-bottom:4px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #d9e2ec;padding-bottom:4px}
.meta{color:#52606d;font-size:13px}.kpis{display:flex;gap:12px;flex-wrap:wrap;margin:16px 0}
.kpi{border:1px solid #d9e2ec;border-radius:6px;padding:10px 14px;min-width:150px;max-width:260px}.kpi b{display:block;font-size:22px}
.kpi span{color:#52606d;font-size:12px}.bad b{color:#c53030}.good b{color:#2f855a}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #d9e2ec;padding:4px 8px;text-align:right}
th{background:#f0f4f8}td.l,th.l{text-align:left}tr.hot td{background:#fff5f5}
pre{background:#f7fafc;border:1px solid #d9e2ec;padding:8px;max-height:320px;overflow:auto;font-size:12px}
.note{color:#975a16}td.n{white-space:nowrap}
"""


def _f(x: float | None, fmt: str = "{:.2f}") -> str:
    return "n/a" if x is None else fmt.format(x)


def _head(cols: tuple[str, ...], left: tuple[str, ...], msg: Messages) -> str:
    """A header row: ``expertload.col.<name>`` for each column; the ``left`` ones aligned left."""
    cells = [f"<th class=\"l\">{e(msg('expertload.col.' + c))}</th>" if c in left else f"<th>{e(msg('expertload.col.' + c))}</th>"
             for c in cols]
    return "<tr>" + "".join(cells) + "</tr>"


def _counting(c: dict[str, Any], msg: Messages) -> list[str]:
    """Which windows were counted and why the others were not (section of the page)."""
    if not c:
        return []
    rep = msg("expertload.page.repeated", n=c["repeated"]) if c.get("repeated") else ""
    out = [f"<h2 id=\"counting\">{e(msg('expertload.page.counting'))}</h2>",
           "<p>" + msg.html("expertload.page.counted", counted=f"{c['counted']:,}", windows=f"{c['windows']:,}",
                            files=c["files"], not_counted=c["not_counted"], repeated=rep) + "</p>"]
    fw = c.get("first_windows") or {}
    if fw:
        kinds = msg("expertload.page.join").join(f"{n} {msg.get(f'expertload.first.{k}', k)}" for k, n in fw.items())
        out.append(f"<p>{e(msg('expertload.page.first_windows', kinds=kinds))}</p>")
    out.append(f"<p class=\"meta\">{e(msg('expertload.page.rule', rule=c.get('rule')))}</p>")
    nc = c.get("first_windows_not_counted") or []
    if nc:
        days = sorted({x["day"] for x in nc if x["day"]})
        summary = msg("expertload.page.not_counted_files", n=len(nc),
                      days=", ".join(days[:7]) + (" …" if len(days) > 7 else ""))
        cols = ("file", "day", "stage", "rank", "first", "why")
        out.append(f"<details{' open' if len(nc) <= 16 else ''}><summary>{e(summary)}</summary><table id=\"not-counted\">"
                   + _head(cols, ("file", "first", "why"), msg))
        for x in nc[:200]:
            out.append(f"<tr><td class=\"l\">{e(x['path'])}</td><td class=\"n\">{e(x['day'])}</td><td>{e(x['stage'])}</td>"
                       f"<td>{e(x['rank'])}</td><td class=\"l n\">{e(msg.get('expertload.first.' + x['first'], x['first']))}</td>"
                       f"<td class=\"l\">{e(x['why'])}</td></tr>")
        if len(nc) > 200:
            out.append(f"<tr><td class=\"l\" colspan=\"6\">{e(msg('expertload.page.more_rows', n=len(nc) - 200))}</td></tr>")
        out.append("</table></details>")
    return out


def _kpis(result: dict[str, Any], msg: Messages) -> str:
    rec = result.get("recommendation", {})
    before, after = rec.get("before", {}), rec.get("after", {})
    hot = result.get("hot_experts") or []
    worst = before.get("max_over_mean_worst_layer")
    red = rec.get("current_redundant_experts")
    now = msg("expertload.kpi.now_placement") if red is None else msg("expertload.kpi.now_placement_n", n=red)
    cards = [
        ("bad" if (worst or 0) > rec.get("target", 9e9) else "good", "kpi-now-worst", _f(worst),
         msg("expertload.kpi.now_worst", placement=now)),
        ("", "kpi-now-mean", _f(before.get("max_over_mean_layer_mean")), msg("expertload.kpi.now_mean", placement=now)),
        ("good", "kpi-after-worst", _f(after.get("max_over_mean_worst_layer")), msg("expertload.kpi.after_worst")),
        ("good", "kpi-after-mean", _f(after.get("max_over_mean_layer_mean")), msg("expertload.kpi.after_mean")),
        ("", "kpi-hot", str(sum(1 for h in hot if h.get("hot"))), msg("expertload.kpi.hot", n=len(hot))),
        ("", "kpi-redundant", str(rec.get("redundant_experts", "n/a")), msg("expertload.kpi.redundant")),
    ]
    return ("<div class=\"kpis\">" + "".join(f"<div class=\"kpi {cls}\" id=\"{kid}\"><b>{e(value)}</b><span>{e(text)}</span></div>"
                                           for cls, kid, value, text in cards) + "</div>")


def _warnings(result: dict[str, Any], msg: Messages) -> list[str]:
    miss = result.get("missing", {})
    warn = []
    if miss.get("days"):
        warn.append(msg("expertload.warn.no_dump", days=", ".join(miss["days"])))
    if result["window"].get("gauge_days"):
        warn.append(msg("expertload.warn.gauge_days", days=", ".join(result["window"]["gauge_days"])))
    if miss.get("rank_files"):
        warn.append(msg("expertload.warn.rank_files", files=", ".join(
            msg("expertload.warn.rank_file", day=m["day"], stage=m["stage"], rank=m["rank"]) for m in miss["rank_files"])))
    if result.get("resets"):
        warn.append(msg("expertload.warn.resets", n=result["resets"]))
    warn += result.get("notes", [])
    warn += [msg("expertload.cli.skipped", path=r["path"], reason=r["why"]) for r in result.get("refused") or []]
    return [f"<p class=\"note\">⚠ {e(text)}</p>" for text in warn]


def _hot(result: dict[str, Any], msg: Messages) -> list[str]:
    hot = result.get("hot_experts") or []
    out = [f"<h2 id=\"hot\">{e(msg('expertload.page.hot'))}</h2>"]
    if not hot:
        return out + [f"<p>{e(msg('expertload.page.no_load'))}</p>"]
    cols = ("layer", "expert", "tokens", "load_over_mean", "share", "ranks", "prefill", "decode", "days_hot", "previous")
    out.append("<table id=\"hot-experts\">" + _head(cols, ("ranks",), msg))
    for h in hot:
        out.append(f"<tr class=\"{'hot' if h.get('hot') else ''}\"><td>{e(h['layer'])}</td><td>{e(h['expert'])}</td>"
                   f"<td>{h['tokens']:,}</td><td>{_f(h['load_over_mean'])}</td>"
                   f"<td>{_f(h['share'] * 100 if h['share'] is not None else None, '{:.2f}%')}</td>"
                   f"<td class=\"l\">{e(', '.join(map(str, h['ranks'])))}</td><td>{h['prefill_tokens']:,}</td>"
                   f"<td>{h['decode_tokens']:,}</td><td>{h['days_hot']}/{h['days_seen']}</td>"
                   f"<td>{_f(h['previous_load_over_mean'])}</td></tr>")
    out.append("</table>")
    return out


def _recommendation(result: dict[str, Any], plots: dict[str, str], msg: Messages) -> list[str]:
    rec = result.get("recommendation", {})
    out = [f"<h2 id=\"recommendation\">{e(msg('expertload.page.recommendation'))}</h2>"]
    if "before" not in rec:
        return out + [f"<p>{e(rec.get('reason') or msg('expertload.no_data'))}</p>"]
    before, after = rec["before"], rec["after"]
    out.append("<p>" + msg.html(
        "expertload.page.deploy", n=rec["redundant_experts"], slots=rec["slots_per_rank"], now=rec["current_redundant_experts"],
        before_mean=_f(before["max_over_mean_layer_mean"]), before_worst=_f(before["max_over_mean_worst_layer"]),
        after_mean=_f(after["max_over_mean_layer_mean"]), after_worst=_f(after["max_over_mean_worst_layer"]),
        target=rec["target"], reached="" if rec["reached"] else msg("expertload.page.not_reached")) + "</p>")
    out.append(f"<p>{e(msg('expertload.page.method', method=rec['method']))}</p>")
    out.append("<p>" + msg.html("expertload.page.use_it", n=int(rec["redundant_experts"])) + "</p>")
    cur = rec.get("current") or {}
    rows = [f"<tr class=\"current\" id=\"row-current\"><td class=\"l\">{e(cur.get('label'))}</td>"
            f"<td>{e(cur.get('redundant_experts'))}</td><td>{_f(cur.get('max_over_mean_layer_mean'), '{:.3f}')}</td>"
            f"<td>{_f(cur.get('max_over_mean_worst_layer'), '{:.3f}')}</td></tr>"] if cur else []
    rows += [f"<tr><td class=\"l\">{e(t.get('label'))}</td><td>{t['redundant_experts']}</td>"
             f"<td>{_f(t['max_over_mean_layer_mean'], '{:.3f}')}</td><td>{_f(t['max_over_mean_worst_layer'], '{:.3f}')}</td></tr>"
             for t in rec.get("tried", [])]
    cols = ("placement", "redundant", "mean_over_layers", "worst_layer")
    out.append("<table id=\"tried\">" + _head(cols, ("placement",), msg) + "".join(rows) + "</table>")
    if rec.get("tried_note"):
        out.append(f"<p class=\"meta\">{e(rec['tried_note'])}</p>")
    if "before-after" in plots:
        out.append(plots["before-after"])
    b64 = base64.b64encode(json.dumps(rec["expert_map"], separators=(",", ":")).encode()).decode()
    out.append(f"<p><a download=\"expert_map.json\" href=\"data:application/json;base64,{b64}\">"
               f"{e(msg('expertload.page.download'))}</a></p>")
    out.append(f"<details><summary>expert_map.json</summary><pre>{e(json.dumps(rec['expert_map'], indent=1))}</pre></details>")
    return out


def _layers(result: dict[str, Any], msg: Messages) -> list[str]:
    layers = result.get("layers") or []
    if not layers:
        return []
    summ, rec = result.get("summary") or {}, result.get("recommendation", {})
    out = [f"<h2 id=\"layers\">{e(msg('expertload.page.layers'))}</h2>"]
    if summ.get("previous_week_rank_max_over_mean_layer_mean") is not None:
        out.append(f"<p>{e(msg('expertload.page.previous_week', before_mean=_f(summ['previous_week_rank_max_over_mean_layer_mean']), after_mean=_f(summ['rank_max_over_mean_layer_mean']), before_worst=_f(summ['previous_week_rank_max_over_mean_worst_layer']), after_worst=_f(summ['rank_max_over_mean_worst_layer'])))}</p>")
    over = result.get("over_threshold") or []
    out.append(f"<p>{e(msg('expertload.page.over_target', layers=len(summ.get('layers_over_target', [])), cells=len(over), target=rec.get('target')))}</p>")
    cols = ("layer", "tokens", "expert_ratio", "expert_cv", "rank_ratio", "rank_cv", "previous_rank_ratio")
    out.append(f"<details><summary>{e(msg('expertload.page.layer_table'))}</summary><table>" + _head(cols, (), msg))
    for x in layers:
        out.append(f"<tr><td>{e(x['layer'])}</td><td>{x['tokens']:,}</td><td>{_f(x['imbalance_max_over_mean'])}</td>"
                   f"<td>{_f(x['cv'], '{:.3f}')}</td><td>{_f(x['rank_max_over_mean'], '{:.3f}')}</td>"
                   f"<td>{_f(x['rank_cv'], '{:.3f}')}</td><td>{_f(x['previous_rank_max_over_mean'], '{:.3f}')}</td></tr>")
    out.append("</table></details>")
    return out


def _inputs(result: dict[str, Any], msg: Messages) -> list[str]:
    files = result.get("files") or []
    if not files:
        return []
    cols = ("file", "day", "blocks", "counted", "resets", "first", "why", "note")
    out = [f"<h2 id=\"inputs\">{e(msg('expertload.page.inputs'))}</h2><details><summary>"
           f"{e(msg('expertload.page.dump_files', n=len(files)))}</summary><table>"
           + _head(cols, ("file", "first", "why", "note"), msg)]
    for f in files:
        first = msg.get("expertload.first." + f["first"], f["first"]) if f.get("first") else ""
        mark = msg("expertload.page.counted_mark" if f.get("first_counted") else "expertload.page.not_counted_mark")
        out.append(f"<tr><td class=\"l\">{e(f['path'])}</td><td class=\"n\">{e(f['day'])}</td><td>{e(f['blocks'])}</td>"
                   f"<td>{e(f.get('counted'))}</td><td>{e(f['resets'])}</td>"
                   f"<td class=\"l\">{e(first)}{e(': ' + mark) if first else ''}</td><td class=\"l\">{e(f.get('why'))}</td>"
                   f"<td class=\"l\">{e(msg('input_note.' + f['note']) if f.get('note') else '')}</td></tr>")
    out.append("</table></details>")
    return out


def render(typed: ExpertLoadResult, lang: str = "en") -> str:
    result = worded(typed, messages(lang))
    from plotly.offline import get_plotlyjs  # deferred: plotly (4 MB of JS, only for the expert-load page)

    msg = messages(lang)
    w = result["window"]
    plots = {}
    for key, fig in figures(result, msg):
        fig.update_layout(margin={"l": 60, "r": 30, "t": 50, "b": 50}, template="plotly_white", font=plot_font(msg.lang))
        plots[key] = fig.to_html(full_html=False, include_plotlyjs=False, div_id=f"plot-{key}", config=plot_config(msg.lang))
    span = {"since": w.get("since"), "until": w.get("until")}
    meta = msg("expertload.page.meta", stage=msg.get(f"expertload.stage.{w.get('stage')}", str(w.get("stage"))),
               layers=w.get("layers"), layers_from=w.get("layers_from"), experts=w.get("experts"), ranks=w.get("ranks"),
               placement=w.get("placement_text") or w.get("placement"), days=", ".join(w.get("days_with_data", [])))
    if w.get("previous_window_days"):
        meta += msg("expertload.page.meta_previous", days=", ".join(w["previous_window_days"]))
    css = CSS % {"font": font_stack(msg.lang)}
    parts = [f"<!DOCTYPE html><html lang=\"{e(msg.lang)}\"><head><meta charset=\"utf-8\">",
             "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
             f"<title>{e(msg('expertload.page.html_title', **span))}</title><style>{css}</style>", ERROR_HOOK]
    if plots:  # plotly.js goes once into <head>, so every plot below can use it wherever it sits in the page
        parts += [f"<script type=\"text/javascript\">{get_plotlyjs()}</script>", plotly_locale(msg)]
    parts += ["</head><body>", f"<h1>{e(msg('expertload.page.title', **span))}</h1>",
              f"<div class=\"meta\" id=\"subtitle\">{e(meta)}</div>", _kpis(result, msg)]
    parts += [f"<p class=\"apart\" id=\"apart-{i}\">{e(text)}</p>" for i, text in enumerate(w.get("apart") or [])]
    parts += _warnings(result, msg)
    advice = (result.get("advice") or {}).get("text") or []
    if advice:
        parts.append(f"<h2 id=\"advice\">{e(msg('expertload.advice.title'))}</h2><ul>"
                     + "".join(f"<li>{e(line)}</li>" for line in advice) + "</ul>")
    parts += _counting(result.get("counting") or {}, msg)
    parts += _hot(result, msg)
    parts += _recommendation(result, plots, msg)
    parts += _layers(result, msg)
    for key, title in (("heatmap", "expertload.page.heatmap"), ("trend", "expertload.page.trend"), ("days", None),
                       ("ranks", "expertload.page.ranks"), ("eplb", "expertload.page.eplb")):
        if key in plots:
            if title:
                parts.append(f"<h2>{e(msg(title))}</h2>")
            parts.append(plots[key])
    sig = (result.get("eplb") or {}).get("signals") or {}
    if sig:
        cols = ("signal", "lines", "last", "worst")
        parts.append("<table>" + _head(cols, ("signal",), msg))
        for name, v in sig.items():
            parts.append(f"<tr><td class=\"l\">{e(name)}</td><td>{e(v['count'])}</td><td>{_f(v['last'], '{:.3f}')}</td>"
                         f"<td>{_f(v['worst'], '{:.3f}')}</td></tr>")
        parts.append("</table>")
    parts += _inputs(result, msg)
    parts += [LOADED_MARK, "</body></html>"]
    return "\n".join(p for p in parts if p)
