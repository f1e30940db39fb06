"""The short version of the expert-load report, for a chat message or a ticket, in the result's language."""

from __future__ import annotations

from typing import Any

from diagnose.messages import messages
from diagnose.model.expertload import ExpertLoadResult
from diagnose.report.load.load_texts import worded


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ").replace("<", "&lt;").replace(">", "&gt;")


def _f(x: float | None, fmt: str = "{:.2f}") -> str:
    return "n/a" if x is None else fmt.format(x)


def render(typed: ExpertLoadResult, lang: str = "en") -> str:
    result = worded(typed, messages(lang))
    msg = messages(lang)
    w = result["window"]
    stage = msg.get(f"expertload.stage.{w.get('stage')}", str(w.get("stage")))
    out = ["## " + msg("expertload.md.title", since=w.get("since"), until=w.get("until"), stage=stage), ""]
    out.append(msg("expertload.md.summary", layers=w.get("layers"), experts=w.get("experts"), ranks=w.get("ranks"),
                   days=len(w.get("days_with_data", [])), tokens=f"{w.get('tokens', 0):,}"))
    miss = result.get("missing", {})
    none = msg("expertload.md.none")
    if miss.get("days") or miss.get("rank_files"):
        files = ", ".join(msg("expertload.warn.rank_file", day=m["day"], stage=m["stage"], rank=m["rank"])
                          for m in miss.get("rank_files", [])[:8])
        out.append(msg("expertload.md.missing", days=_cell(", ".join(miss.get("days", [])) or none), files=_cell(files or none)))
    out += [_cell(text) for text in w.get("apart") or []]
    if w.get("gauge_days"):
        out.append(msg("expertload.warn.gauge_days", days=_cell(", ".join(w["gauge_days"]))))
    if result.get("resets"):
        out.append(msg("expertload.md.resets", n=result["resets"]))
    for note in result.get("notes", []):
        out.append(msg("expertload.md.note", note=_cell(note)))
    c = result.get("counting") or {}
    if c:
        rep = msg("expertload.md.repeated", n=c["repeated"]) if c.get("repeated") else ""
        kinds = msg("expertload.page.join").join(f"{n} {msg.get(f'expertload.first.{k}', k)}"
                                                 for k, n in (c.get("first_windows") or {}).items())
        out.append(msg("expertload.md.counted", counted=f"{c['counted']:,}", windows=f"{c['windows']:,}", files=c["files"],
                       not_counted=c["not_counted"], repeated=rep, kinds=_cell(kinds or none)))
        nc = c.get("first_windows_not_counted") or []
        for x in nc[:8]:
            out.append("- " + msg("expertload.md.not_counted", path=_cell(x["path"]), day=x["day"], stage=x["stage"],
                                  rank=x["rank"], first=_cell(msg.get(f"expertload.first.{x['first']}", x["first"])),
                                  why=_cell(x["why"])))
        if len(nc) > 8:
            out.append("- " + msg("expertload.md.more_not_counted", n=len(nc) - 8))
        out.append(msg("expertload.md.rule", rule=_cell(c.get("rule"))))
    advice = (result.get("advice") or {}).get("text") or []
    if advice:
        out += ["", "### " + msg("expertload.advice.title"), ""] + [f"- {_cell(line)}" for line in advice]
    refused = result.get("refused") or []
    for r in refused[:8]:
        out.append("- " + msg("expertload.cli.skipped", path=_cell(r["path"]), reason=_cell(r["why"])))
    rec = result.get("recommendation", {})
    if "before" in rec:
        b, a = rec["before"], rec["after"]
        out += ["", msg("expertload.md.ratios", now=rec.get("current_redundant_experts", 0),
                        before_mean=_f(b["max_over_mean_layer_mean"]), before_worst=_f(b["max_over_mean_worst_layer"]),
                        after_mean=_f(a["max_over_mean_layer_mean"]), after_worst=_f(a["max_over_mean_worst_layer"]),
                        n=rec["redundant_experts"], slots=rec["slots_per_rank"], target=rec["target"],
                        reached="" if rec["reached"] else msg("expertload.md.not_reached"))]
        tried = rec.get("tried") or []
        if tried:
            cols = [msg(f"expertload.col.{k}") for k in ("placement", "redundant")] + [
                msg("expertload.fig.mean_over_layers"), msg("expertload.fig.worst_layer")]
            out += ["", "| " + " | ".join(cols) + " |", "|---|---:|---:|---:|",
                    f"| {_cell(msg('expertload.kpi.now_placement'))} | {rec.get('current_redundant_experts', 0)} | "
                    f"{_f(b['max_over_mean_layer_mean'], '{:.3f}')} | {_f(b['max_over_mean_worst_layer'], '{:.3f}')} |"]
            out += [f"| {_cell(msg('expertload.md.suggested_row'))} | {t['redundant_experts']} | "
                    f"{_f(t['max_over_mean_layer_mean'], '{:.3f}')} | {_f(t['max_over_mean_worst_layer'], '{:.3f}')} |" for t in tried]
            out += ["", msg("expertload.md.suggested_note")]
    summ = result.get("summary") or {}
    if summ.get("previous_week_rank_max_over_mean_layer_mean") is not None:
        out.append(msg("expertload.md.previous_week", mean=_f(summ["previous_week_rank_max_over_mean_layer_mean"]),
                       worst=_f(summ["previous_week_rank_max_over_mean_worst_layer"])))
    if summ.get("layers_over_target"):
        out.append(msg("expertload.md.over_target", layers=", ".join(map(str, summ["layers_over_target"]))))
    hot = result.get("hot_experts", [])
    if hot:
        cols = ("layer", "expert", "load_over_mean", "share", "ranks", "prefill", "decode", "days_hot", "previous")
        out += ["", "| " + " | ".join(msg(f"expertload.col.{c}") for c in cols) + " |",
                "|---:|---:|---:|---:|---|---:|---:|---:|---:|"]
        for h in hot:
            out.append(f"| {h['layer']} | {h['expert']} | {_f(h['load_over_mean'])} | "
                       f"{_f(h['share'] * 100 if h['share'] is not None else None, '{:.2f}%')} | "
                       f"{_cell(', '.join(map(str, h['ranks'])))} | {h['prefill_tokens']:,} | {h['decode_tokens']:,} | "
                       f"{h['days_hot']}/{h['days_seen']} | {_f(h['previous_load_over_mean'])} |")
    over = result.get("over_threshold", [])
    if over:
        out += ["", msg("expertload.md.over_cells", n=len(over), target=rec.get("target"))]
    return "\n".join(out) + "\n"
