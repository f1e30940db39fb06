"""The ``threshold`` match kind: a signal beyond a threshold for ``samples`` consecutive samples (lasting
``sustained`` when given), with ``also`` conditions on other signals of the same line and engine and an
optional ``rising`` one; on a short excerpt, at a lower severity (see EXCERPT_MAX). Without ``above`` and
``below`` it is a measurement: every sample counts, and the page draws no threshold line.

A summary says representative numbers, never one extreme sample alone: ``{median}``, ``{min}``, ``{max}`` of the
samples that fired, and with ``stretch_below``/``stretch_above`` the share of all samples beyond that value
(``{beyond_pct}``) and the worst stretch of them in a row (``{stretch_samples}``, ``{stretch_duration}``,
``{stretch_engine}``; unknown when there is none, so its optional clause is left out)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import polars as pl

from diagnose.engine.match import Match, Selector, selector_from
from diagnose.engine.match_kinds.protocol import Context, Hit, MatchKind
from diagnose.engine.selectors import select_signal, signal_condition
from diagnose.model.series import signal_rows

FIELDS = {"signal": ("str", "the signal (required)"),
          "above": ("number", "exactly one of above/below"),
          "below": ("number", "exactly one of above/below"),
          "samples": ("int", "consecutive samples needed (default 1)"),
          "sustained": ("duration", "the run must last this long"),
          "also": ("selectors", "conditions on other signals of the same line and engine"),
          "rising": ("str", "an `also` signal that must rise over the run"),
          "weight": ("str", "an `also` signal that counts what a sample rests on (drafted tokens): see weight_enough"),
          "weight_enough": ("number", "a short excerpt whose samples together weigh this much is not demoted"),
          "sources": ("sources", "source kinds (default: the rule's)"),
          "engine_regex": ("regex", "only engines whose name matches"),
          "stretch_below": ("number", "also say how long the signal stayed below this value (summary facts)"),
          "stretch_above": ("number", "also say how long the signal stayed above this value (summary facts)")}

# A short excerpt: an engine with at most this many samples of a signal in a file (a pasted handful of metric
# lines, not hours of a log). A rule that needs a sustained run (samples, sustained, rising) fires on such an
# excerpt when every sample of it is beyond the threshold: at its own severity from SHORT_MIN samples on, at
# `info` on fewer; when only its last samples are beyond, at `info`. The summary says on how many it rests. A
# sample may stand for many events (one SpecDecoding line: the hundreds of tokens drafted in its interval): a rule
# with `weight` (a signal of the same line counting them) and `weight_enough` keeps its severity on an excerpt whose
# samples, all beyond the threshold, together count that many.
EXCERPT_MAX = 20
SHORT_MIN = 3

@dataclass(frozen=True)
class ThresholdMatch(Match):
    signal: str = ""
    above: float | None = None
    below: float | None = None
    samples: int = 1
    sustained_s: float | None = None
    also: tuple[Selector, ...] = ()
    rising: str | None = None
    weight: str | None = None
    weight_enough: float | None = None
    signal_sources: tuple[str, ...] | None = None
    engine_regex: str | None = None
    stretch_below: float | None = None
    stretch_above: float | None = None

    kind = "threshold"

    @property
    def selector(self) -> Selector:
        """The rows of the signal beyond the threshold."""
        return Selector(signal=self.signal, above=self.above, below=self.below, sources=self.signal_sources)

    def selectors(self):
        yield "match", self.selector
        for sel in self.also:
            yield "also", sel

    @property
    def sources(self):
        return self.signal_sources


def build(raw: dict[str, Any], table: dict[str, Any], seconds) -> ThresholdMatch:
    sources = table.get("sources")
    return ThresholdMatch(
        raw=raw, signal=table["signal"], above=table.get("above"), below=table.get("below"),
        samples=int(table.get("samples", 1)),
        sustained_s=seconds(table["sustained"], "match.sustained") if "sustained" in table else None,
        also=tuple(selector_from(a) for a in table.get("also", [])), rising=table.get("rising"),
        weight=table.get("weight"), weight_enough=table.get("weight_enough"),
        signal_sources=None if sources is None else tuple(sources), engine_regex=table.get("engine_regex"),
        stretch_below=table.get("stretch_below"), stretch_above=table.get("stretch_above"),
    )


def check(table: dict[str, Any]):
    if "signal" not in table:
        yield "match.signal", "missing"
    if "above" in table and "below" in table:
        yield "match", "give one of `above` or `below` (or neither: a measurement of every sample)"
    if "stretch_below" in table and "stretch_above" in table:
        yield "match", "give one of `stretch_below` or `stretch_above`"
    if ("weight" in table) != ("weight_enough" in table):
        yield "match", "give `weight` and `weight_enough` together"
    elif "weight" in table and table["weight"] not in {a.get("signal") for a in table.get("also", [])
                                                       if isinstance(a, dict)}:
        yield "match.weight", (f"{table['weight']!r} is none of the `also` signals (the weight is read from the "
                               "sample's line)")


def evaluate(m: ThresholdMatch, sources, ctx: Context) -> list[Hit]:
    found = match_threshold(m, ctx.records, ctx.signals, sources, ctx.series, cut=ctx.cut)
    return [found] if found is not None else []


def match_threshold(m: ThresholdMatch, records: pl.DataFrame, signals: pl.DataFrame, sources,
                    series: pl.DataFrame | None = None, cut=()) -> Hit | None:
    """``cut``: files whose samples past the run's budget were not kept; none of them is a short excerpt (it
    went on past its last sample kept, so neither "every sample" nor "the run it ends with" is known)."""
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
    weight_col = next((c for c, s in also_names if s == m.weight), None) if m.weight else None
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
        (pl.col(weight_col).sum() if weight_col else pl.lit(0.0)).alias("weight"),
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
    weighty = False  # the excerpt's samples, all beyond, count ``weight_enough`` events
    demanding = m.samples > 1 or m.sustained_s is not None or rising_col is not None
    weak = False
    if runs.height == 0 and demanding:
        # A short excerpt (see EXCERPT_MAX): all of its samples beyond the threshold; failing that, the run
        # it ends with (a paste ends where the trouble is; a blip it recovered from is not one).
        short = candidates.filter((pl.col("total") <= EXCERPT_MAX) & ~pl.col("file").is_in(list(cut)))
        runs = short.filter(pl.col("n") == pl.col("total"))
        if m.weight_enough is not None and runs.height:
            weighty = bool((runs["weight"] >= m.weight_enough).any())
            runs = runs.filter(pl.col("weight") >= m.weight_enough) if weighty else runs
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
    measured = m.above is None and m.below is None
    values = all_samples["value"]
    facts = {
        "value": values.median() if measured else worst["vmax"] if above else worst["vmin"],
        "median": values.median(), "min": values.min(), "max": values.max(),
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
    facts.update(_stretch(frame, group, m.stretch_below, m.stretch_above))
    span = all_samples.select(pl.col("ts").min().alias("a"), pl.col("ts").max().alias("b")).row(0)
    hits = hits.with_columns(_first=pl.lit(span[0], pl.Datetime("us")), _last=pl.lit(span[1], pl.Datetime("us")))
    overrides: dict[str, Any] = {}
    if excerpt is not None:
        facts["excerpt_samples"] = excerpt
        if weak or (excerpt < SHORT_MIN and not weighty):
            overrides["severity"] = "info"
    return Hit(hits, all_samples.height, facts, overrides)


def _stretch(frame: pl.DataFrame, group: list[str], below: float | None, above: float | None) -> dict[str, Any]:
    """The share of every sample beyond ``below``/``above`` and the longest stretch of them in a row."""
    if below is None and above is None:
        return {}
    beyond = (pl.col("value") < below) if below is not None else (pl.col("value") > above)
    f = frame.with_columns(_b=beyond.fill_null(False)).with_columns(
        _r=(pl.col("_b") != pl.col("_b").shift(1)).fill_null(True).cast(pl.Int32).cum_sum().over(group))
    facts: dict[str, Any] = {"stretch_limit": below if below is not None else above,
                             "beyond_pct": 100.0 * f["_b"].sum() / max(f.height, 1),
                             "stretch_samples": None, "stretch_duration": None, "stretch_engine": None}
    runs = f.filter(pl.col("_b")).group_by(group + ["_r"]).agg(
        n=pl.len(), a=pl.col("ts").min(), b=pl.col("ts").max(), first=pl.col("line").min())
    if runs.height:
        best = runs.sort(["n", "first"], descending=[True, False]).row(0, named=True)
        span = (best["b"] - best["a"]) if best["a"] and best["b"] else None
        facts.update(stretch_samples=best["n"], stretch_duration=_fmt_duration(span) if span else None,
                     stretch_engine=best["engine"])
    return facts


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


def _fmt_duration(d: timedelta | None) -> str | None:
    if d is None:
        return None  # unknown: the summary leaves its clause out
    s = int(d.total_seconds())
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


KIND = MatchKind("threshold", FIELDS, build, evaluate, check,
                 summary="a parsed value stays beyond a threshold")
