"""Preflight facts (``diagnose preflight`` writes them; see diagnose.preflight.checks).

One fact per line: ``key = value`` with an optional ``  # note`` (the arithmetic behind the value).
Every fact line is a parsed record (``component`` = key, ``message`` = the whole line so a rule's regex sees
the note too) and a signal named after the key: numeric values in ``value``, anything else in ``text``.
Lines starting with ``#`` are comments; other lines are kept as raw records.
"""

from __future__ import annotations

import polars as pl

from diagnose.model import conform_records, conform_signals
from diagnose.parsers.common import FileContext

KIND = "preflight"

FACT = r"^(?P<key>[a-z][a-z0-9_]*) = (?P<val>.*?)(?:  # (?P<note>.*))?$"


def parse(lines: pl.DataFrame, ctx: FileContext) -> tuple[pl.DataFrame, pl.DataFrame]:
    g = pl.col("text").str.extract_groups(FACT).struct.field
    frame = lines.with_columns(
        _key=g("key"),
        _val=g("val").str.strip_chars(),
    ).with_columns(
        file=pl.lit(ctx.path),
        source=pl.lit(KIND),
        node=pl.lit(ctx.node, pl.String),
        parsed=pl.col("_key").is_not_null() | pl.col("text").str.starts_with("#"),
        component=pl.col("_key"),
        message=pl.col("text"),
        level=pl.when(pl.col("_key") == "input_problem").then(pl.lit("ERROR")).otherwise(None),
        year_known=pl.lit(False),
        event=pl.col("line"),
    )
    records = conform_records(frame)
    lowered = pl.col("_val").str.to_lowercase()
    number = (
        pl.when(lowered == "true").then(pl.lit("1")).when(lowered == "false").then(pl.lit("0")).otherwise(pl.col("_val"))
        .str.replace_all(",", "")
        .cast(pl.Float64, strict=False)
    )
    signals = frame.filter(pl.col("_key").is_not_null()).select(
        "file",
        "line",
        "source",
        "node",
        pl.lit(None, pl.Datetime("us")).alias("ts"),
        pl.lit("preflight").alias("engine"),
        pl.col("_key").alias("signal"),
        number.alias("value"),
        pl.when(number.is_null()).then(pl.col("_val")).otherwise(None).alias("text"),
    )
    return records, conform_signals(signals)
