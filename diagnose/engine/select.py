"""Selectors: the rows of the records or signals frame that one condition of a rule picks.

A selector is a small table in a rule: ``regex`` (+ ``not_regex``, ``field``, ``level``) picks log records;
``signal`` (+ ``above``, ``below``, ``text_regex``) picks parsed values. Both give the same columns, so
match kinds can treat them alike: file, line, node, ts, rank, event, value, vtext, engine.
"""

from __future__ import annotations

import polars as pl

from diagnose.series import signal_rows

HIT_COLUMNS = ["file", "line", "source", "node", "ts", "rank", "event", "engine", "value", "vtext"]


def _sources_filter(frame: pl.DataFrame, sources: list[str] | None) -> pl.DataFrame:
    if sources:
        return frame.filter(pl.col("source").is_in(sources))
    return frame


def select(sel: dict, records: pl.DataFrame, signals: pl.DataFrame, sources: list[str] | None,
           series: pl.DataFrame | None = None) -> pl.DataFrame:
    sources = sel.get("sources", sources)
    if "signal" in sel:
        return select_signal(sel, signals, sources, series)
    return select_records(sel, records, sources)


def record_condition(sel: dict) -> pl.Expr:
    """The records a ``regex`` selector picks (its sources aside)."""
    col = pl.col(sel.get("field", "message"))
    cond = col.str.contains(sel["regex"])
    if "not_regex" in sel:
        cond = cond & ~col.str.contains(sel["not_regex"])
    level = sel.get("level")
    if level:
        levels = [level] if isinstance(level, str) else list(level)
        cond = cond & pl.col("level").is_in(levels)
    return cond


def select_records(sel: dict, records: pl.DataFrame, sources: list[str] | None) -> pl.DataFrame:
    return _sources_filter(records, sources).filter(record_condition(sel)).select(
        "file",
        "line",
        "source",
        "node",
        "ts",
        "rank",
        "event",
        pl.col("proc").alias("engine"),
        pl.lit(None, pl.Float64).alias("value"),
        pl.col(sel.get("field", "message")).alias("vtext"),
    )


def signal_condition(sel: dict) -> pl.Expr:
    cond = pl.lit(True)
    if "above" in sel:
        cond = cond & (pl.col("value") > sel["above"])
    if "below" in sel:
        cond = cond & (pl.col("value") < sel["below"])
    if "text_regex" in sel:
        cond = cond & pl.col("text").fill_null("").str.contains(sel["text_regex"])
    if "not_regex" in sel:  # on a signal: its text must not match (e.g. exclude distilled model names)
        cond = cond & ~pl.col("text").fill_null("").str.contains(sel["not_regex"])
    return cond


def select_signal(sel: dict, signals: pl.DataFrame, sources: list[str] | None,
                  series: pl.DataFrame | None = None) -> pl.DataFrame:
    """Rows of one signal passing the selector's conditions; periodic metrics come from ``series`` (every
    sample; diagnose/series.py) when given."""
    frame = _sources_filter(signal_rows(sel["signal"], signals, series), sources)
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
