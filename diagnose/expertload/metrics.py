"""Aggregation and imbalance measures of the expert-load report, as one ``ExpertLoadResult`` (model/expert_load.py).

Definitions:

* expert level: per layer, the tokens of each logical expert (replicas summed through the placement in force on
  the day); ``max/mean`` and the coefficient of variation ``cv = std/mean`` (population std) over the routed
  experts of the layer. Slots of the shared expert (MindIE ``mix_shared_routing``) and dangling devices are not
  routed experts and are left out;
* rank level: per layer, the tokens each rank computed; ``max/mean`` (the peak-to-average ratio vllm-ascend logs)
  and ``cv`` over ranks. Sources that count per logical expert (SGLang) give ranks their experts' tokens split
  evenly over the replicas (an estimate, ``window.rank_estimated``);
* a hot expert's ``share`` is its fraction of the layer's tokens, ``load_over_mean`` its tokens over the layer's
  mean per expert. MTP layers (rows the map has none for) are measured but kept out of the summary, the hot
  experts and the suggested map.
"""

from __future__ import annotations

from datetime import date, timedelta

import msgspec
import polars as pl

from diagnose.expertload import gauges, summaries
from diagnose.expertload.advise import advise as advise_on
from diagnose.expertload.load import Loaded
from diagnose.expertload.placement import recommend
from diagnose.expertload.readers.maps import Placement, contiguous, map_json
from diagnose.expertload.summaries import rnd
from diagnose.model.expertload import (
    DayLayer, DayStats, ExpertLoadResult, ExpertMap, HotExpert, LayerAfter, LayerStats, Note, PlacementSpan, RankTokens, Ratios,
    Recommendation, Summary, Tried, TrendCell, Window,
)

HOT_LOAD_OVER_MEAN = 2.0  # an expert with twice the layer's mean load is "hot"


class Frames:
    """The placements by day and the two ways loads arrive (per slot, per logical expert), as expert and rank
    tokens of any subset of days."""

    def __init__(self, loaded: Loaded):
        self.loaded = loaded
        places = [p for p in loaded.placements if self._fits(p)]
        self.notes = [("expertload.note.map_mismatch", {"path": p.source[4:]}) for p in loaded.placements
                      if p not in places]
        if not places:
            if loaded.slots:
                places = [contiguous(loaded.n_layers, loaded.slots, loaded.config.get("num_of_experts") or None,
                                     loaded.config.get("num_dangling_shared_experts") or 0)]
            else:
                n_exp = int(loaded.logical["expert"].max()) + 1 if loaded.logical.height else 0
                places = [contiguous(loaded.n_layers, {0: n_exp})]
                places[0].source = "logical"
        self.places = places
        frames = []
        for i, p in enumerate(places):
            f = p.frame()
            # MTP rows, which the map has no layer for: placed as its first layer (vllm-ascend gives an MTP layer
            # layer 0's slots, eplb_utils.py:27-43; how MindIE places it is unverified)
            first = f.filter(pl.col("layer") == 0)
            f = pl.concat([f] + [first.with_columns(layer=pl.lit(li, pl.Int32)) for li in range(p.n_layers, loaded.n_layers)])
            frames.append(f.with_columns(pid=pl.lit(i, pl.Int32)))
        self.pf = pl.concat(frames)
        self.shared = pl.concat([p.shared_frame().with_columns(pid=pl.lit(i, pl.Int32)) for i, p in enumerate(places)])
        self.n_exp = max([p.n_experts() for p in places] + [int(self.pf["expert"].max() or -1) + 1])
        if loaded.logical.height:
            self.n_exp = max(self.n_exp, int(loaded.logical["expert"].max()) + 1)
        self.ranks = sorted(set(self.pf["rank"].to_list()))
        self.share = (self.pf.group_by("pid", "layer", "expert", "rank").agg(n=pl.len())
                      .with_columns(share=pl.col("n") / pl.col("n").sum().over("pid", "layer", "expert")))

    def _fits(self, p: Placement) -> bool:
        lo = self.loaded
        if not 0 <= lo.n_layers - p.n_layers <= 1:
            return False
        return all(r < p.n_ranks and all(len(lay[r]) == lo.slots[r] for lay in p.layers) for r in lo.slots)

    def pid_of(self, days: list[date]) -> pl.DataFrame:
        """day -> the placement in force: the last one dated on or before it (else the first)."""
        out = []
        for d in days:
            pid = 0
            for i, p in enumerate(self.places):
                if p.day is None or d is None or p.day <= d:
                    pid = i
            out.append(pid)
        return pl.DataFrame({"day": days, "pid": out}, schema={"day": pl.Date, "pid": pl.Int32})

    def expert_tokens(self, phys: pl.DataFrame, logi: pl.DataFrame, extra: tuple[str, ...] = ()) -> pl.DataFrame:
        keys = ["layer", "expert", *extra]
        a = (phys.join(self.pid_of(phys["day"].unique().to_list()), on="day")
             .join(self.pf, on=["pid", "layer", "rank", "slot"], how="inner")
             .group_by(keys).agg(tokens=pl.col("tokens").sum().cast(pl.Float64)))
        b = logi.group_by(keys).agg(tokens=pl.col("tokens").sum().cast(pl.Float64))
        return pl.concat([a, b]).group_by(keys).agg(pl.col("tokens").sum())

    def rank_tokens(self, phys: pl.DataFrame, logi: pl.DataFrame, extra: tuple[str, ...] = ()) -> pl.DataFrame:
        keys = ["layer", "rank", *extra]
        a = (phys.join(self.pid_of(phys["day"].unique().to_list()), on="day")  # routed slots only
             .join(self.pf.select("pid", "layer", "rank", "slot"), on=["pid", "layer", "rank", "slot"], how="semi")
             .group_by(keys).agg(tokens=pl.col("tokens").sum().cast(pl.Float64)))
        b = (logi.join(self.pid_of(logi["day"].unique().to_list()), on="day")
             .join(self.share, on=["pid", "layer", "expert"], how="inner")
             .group_by(keys).agg(tokens=(pl.col("tokens") * pl.col("share")).sum()))
        return pl.concat([a, b]).group_by(keys).agg(pl.col("tokens").sum())


def _stats(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    return frame.group_by(keys).agg(
        total=pl.col("tokens").sum(), mean=pl.col("tokens").mean(), max=pl.col("tokens").max(),
        std=pl.col("tokens").std(ddof=0),
    ).with_columns(
        max_over_mean=pl.when(pl.col("mean") > 0).then(pl.col("max") / pl.col("mean")),
        cv=pl.when(pl.col("mean") > 0).then(pl.col("std") / pl.col("mean")),
    ).sort(keys)


def _mean(values: list[float | None]) -> float | None:
    v = [x for x in values if x is not None]
    return rnd(sum(v) / len(v)) if v else None


def _worst(values: list[float | None]) -> float | None:
    v = [x for x in values if x is not None]
    return rnd(max(v)) if v else None


def analyse(loaded: Loaded, since: date | None = None, until: date | None = None, stage: str = "all",
            top: int = 10, target: float = 1.15, eplb: pl.DataFrame | None = None,
            advise: bool = False) -> ExpertLoadResult:
    """The report window's measures (module docstring); ``advise`` adds the answer of advise.py."""
    fr = Frames(loaded)
    n_layers, n_exp, ranks = loaded.n_layers, fr.n_exp, fr.ranks
    main = n_layers - loaded.mtp_layers  # layers the summary, hot experts and map cover
    notes = list(loaded.notes) + [Note(k, v) for k, v in fr.notes]
    cur = fr.places[-1]
    phys, logi = loaded.loads.filter(pl.col("day").is_not_null()), loaded.logical.filter(pl.col("day").is_not_null())
    if stage != "all":
        phys, logi = phys.filter(pl.col("stage") == stage), logi.filter(pl.col("stage") == stage)
    days_present = sorted(set(phys["day"].to_list()) | set(logi["day"].to_list()))
    by_gauge = gauges.layer_days(eplb)
    gauge_only = sorted(set(by_gauge["day"].to_list()) - set(days_present))
    until = until or (max(days_present + gauge_only) if days_present or gauge_only else None)
    since = since or (until - timedelta(days=6) if until else None)
    placement = cur.source if len(fr.places) == 1 else f"maps:{len(fr.places)}"
    window = Window(since=since.isoformat() if since else None, until=until.isoformat() if until else None,
                    stage=stage, layers=n_layers, ranks=len(ranks), experts=n_exp, placement=placement,
                    layers_source=loaded.layers_source, layers_votes=loaded.layers_votes, mtp_layers=loaded.mtp_layers,
                    shared_slots=sum(1 for dev in (cur.layers[0][cur.dangling:] if cur.layers else []) for e in dev
                                     if e == cur.shared_id),
                    rank_estimated=bool(logi.height))
    spans = [PlacementSpan(p.source[4:] if p.source.startswith("map:") else p.source,
                           p.day.isoformat() if p.day else None,
                           (fr.places[i + 1].day - timedelta(days=1)).isoformat() if i + 1 < len(fr.places) and fr.places[i + 1].day else None,
                           p.redundant()) for i, p in enumerate(fr.places)]
    result = ExpertLoadResult(window=window, notes=notes, refused=list(loaded.refused), files=loaded.files,
                              resets=sum(f.resets for f in loaded.files), placements=spans,
                              recommendation=Recommendation(target=target, reason="no_data"),
                              eplb=summaries.eplb(eplb))
    if until is None or since is None:
        return result
    win_p, win_l = phys.filter(pl.col("day").is_between(since, until)), logi.filter(pl.col("day").is_between(since, until))
    prev_range = (since - timedelta(days=7), since - timedelta(days=1))
    prev_p, prev_l = phys.filter(pl.col("day").is_between(*prev_range)), logi.filter(pl.col("day").is_between(*prev_range))
    cal = [since + timedelta(days=i) for i in range((until - since).days + 1)]
    win_days = [d for d in days_present if since <= d <= until]
    window.days_with_data = [d.isoformat() for d in win_days]
    window.tokens = int(win_p["tokens"].sum() + win_l["tokens"].sum())
    window.dangling_devices = cur.dangling
    window.shared_tokens = int(win_p.join(fr.pid_of(win_p["day"].unique().to_list()), on="day")
                               .join(fr.shared, on=["pid", "layer", "rank", "slot"], how="semi")["tokens"].sum())
    window.previous_window_days = sorted({d.isoformat() for d in prev_p["day"].to_list() + prev_l["day"].to_list()})
    result.missing = summaries.missing(loaded.loads, loaded.files, cal, win_days, since, until)
    result.counting = summaries.counting(loaded.files, since, until, stage, loaded.first_window_max, loaded.first_window)
    grid_e = pl.DataFrame({"layer": list(range(n_layers))}, schema={"layer": pl.Int32}).join(
        pl.DataFrame({"expert": list(range(n_exp))}, schema={"expert": pl.Int32}), how="cross")
    grid_r = pl.DataFrame({"layer": list(range(n_layers))}, schema={"layer": pl.Int32}).join(
        pl.DataFrame({"rank": ranks}, schema={"rank": pl.Int32}), how="cross")

    def per_layer(p: pl.DataFrame, lg: pl.DataFrame) -> tuple[list[LayerStats], pl.DataFrame, pl.DataFrame, pl.DataFrame]:
        """Per-layer numbers of one set of loads (the window, or one day): the same fields everywhere."""
        et = grid_e.join(fr.expert_tokens(p, lg), on=["layer", "expert"], how="left").with_columns(pl.col("tokens").fill_null(0.0))
        rt = grid_r.join(fr.rank_tokens(p, lg), on=["layer", "rank"], how="left").with_columns(pl.col("tokens").fill_null(0.0))
        es, rs = _stats(et, ["layer"]), _stats(rt, ["layer"])
        st = {(x["layer"], x["stage"]): x["tokens"] for x in pl.concat([p.select("layer", "stage", "tokens"), lg.select(
            "layer", "stage", "tokens")]).group_by("layer", "stage").agg(pl.col("tokens").sum()).iter_rows(named=True)}
        rows = [LayerStats(layer=e["layer"], tokens=int(round(e["total"])), prefill_tokens=int(st.get((e["layer"], "prefill"), 0)),
                           decode_tokens=int(st.get((e["layer"], "decode"), 0)),
                           imbalance_max_over_mean=rnd(e["max_over_mean"]), cv=rnd(e["cv"]),
                           rank_max_over_mean=rnd(r["max_over_mean"]), rank_cv=rnd(r["cv"]))
                for e, r in zip(es.iter_rows(named=True), rs.iter_rows(named=True))]
        return rows, et, rt, es

    layers, et, rt, es = per_layer(win_p, win_l)
    if prev_p.height or prev_l.height:
        pr = grid_r.join(fr.rank_tokens(prev_p, prev_l), on=["layer", "rank"], how="left").with_columns(pl.col("tokens").fill_null(0.0))
        prev_rs = {r["layer"]: r["max_over_mean"] for r in _stats(pr, ["layer"]).iter_rows(named=True)}
        for x in layers:
            x.previous_rank_max_over_mean = rnd(prev_rs.get(x.layer))
    result.layers = layers
    now = [x.rank_max_over_mean for x in layers[:main]]
    old = [x.previous_rank_max_over_mean for x in layers[:main]]
    result.summary = Summary(rank_max_over_mean_layer_mean=_mean(now), rank_max_over_mean_worst_layer=_worst(now),
                             previous_week_rank_max_over_mean_layer_mean=_mean(old),
                             previous_week_rank_max_over_mean_worst_layer=_worst(old),
                             layers_over_target=sorted(x.layer for x in layers[:main] if (x.rank_max_over_mean or 0) > target))
    result.hot_experts = _hot(fr, et, es, win_p, win_l, prev_p, prev_l, main, n_exp, top, cur)

    # Per day: the same per-layer numbers as the window; the trend and the day summary are read from them.
    daily: list[list[list[float]]] = []
    for d in win_days:
        dp, dl = win_p.filter(pl.col("day") == d), win_l.filter(pl.col("day") == d)
        rows, det, _, _ = per_layer(dp, dl)
        if advise:
            det = det.filter(pl.col("layer") < main).sort("layer", "expert")
            daily.append([part["tokens"].to_list() for _, part in det.group_by("layer", maintain_order=True)])
        ratios = [x.rank_max_over_mean for x in rows[:main]]
        result.days.append(DayStats(day=d.isoformat(), tokens=int(dp["tokens"].sum() + dl["tokens"].sum()),
                                    rank_max_over_mean_layer_mean=_mean(ratios), rank_max_over_mean_worst_layer=_worst(ratios),
                                    layers=[DayLayer(**{f: getattr(x, f) for f in DayLayer.__struct_fields__}) for x in rows]))
        result.trend += [TrendCell(d.isoformat(), x.layer, x.rank_max_over_mean, x.imbalance_max_over_mean) for x in rows]
    result.over_threshold = [t for t in result.trend if t.layer < main and (t.rank_max_over_mean or 0) > target]
    rtot = rt.group_by("rank").agg(pl.col("tokens").sum()).sort("rank")
    rstage = fr.rank_tokens(win_p, win_l, ("stage",)).group_by("rank", "stage").agg(pl.col("tokens").sum())
    by = {(r, s): t for r, s, t in rstage.select("rank", "stage", "tokens").iter_rows()}
    result.ranks = [RankTokens(r, int(round(t)), int(round(by.get((r, "prefill"), 0))), int(round(by.get((r, "decode"), 0))))
                    for r, t in rtot.select("rank", "tokens").iter_rows()]
    mat = et.sort("layer", "expert")
    result.heatmap = [[int(round(v)) for v in part["tokens"].to_list()] for _, part in mat.group_by("layer", maintain_order=True)]
    rmat = rt.sort("layer", "rank")
    result.rank_heatmap = [[int(round(v)) for v in part["tokens"].to_list()] for _, part in rmat.group_by("layer", maintain_order=True)]
    result.recommendation = _recommend(result, cur, len(ranks), main, target, n_exp)
    if advise:
        measured = [[x.rank_max_over_mean for x in d.layers[:main]] for d in result.days]
        st = fr.expert_tokens(win_p, win_l, ("stage",)).filter(pl.col("layer") < main)
        phases = {}
        for (name,), part in st.group_by(["stage"]):
            full = grid_e.filter(pl.col("layer") < main).join(part.drop("stage"), on=["layer", "expert"], how="left")
            full = full.with_columns(pl.col("tokens").fill_null(0.0)).sort("layer", "expert")
            phases[name] = [p["tokens"].to_list() for _, p in full.group_by("layer", maintain_order=True)]
        result.advice = advise_on(daily, measured, len(ranks), target, result.recommendation.current_redundant_experts,
                                  bool(eplb is not None and eplb.height), phases)
    gauges.fill(result, by_gauge.filter(pl.col("day").is_in(gauge_only) & pl.col("day").is_between(since, until)),
                target, main if days_present else None)
    return result


def _hot(fr: Frames, et, es, win_p, win_l, prev_p, prev_l, main: int, n_exp: int, top: int, cur: Placement) -> list[HotExpert]:
    """The experts with the highest load over their layer's mean, across the main layers."""
    hot = et.filter(pl.col("layer") < main).join(es.select("layer", "total", "mean"), on="layer").with_columns(
        share=pl.when(pl.col("total") > 0).then(pl.col("tokens") / pl.col("total")),
        load_over_mean=pl.when(pl.col("mean") > 0).then(pl.col("tokens") / pl.col("mean")),
    ).sort(["load_over_mean", "layer", "expert"], descending=[True, False, False], nulls_last=True).head(top)
    daily = fr.expert_tokens(win_p, win_l, ("day",))
    daily = daily.join(daily.group_by("layer", "day").agg(dsum=pl.col("tokens").sum()), on=["layer", "day"]).with_columns(
        dlom=pl.col("tokens") / (pl.col("dsum") / n_exp))
    by_stage = fr.expert_tokens(win_p, win_l, ("stage",))
    prev_e = fr.expert_tokens(prev_p, prev_l) if (prev_p.height or prev_l.height) else None
    out = []
    for h in hot.iter_rows(named=True):
        li, ex = h["layer"], h["expert"]
        sel = (pl.col("layer") == li) & (pl.col("expert") == ex)
        d = daily.filter(sel)
        s = {x["stage"]: x["tokens"] for x in by_stage.filter(sel).iter_rows(named=True)}
        prev_lom = None
        if prev_e is not None:
            pt = prev_e.filter(sel)["tokens"].sum()
            ptot = prev_e.filter(pl.col("layer") == li)["tokens"].sum()
            prev_lom = rnd(pt / (ptot / n_exp)) if ptot else None
        lay = cur.layers[li] if li < cur.n_layers else []
        out.append(HotExpert(layer=li, expert=ex, tokens=int(round(h["tokens"])), share=rnd(h["share"]),
                             load_over_mean=rnd(h["load_over_mean"]), hot=bool((h["load_over_mean"] or 0) >= HOT_LOAD_OVER_MEAN),
                             ranks=sorted({r for r, dev in enumerate(lay) if r >= cur.dangling for x in dev if x == ex}),
                             prefill_tokens=int(round(s.get("prefill", 0))), decode_tokens=int(round(s.get("decode", 0))),
                             days_hot=int((d["dlom"] >= HOT_LOAD_OVER_MEAN).sum()), days_seen=d.height,
                             previous_load_over_mean=prev_lom))
    return out


def _recommend(result: ExpertLoadResult, cur: Placement, n_ranks: int, main: int, target: float, n_exp: int) -> Recommendation:
    before = [x.rank_max_over_mean for x in result.layers[:main]]
    rec = recommend([[float(v) for v in row] for row in result.heatmap[:main]], n_ranks, target)
    if "maps" not in rec:
        return Recommendation(target=target, reason="no_data")
    current_red = cur.redundant() if cur.source.startswith("map:") else 0
    after = rec["per_layer_after"]
    measured = Ratios(max_over_mean_layer_mean=_mean(before), max_over_mean_worst_layer=_worst(before), measured=True,
                      redundant_experts=current_red)
    shared = cur.shared_id if cur.source.startswith("map:") else None
    return Recommendation(
        target=target, reached=rec["reached"], current_redundant_experts=current_red,
        redundant_experts=rec["redundant_experts"], slots_per_rank=rec["slots_per_rank"], before=measured,
        after=Ratios(max_over_mean_layer_mean=_mean(after), max_over_mean_worst_layer=_worst(after), measured=False,
                     redundant_experts=rec["redundant_experts"]),
        current=measured,
        per_layer=[LayerAfter(i, before[i], rnd(a)) for i, a in enumerate(after)],
        tried=[Tried(**t) for t in rec["tried"]],
        expert_map=msgspec.convert(map_json(rec["maps"], shared, cur.dangling), ExpertMap), shared_id=shared,
        dangling=cur.dangling)
