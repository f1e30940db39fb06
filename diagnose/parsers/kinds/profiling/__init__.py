"""Ascend profiler output (torch_npu ``*_ascend_pt/ASCEND_PROFILER_OUTPUT/``, msprof ``PROF_*``, msprof-analyze
cluster output): CSV and JSON read by header name into the records and signals frames.

Files, by name (the sniffer already calls them ``profiler``):
    kernel_details*.csv, op_summary*.csv   one row per kernel launch
    op_statistic*.csv                       one row per op type and core type
    step_trace_time*.csv                    per step (and Device_id): Computing, Communication(Not Overlapped), Free
    cluster_step_trace_time*.csv            the same per rank (msprof-analyze cluster output)
    trace_view*.json                        Chrome trace: a bare array or ``{"traceEvents": [...]}``, in one line
                                            (gigabytes), one event per line or pretty-printed; read block by block
    communication*.json, profiler_metadata*.json   read to check they are whole JSON; no analysis yet
    profiler_info*.json                     the folder's rank (``profiler_info_<rank>.json`` or ``rank_id``)

Drift handled (reference part A): ``Task Type``/``Accelerator Core``/``Accelerator``, ``Block Dim``/``Block Num``,
``Op Name``/``Name``, ``Start Time(us)`` quoted with a trailing TAB, shape cells with literal quotes, ``N/A`` in
numeric columns, ``DT_`` dtype prefixes, ``Communication (Not Overlapped)`` with a space. A kernel file without the
dtype/shape columns (captured with ``aic_metrics=AiCoreNone``) gets a record on its header line that names the
checks that could not run; nothing is guessed. A truncated JSON file gets a record saying so; the events before
the cut are still analysed.

Records: a kernel table is numbers, not messages, so (like the pipeline's retention filter for logs) its ordinary
rows are analysed and counted but not kept as records: kept are the header, every line that is not a data row,
the notable rows with a readable message, e.g.
``AI_CPU operator trans_Cast_5 (Cast) 197.54 us, INT32->UINT64 (AI CPU 7.4% of device time ...)`` or
``unquantized matmul ... in a quantized deployment``, and every row a signal points at (evidence). Small tables
(step traces, op_statistic) keep all rows. Messages that start ``profiler:`` say what could not be read or checked.
MC2 fused communication kernels on the AI CPU (``...Aicpu`` suffix, MoeDistributeDispatch/Combine, MatmulAllReduce
...) are never counted as fallbacks. Signals carry the analyses (``aicpu_time_share_pct``,
``quant_matmul_coverage_pct``, ``straggler_ratio``, ``moe_rank_imbalance`` ...); their ``text`` holds the readable
detail that rules quote, their ``line`` the CSV row that is the best evidence, their ``engine`` the rank
(``rank 3``; from the folder name ``...rank3...``/``profiler_info_3.json``, else ``device N`` from Device_id).

Modules, by table family: ``tables`` (CSV read by header name), ``kernels``, ``opstat``, ``steps``, ``jsonfiles``
(communication/metadata/profiler_info), ``tracejson`` (the trace's events from a binary stream, bounded memory) and
``trace`` (its analysis), ``cross`` (across files); ``common`` holds what they share. This module dispatches by
file name.

Two entries: :func:`parse` takes the lines (and bytes) the reader read, as every parser does; :func:`parse_stream`
takes a binary stream of a file that :func:`streamed` names (``trace_view*.json``), so that a reader can hand over
a gigabyte trace open instead of reading it whole. Both give the same signals.

Analyses that need several files (ranks in separate folders, the rank from a sibling ``profiler_info_<r>.json``)
run in :func:`cross_file_signals`, which the pipeline calls once on all signals after parsing. Within one file
everything that file allows is computed there (msprof ``op_summary`` with several Device_ids, the cluster step
trace): rule fixtures are single files.

Choices: the slow rank is the rank whose own time per step (Computing + Free) is longest; the others then wait for
it in Communication(Not Overlapped). ``straggler_ratio`` compares it with the median of the other ranks.
Quantized-operator coverage is computed only when the kernels themselves show quantization (INT8/INT4/FP8 inputs,
DynamicQuant/QuantBatchMatmul kernels); a quantization declared only in a log is not joined with kernel dtypes
here. Layers are named by their weight shape (second input), kernel tables carry no layer names.
"""

from __future__ import annotations

from typing import BinaryIO

import polars as pl

from diagnose.model import empty_signals
from diagnose.parsers.lineframe import FileContext
from diagnose.parsers.kind import SourceKind
from diagnose.parsers.kinds.profiling.shared import (
    KIND, MAX_LIST, base_name, first_line, folder_key, note, rank_from_path, raw_records,
)
from diagnose.parsers.kinds.profiling.cross import cross_file_signals
from diagnose.parsers.kinds.profiling.jsonfiles import parse_json_file, parse_profiler_info
from diagnose.parsers.kinds.profiling.kernels import moe_imbalance, parse_kernels
from diagnose.parsers.kinds.profiling.opstat import parse_op_statistic
from diagnose.parsers.kinds.profiling.steps import parse_step_trace, per_rank_step, straggler
from diagnose.parsers.kinds.profiling.tables import guess_csv, read_csv
from diagnose.parsers.kinds.profiling.trace import parse_trace_stream, parse_trace_view

__all__ = [
    "KIND", "MAX_LIST", "cross_file_signals", "file_type", "folder_key", "moe_imbalance", "parse", "parse_stream",
    "per_rank_step", "rank_from_path", "straggler", "streamed",
]

# --- entry point ---------------------------------------------------------------------------------


def parse(lines: pl.DataFrame, ctx: FileContext) -> tuple[pl.DataFrame, pl.DataFrame]:
    base = base_name(ctx.path)
    what = file_type(base)
    if what == "trace":  # records only for what it reports: its one line may be gigabytes
        return parse_trace_view(lines, ctx)
    if what == "json" or (what is None and base.endswith(".json")):
        return parse_json_file(base, lines, raw_records(lines, ctx), ctx)
    if what == "info":
        return parse_profiler_info(base, lines, raw_records(lines, ctx), ctx)
    table = read_csv(lines, ctx.data)
    if table is None:
        why = "profiler: could not read this file as CSV; its lines are kept as raw records"
        return note(raw_records(lines, ctx), first_line(lines), why), empty_signals()
    frame, cols = table
    what = what or guess_csv(cols)
    if what == "kernels":  # records only of the rows it keeps: a rank's table is 100,000 rows
        return parse_kernels(frame, cols, lines, ctx)
    records = raw_records(lines, ctx)
    if what == "opstat":
        return parse_op_statistic(frame, cols, records, ctx)
    if what in ("step", "cluster_step"):
        return parse_step_trace(frame, cols, records, ctx, cluster=what == "cluster_step")
    return records, empty_signals()


def streamed(path: str) -> bool:
    """Files that ``parse_stream`` reads from a binary stream in bounded memory (``trace_view*.json``): a reader
    hands these over open instead of reading them whole."""
    return file_type(base_name(path)) == "trace"


def parse_stream(stream: BinaryIO, ctx: FileContext, info=None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(records, signals) of a ``streamed`` file read from ``stream`` (binary, at its start), never held whole.
    ``info`` (optional, e.g. the reader's TextInfo) gets ``bytes``, ``lines`` and ``encoding`` set."""
    if not streamed(ctx.path):
        raise ValueError(f"not a file read as a stream: {ctx.path}")
    return parse_trace_stream(stream, ctx, info)


def _folder_of(path: str, kinds: tuple[str, ...]) -> str | None:
    """The path up to the file's name when the file (or its ``.gz``) is of one of these types."""
    base = base_name(path)
    if file_type(base[:-3] if base.lower().endswith(".gz") else base) not in kinds:
        return None
    return path[: len(path) - len(base)]


def kernel_table_folder(path: str) -> str | None:
    """The folder of a rank's kernel table (``kernel_details``, ``op_summary``, ``op_statistic``), else None."""
    return _folder_of(path, ("kernels", "opstat"))


def trace_folder(path: str) -> str | None:
    """The folder of a rank's ``trace_view*.json``, else None. What diagnose reads from a trace (the AI CPU
    launches and their share of device time) its rank's kernel table gives as well, with dtypes: a trace
    beside a table read earlier (a sorted walk lists ``kernel_details.csv`` first) adds nothing and costs
    most of a rank's reading time (0.22 of 0.27 s for a 30 MB trace; real traces reach gigabytes)."""
    return _folder_of(path, ("trace",))


def file_type(base: str) -> str | None:
    b = base.lower()
    for prefix, what in (
        ("cluster_step_trace_time", "cluster_step"),
        ("step_trace_time", "step"),
        ("kernel_details", "kernels"),
        ("op_summary", "kernels"),
        ("op_statistic", "opstat"),
        ("trace_view", "trace"),
        ("profiler_info", "info"),
        ("cluster_communication", "json"),
        ("communication", "json"),
        ("profiler_metadata", "json"),
    ):
        if b.startswith(prefix):
            return what
    return None


# `engine` is the rank (`rank 3`) or `device N`.
SIGNALS: dict[str, str] = {
    "aicpu_time_share_pct": "share of device kernel time on the AI CPU (fallbacks; MC2 `Aicpu` kernels excluded); text: the ops",
    "aicpu_time_us": "device time of AI CPU fallback kernels, us; text: the ops",
    "device_time_us": "device kernel time in a kernel_details/op_summary file (communication rows excluded), us",
    "matmul_time_us": "time of matmul-class kernels (MatMul*, BatchMatMul*, GroupedMatmul*, QuantBatchMatmul*), us",
    "quant_matmul_time_us": "time of matmul-class kernels with INT8/INT4/FP8 inputs, us",
    "quant_matmul_coverage_pct": "share of matmul time with quantized inputs, when the kernels show quantization; text: the BF16/FP16 matmuls",
    "fp8_kernels": "1 when kernels take FP8 inputs",
    "gmm_time_us": "GroupedMatmul (MoE expert) kernel time of one rank, us",
    "gmm_tokens": "sum of GroupedMatmul token dimension (first dimension of the first input) of one rank",
    "moe_dispatch_combine_us": "MoeDistributeDispatch/Combine time of one rank (includes waiting for peers), us",
    "moe_rank_imbalance": "max/mean of per-rank GroupedMatmul time; engine: the busiest rank; text: per-rank detail",
    "computing_us": "step trace Computing, us (per step, or per rank in the cluster trace)",
    "comm_not_overlapped_us": "step trace Communication(Not Overlapped), us",
    "free_us": "step trace Free (device idle), us",
    "straggler_ratio": "own time (computing + free) of the slowest rank / median of the other ranks; engine: the slow rank; text: who waits",
    "slow_rank": "number of the slow rank (text: its label)",
    "profiler_rank": "rank of a profiler folder (profiler_info_<rank>.json); text: the folder",
}


def _bundle_pass(signals: pl.DataFrame, series: pl.DataFrame | None) -> pl.DataFrame:
    return cross_file_signals(signals)


SOURCE = SourceKind(
    name=KIND,
    parse=parse,
    summary="torch_npu `*_ascend_pt/ASCEND_PROFILER_OUTPUT/` tables and JSON, msprof `PROF_*`, msprof-analyze output",
    file_name=r"(?i)^(?:kernel_details|op_statistic|op_summary|step_trace_time|cluster_step_trace_time|communication|"
    r"cluster_communication|trace_view|profiler_info|profiler_metadata|api_statistic)[\w.-]*\.(?:csv|json)$",
    name_decides=True,
    name_trust=5,
    signals=SIGNALS,
    bundle_pass=_bundle_pass,
    streams=streamed,
    parse_stream=parse_stream,
    sniff_rank=80,
)
