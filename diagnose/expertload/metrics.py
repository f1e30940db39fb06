"""Aggregation and imbalance metrics of the expert-load report.

Definitions:

* expert level: per layer, the tokens of each logical expert (replicas summed); ``max/mean`` and the
  coefficient of variation ``cv = std/mean`` (population std) over all logical experts of the layer;
* rank level: per layer, the tokens each rank computed (through the placement); ``max/mean`` (the
  peak-to-average ratio vllm-ascend logs) and ``cv`` over ranks;
* a hot expert's ``share`` is its fraction of the layer's tokens, ``load_over_mean`` its tokens over the
  layer's mean per expert.

The result is one JSON-ready dict that every report format renders; its texts (why a window was not counted,
the counting rule, notes, labels) are in the language asked for (texts.py).
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import polars as pl

from diagnose.expertload import texts
from diagnose.expertload.load import FIRST_WINDOW_MAX_INTERVALS, Loaded, Placement
from diagnose.expertload.placement import map_json, recommend
from diagnose.messages import Messages, messages

HOT_LOAD_OVER_MEAN = 2.0  # an expert with twice the layer's mean load is "hot"


def placement_for(loaded: Loaded) -> tuple[Placement, list]:
    """The current placement: the expert map when it fits the dumps, else contiguous ids per rank."""
    notes = []
    ranks = sorted(loaded.slots)
    if loaded.placement is not None:
        p = loaded.placement
        ok = p.n_layers == loaded.n_layers and all(
            r < p.n_ranks and all(len(lay[r]) == loaded.slots[r] for lay in p.layers) for r in ranks)
        if ok:
            return p, notes
        notes.append(("expertload.note.map_mismatch", {"path": p.source[4:]}))
    n_ranks = (max(ranks) + 1) if ranks else 0
    width = max(loaded.slots.values(), default=0)
    per_rank = [loaded.slots.get(r, width) for r in range(n_ranks)]
    offsets = [sum(per_rank[:r]) for r in range(n_ranks)]
    layer = [[offsets[r] + s for s in range(per_rank[r])] for r in range(n_ranks)]
    return Placement([layer for _ in range(loaded.n_layers)], "contiguous"), notes


def _stats(frame: pl.DataFrame, keys: list[str], col: str = "tokens") -> pl.DataFrame:
    return frame.group_by(keys).agg(
        total=pl.col(col).sum(),
        mean=pl.col(col).mean(),
        max=pl.col(col).max(),
        std=pl.col(col).std(ddof=0),
    ).with_columns(
        max_over_mean=pl.when(pl.col("mean") > 0).then(pl.col("max") / pl.col("mean")),
        cv=pl.when(pl.col("mean") > 0).then(pl.col("std") / pl.col("mean")),
    ).sort(keys)


def _r(x: float | None, n: int = 8) -> float | None:
    return None if x is None else round(float(x), n)


def analyse(loaded: Loaded, since: date | None = None, until: date | None = None, stage: str = "all",
            top: int = 10, target: float = 1.15, lang: str = "en") -> dict[str, Any]:
    msg = messages(lang)
    place, notes = placement_for(loaded)
    notes = [texts.note(n, msg) for n in loaded.notes + notes]
    n_layers, n_exp = loaded.n_layers, place.n_experts()
    n_ranks = place.n_ranks
    pf = place.frame()
    loads = loaded.loads.filter(pl.col("day").is_not_null())
    if stage != "all":
        loads = loads.filter(pl.col("stage") == stage)
    days_present = sorted(set(loads["day"].to_list()))
    if until is None:
        until = days_present[-1] if days_present else None
    if since is None and until is not None:
        since = until - timedelta(days=6)
    result: dict[str, Any] = {
        "window": {"since": since.isoformat() if since else None, "until": until.isoformat() if until else None,
                   "stage": stage, "layers": n_layers, "ranks": n_ranks, "experts": n_exp,
                   "placement": place.source, "placement_text": texts.placement_source(place.source, msg),
                   "layers_from": texts.layers_from(loaded.layers_source, loaded.layers_votes, msg)},
        "lang": msg.lang,
        "notes": notes,
    }
    if until is None or since is None:
        result.update(layers=[], counting={}, hot_experts=[], recommendation={"reached": False, "reason": msg("expertload.no_data")},
                      days=[], ranks=[], heatmap=[], trend=[], missing={"days": [], "rank_files": []}, over_threshold=[])
        return result
    in_window = pl.col("day").is_between(since, until)
    win = loads.filter(in_window)
    prev = loads.filter(pl.col("day").is_between(since - timedelta(days=7), since - timedelta(days=1)))
    cal = [since + timedelta(days=i) for i in range((until - since).days + 1)]
    win_days = [d for d in days_present if since <= d <= until]
    result["window"].update(days_with_data=[d.isoformat() for d in win_days],
                            tokens=int(win["tokens"].sum()),
                            previous_window_days=sorted({d.isoformat() for d in prev["day"].to_list()}))

    # Missing inputs: calendar days without a dump, and rank files absent on a day that other ranks have.
    missing_files = []
    per_stage = loaded.loads.select("day", "stage", "rank").unique()
    for st in sorted(set(per_stage["stage"].to_list())):
        ranks_seen = set(per_stage.filter(pl.col("stage") == st)["rank"].to_list())
        ranks_seen |= {f.rank for f in loaded.files if f.stage == st}
        present = {(f.day, f.rank) for f in loaded.files if f.stage == st}
        days_st = sorted({f.day for f in loaded.files if f.stage == st and f.day})
        for d in days_st:
            if not (since.isoformat() <= d <= until.isoformat()):
                continue
            for r in sorted(ranks_seen):
                if (d, r) not in present:
                    missing_files.append({"day": d, "stage": st, "rank": r})
    result["missing"] = {"days": [d.isoformat() for d in cal if d not in win_days], "rank_files": missing_files}
    for f in loaded.files:
        f.why = texts.why(f, loaded.first_window_max, msg)
    result["files"] = [dict(f.__dict__) for f in loaded.files]
    result["resets"] = sum(f.resets for f in loaded.files)
    result["counting"] = counting_summary(loaded.files, since, until, stage, loaded.first_window_max, msg)

    grid_e = pl.DataFrame({"layer": list(range(n_layers))}, schema={"layer": pl.Int32}).join(
        pl.DataFrame({"expert": list(range(n_exp))}, schema={"expert": pl.Int32}), how="cross")
    grid_r = pl.DataFrame({"layer": list(range(n_layers))}, schema={"layer": pl.Int32}).join(
        pl.DataFrame({"rank": list(range(n_ranks))}, schema={"rank": pl.Int32}), how="cross")

    def expert_tokens(frame: pl.DataFrame, extra: list[str] = ()) -> pl.DataFrame:
        j = frame.join(pf, on=["layer", "rank", "slot"], how="inner")
        return j.group_by(["layer", "expert", *extra]).agg(tokens=pl.col("tokens").sum())

    def rank_tokens(frame: pl.DataFrame, extra: list[str] = ()) -> pl.DataFrame:
        return frame.group_by(["layer", "rank", *extra]).agg(tokens=pl.col("tokens").sum())

    def per_layer(frame: pl.DataFrame) -> tuple[list[dict[str, Any]], pl.DataFrame, pl.DataFrame, pl.DataFrame]:
        """Per-layer numbers of one set of loads (the window, or one day): the same fields everywhere."""
        et = grid_e.join(expert_tokens(frame), on=["layer", "expert"], how="left").with_columns(pl.col("tokens").fill_null(0))
        rt = grid_r.join(rank_tokens(frame), on=["layer", "rank"], how="left").with_columns(pl.col("tokens").fill_null(0))
        es, rs = _stats(et, ["layer"]), _stats(rt, ["layer"])
        st = {(x["layer"], x["stage"]): x["tokens"]
              for x in frame.group_by("layer", "stage").agg(pl.col("tokens").sum()).iter_rows(named=True)}
        rows = [{
            "layer": e["layer"], "tokens": int(e["total"]), "prefill_tokens": int(st.get((e["layer"], "prefill"), 0)),
            "decode_tokens": int(st.get((e["layer"], "decode"), 0)),
            "imbalance_max_over_mean": _r(e["max_over_mean"]), "cv": _r(e["cv"]),
            "rank_max_over_mean": _r(r["max_over_mean"]), "rank_cv": _r(r["cv"]),
        } for e, r in zip(es.iter_rows(named=True), rs.iter_rows(named=True))]
        return rows, et, rt, es

    layers, et, rt, es = per_layer(win)
    prev_rs = None
    if prev.height:
        pr = grid_r.join(rank_tokens(prev), on=["layer", "rank"], how="left").with_columns(pl.col("tokens").fill_null(0))
        prev_rs = {r["layer"]: r["max_over_mean"] for r in _stats(pr, ["layer"]).iter_rows(named=True)}
    for x in layers:
        x["previous_rank_max_over_mean"] = _r(prev_rs.get(x["layer"])) if prev_rs else None
    result["layers"] = layers
    cur = [x["rank_max_over_mean"] for x in layers if x["rank_max_over_mean"] is not None]
    old = [x["previous_rank_max_over_mean"] for x in layers if x["previous_rank_max_over_mean"] is not None]
    result["summary"] = {
        "rank_max_over_mean_layer_mean": _r(sum(cur) / len(cur)) if cur else None,
        "rank_max_over_mean_worst_layer": _r(max(cur)) if cur else None,
        "previous_week_rank_max_over_mean_layer_mean": _r(sum(old) / len(old)) if old else None,
        "previous_week_rank_max_over_mean_worst_layer": _r(max(old)) if old else None,
        "layers_over_target": sorted(x["layer"] for x in layers if (x["rank_max_over_mean"] or 0) > target),
    }

    # Hot experts: highest load over the layer mean, across layers.
    hot = et.join(es.select("layer", "total", "mean"), on="layer").with_columns(
        share=pl.when(pl.col("total") > 0).then(pl.col("tokens") / pl.col("total")),
        load_over_mean=pl.when(pl.col("mean") > 0).then(pl.col("tokens") / pl.col("mean")),
    ).sort(["load_over_mean", "layer", "expert"], descending=[True, False, False], nulls_last=True).head(top)
    daily = expert_tokens(win, ["day"])
    daily = daily.join(daily.group_by("layer", "day").agg(dsum=pl.col("tokens").sum()), on=["layer", "day"]).with_columns(
        dlom=pl.col("tokens") / (pl.col("dsum") / n_exp))
    by_stage = expert_tokens(win, ["stage"])
    prev_e = expert_tokens(prev) if prev.height else None
    prev_tot = prev_e.group_by("layer").agg(ptot=pl.col("tokens").sum()) if prev_e is not None else None
    hot_rows = []
    for h in hot.iter_rows(named=True):
        li, ex = h["layer"], h["expert"]
        sel = (pl.col("layer") == li) & (pl.col("expert") == ex)
        d = daily.filter(sel)
        s = {x["stage"]: x["tokens"] for x in by_stage.filter(sel).iter_rows(named=True)}
        prev_lom = None
        if prev_e is not None:
            pt = prev_e.filter(sel)["tokens"].sum()
            ptot = prev_tot.filter(pl.col("layer") == li)["ptot"].sum()
            prev_lom = _r(pt / (ptot / n_exp)) if ptot else None
        hot_rows.append({
            "layer": li, "expert": ex, "tokens": int(h["tokens"]), "share": _r(h["share"]),
            "load_over_mean": _r(h["load_over_mean"]), "hot": bool((h["load_over_mean"] or 0) >= HOT_LOAD_OVER_MEAN),
            "ranks": sorted({r for r, dev in enumerate(place.layers[li]) for x in dev if x == ex}),
            "prefill_tokens": int(s.get("prefill", 0)), "decode_tokens": int(s.get("decode", 0)),
            "days_hot": int((d["dlom"] >= HOT_LOAD_OVER_MEAN).sum()), "days_seen": d.height,
            "previous_load_over_mean": prev_lom,
        })
    result["hot_experts"] = hot_rows

    # Per day: the same per-layer numbers as the window; the trend and the day summary are read from them.
    result["days"], result["trend"] = [], []
    for d in win_days:
        day_frame = win.filter(pl.col("day") == d)
        rows, _, _, _ = per_layer(day_frame)
        ratios = [x["rank_max_over_mean"] for x in rows if x["rank_max_over_mean"] is not None]
        result["days"].append({
            "day": d.isoformat(), "tokens": int(day_frame["tokens"].sum()),
            "rank_max_over_mean_layer_mean": _r(sum(ratios) / len(ratios)) if ratios else None,
            "rank_max_over_mean_worst_layer": _r(max(ratios)) if ratios else None,
            "layers": rows,
        })
        result["trend"] += [{"day": d.isoformat(), "layer": x["layer"], "rank_max_over_mean": x["rank_max_over_mean"],
                             "imbalance_max_over_mean": x["imbalance_max_over_mean"]} for x in rows]
    result["over_threshold"] = [t for t in result["trend"] if (t["rank_max_over_mean"] or 0) > target]
    rtot = rt.group_by("rank").agg(pl.col("tokens").sum()).sort("rank")
    rstage = win.group_by("rank", "stage").agg(pl.col("tokens").sum())
    result["ranks"] = [{"rank": r["rank"], "tokens": int(r["tokens"]),
                        "prefill_tokens": int(rstage.filter((pl.col("rank") == r["rank"]) & (pl.col("stage") == "prefill"))["tokens"].sum()),
                        "decode_tokens": int(rstage.filter((pl.col("rank") == r["rank"]) & (pl.col("stage") == "decode"))["tokens"].sum())}
                       for r in rtot.iter_rows(named=True)]
    mat = et.sort("layer", "expert")
    result["heatmap"] = [mat.filter(pl.col("layer") == li)["tokens"].to_list() for li in range(n_layers)]
    result["rank_heatmap"] = [rt.filter(pl.col("layer") == li).sort("rank")["tokens"].to_list() for li in range(n_layers)]

    # Recommendation.
    before = [x["rank_max_over_mean"] for x in layers if x["rank_max_over_mean"] is not None]
    rec = recommend([[float(v) for v in row] for row in result["heatmap"]], n_ranks, target)
    current_red = sum(len(dev) for dev in place.layers[0]) - n_exp if place.layers else 0
    if "maps" in rec:
        after = [x for x in rec["per_layer_after"] if x is not None]
        rec = {
            "target": target,
            "reached": rec["reached"],
            "method": texts.method(msg),
            "current_redundant_experts": current_red,
            "redundant_experts": rec["redundant_experts"],
            "slots_per_rank": rec["slots_per_rank"],
            "before": {"max_over_mean_layer_mean": _r(sum(before) / len(before)) if before else None,
                       "max_over_mean_worst_layer": _r(max(before)) if before else None, "measured": True},
            "after": {"max_over_mean_layer_mean": _r(sum(after) / len(after)) if after else None,
                      "max_over_mean_worst_layer": _r(max(after)) if after else None, "measured": False},
            "per_layer": [{"layer": i, "before": layers[i]["rank_max_over_mean"], "after": _r(a)}
                          for i, a in enumerate(rec["per_layer_after"])],
            "current": {"label": texts.current_label(current_red, msg),
                        "redundant_experts": current_red,
                        "max_over_mean_layer_mean": _r(sum(before) / len(before)) if before else None,
                        "max_over_mean_worst_layer": _r(max(before)) if before else None, "measured": True},
            "tried": [{**t, "label": texts.tried_label(t["redundant_experts"], msg)} for t in rec["tried"]],
            "tried_note": texts.tried_note(msg),
            "expert_map": map_json(rec["maps"]),
        }
    else:
        rec = {"target": target, **rec, "reason": msg("expertload.no_data")}
    result["recommendation"] = rec
    result["eplb"] = eplb_summary(loaded.eplb)
    return result


def counting_summary(files: list, since: date, until: date, stage: str = "all",
                     max_intervals: float = FIRST_WINDOW_MAX_INTERVALS, msg: Messages | None = None) -> dict[str, Any]:
    """Which windows (one per dump block) were counted, in the report window, and why the others were not."""
    msg = msg or messages("en")
    lo, hi = since.isoformat(), until.isoformat()
    inside = [f for f in files if f.day and lo <= f.day <= hi and (stage == "all" or f.stage == stage)]
    first: dict[str, int] = {}
    for f in inside:
        if f.first:
            first[f.first] = first.get(f.first, 0) + 1
    not_counted = [{"path": f.path, "day": f.day, "stage": f.stage, "rank": f.rank, "first": f.first,
                    "why": f.why, "ratio": f.ratio} for f in inside if f.first and not f.first_counted]
    windows = sum(f.windows for f in inside)
    counted = sum(f.counted for f in inside)
    repeated = sum(f.repeated for f in inside if f.first == "repeat")
    return {
        "rule": texts.counting_rule(max_intervals, msg),
        "max_intervals": max_intervals,
        "files": len(inside),
        "windows": windows,
        "counted": counted,
        "not_counted": windows - counted - repeated,
        "repeated": repeated,
        "first_windows": dict(sorted(first.items())),
        "first_windows_not_counted": not_counted,
    }


def eplb_summary(eplb: pl.DataFrame) -> dict[str, Any]:
    """EPLB log values (vllm-ascend hotness imbalance, vLLM balancedness): per signal count, last, worst; series."""
    out: dict[str, Any] = {"signals": {}, "series": []}
    if eplb.height == 0:
        return out
    for name in sorted(set(eplb["signal"].to_list())):
        v = eplb.filter(pl.col("signal") == name)["value"]
        worst = v.min() if name == "eplb_balancedness" else v.max()
        out["signals"][name] = {"count": v.len(), "last": _r(v[-1]), "worst": _r(worst)}
    out["series"] = [{"ts": r["ts"].isoformat(sep=" ") if r["ts"] else None, "signal": r["signal"], "value": _r(r["value"])}
                     for r in eplb.head(5000).iter_rows(named=True)]
    return out
