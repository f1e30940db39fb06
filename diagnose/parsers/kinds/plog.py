"""CANN plog and device logs (the application log format of the CANN log reference).

Files: ``plog-<pid>_<YYYYMMDDhhmmssmmm>.log`` (host, one per process) and ``device-<pid>_<ts>.log`` (device side,
under ``device-<id>/``; a ``device-<id>_<ts>.log`` outside such a folder is a device's slog and the number is the
device id). Line format::

    [LEVEL] MODULE(PID,PNAME):YYYY-MM-DD-HH:MM:SS.mmm.uuu [file.cc:line]<rest>

PNAME may be empty. Where the thread id sits in ``<rest>`` differs by module: `` [tid]`` (HCCL), ``[tid]``
glued (HCCL init paths), ``tid `` glued (RUNTIME, GE), ``tid:N,`` (HCCP), ``(tid:N)`` (ATRACE, PROFILING),
``[tid:N]`` (TDT). The tid is stripped from the message; the module goes to ``component``, the PNAME (if
any) to ``proc``. Stamps carry
their year: these lines are the anchors that date year-less vLLM lines. Rank comes from ``RankID:``,
``userRank[..]``/``localRank[..]`` or the ``Entry-HcclCommInitRootInfo ... rank[..]`` line and is given to the
whole file (one process is one rank); the device likewise from the folder, ``device_id=``, ``Device:``.
Lines without the header (pasted stderr, ``[...]`` cut marks, continuation text) are raw records.
"""

from __future__ import annotations

import re

import polars as pl

from diagnose.scan.fastregex import dfa_safe
from diagnose.model import conform_records
from diagnose.parsers.families.cann import HINTS as CANN_HINTS
from diagnose.parsers.families.cann import block_signals, runtime_code_expr
from diagnose.parsers.families.tracebacks import exception_signals
from diagnose.parsers.lineframe import FileContext, datetime_from_parts, full_date_expr, group_events
from diagnose.parsers.kind import Location, SourceKind
from diagnose.model.memberpath import segments

KIND = "plog"

HEAD_ONLY = (
    r"^(?P<head>\[(?P<level>ERROR|WARNING|WARN|INFO|DEBUG|EVENT|TRACE)\]\s+(?P<module>[A-Z][A-Z0-9_]*)\((?P<pid>\d+),(?P<pname>[^)]*)\):"
    r"(?P<y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d)-(?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)(?:\.(?P<ms>\d{1,3})(?:\.(?P<us>\d{1,3}))?)?"
    r"\s*\[(?P<loc>[^\]]+?:\d+)\])"
)

# The thread id, by module style; the message is what follows it (the id itself is not kept).
_TID = r"^(?: ?\[\d+\]|\d+ |tid:\d+,|\s*>*\s*\(tid:\d+\)|\[[A-Za-z]+\]\[tid:\d+\]| ?\[tid:\d+\])?\s*"

_LEVELS = {"WARN": "WARNING", "EVENT": "INFO", "TRACE": "DEBUG"}

_RANK = dfa_safe(
    r"RankID:\s*(\d+)|\buserRank\[(\d+)\]|\blocalRank\[(\d+)\]|\buser_rank[=:]\s*(\d+)|"
    r"Entry-HcclCommInitRootInfo\w*:.*?\brank\[(\d+)\]"
)

_DEVICE = dfa_safe(r"\(PID:\d+, Device:(\d+)|\bdevice_id=(\d+)|\bdeviceLogicId\[(\d+)\]|\bdevice\[(\d+)\]|\bdev[Ii]d\[(\d+)\]")

_FILE_PID = r"(?:^|/)(?:plog|device)-(\d+)_\d+\.log(?:\.gz)?$"
_DEVICE_DIR = r"(?:^|/)device-(\d+)/[^/]*$"
_SLOG_DEVICE = r"(?:^|/)device-(\d+)_\d+\.log(?:\.gz)?$"


def _first_group(col: str, pattern: str, n: int) -> pl.Expr:
    groups = pl.col(col).str.extract_groups(pattern).struct
    return pl.coalesce([groups.field(str(i)) for i in range(1, n + 1)]).cast(pl.Int32, strict=False)


def file_ids(path: str) -> tuple[int | None, int | None]:
    """(pid, device) from a plog/device log path (one string: Python's re, not a polars query per file)."""
    path = "/".join(segments(path))
    dev_dir, num = re.search(_DEVICE_DIR, path), re.search(_FILE_PID, path)
    dev_dir, num = (dev_dir.group(1) if dev_dir else None), (num.group(1) if num else None)
    is_device_file = re.search(_SLOG_DEVICE, path) is not None
    pid = int(num) if num is not None else None
    device = int(dev_dir) if dev_dir is not None else None
    if is_device_file and dev_dir is None:  # /var/log/npu/slog/device-3_<ts>.log: the number is the device
        device, pid = pid, None
    elif is_device_file and dev_dir is not None and num == dev_dir:
        pid = None
    return pid, device


def parse(lines: pl.DataFrame, ctx: FileContext) -> tuple[pl.DataFrame, pl.DataFrame]:
    f = pl.col("h").struct.field
    # The head's fields by capture groups, the message by cutting the head (its length) and the thread id off: a
    # capture of the rest of the line (`(?P<rest>.*)$`) doubles the cost of the extraction, the parser's largest.
    frame = lines.with_columns(h=pl.col("text").str.extract_groups(HEAD_ONLY))
    parsed = f("level").is_not_null()
    frame = frame.with_columns(
        _msg=pl.when(parsed).then(pl.col("text").str.slice(f("head").str.len_chars()).str.replace(_TID, "")))
    # The date anywhere in the line, for lines the head did not parse: evaluated on those rows only.
    full = pl.when(~parsed).then(pl.col("text")).otherwise(None)
    frame = frame.with_columns(_raw_text=full).with_columns(_full=full_date_expr("_raw_text")).with_columns(
        parsed=parsed,
        level=f("level").replace(_LEVELS),
        component=f("module"),
        proc=pl.when(f("pname").str.len_chars() > 0).then(f("pname")).otherwise(None),
        pid=f("pid").cast(pl.Int64, strict=False),
        message=pl.when(parsed).then(pl.col("_msg").fill_null("")).otherwise(pl.col("text")),
        ts=pl.when(parsed)
        .then(
            datetime_from_parts(
                f("y"), f("mo"), f("d"), f("h"), f("mi"), f("s"),
                pl.concat_str([f("ms").fill_null("").str.pad_start(3, "0"), f("us").fill_null("").str.pad_start(3, "0")]),
            )
        )
        .otherwise(pl.col("_full")),
    ).drop("_raw_text", "_full", "_msg")
    frame = frame.with_columns(
        year_known=pl.col("ts").is_not_null(),
        # Raw lines (pasted stderr inside a plog excerpt): level from a CANN code or `[ERROR]`.
        level=pl.when(parsed)
        .then(pl.col("level"))
        .when(pl.col("text").str.contains(r"^\s*(?:\w+Error: )?(?:E[A-Z]\d{4}|ERR\d{5})|^\s*\[ERROR\]|Traceback"))
        .then(pl.lit("ERROR")),
        code=runtime_code_expr("message"),
        _rank=_first_group("message", _RANK, 5),
        _dev=_first_group("message", _DEVICE, 5),
    )
    pid, device = file_ids(ctx.path)
    # One process is one rank and (almost always) one device: spread what any line says over the file.
    file_rank = frame["_rank"].drop_nulls()
    file_dev = frame["_dev"].drop_nulls()
    rank = file_rank.mode().sort()[0] if file_rank.len() else None
    dev = device if device is not None else (file_dev.mode().sort()[0] if file_dev.len() else None)
    frame = frame.with_columns(
        rank=pl.coalesce(pl.col("_rank"), pl.lit(rank, pl.Int32)),
        device=pl.coalesce(pl.col("_dev"), pl.lit(dev, pl.Int32)),
        pid=pl.coalesce(pl.col("pid"), pl.lit(pid, pl.Int64)),
    )
    frame = group_events(frame, ["level", "component", "ts"]).with_columns(
        file=pl.lit(ctx.path),
        source=pl.lit(KIND),
        node=pl.lit(ctx.node, pl.String),
        # group_events gives raw lines their opener's rank; a file-level rank applies to all.
        rank=pl.coalesce(pl.col("rank"), pl.lit(rank, pl.Int32)),
    )
    records = conform_records(frame)
    # CANN's embedded Python (TBE, CANN-KB) quotes its exceptions in plog records: `"ModuleNotFoundError: ...`
    return records, pl.concat([block_signals(records), exception_signals(records)], how="vertical_relaxed")


SOURCE = SourceKind(
    name=KIND,
    parse=parse,
    summary="CANN plog and device logs (`plog-<pid>_<ts>.log`, `device-<id>_<ts>.log`), HCCL link tables",
    file_name=r"^(?:plog|device)-\d+_\d+\.log$",
    name_trust=4,
    line_heads=(HEAD_ONLY,),
    # The rank and device of the process are read from these lines (one process is one rank): the rare
    # communicator-init lines always, the ones HCCL and the runtime repeat on most lines as context.
    hints=CANN_HINTS + r"|HcclCommInitRootInfo|RankID|userRank|user_rank",
    context_hints=r"localRank|device_id|deviceLogicId|device\[|dev[Ii]d\[",
    line_oriented=True,
    sniff_rank=40,
    # CANN application logs: ASCEND_PROCESS_LOG_PATH wins over ASCEND_WORK_PATH (logs under its log/), which
    # wins over $HOME/ascend/log (CANN environment variable reference; MindCluster FaultDiag's collection guide).
    locations=(Location(roots=("$ASCEND_PROCESS_LOG_PATH", "$ASCEND_WORK_PATH/log", "~/ascend/log"),
                        patterns=("debug/plog/plog-*.log", "run/plog/plog-*.log", "debug/device-*/device-*.log",
                                  "run/device-*/device-*.log"),
                        source="CANN envref ASCEND_PROCESS_LOG_PATH; mind-cluster docs/en/faultdiag/user_guide/"
                               "03_collecting_logs.md"),),
)
