"""Record dating: give year-less stamps a year, and say how sure we are.

vLLM and torch glog stamps carry no year (``MM-DD HH:MM:SS``); parsers date them in the placeholder year
and mark ``year_known = False``. Per file, in file order, a jump back of more than half a year between
consecutive stamps is a new year (``12-31`` → ``01-01``); the base year comes from the best anchor:
1. a stamp in the same file that carries its year (CANN trailers, container stamps, plog lines);
2. a date in the file's name (``vllm_ascend_20250903_140000_1234.log``, ``serve-2025-09-03.log``);
3. a year-carrying stamp elsewhere in the bundle, on the same node if possible (the latest one);
4. the file's modification time: the latest year in which the file's last stamp is not after it;
5. the current year.
All files are dated in one pass of polars expressions (``over("file")``), so a bundle of 100,000 small
files costs no more than one large one. Stamps are each node's wall clock; nodes with different time
zones are not shifted (the logs rarely say).
"""

from __future__ import annotations

import re
from datetime import datetime

import polars as pl

from diagnose.parsers.lineframe import PLACEHOLDER_YEAR

DATING = ("in-file", "file name", "bundle", "mtime", "assumed", "not needed")

_NAME_DATE = re.compile(r"(?<!\d)(20\d\d)[-_]?(0[1-9]|1[0-2])[-_]?(0[1-9]|[12]\d|3[01])(?!\d)")


def name_year(name: str) -> int | None:
    m = _NAME_DATE.search(name.replace("\\", "/").rsplit("/", 1)[-1])
    return int(m.group(1)) if m else None


def bundle_years(records: pl.DataFrame) -> dict[str | None, int]:
    """Latest year carried by any stamp, per node and for the whole bundle (key None)."""
    known = records.filter(pl.col("year_known").fill_null(False) & pl.col("ts").is_not_null())
    years: dict[str | None, int] = {}
    if not known.height:
        return years
    per_node = known.group_by("node").agg(pl.col("ts").max().dt.year())
    for node, year in per_node.iter_rows():
        if 1990 < year < 2100:
            years[node] = max(year, years.get(node, 0))
            years[None] = max(year, years.get(None, 0))
    return years


def date_records(records: pl.DataFrame, files: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, str]]:
    """Date every year-less stamp of every file.

    ``files`` has one row per file: ``file``, ``mtime`` (datetime or null). Returns the records and, per
    file that needed dating, how its year was found (one of DATING).
    """
    undated = (~pl.col("year_known").fill_null(False)) & pl.col("ts").is_not_null()
    if records.height == 0 or records.select(undated.any()).item() is not True:
        return records, {}
    years = bundle_years(records)
    ordinal = pl.col("ts").dt.month().cast(pl.Int32) * 31 + pl.col("ts").dt.day().cast(pl.Int32)
    # Rows of one file are not always in line order (lines kept for signals follow each chunk's records).
    frame = records.with_row_index("_row").with_columns(_ord=pl.when(undated).then(ordinal))
    prev = pl.col("_ord").forward_fill().shift(1).over("file", order_by="line")
    frame = frame.with_columns(_wrap=(pl.col("_ord").is_not_null() & (prev - pl.col("_ord") > 186)).cast(pl.Int32))
    frame = frame.with_columns(_era=pl.col("_wrap").fill_null(0).cum_sum().over("file", order_by="line"))

    needing = frame.filter(pl.col("_ord").is_not_null()).group_by("file").agg(
        pl.col("node").drop_nulls().first().alias("node"),
        pl.col("ts").last().alias("_last_ts"),
        pl.col("_era").last().alias("_last_era"),
    )
    anchors = frame.filter(pl.col("year_known").fill_null(False) & pl.col("ts").is_not_null()).group_by("file").agg(
        (pl.col("ts").first().dt.year() - pl.col("_era").first()).alias("_anchor"),
    )
    table = needing.join(anchors, on="file", how="left").join(files.select("file", "mtime"), on="file", how="left")
    base: dict[str, int] = {}
    how: dict[str, str] = {}
    now = datetime.now().year
    for row in table.iter_rows(named=True):
        f = row["file"]
        if row["_anchor"] is not None:
            base[f], how[f] = row["_anchor"], "in-file"
        elif (y := name_year(f)) is not None:
            # The name gives the first stamp's year (a log is named when it is opened).
            base[f], how[f] = y, "file name"
        elif row["node"] in years or None in years:
            base[f], how[f] = years.get(row["node"], years.get(None)), "bundle"
        elif row["mtime"] is not None and row["_last_ts"] is not None:
            year = row["mtime"].year - row["_last_era"]
            if _with_year(row["_last_ts"], row["mtime"].year) > row["mtime"]:
                year -= 1
            base[f], how[f] = year, "mtime"
        else:
            base[f], how[f] = now, "assumed"
    bases = pl.DataFrame({"file": list(base), "_base": list(base.values())}, schema={"file": pl.String, "_base": pl.Int64})
    frame = frame.join(bases, on="file", how="left")
    shift = pl.format("{}y", (pl.col("_base") - PLACEHOLDER_YEAR + pl.col("_era")).cast(pl.String))
    frame = frame.with_columns(
        ts=pl.when(pl.col("_ord").is_not_null() & pl.col("_base").is_not_null())
        .then(pl.col("ts").dt.offset_by(shift))
        .otherwise(pl.col("ts"))
    )
    return frame.sort("_row").drop("_row", "_ord", "_wrap", "_era", "_base"), how


def _with_year(ts: datetime, year: int) -> datetime:
    try:
        return ts.replace(year=year)
    except ValueError:  # 02-29 in a common year
        return ts.replace(year=year, day=28)


def redate(signals: pl.DataFrame, records: pl.DataFrame, files: list[str]) -> pl.DataFrame:
    """Signals share their line's time: take it from the dated records of the files that were dated.

    Only the ``ts`` column is rebuilt (a join carrying every column would copy the largest frame), a slice
    of rows at a time so the join's working memory stays small; file names are joined as categories."""
    if signals.height == 0 or not files:
        return signals
    wanted = pl.Series(files, dtype=pl.String).implode()
    dated = (
        records.filter(pl.col("file").is_in(wanted) & pl.col("ts").is_not_null())
        .select(pl.col("file").cast(pl.Categorical), "line", pl.col("ts").alias("_ts"))
        .unique(["file", "line"], keep="first")
    )
    pieces = []
    for start in range(0, signals.height, _REDATE_SLICE):
        part = signals.slice(start, _REDATE_SLICE)
        keys = part.select(pl.col("file").cast(pl.Categorical), "line", "ts")
        hit = keys.join(dated, on=["file", "line"], how="left", maintain_order="left")
        pieces.append(hit.select(pl.coalesce("_ts", "ts").alias("ts"))["ts"])
    return signals.with_columns(ts=pl.concat(pieces))


_REDATE_SLICE = 1_000_000
