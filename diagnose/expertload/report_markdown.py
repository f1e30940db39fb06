"""The short version of the expert-load report, for a chat message or a ticket."""

from __future__ import annotations

from typing import Any


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ").replace("<", "&lt;").replace(">", "&gt;")


def _f(x: float | None, fmt: str = "{:.2f}") -> str:
    return "n/a" if x is None else fmt.format(x)


def render(result: dict[str, Any]) -> str:
    w = result["window"]
    out = [f"## Expert load {w.get('since')} .. {w.get('until')} ({w.get('stage')})", ""]
    out.append(f"{w.get('layers')} MoE layers, {w.get('experts')} experts, {w.get('ranks')} ranks; "
               f"{len(w.get('days_with_data', []))} days with data, {w.get('tokens', 0):,} expert-tokens.")
    miss = result.get("missing", {})
    if miss.get("days") or miss.get("rank_files"):
        files = ", ".join(f"{m['day']} {m['stage']} rank {m['rank']}" for m in miss.get("rank_files", [])[:8])
        out.append(f"Missing days: {_cell(', '.join(miss.get('days', [])) or 'none')}; missing rank files: {_cell(files or 'none')}.")
    if result.get("resets"):
        out.append(f"Counter resets handled: {result['resets']}.")
    for note in result.get("notes", []):
        out.append(f"Note: {_cell(note)}")
    c = result.get("counting") or {}
    if c:
        rep = f", {c['repeated']} repeated blocks skipped" if c.get("repeated") else ""
        kinds = "; ".join(f"{n} {k}" for k, n in (c.get("first_windows") or {}).items())
        out.append(f"Counted windows: {c['counted']:,} of {c['windows']:,} (one per dump block, {c['files']} files); "
                   f"{c['not_counted']} not counted{rep}. First windows: {_cell(kinds or 'none')}.")
        nc = c.get("first_windows_not_counted") or []
        for x in nc[:8]:
            out.append(f"- not counted: {_cell(x['path'])} ({x['day']} {x['stage']} rank {x['rank']}): "
                       f"{_cell(x['first'])}, {_cell(x['why'])}")
        if len(nc) > 8:
            out.append(f"- … and {len(nc) - 8} more first windows not counted (see the JSON report)")
        out.append(f"Counting rule: {_cell(c.get('rule'))}")
    rec = result.get("recommendation", {})
    if "before" in rec:
        b, a = rec["before"], rec["after"]
        out += ["", "**Rank max/mean** (per layer; mean over layers / worst layer): "
                f"now (current placement, {rec.get('current_redundant_experts', 0)} redundant experts, measured) "
                f"{_f(b['max_over_mean_layer_mean'])} / {_f(b['max_over_mean_worst_layer'])} → "
                f"with the suggested map (estimated) {_f(a['max_over_mean_layer_mean'])} / {_f(a['max_over_mean_worst_layer'])} "
                f"({rec['redundant_experts']} redundant experts, {rec['slots_per_rank']} slots per rank, target {rec['target']}"
                f"{'' if rec['reached'] else ', not reached'})."]
        tried = rec.get("tried") or []
        if tried:
            out += ["", "| placement | redundant experts | mean over layers | worst layer |", "|---|---:|---:|---:|",
                    f"| current placement, measured | {rec.get('current_redundant_experts', 0)} | "
                    f"{_f(b['max_over_mean_layer_mean'], '{:.3f}')} | {_f(b['max_over_mean_worst_layer'], '{:.3f}')} |"]
            out += [f"| suggested map, re-arranged (estimated) | {t['redundant_experts']} | "
                    f"{_f(t['max_over_mean_layer_mean'], '{:.3f}')} | {_f(t['max_over_mean_worst_layer'], '{:.3f}')} |" for t in tried]
            out += ["", "(The suggested rows re-arrange the experts; that is why one with as many redundant experts as now "
                       "is lower than the current placement. All rows: rank max/mean per layer.)"]
    summ = result.get("summary") or {}
    if summ.get("previous_week_rank_max_over_mean_layer_mean") is not None:
        out.append(f"Previous week: {_f(summ['previous_week_rank_max_over_mean_layer_mean'])} / "
                   f"{_f(summ['previous_week_rank_max_over_mean_worst_layer'])} (mean over layers / worst layer).")
    if summ.get("layers_over_target"):
        out.append(f"Layers over the target: {', '.join(map(str, summ['layers_over_target']))}.")
    hot = result.get("hot_experts", [])
    if hot:
        out += ["", "| layer | expert | load/mean | share | ranks | prefill | decode | days hot | prev. week |",
                "|---:|---:|---:|---:|---|---:|---:|---:|---:|"]
        for h in hot:
            out.append(f"| {h['layer']} | {h['expert']} | {_f(h['load_over_mean'])} | {_f(h['share'] * 100 if h['share'] is not None else None, '{:.2f}%')} | "
                       f"{_cell(', '.join(map(str, h['ranks'])))} | {h['prefill_tokens']:,} | {h['decode_tokens']:,} | "
                       f"{h['days_hot']}/{h['days_seen']} | {_f(h['previous_load_over_mean'])} |")
    over = result.get("over_threshold", [])
    if over:
        out += ["", f"{len(over)} day×layer cells over the target rank max/mean {rec.get('target')}."]
    return "\n".join(out) + "\n"
