"""Text of no known kind: every line is a raw record; level, error code and full dates are picked up
where a line shows them, so generic rules (error codes, OOM messages) still see the file."""

from __future__ import annotations

import polars as pl

from diagnose.model import conform_records
from diagnose.parsers.families.cann import block_signals
from diagnose.parsers.kinds import mindie, vllm
from diagnose.parsers.lineframe import FileContext, code_expr, full_date_expr, group_events
from diagnose.parsers.kind import SourceKind
from diagnose.parsers.families.tracebacks import SIGNALS as TRACEBACK_SIGNALS
from diagnose.parsers.families.tracebacks import EXCEPTION, exception_signals

KIND = "unknown"

_LEVEL = r"(?:^|[\s\[(|])(CRITICAL|FATAL|ERROR|WARNING|WARN|INFO|DEBUG)(?:[\]):|\s]|$)"
_LEVELS = {"FATAL": "CRITICAL", "WARN": "WARNING"}


def parse(lines: pl.DataFrame, ctx: FileContext) -> tuple[pl.DataFrame, pl.DataFrame]:
    level = pl.col("text").str.slice(0, 80).str.to_uppercase().str.extract(_LEVEL, 1)
    ts = full_date_expr("text")
    frame = lines.with_columns(
        file=pl.lit(ctx.path),
        source=pl.lit(ctx.kind),
        node=pl.lit(ctx.node, pl.String),
        message=pl.col("text"),
        # An exception line is an error, whatever wrapper lost the level.
        level=pl.coalesce(level.replace(_LEVELS),
                          pl.when(pl.col("text").str.contains(EXCEPTION)).then(pl.lit("ERROR"))),
        ts=ts,
        year_known=ts.is_not_null(),
        code=code_expr("text"),
        parsed=pl.lit(False),
        proc=pl.lit(None, pl.String),
        pid=pl.lit(None, pl.Int64),
        rank=pl.lit(None, pl.Int32),
    )
    frame = group_events(frame, [])
    records = conform_records(frame)
    return records, pl.concat([block_signals(records), exception_signals(records), family_signals(records)],
                              how="vertical_relaxed")


def family_signals(records: pl.DataFrame) -> pl.DataFrame:
    """The values of vLLM and MindIE lines in a text of no known kind (a metric line pasted into a table,
    a bare excerpt without heads), under the source of the family that prints them, so rules on their
    signals see them."""
    parts = [vllm.extract_signals(records).with_columns(source=pl.lit(vllm.KIND)),
             mindie.extract_signals(records).filter(~pl.col("signal").str.starts_with("npu_oom_"))
             .with_columns(source=pl.lit(mindie.KIND))]  # the OOM numbers once
    return pl.concat(parts, how="vertical_relaxed")


SOURCE = SourceKind(
    name=KIND,
    parse=parse,
    summary="any other text: searched by the rules that match message text (error codes, OOM messages)",
    line_oriented=True,
    batchable=True,
    signals=TRACEBACK_SIGNALS,
)
