"""JSON files read whole: ``communication*.json``, ``cluster_communication*.json`` and ``profiler_metadata*.json`` (checked
to be whole JSON; no analysis yet) and ``profiler_info*.json`` (the folder's rank)."""

from __future__ import annotations

import polars as pl

from diagnose.model import conform_records, empty_signals
from diagnose.parsers.lineframe import FileContext
from diagnose.parsers.kinds.profiling.shared import first_line, folder_key, note, rank_from_path, signal_frame, whole_json

def parse_json_file(base: str, lines: pl.DataFrame, records: pl.DataFrame, ctx: FileContext):
    data, err, _ = whole_json(lines)
    if err:
        return note(records, first_line(lines), f"profiler: {base} is {err}; its content was not analysed"), empty_signals()
    records = records.with_columns(parsed=pl.lit(True))
    return conform_records(records), empty_signals()


def parse_profiler_info(base: str, lines: pl.DataFrame, records: pl.DataFrame, ctx: FileContext):
    data, err, _ = whole_json(lines)
    rank = rank_from_path(ctx.path)
    if rank is None and isinstance(data, dict):
        for key in ("rank_id", "rank"):
            val = data.get(key)
            if val is None and isinstance(data.get("config"), dict):
                val = data["config"].get(key)
            if isinstance(val, (int, str)) and str(val).lstrip("-").isdigit() and int(val) >= 0:
                rank = int(val)
                break
    if err:
        records = note(records, first_line(lines), f"profiler: {base} is {err}")
    else:
        records = conform_records(records.with_columns(parsed=pl.lit(True), rank=pl.lit(rank, pl.Int32)))
    if rank is None:
        return records, empty_signals()
    row = dict(line=first_line(lines), engine=f"rank {rank}", signal="profiler_rank", value=float(rank), text=folder_key(ctx.path))
    return records, signal_frame([row], ctx)
