"""Selectors (engine/match.py): the rows of the records or signals frame that one condition of a rule picks.

``regex`` (+ ``not_regex``, ``field``, ``level``) picks log records; ``signal`` (+ ``above``, ``below``,
``text_regex``) picks parsed values. Both give the same columns, so match kinds can treat them alike:
file, line, node, ts, rank, event, value, vtext, engine.
"""

from __future__ import annotations

import polars as pl

from diagnose.engine.match import Selector
from diagnose.model.series import signal_rows
from diagnose.scan.fastregex import relaxed

HIT_COLUMNS = ["file", "line", "source", "node", "ts", "rank", "event", "engine", "value", "vtext"]


def _sources_filter(frame: pl.DataFrame, sources: list[str] | None) -> pl.DataFrame:
    if sources:
        return frame.filter(pl.col("source").is_in(sources))
    return frame


def select(sel: Selector, records: pl.DataFrame, signals: pl.DataFrame, sources,
           series: pl.DataFrame | None = None) -> pl.DataFrame:
    sources = sel.sources_for(sources)
    if sel.signal is not None:
        return select_signal(sel, signals, sources, series)
    return select_records(sel, records, sources)


def record_condition(sel: Selector) -> pl.Expr:
    """The records a ``regex`` selector picks (its sources aside)."""
    col = pl.col(sel.field)
    cond = col.str.contains(sel.regex)
    if sel.not_regex is not None:
        cond = cond & ~col.str.contains(sel.not_regex)
    if sel.level:
        cond = cond & pl.col("level").is_in(list(sel.level))
    return cond


def select_records(sel: Selector, records: pl.DataFrame, sources) -> pl.DataFrame:
    frame = _sources_filter(records, sources)
    loose = relaxed(sel.regex) if sel.regex is not None else None
    if loose is not None and loose != sel.regex:
        # A large counted repetition (`.{1,5000}`) leaves the regex engine's fast path: the same pattern with
        # open repetitions matches every record the exact one does (and more), at full speed, so the exact one
        # runs only on the few records it keeps (scan/fastregex.py ``relaxed``).
        frame = frame.filter(pl.col(sel.field).str.contains(loose))
    return frame.filter(record_condition(sel)).select(
        "file",
        "line",
        "source",
        "node",
        "ts",
        "rank",
        "event",
        pl.col("proc").alias("engine"),
        pl.lit(None, pl.Float64).alias("value"),
        pl.col(sel.field).alias("vtext"),
    )


def signal_condition(sel: Selector) -> pl.Expr:
    cond = pl.lit(True)
    if sel.above is not None:
        cond = cond & (pl.col("value") > sel.above)
    if sel.below is not None:
        cond = cond & (pl.col("value") < sel.below)
    if sel.text_regex is not None:
        cond = cond & pl.col("text").fill_null("").str.contains(sel.text_regex)
    if sel.not_regex is not None:  # on a signal: its text must not match (e.g. exclude distilled model names)
        cond = cond & ~pl.col("text").fill_null("").str.contains(sel.not_regex)
    return cond


def select_signal(sel: Selector, signals: pl.DataFrame, sources,
                  series: pl.DataFrame | None = None) -> pl.DataFrame:
    """Rows of one signal passing the selector's conditions; periodic metrics come from ``series`` (every
    sample; diagnose/model/series.py) when given."""
    frame = _sources_filter(signal_rows(sel.signal, signals, series), sources)
    return frame.filter(signal_condition(sel)).select(
        "file",
        "line",
        "source",
        "node",
        "ts",
        pl.lit(None, pl.Int32).alias("rank"),
        pl.col("line").alias("event"),
        "engine",
        "value",
        pl.col("text").alias("vtext"),
    )
