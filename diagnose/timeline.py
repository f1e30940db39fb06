"""One timeline: give year-less stamps a year, and say how sure we are.

vLLM and torch glog stamps carry no year (``MM-DD HH:MM:SS``); parsers date them in the placeholder year
and mark ``year_known = False``. Per file, in file order, a jump back of more than half a year between
consecutive stamps is a new year (``12-31`` → ``01-01``); the base year comes from the best anchor:
1. a stamp in the same file that carries its year (CANN trailers, container stamps, plog lines);
2. a date in the file's name (``vllm_ascend_20250903_140000_1234.log``, ``serve-2025-09-03.log``);
3. a year-carrying stamp elsewhere in the bundle, on the same node if possible (the latest one);
4. the file's modification time: the latest year in which the file's last stamp is not after it;
5. the current year.
Stamps are each node's wall clock; nodes with different time zones are not shifted (the logs rarely say).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

import polars as pl

from diagnose.parsers.common import PLACEHOLDER_YEAR

DATING = ("in-file", "file name", "bundle", "mtime", "assumed", "not needed")

_NAME_DATE = re.compile(r"(?<!\d)(20\d\d)[-_]?(0[1-9]|1[0-2])[-_]?(0[1-9]|[12]\d|3[01])(?!\d)")


@dataclass(frozen=True)
class FileDating:
    year_shift: int
    how: str


def date_file(
    records: pl.DataFrame, bundle_years: dict[str | None, int], mtime: datetime | None, name: str = ""
) -> tuple[pl.DataFrame, str]:
    """Return the records with year-less stamps dated, and how the year was found (one of DATING)."""
    undated = (~pl.col("year_known").fill_null(False)) & pl.col("ts").is_not_null()
    if records.filter(undated).height == 0:
        return records, "not needed"
    ordinal = pl.col("ts").dt.month().cast(pl.Int32) * 31 + pl.col("ts").dt.day().cast(pl.Int32)
    frame = records.with_columns(_ord=pl.when(undated).then(ordinal))
    # Era: how many year boundaries lie before this row, counted on the undated stamps in file order.
    prev = pl.col("_ord").forward_fill().shift(1)
    frame = frame.with_columns(_wrap=(pl.col("_ord").is_not_null() & (prev - pl.col("_ord") > 186)).cast(pl.Int32))
    frame = frame.with_columns(_era=pl.col("_wrap").fill_null(0).cum_sum())

    base, how = _base_year(frame, bundle_years, records, mtime, name)
    shift = pl.format("{}y", (pl.lit(base - PLACEHOLDER_YEAR) + pl.col("_era")).cast(pl.String))
    frame = frame.with_columns(
        ts=pl.when(pl.col("_ord").is_not_null()).then(pl.col("ts").dt.offset_by(shift)).otherwise(pl.col("ts"))
    )
    return frame.drop("_ord", "_wrap", "_era"), how


def _base_year(frame, bundle_years, records, mtime, name):
    anchors = frame.filter(pl.col("year_known").fill_null(False) & pl.col("ts").is_not_null())
    if anchors.height:
        # The year of the undated stamp nearest (in file order) to the first anchor.
        first = anchors.row(0, named=True)
        return first["ts"].year - first["_era"], "in-file"
    named = _NAME_DATE.search(name.replace("\\", "/").rsplit("/", 1)[-1])
    if named:
        # The name gives the first stamp's year (a log is named when it is opened).
        return int(named.group(1)), "file name"
    node = records["node"].drop_nulls().first() if records.height else None
    if node in bundle_years or None in bundle_years:
        year = bundle_years.get(node, bundle_years.get(None))
        return year, "bundle"
    last = frame.filter(pl.col("_ord").is_not_null()).tail(1)
    if mtime is not None and last.height:
        era = last["_era"][0]
        ts = last["ts"][0]
        year = mtime.year - era
        if _with_year(ts, mtime.year) > mtime:
            year -= 1
        return year, "mtime"
    return datetime.now().year, "assumed"


def _with_year(ts: datetime, year: int) -> datetime:
    try:
        return ts.replace(year=year)
    except ValueError:  # 02-29 in a common year
        return ts.replace(year=year, day=28)


def bundle_years(frames: list[pl.DataFrame]) -> dict[str | None, int]:
    """Latest year carried by any stamp, per node and for the whole bundle (key None)."""
    years: dict[str | None, int] = {}
    for records in frames:
        known = records.filter(pl.col("year_known").fill_null(False) & pl.col("ts").is_not_null())
        if not known.height:
            continue
        per_node = known.group_by("node").agg(pl.col("ts").max().dt.year())
        for node, year in per_node.iter_rows():
            if 1990 < year < 2100:
                years[node] = max(year, years.get(node, 0))
                years[None] = max(year, years.get(None, 0))
    return years
