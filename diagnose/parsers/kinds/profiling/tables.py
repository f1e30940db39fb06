"""CSV tables read by header name: the aliases of each column across CANN versions and tools, and the read itself
(only the columns the analyses use, each row with the line it came from)."""

from __future__ import annotations

import csv
import re

import polars as pl

ALIASES: dict[str, tuple[str, ...]] = {
    "device": ("deviceid",),
    "step": ("stepid", "step"),
    "name": ("name", "opname"),
    "type": ("type", "optype"),
    "core": ("acceleratorcore", "tasktype", "accelerator", "coretype"),
    "start": ("starttimeus", "taskstarttimeus"),
    "dur": ("durationus", "taskdurationus"),
    "block": ("blocknum", "blockdim"),
    "in_shapes": ("inputshapes",),
    "in_dtypes": ("inputdatatypes",),
    "out_dtypes": ("outputdatatypes",),
    # op_statistic
    "count": ("count",),
    "total": ("totaltimeus",),
    "ratio": ("ratio%", "ratio"),
    # step trace
    "computing": ("computing",),
    "comm_no": ("communicationnotoverlapped",),
    "free": ("free",),
    "rowtype": ("type",),
    "index": ("index",),
}


def guess_csv(cols: dict[str, str]) -> str | None:
    if "dur" in cols and ("name" in cols or "type" in cols):
        return "kernels"
    if "computing" in cols and "free" in cols:
        return "cluster_step" if "index" in cols else "step"
    if "total" in cols and "core" in cols:
        return "opstat"
    return None


def norm_header(header: str) -> str:
    return re.sub(r"[\s_()\"'\t]", "", header).lower()


def read_csv(lines: pl.DataFrame, data: bytes | None = None) -> tuple[pl.DataFrame, dict[str, str]] | None:
    """Read the CSV with polars; every row keeps the line number it came from (``line``). ``data`` is the
    file's bytes when the reader kept them: read directly when the header is line 1 and no line is blank."""
    # lines_frame strips line ends: blank lines are "". A table has none (filtered, its 100,000 rows are copied).
    blank = lines.select((pl.col("text") == "").any()).item()
    body = lines.filter(pl.col("text") != "") if blank else lines
    if body.height == 0:
        return None
    try:
        header = next(csv.reader([body["text"][0]]))
    except (csv.Error, StopIteration):
        return None
    if len(header) < 2:
        return None
    cols: dict[str, str] = {}
    normed = {norm_header(c): c for c in reversed(header)}
    for ours, aliases in ALIASES.items():
        for alias in aliases:
            if alias in normed:
                cols[ours] = normed[alias]
                break
    # Only the columns we use are parsed (kernel files carry ~50 PMU columns): the read is several times faster.
    wanted = [c for c in dict.fromkeys(cols.values()) if header.count(c) == 1]
    if not wanted:  # a table we do not analyse (api_statistic, ...): records only
        return body.head(0).select("line"), {}
    whole = data is not None and body.height == lines.height and int(body["line"][0]) == 1
    if not whole:
        data = body.select(pl.col("text").str.join("\n").cast(pl.Binary)).item()  # bytes: no Python str round trip
    try:
        frame = pl.read_csv(data, infer_schema=False, truncate_ragged_lines=True, raise_if_empty=False,
                            columns=wanted or None)
    except Exception:  # noqa: BLE001 - any CSV error means: not a CSV we can read
        return None
    if frame.width < 1:
        return None
    line_nos = body["line"].slice(1)
    if frame.height == line_nos.len():
        frame = frame.with_columns(line=line_nos)
    else:  # a quoted cell spanned lines: number rows from the header (evidence lines may then drift)
        first = int(body["line"][0])
        frame = frame.with_columns(line=pl.int_range(first + 1, first + 1 + frame.height, dtype=pl.UInt32))
    return frame, {k: v for k, v in cols.items() if v in frame.columns}
