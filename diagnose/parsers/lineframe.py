"""Pieces every parser uses: the lines frame, error-code and full-date extraction, event grouping."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import polars as pl
from diagnose.scan.fastregex import dfa_safe


# CSI colour/cursor sequences and OSC titles; vLLM colours level, time and the process prefix.
ANSI = r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]"

# Error codes that CANN, torch_npu, HCCL and MindIE print, most specific first.
CODE = dfa_safe(
    r"\b(MIE\d\d[EW][0-9A-Z]{6}"  # MindIE: component, sub-component, code
    r"|E[A-Z]\d{4}"  # CANN: EI0006, EJ0002, EL0001, EE1001, EZ1001, EH0001, E39999
    r"|E\d{5}"  # CANN inner errors: E39999
    r"|ERR\d{5}"  # torch_npu: ERR01100, ERR02200, ERR99999
    r")\b"
)

# A full date with its year anywhere in a line: ISO, CANN (`2025-04-08-18:07:20`), MindIE (`2025-10-29 09:52:10`).
FULL_DATE = r"(\d{4})-(\d\d)-(\d\d)[ T-](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,6})(?:\.(\d{3})\b)?)?"  # CANN: .mmm.uuu

# Year used for stamps that carry none, until timeline.py dates them. 2000 is a leap year: 02-29 survives.
PLACEHOLDER_YEAR = 2000


@dataclass(frozen=True)
class FileContext:
    path: str
    node: str | None
    kind: str
    mtime: datetime | None
    data: bytes | None = None  # the whole file as read (UTF-8), for table kinds: CSV readers take it directly


def raw_lines_frame(lines: list[str] | pl.Series, first_line: int = 1) -> pl.DataFrame:
    """Lines as read, numbered from ``first_line``."""
    series = lines if isinstance(lines, pl.Series) else pl.Series(lines, dtype=pl.String)
    frame = pl.DataFrame({"text": series.rename("text").cast(pl.String)})
    return frame.with_row_index("line", offset=first_line)


# Colour codes whose ESC a paste lost (`[0;36m(EngineCore_DP0 pid=224)[0;0m ERROR ...`): SGR parameters then `m`.
BARE_SGR = r"\[(?:[0-9]{1,3};)*[0-9]{1,3}m"


def clean_lines(frame: pl.DataFrame) -> pl.DataFrame:
    """Remove colour codes (also those that lost their ESC in a paste) and CR (vLLM colours its level and
    prefix on a terminal)."""
    if frame.height == 0:
        return frame
    col = pl.col("text")
    # Each replacement only where the chunk has what it removes: most chunks have none, and a replacement
    # rewrites every line.
    found = frame.select(esc=col.str.contains("\x1b", literal=True).any(), sgr=col.str.contains(BARE_SGR).any(),
                         cr=col.str.contains("\r", literal=True).any()).row(0, named=True)
    text = col.str.replace_all(ANSI, "") if found["esc"] else col
    if found["sgr"]:
        text = text.str.replace_all(BARE_SGR, "")
    if found["cr"]:
        text = text.str.replace_all("\r", " ")
    return frame.with_columns(text.str.strip_chars_end())


def lines_frame(lines: list[str] | pl.Series, first_line: int = 1) -> pl.DataFrame:
    """The input every parser takes: ``line`` (1-based) and ``text`` without colour codes or CR."""
    return clean_lines(raw_lines_frame(lines, first_line))


def datetime_from_parts(year, month, day, hour, minute, second, frac) -> pl.Expr:
    """Build a datetime from string-valued expressions; invalid parts give null, never an error.

    ``frac`` is the fraction-of-second digits (any width); the result has microsecond precision. The
    calendar arithmetic (days from the civil date) is plain integer expressions: no string formatting or
    parsing per line, and 02-30 or 13-01 simply come out null.
    """
    y, m, d, hh, mi, ss = (p.cast(pl.Int64, strict=False) for p in (year, month, day, hour, minute, second))
    micro = (
        pl.when(frac.is_not_null() & (frac.str.len_chars() > 0))
        .then(frac.str.slice(0, 6).str.pad_end(6, "0").cast(pl.Int64, strict=False))
        .otherwise(0)
        .fill_null(0)
    )
    leap = ((y % 4 == 0) & (y % 100 != 0)) | (y % 400 == 0)
    days_in_month = (
        pl.when(m == 2).then(pl.when(leap).then(29).otherwise(28))
        .when(m.is_in([4, 6, 9, 11])).then(30)
        .otherwise(31)
    )
    valid = (
        y.is_between(1900, 2999) & m.is_between(1, 12) & d.is_between(1, 31) & (d <= days_in_month)
        & hh.is_between(0, 23) & mi.is_between(0, 59) & ss.is_between(0, 60)
    )
    # Days since 1970-01-01 for the proleptic Gregorian date (Howard Hinnant's days_from_civil).
    yy = y - (m <= 2).cast(pl.Int64)
    era = yy.floordiv(400)
    yoe = yy - era * 400
    doy = (153 * ((m + 9) % 12) + 2).floordiv(5) + d - 1
    doe = yoe * 365 + yoe.floordiv(4) - yoe.floordiv(100) + doy
    days = era * 146097 + doe - 719468
    seconds = days * 86400 + hh * 3600 + mi * 60 + ss.clip(0, 59)
    epoch_us = seconds * 1_000_000 + micro
    return pl.when(valid).then(epoch_us).otherwise(None).cast(pl.Datetime("us"))


def full_date_expr(col: str = "text") -> pl.Expr:
    """The first full (year-carrying) date in ``col``, or null.

    The regex runs once per batch of rows and its groups are materialised before the date is built: as one
    expression, each of the dozen references to a group field re-ran the extraction (polars does not share
    it), which made dating a text of no known kind run at 20 MB/s."""
    return pl.col(col).map_batches(_full_dates, return_dtype=pl.Datetime("us"), is_elementwise=True)


_FULL_DATE_SAFE = dfa_safe(FULL_DATE)


def _full_dates(texts: pl.Series) -> pl.Series:
    groups = texts.str.extract_groups(_FULL_DATE_SAFE).struct.unnest()
    f = pl.col
    frac = pl.when(f("8").is_not_null() & (f("7").str.len_chars() == 3)).then(f("7") + f("8")).otherwise(f("7"))
    stamp = datetime_from_parts(f("1"), f("2"), f("3"), f("4"), f("5"), f("6"), frac)
    return groups.select(stamp.alias(texts.name)).to_series()


def code_expr(col: str = "message") -> pl.Expr:
    return pl.col(col).str.extract(CODE, 1)


def group_events(frame: pl.DataFrame, key_cols: list[str]) -> pl.DataFrame:
    """Give every row an ``event``: the line of the record that opened its multi-line message.

    A parsed row opens a new event unless it repeats the previous parsed row's ``key_cols`` in the same
    process (vLLM repeats the full prefix on every line of a traceback). A raw row with a process label
    joins that process's last event (tracebacks of several workers interleave); a raw row without one
    joins the event of the row above it. Continuation rows inherit time, level and process from the opener.
    """
    proc = pl.col("proc").fill_null("")
    key = (
        pl.concat_str([pl.col(c).cast(pl.String).fill_null("") for c in key_cols], separator="\x1f")
        if key_cols
        else pl.lit("")
    )
    frame = frame.with_columns(_proc=proc, _key=pl.when(pl.col("parsed")).then(key))
    prev_key = pl.col("_key").forward_fill().shift(1).over("_proc", order_by="line")
    opens = pl.col("parsed") & (prev_key.is_null() | (pl.col("_key") != prev_key))
    frame = frame.with_columns(_open=pl.when(opens).then(pl.col("line")))
    with_proc = pl.col("_open").forward_fill().over("_proc", order_by="line")
    frame = frame.with_columns(
        event=pl.when(pl.col("parsed") | (pl.col("_proc") != "")).then(with_proc).otherwise(None)
    ).with_columns(event=pl.col("event").forward_fill().fill_null(pl.col("line")))
    openers = frame.filter(pl.col("line") == pl.col("event")).select(
        pl.col("line").alias("event"),
        pl.col("ts").alias("_ts"),
        pl.col("level").alias("_level"),
        pl.col("proc").alias("_procname"),
        pl.col("pid").alias("_pid"),
        pl.col("rank").alias("_rank"),
        pl.col("year_known").alias("_yk"),
    )
    frame = frame.join(openers, on="event", how="left")
    inherit = ~pl.col("parsed")
    return frame.with_columns(
        ts=pl.when(inherit & pl.col("ts").is_null()).then(pl.col("_ts")).otherwise(pl.col("ts")),
        year_known=pl.when(inherit & pl.col("ts").is_null()).then(pl.col("_yk")).otherwise(pl.col("year_known")),
        level=pl.when(inherit & pl.col("level").is_null()).then(pl.col("_level")).otherwise(pl.col("level")),
        proc=pl.when(inherit).then(pl.col("proc").fill_null(pl.col("_procname"))).otherwise(pl.col("proc")),
        pid=pl.when(inherit).then(pl.col("pid").fill_null(pl.col("_pid"))).otherwise(pl.col("pid")),
        rank=pl.when(inherit).then(pl.col("rank").fill_null(pl.col("_rank"))).otherwise(pl.col("rank")),
    ).drop("_proc", "_key", "_open", "_ts", "_level", "_procname", "_pid", "_rank", "_yk").sort("line")
