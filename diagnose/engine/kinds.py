"""The four match kinds. Each takes a rule's ``[match]`` table and the frames, and returns a Match
(the rows that are the evidence, and the facts the summary quotes) or None when the rule does not fire."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Callable

import polars as pl

from diagnose.engine.match import AbsenceMatch, MismatchMatch, PatternMatch, Selector, ThresholdMatch
from diagnose.engine.selectors import select, select_signal, signal_condition
from diagnose.model.series import signal_rows


@dataclass
class Match:
    hits: pl.DataFrame  # HIT_COLUMNS; first rows are the best evidence
    count: int
    facts: dict[str, Any] = field(default_factory=dict)
    overrides: dict[str, Any] = field(default_factory=dict)  # what the finding takes instead of the rule's (severity)


# A short excerpt: an engine with at most this many samples of a signal in a file (a pasted handful of metric
# lines, not hours of a log). A rule that needs a sustained run (samples, sustained, rising) fires on such an
# excerpt when every sample of it is beyond the threshold: at its own severity from SHORT_MIN samples on, at
# `info` on fewer; when only its last samples are beyond, at `info`. The summary says on how many it rests.
EXCERPT_MAX = 20
SHORT_MIN = 3


def match_pattern(m: PatternMatch, records: pl.DataFrame, signals: pl.DataFrame, sources,
                  series: pl.DataFrame | None = None) -> Match | None:
    hits = select(m.selector, records, signals, sources, series)
    if hits.height == 0:
        return None
    # A multi-line message (a traceback) counts once: keep the first matching line of each event.
    events = hits.unique(subset=["file", "event"], keep="first", maintain_order=True).sort(["ts", "file", "line"], nulls_last=True)
    need = m.min_count
    if events.height < need:
        return None
    if m.window_s is not None and need > 1:
        window = timedelta(seconds=m.window_s)
        ts = events["ts"].drop_nulls().sort()
        spans = ts.shift(-(need - 1)) - ts
        if not (spans.drop_nulls() <= window).any():
            return None
    facts: dict[str, Any] = {}
    if m.selector.regex is not None:
        first = events.head(1)
        groups = first.select(pl.col("vtext").str.extract_groups(m.selector.regex)).to_series()[0] or {}
        facts.update({k: v for k, v in groups.items() if not k.isdigit() and v is not None})
    if m.classify:
        facts["phase"] = _classify(m, events, records)
    return Match(events, events.height, facts)


def _classify(m: PatternMatch, events: pl.DataFrame, records: pl.DataFrame) -> str:
    """Label the matched events by the first classifier that matches any line of any matched event."""
    keys = events.select("file", "event").unique()
    text = records.join(keys, on=["file", "event"], how="semi").select("message").to_series()
    for label, pattern in m.classify:
        if text.str.contains(pattern).any():
            return label
    return m.classify_default


def match_threshold(m: ThresholdMatch, records: pl.DataFrame, signals: pl.DataFrame, sources,
                    series: pl.DataFrame | None = None) -> Match | None:
    sources = m.signal_sources if m.signal_sources is not None else sources
    base = signal_rows(m.signal, signals, series)
    if sources:
        base = base.filter(pl.col("source").is_in(sources))
    if m.engine_regex is not None:
        base = base.filter(pl.col("engine").fill_null("").str.contains(m.engine_regex))
    if base.height == 0:
        return None
    cond = signal_condition(Selector(above=m.above, below=m.below))
    frame = base.select("file", "line", "source", "node", "ts", "engine", "value").with_columns(_ok=cond)
    also_names = []
    for i, extra in enumerate(m.also):
        other = select_signal(Selector(signal=extra.signal), signals, sources, series).select(
            "file", "line", "engine", pl.col("value").alias(f"_a{i}")
        )
        frame = frame.join(other.unique(["file", "line", "engine"]), on=["file", "line", "engine"], how="left")
        frame = frame.with_columns(_ok=pl.col("_ok") & _cond_on(f"_a{i}", extra).fill_null(False))
        also_names.append((f"_a{i}", extra.signal))
    group = ["file", "node", "engine"]
    frame = frame.sort(group + ["line"], nulls_last=True).with_columns(
        _run=(pl.col("_ok") != pl.col("_ok").shift(1)).fill_null(True).cast(pl.Int32).cum_sum().over(group),
        _total=pl.len().over(group),
        _end=pl.col("line").max().over(group),
    )
    rising = m.rising
    rising_col = next((c for c, s in also_names if s == rising), None)
    aggs = [
        pl.len().alias("n"),
        pl.col("ts").min().alias("start"),
        pl.col("ts").max().alias("end"),
        pl.col("value").max().alias("vmax"),
        pl.col("value").min().alias("vmin"),
        pl.col("line").first().alias("first_line"),
        pl.col("line").last().alias("last_line"),
        pl.col("line").get(pl.col("value").arg_max()).alias("peak_line_max"),
        pl.col("line").get(pl.col("value").arg_min()).alias("peak_line_min"),
        pl.col("_total").first().alias("total"),
        pl.col("_end").first().alias("group_end"),
    ]
    for col, name in also_names:
        aggs += [pl.col(col).first().alias(f"{name}_first"), pl.col(col).max().alias(f"{name}_max"),
                 pl.col(col).last().alias(f"{name}_last")]
    candidates = frame.filter(pl.col("_ok")).group_by(group + ["_run"], maintain_order=True).agg(aggs)
    runs = candidates.filter(pl.col("n") >= m.samples)
    if m.sustained_s is not None:
        need = timedelta(seconds=m.sustained_s)
        runs = runs.filter((pl.col("end") - pl.col("start")) >= need)
    if rising_col:
        runs = runs.filter(pl.col(f"{rising}_max") > pl.col(f"{rising}_first"))
    excerpt = None
    demanding = m.samples > 1 or m.sustained_s is not None or rising_col is not None
    weak = False
    if runs.height == 0 and demanding:
        # A short excerpt (see EXCERPT_MAX): all of its samples beyond the threshold; failing that, the run
        # it ends with (a paste ends where the trouble is; a blip it recovered from is not one).
        short = candidates.filter(pl.col("total") <= EXCERPT_MAX)
        runs = short.filter(pl.col("n") == pl.col("total"))
        if runs.height == 0:
            runs, weak = short.filter(pl.col("last_line") == pl.col("group_end")), True
        if runs.height:
            excerpt = int(runs["n"].max())
    if runs.height == 0:
        return None
    above = m.above is not None
    runs = runs.sort(["n", "vmax" if above else "vmin"], descending=[True, above])
    worst = runs.row(0, named=True)
    peak_line = worst["peak_line_max"] if above else worst["peak_line_min"]
    # Evidence: for each run, its first sample; for the worst run also the peak and the last sample.
    ev_keys = [(worst["file"], worst["first_line"]), (worst["file"], peak_line), (worst["file"], worst["last_line"])]
    ev_keys += [(r["file"], r["first_line"]) for r in runs.iter_rows(named=True)][1:]
    hits = _hits_at(frame, ev_keys)
    all_samples = frame.filter(pl.col("_ok")).join(runs.select(group + ["_run"]), on=group + ["_run"], how="semi", nulls_equal=True)
    duration = (worst["end"] - worst["start"]) if worst["end"] and worst["start"] else None
    facts = {
        "value": worst["vmax"] if above else worst["vmin"],
        "threshold": m.above if above else m.below,
        "samples": worst["n"],
        "duration": _fmt_duration(duration),
        "engine": worst["engine"],
        "engines": runs.select(pl.struct(group)).n_unique(),
        "file": worst["file"],
    }
    for _, name in also_names:
        facts[f"{name}_first"] = worst[f"{name}_first"]
        facts[f"{name}_max"] = worst[f"{name}_max"]
        facts[f"{name}_last"] = worst[f"{name}_last"]
    span = all_samples.select(pl.col("ts").min().alias("a"), pl.col("ts").max().alias("b")).row(0)
    hits = hits.with_columns(_first=pl.lit(span[0], pl.Datetime("us")), _last=pl.lit(span[1], pl.Datetime("us")))
    overrides: dict[str, Any] = {}
    if excerpt is not None:
        facts["excerpt_samples"] = excerpt
        if weak or excerpt < SHORT_MIN:
            overrides["severity"] = "info"
    return Match(hits, all_samples.height, facts, overrides)


def _cond_on(col: str, sel: Selector) -> pl.Expr:
    cond = pl.lit(True)
    if sel.above is not None:
        cond = cond & (pl.col(col) > sel.above)
    if sel.below is not None:
        cond = cond & (pl.col(col) < sel.below)
    return cond


def _hits_at(frame: pl.DataFrame, keys: list[tuple[str, int]]) -> pl.DataFrame:
    seen, ordered = set(), []
    for k in keys:
        if k not in seen:
            seen.add(k)
            ordered.append(k)
    want = pl.DataFrame({"file": [k[0] for k in ordered], "line": [k[1] for k in ordered]},
                        schema={"file": pl.String, "line": pl.UInt32}).with_row_index("_order")
    rows = frame.unique(["file", "line"], keep="first").join(want, on=["file", "line"], how="inner").sort("_order")
    return rows.select(
        "file", "line", "source", "node", "ts", pl.lit(None, pl.Int32).alias("rank"),
        pl.col("line").alias("event"), "engine", "value", pl.lit(None, pl.String).alias("vtext"),
    )


def _fmt_duration(d: timedelta | None) -> str:
    if d is None:
        return "?"
    s = int(d.total_seconds())
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def match_absence(m: AbsenceMatch, records: pl.DataFrame, signals: pl.DataFrame, sources,
                  series: pl.DataFrame | None = None) -> Match | None:
    scope = {"bundle": [], "node": ["node"], "file": ["file"]}[m.scope]
    when = select(m.when, records, signals, sources, series)
    if when.height == 0:
        return None
    missing = select(m.missing, records, signals, sources, series)
    require = select(m.require, records, signals, sources, series) if m.require is not None else None
    if not scope:
        if missing.height or (require is not None and require.height == 0):
            return None
        firing = when
    else:
        keys = when.select(scope).unique()
        if missing.height:
            keys = keys.join(missing.select(scope).unique(), on=scope, how="anti", nulls_equal=True)
        if require is not None:
            keys = keys.join(require.select(scope).unique(), on=scope, how="semi", nulls_equal=True)
        if keys.height == 0:
            return None
        firing = when.join(keys, on=scope, how="semi", nulls_equal=True)
        if require is not None:
            require = require.join(keys, on=scope, how="semi", nulls_equal=True)
    firing = firing.sort(["ts", "file", "line"], nulls_last=True)
    evidence = firing.unique(["file", "event"], keep="first", maintain_order=True)
    if require is not None and require.height:
        evidence = pl.concat([evidence.head(3), require.sort("ts", nulls_last=True).head(2)], how="vertical_relaxed")
    facts = {
        "when_count": firing.height,
        "require_count": require.height if require is not None else None,
        "scopes": firing.select(scope).n_unique() if scope else 1,
    }
    first = firing.head(1).row(0, named=True)
    facts["when_text"] = first["vtext"] if first["vtext"] is not None else first["value"]
    return Match(evidence, firing.height, facts)


def match_mismatch(m: MismatchMatch, records: pl.DataFrame, signals: pl.DataFrame, sources,
                   series: pl.DataFrame | None = None) -> Match | None:
    across = m.across
    sources = m.signal_sources if m.signal_sources is not None else sources
    frame = signal_rows(m.signal, signals, series)
    if sources:
        frame = frame.filter(pl.col("source").is_in(sources))
    key = {"node": "node", "device": "engine", "engine": "engine", "file": "file"}[across]
    within = m.within
    k = pl.col(key).fill_null(pl.col("file"))
    if key == "engine" and within != "node":
        # npu0 on node-0 and npu0 on node-1 are different cards: qualify devices by their node.
        k = pl.when(pl.col("node").is_not_null()).then(pl.format("{}/{}", pl.col("node"), k)).otherwise(k)
    frame = frame.with_columns(
        _v=pl.coalesce(pl.col("text"), pl.col("value").cast(pl.String)).str.strip_chars(),
        _k=k,
    ).filter(pl.col("_v").is_not_null() & (pl.col("_v") != ""))
    if m.ignore_regex is not None:
        frame = frame.filter(~pl.col("_v").str.contains(m.ignore_regex))
    if within:
        # Only differences inside one node (or file) count: keep the groups that disagree within themselves.
        frame = frame.with_columns(_w=pl.col(within).fill_null("") if within == "node" else pl.col("file"))
        bad = frame.group_by("_w").agg(pl.col("_v").n_unique().alias("nv"), pl.col("_k").n_unique().alias("nk"))
        bad = bad.filter((pl.col("nv") >= 2) & (pl.col("nk") >= 2))
        frame = frame.join(bad.select("_w"), on="_w", how="semi").drop("_w")
    if frame.height == 0 or frame.select("_v").n_unique() < 2 or frame.select("_k").n_unique() < 2:
        return None
    frame = frame.sort(["_v", "_k", "file", "line"])
    per_value = frame.group_by("_v", maintain_order=True).agg(pl.col("_k").unique(maintain_order=True))
    # On a tie the lower value is the odd one out (for versions: the older install is usually the one to fix).
    per_value = per_value.with_columns(_n=pl.col("_k").list.len()).sort(["_n", "_v"], descending=[True, True])
    # "24.1.rc3 (node-0); 23.0.7 (node-1)": no words, so the sentence reads the same in every language
    parts = [f"{v} ({', '.join(ks[:6])}{' …' if len(ks) > 6 else ''})" for v, ks, _ in per_value.iter_rows()]
    majority, minority = per_value.row(0), per_value.row(-1)
    evidence = frame.unique("_v", keep="first", maintain_order=True)
    # The odd ones out first: they are usually what to fix.
    evidence = evidence.with_columns(_major=pl.col("_v") == majority[0]).sort(
        ["_major", "ts"], nulls_last=True, maintain_order=True
    )
    # The finding is located where the odd values are: the majority rows are evidence, not places to fix.
    hits = evidence.select(
        "file", "line", "source", pl.when(pl.col("_major")).then(None).otherwise(pl.col("node")).alias("node"), "ts",
        pl.lit(None, pl.Int32).alias("rank"), pl.col("line").alias("event"), "engine", "value",
        pl.col("_v").alias("vtext"),
    )
    facts = {
        "values": "; ".join(parts),
        "distinct": per_value.height,
        "majority": majority[0],
        "odd_value": minority[0],
        "odd_where": ", ".join(minority[1][:6]),
        "across": across,
        "odd_nodes": ", ".join(sorted(set(frame.filter(pl.col("_v") == minority[0])["node"].drop_nulls().to_list())))
        or "-",
    }
    return Match(hits, frame.height, facts)


KINDS: dict[str, Callable[..., Match | None]] = {
    "pattern": match_pattern,
    "threshold": match_threshold,
    "absence": match_absence,
    "mismatch": match_mismatch,
}
