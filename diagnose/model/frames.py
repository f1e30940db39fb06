"""The frames every parser returns: record and signal schemas, the categories and severities.

Every parser returns two polars frames with exactly these columns (``empty_records()`` and
``empty_signals()`` give them; ``conform_*`` fills missing columns with nulls and casts):

records, one row per input line, nothing dropped
    file       str       display path of the file (archive members as ``archive.tgz!member``)
    line       u32       1-based line number in the decoded file
    source     str       kind of the file: vllm, mindie, plog, npu-smi, version-info, ..., unknown
    node       str?      node/host the file belongs to (from its path, or a Ray ``ip=`` prefix)
    ts         datetime? timestamp (microseconds, wall clock of the node; year-less stamps dated by
                         pipeline/dating.py)
    year_known bool      the timestamp carried its own year (False: dated by pipeline/dating.py)
    proc       str?      process label, e.g. ``EngineCore_DP0``, ``Worker_TP0_EP0``, ``mindie-server``
    pid        i64?      process id
    rank       i32?      distributed rank, when the line or its path says it
    device     i32?      NPU device id
    level      str?      DEBUG, INFO, WARNING, ERROR, CRITICAL
    component  str?      logger location (``core.py:123``) or module (``HCCL``)
    code       str?      error code found on the line (``EI0006``, ``MIE04E010109``, ``ERR02200``)
    message    str       the line's message (header stripped); the whole line for raw lines
    text       str       the whole line as read (colour codes and CR removed)
    parsed     bool      the header was recognised; False = kept as a raw record
    event      u32       line number of the record that opened this multi-line event (tracebacks)

signals, numbers (and a few strings) that parsers extract, one row per observation
    file, line, source, node, ts (as above)
    engine     str?      the instance the value belongs to (``Engine 000``, a process, a device)
    signal     str       name, e.g. ``kv_cache_usage_pct``; each kind documents its own (``SourceKind.signals``,
                         ``diagnose rules signals`` lists them)
    value      f64?      numeric value
    text       str?      string value (versions, config keys) for ``mismatch`` rules
"""

from __future__ import annotations

import polars as pl

SEVERITIES = ("info", "warning", "error", "critical")
SEVERITY_RANK = {name: i for i, name in enumerate(SEVERITIES)}

# The record levels (the ``level`` column) of a line that reports a failure; WARNING is not one.
ERROR_LEVELS = ("ERROR", "CRITICAL")
# The levels of a process going about its work: one after an exception says the exception did not end it.
ROUTINE_LEVELS = ("INFO", "DEBUG")

CATEGORIES = (
    "mtp",
    "quantization",
    "operators",
    "moe-load",
    "kv-cache",
    "memory",
    "communication",
    "versions",
    "device",
    "engine",
    "config",
    "performance",
)

RECORD_SCHEMA: dict[str, pl.DataType] = {
    "file": pl.String,
    "line": pl.UInt32,
    "source": pl.String,
    "node": pl.String,
    "ts": pl.Datetime("us"),
    "year_known": pl.Boolean,
    "proc": pl.String,
    "pid": pl.Int64,
    "rank": pl.Int32,
    "device": pl.Int32,
    "level": pl.String,
    "component": pl.String,
    "code": pl.String,
    "message": pl.String,
    "text": pl.String,
    "parsed": pl.Boolean,
    "event": pl.UInt32,
}

SIGNAL_SCHEMA: dict[str, pl.DataType] = {
    "file": pl.String,
    "line": pl.UInt32,
    "source": pl.String,
    "node": pl.String,
    "ts": pl.Datetime("us"),
    "engine": pl.String,
    "signal": pl.String,
    "value": pl.Float64,
    "text": pl.String,
}

def empty_records() -> pl.DataFrame:
    return pl.DataFrame(schema=RECORD_SCHEMA)


def empty_signals() -> pl.DataFrame:
    return pl.DataFrame(schema=SIGNAL_SCHEMA)


def _conform(frame: pl.DataFrame, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    exprs = []
    for name, dtype in schema.items():
        if name in frame.columns:
            exprs.append(pl.col(name).cast(dtype))
        else:
            exprs.append(pl.lit(None, dtype=dtype).alias(name))
    return frame.select(exprs)


# Columns filled from one value per file (pl.lit): they reference no chunk, and a copy per row would cost more.
_SHARED = frozenset({"file", "source"})


def compact_strings(frame: pl.DataFrame) -> pl.DataFrame:
    """Copy the string columns into buffers of their own. Polars strings are views: a few rows filtered out of
    a chunk keep the whole chunk's text alive, so kept rows would hold on to every byte read."""
    cols = [pl.concat_str([pl.col(name), pl.lit("")]).alias(name)
            for name, dtype in frame.schema.items() if dtype == pl.String and name not in _SHARED]
    return frame.with_columns(cols) if cols and frame.height else frame


def conform_records(frame: pl.DataFrame) -> pl.DataFrame:
    return _conform(frame, RECORD_SCHEMA)


def conform_signals(frame: pl.DataFrame) -> pl.DataFrame:
    return _conform(frame, SIGNAL_SCHEMA)
