"""Periodic metric signals, stored compactly apart from the signals frame.

A vLLM server prints a throughput line and a speculative-decoding line per engine every logging interval:
about a dozen signal rows per line, most of a long log's signals. As ordinary signal rows they cost about
1.3 KB per metric line (0.8 GB of memory per GB of log). Instead, each chunk's periodic rows go to

- the *series*: every periodic row, with categorical names and no constant columns (36 bytes a row). Rules
  read periodic metrics from it (``signal_rows``: threshold runs, absence counts, ``also`` conditions), and
  so do derived signals (parsers/kinds/vllm_signals.py) and the html curves;
- the signals frame, only for the lines a finding may quote (``kept_lines``): lines where a threshold rule's
  conditions all hold (its evidence), and the first lines of each engine and signal in a chunk (the first
  evidence of an absence rule). Those lines keep their text in memory; any other quoted line is read back
  from its file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import polars as pl

from diagnose.model import SIGNAL_SCHEMA

# Source kind -> the signals it prints every interval (``SourceKind.periodic``; the pipeline passes the
# registry's). The series frame says itself which source its rows come from, so readers need no spec.
Periodic = Mapping[str, frozenset[str]]

SERIES_SCHEMA: dict[str, pl.DataType] = {
    "source": pl.Categorical,
    "file": pl.Categorical,
    "line": pl.UInt32,
    "node": pl.Categorical,
    "ts": pl.Datetime("us"),
    "engine": pl.Categorical,
    "signal": pl.Categorical,
    "value": pl.Float64,
}
FIRST_LINES = 3  # per engine and signal in each chunk


@dataclass(frozen=True)
class Condition:
    """One threshold rule on a periodic signal: its own condition and its ``also`` conditions (same line)."""

    signal: str
    expr: pl.Expr
    also: tuple[tuple[str, pl.Expr], ...] = ()


def periodic_rows(periodic: Periodic) -> pl.Expr:
    """The signal rows that belong in the series."""
    cond = pl.lit(False)
    for source, names in sorted(periodic.items()):
        cond = cond | (pl.col("signal").is_in(sorted(names)) & (pl.col("source") == source))
    return cond


def empty_series() -> pl.DataFrame:
    return pl.DataFrame(schema=SERIES_SCHEMA)


def split(signals: pl.DataFrame, conds: list[Condition], spec: Periodic) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(signals rules scan: all non-periodic rows and the periodic rows of kept lines, the chunk's series)."""
    periodic = periodic_rows(spec)
    rows = signals.filter(periodic)
    if rows.height == 0:
        return signals, empty_series()
    keep = kept_lines(rows, conds)
    rules_see = signals.filter(~periodic | pl.col("line").is_in(keep.implode()))
    return rules_see, to_series(rows)


def cap(signals: pl.DataFrame, spec: Periodic, left: int) -> tuple[pl.DataFrame, int, int]:
    """(one file's ``signals`` without the periodic rows past the first ``left`` of them, periodic rows kept,
    periodic rows dropped).

    The cut falls between lines: a line keeps all its samples or none (rules and derived signals read a line's
    values together: ``also`` conditions, a DP round). Only periodic rows are dropped; every other signal stays.
    The caller keeps nothing after a cut (``left`` becomes 0): the samples kept are a prefix of the file, never
    a run with a hole in it."""
    periodic = periodic_rows(spec)
    per_line = signals.lazy().filter(periodic).group_by("file", "line").agg(n=pl.len()) \
        .sort("file", "line").with_columns(upto=pl.col("n").cum_sum()).collect()
    total = int(per_line["n"].sum() or 0)
    if total <= left:
        return signals, total, 0
    taken = int(per_line.filter(pl.col("upto") <= left)["n"].sum() or 0)
    first_cut = per_line.filter(pl.col("upto") > left).group_by("file").agg(pl.col("line").min().alias("_cut"))
    out = signals.join(first_cut, on="file", how="left", maintain_order="left") \
        .filter(~periodic | pl.col("_cut").is_null() | (pl.col("line") < pl.col("_cut"))).drop("_cut")
    return out, taken, total - taken


def trim(series: pl.DataFrame, left: int) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """(the series' first lines that hold at most ``left`` rows, in the series' order; the (file, line) of the
    lines left out with their rows ``n``, or None when all fit). Cut between lines, as ``cap``."""
    if series.height <= left:
        return series, None
    lines = series.select("file", "line").with_row_index("_i").group_by("file", "line") \
        .agg(_first=pl.col("_i").min(), n=pl.len()).sort("_first").with_columns(_upto=pl.col("n").cum_sum())
    keep = lines.filter(pl.col("_upto") <= left).select("file", "line")
    kept = series.join(keep, on=["file", "line"], how="semi", maintain_order="left")
    return kept, lines.filter(pl.col("_upto") > left).select("file", "line", "n")


def kept_lines(rows: pl.DataFrame, conds: list[Condition]) -> pl.Series:
    # One lazy query: a chunk pays one collect, not a few per rule.
    lazy = rows.lazy()
    found = [lazy.group_by("file", "engine", "signal", maintain_order=True).head(FIRST_LINES).select("line")]
    for cond in conds:
        base = lazy.filter(pl.col("signal") == cond.signal).select("file", "line", "engine", ok=cond.expr)
        for i, (name, expr) in enumerate(cond.also):
            other = lazy.filter((pl.col("signal") == name) & expr).select("file", "line", "engine").unique()
            base = base.join(other.with_columns(**{f"_a{i}": pl.lit(True)}), on=["file", "line", "engine"],
                             how="left", nulls_equal=True)
            base = base.with_columns(ok=pl.col("ok") & pl.col(f"_a{i}").fill_null(False))
        found.append(base.filter(pl.col("ok")).select("line"))
    return pl.concat(found).unique().collect()["line"]


def to_series(rows: pl.DataFrame) -> pl.DataFrame:
    return rows.select(pl.col(name).cast(dtype) for name, dtype in SERIES_SCHEMA.items())


def to_signals(series: pl.DataFrame | None) -> pl.DataFrame:
    """The series as ordinary signal rows (string columns): for a consumer that needs them all at once."""
    if series is None or series.height == 0:
        return pl.DataFrame(schema=SIGNAL_SCHEMA)
    return series.select(
        pl.col("file").cast(pl.String), "line", pl.col("source").cast(pl.String), pl.col("node").cast(pl.String),
        "ts", pl.col("engine").cast(pl.String), pl.col("signal").cast(pl.String), "value",
        pl.lit(None, pl.String).alias("text"),
    )


def compact(signals: pl.DataFrame) -> pl.DataFrame:
    """Ordinary signal rows in the series' form (to sit beside the series)."""
    return to_series(signals)


def _in_series(series: pl.DataFrame) -> pl.DataFrame:
    """The (source, signal) pairs the series holds: every row of those pairs is in the series."""
    return series.select(pl.col("source").cast(pl.String), pl.col("signal").cast(pl.String)).unique()


def with_series(signals: pl.DataFrame | None, series: pl.DataFrame | None,
                names: list[str] | None = None) -> pl.DataFrame | None:
    """Signals with their periodic rows replaced by the whole series (when there is one); with ``names``, only
    the rows of those signals (the series' rows become strings only once chosen: as strings a row of the
    series takes three times its compact size)."""
    if names is not None:
        if signals is not None:
            signals = signals.filter(pl.col("signal").is_in(names))
        if series is not None and series.height:
            series = series.filter(pl.col("signal").is_in(names))
    if series is None or series.height == 0:
        return signals
    if signals is None:
        return to_signals(series)
    rest = signals.join(_in_series(series), on=["source", "signal"], how="anti")
    return pl.concat([rest, to_signals(series)], how="vertical_relaxed")


def timed_counts(signals: pl.DataFrame | None, series: pl.DataFrame | None) -> dict[str, int]:
    """Signal -> its dated finite values in ``with_series(signals, series)``, counted on the compact form."""
    usable = pl.col("ts").is_not_null() & pl.col("value").is_not_null() & pl.col("value").is_finite()
    counts: dict[str, int] = {}
    rest = signals
    if series is not None and series.height:
        found = series.lazy().filter(usable).group_by("signal").len().collect()
        counts.update(zip(found["signal"].cast(pl.String).to_list(), found["len"].to_list()))
        if signals is not None:
            rest = signals.join(_in_series(series), on=["source", "signal"], how="anti")
    if rest is not None and rest.height:
        found = rest.filter(usable).group_by("signal").len()
        for name, n in zip(found["signal"].to_list(), found["len"].to_list()):
            counts[name] = counts.get(name, 0) + n
    return counts


def signal_rows(name: str, signals: pl.DataFrame, series: pl.DataFrame | None) -> pl.DataFrame:
    """Every row of signal ``name``: for a periodic metric, all its samples from the series (rules that count
    or average samples see them all), else the signals frame's rows."""
    rows = _rows_named(signals, name)
    if series is None or series.height == 0:
        return rows
    samples = _rows_named(series, name)
    if samples.height == 0:
        return rows
    sources = samples["source"].cast(pl.String).unique().to_list()
    return pl.concat([rows.filter(~pl.col("source").is_in(sources)), to_signals(samples)], how="vertical_relaxed")


_NAMED: list[tuple[pl.DataFrame, dict[str, pl.Series]]] = []  # the last frames indexed (a run's signals, series)


def _rows_named(frame: pl.DataFrame, name: str) -> pl.DataFrame:
    """``frame.filter(signal == name)`` from an index of each name's rows, built once per frame: the rules
    ask for one signal at a time, some fifty times a run, of frames of hundreds of thousands of rows."""
    if frame.height < 10_000:
        return frame.filter(pl.col("signal") == name)
    for indexed, rows in _NAMED:
        if indexed is frame:
            break
    else:
        groups = frame.select(pl.col("signal").cast(pl.String)).with_row_index("_i").group_by("signal").agg("_i")
        rows = dict(zip(groups["signal"].to_list(), groups["_i"]))
        _NAMED.insert(0, (frame, rows))
        del _NAMED[4:]
    found = rows.get(name)
    return frame[found.sort()] if found is not None else frame.clear()
