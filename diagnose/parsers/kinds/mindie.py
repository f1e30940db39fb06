"""MindIE service, LLM and ATB logs, alone or mixed in one tee'd daemon stream (MindIE log reference).

Line heads recognised (one regex, alternatives by position):

* verbose C++/Python: ``[2025-10-29 09:53:45.928+08:00] [pid] [tid] [mindie-server] [ERROR] [llm_daemon.cpp:76] :
  [MIE04E010109] [daemon] message``; the stamp may end in ``+08:00``, ``+0800`` or nothing, its fraction may have
  3, 5 or 6 digits; the Python LLM logger writes ``[2025-10-29 09:53:45,123]`` and ``[file.py-NN]``;
* start-up markers ``[stamp] [pid] [tid] [mindie-server] ===init log===`` and ``[stamp] [pid] ===init log===``;
* non-verbose (``MINDIE_LOG_VERBOSE=false``): ``[stamp] : [LEVEL] [MIE…] message``;
* ATB/asdops: ``[stamp] [error] [tid] [graph_runner.cpp:762] message`` (lower-case level, one numeric id, no
  component), also without the stamp: ``[error] [1079] [file.cpp:91] message``.

Everything else (bare stdout of the daemon, Python tracebacks, ``[ERROR] TBE Subprocess…``) is kept as raw
records and joined to the event of the record above it (``group_events``), so a traceback belongs to the
``>>> Exception:`` line that opened it.

Stamps are wall-clock times of the node; the zone suffix is not applied (the record schema keeps wall clock).
Vendor bug: in ``+0800`` stamps (Python model wrapper) the "milliseconds" field repeats the day of month, so
those stamps keep whole seconds only. Every stamp carries its year (``year_known``); ATB lines without a stamp
get none.

The record ``message`` is the text after the head, so it still starts with ``[MIE…] [sub-component]`` when the
line has them; ``code`` holds the full MindIE code, ``split_code``/``code_parts_expr`` split it.
"""

from __future__ import annotations

import polars as pl

from diagnose.model import conform_records, conform_signals, empty_signals
from diagnose.parsers.families import oom
from diagnose.parsers.families.cann import HINTS as CANN_HINTS
from diagnose.parsers.families.cann import block_signals, runtime_code_expr
from diagnose.parsers.lineframe import FileContext, datetime_from_parts, full_date_expr, group_events
from diagnose.parsers.families.tracebacks import exception_signals
from diagnose.parsers.kind import Location, SourceKind

KIND = "mindie"

_STAMP = (
    r"\[?(?P<d>\d{4}-\d\d-\d\d)[ T](?P<t>\d\d:\d\d:\d\d)(?:[.,](?P<frac>\d{1,9}))?(?P<tz>[+-]\d\d:?\d\d|Z)?\]?\s+"
)
_LEVELS_UP = r"CRITICAL|FATAL|ERROR|WARN|WARNING|INFO|DEBUG|TRACE"
_LEVELS_LOW = r"critical|fatal|error|warn|warning|info|debug|trace"

HEAD_ONLY = (
    r"^(?:" + _STAMP + r")?"
    r"(?:"
    # verbose MindIE (C++ and Python): [pid] [tid] [component] [LEVEL] [file:line] :
    r"\[(?P<pid>\d+)\]\s*(?:\[(?P<tid>\d+)\]\s*)?(?:\[(?P<comp>[A-Za-z][\w.-]*)\]\s*)?"
    r"(?:\[(?P<lvl>" + _LEVELS_UP + r")\]\s*(?:\[(?P<loc>[^\]\s]+[:-]\d+)\])?(?:\s*:)?\s?|(?P<init>===init log===))"
    # ATB / asdops: [error] [tid] [file.cpp:line]
    r"|\[(?P<alvl>" + _LEVELS_LOW + r")\]\s*\[(?P<aid>\d+)\]\s*\[(?P<aloc>[^\]\s]+:\d+)\]\s?"
    # non-verbose: : [LEVEL]
    r"|:\s*\[(?P<nlvl>" + _LEVELS_UP + r")\]\s?"
    r")"
)

# MindIE error code: MIE + component (2) + E + sub-component (2) + code (4). W appears on warnings.
MIE_CODE = r"MIE[0-9A-Za-z]{2}[EW][0-9A-Za-z]{6}"
_LEADING_CODE = r"^\s*\[(" + MIE_CODE + r")\]"

# Level of a raw line that shows one (`[ERROR] TBE Subprocess…`, `ERROR: …`).
_RAW_LEVEL = r"^\s*\[?(CRITICAL|FATAL|ERROR|WARNING|WARN|INFO|DEBUG)\]?[:\s]"
_LEVEL_NAMES = {"FATAL": "CRITICAL", "WARN": "WARNING", "TRACE": "DEBUG"}

# Components and sub-components of MindIE error codes (MindIE log reference).
CODE_COMPONENTS = {
    "01": "benchmark",
    "02": "client",
    "03": "ms",
    "04": "server",
    "05": "llm",
    "06": "sd",
    "07": "rt",
    "08": "torch",
}
SERVER_SUBCOMPONENTS = {
    "01": "daemon",
    "02": "endpoint",
    "03": "config",
    "04": "tokenizer",
    "05": "gmis",
    "06": "infer_backend_manager",
    "11": "batchscheduler",
    "12": "backend_model",
    "13": "model_wrapper",
    "14": "profiler",
}


def split_code(code: str | None) -> dict[str, str] | None:
    """``MIE04E010109`` → component ``04`` (server), sub-component ``01`` (daemon), code ``0109``."""
    if not code or len(code) != 12 or not code.upper().startswith("MIE"):
        return None
    comp, sub, number = code[3:5], code[6:8], code[8:12]
    out = {
        "code": code,
        "component": comp,
        "component_name": CODE_COMPONENTS.get(comp, ""),
        "severity": "error" if code[5] in "Ee" else "warning",
        "subcomponent": sub,
        "subcomponent_name": SERVER_SUBCOMPONENTS.get(sub, "") if comp == "04" else "",
        "number": number,
    }
    return out


def code_parts_expr(col: str = "code") -> pl.Expr:
    """A struct ``code_parts`` (component, subcomponent, number) split from a MindIE code column; nulls elsewhere."""
    c = pl.col(col)
    is_mie = c.str.contains(r"^" + MIE_CODE + r"$").fill_null(False)
    return pl.struct(
        component=pl.when(is_mie).then(c.str.slice(3, 2)),
        subcomponent=pl.when(is_mie).then(c.str.slice(6, 2)),
        number=pl.when(is_mie).then(c.str.slice(8, 4)),
    ).alias("code_parts")


def parse(lines: pl.DataFrame, ctx: FileContext) -> tuple[pl.DataFrame, pl.DataFrame]:
    # Fields by capture groups; the message by cutting the head off (capturing the rest of the line, `.*$`,
    # doubles the cost of the extraction).
    frame = lines.with_columns(h=pl.col("text").str.extract_groups(HEAD_ONLY))
    f = pl.col("h").struct.field
    level_raw = pl.coalesce(f("lvl"), f("alvl").str.to_uppercase(), f("nlvl"))
    # A head needs a stamp, except the ATB form, which appears without one.
    stamped = f("d").is_not_null() & (f("lvl").is_not_null() | f("init").is_not_null() | f("nlvl").is_not_null())
    parsed = (stamped | f("alvl").is_not_null()).fill_null(False)
    # The `+0800` Python stamps hold the day of month in the fraction: keep whole seconds.
    buggy_tz = f("tz").str.contains(r"^[+-]\d{4}$").fill_null(False)
    frac = pl.when(buggy_tz).then(pl.lit(None, pl.String)).otherwise(f("frac"))
    ts = datetime_from_parts(
        f("d").str.slice(0, 4), f("d").str.slice(5, 2), f("d").str.slice(8, 2),
        f("t").str.slice(0, 2), f("t").str.slice(3, 2), f("t").str.slice(6, 2), frac,
    )
    raw_level = pl.col("text").str.slice(0, 40).str.extract(_RAW_LEVEL, 1)
    frame = frame.with_columns(
        parsed=parsed,
        message=pl.when(parsed).then(pl.coalesce(f("init"), pl.col("text").str.replace(HEAD_ONLY, "")))
        .otherwise(pl.col("text")),
        level=pl.when(parsed).then(level_raw).otherwise(raw_level).replace(_LEVEL_NAMES),
        component=pl.when(parsed).then(pl.coalesce(f("loc"), f("aloc"))),
        proc=pl.when(parsed).then(
            pl.coalesce(f("comp"), pl.when(f("alvl").is_not_null()).then(pl.lit("atb")), pl.lit("mindie"))
        ),
        pid=pl.when(parsed).then(f("pid").cast(pl.Int64, strict=False)),
        ts=pl.when(parsed).then(ts),
    )
    # Raw lines may carry a CANN stamp with its year (`[ERROR] 2025-04-08-18:07:20 (PID:…)`).
    cann = pl.col("message").str.contains(r"^\s*(?:\[(?:ERROR|WARNING|INFO)\] \d{4}-|E[A-Z0-9]\d{4}: \[PID)")
    frame = frame.with_columns(
        ts=pl.when(~pl.col("parsed") & cann).then(full_date_expr("message")).otherwise(pl.col("ts")),
    ).with_columns(
        year_known=pl.col("ts").is_not_null(),
        code=pl.coalesce(pl.col("message").str.extract(_LEADING_CODE, 1), runtime_code_expr("message")),
        device=pl.col("message").str.extract(r"\(NPU (\d+);", 1).cast(pl.Int32, strict=False),
        rank=pl.lit(None, pl.Int32),
    ).drop("h")
    # Every head opens its own event (MindIE repeats no prefix on continuation lines); raw lines join it.
    frame = group_events(frame, ["line"])
    frame = frame.with_columns(file=pl.lit(ctx.path), source=pl.lit(KIND), node=pl.lit(ctx.node, pl.String))
    records = conform_records(frame)
    signals = pl.concat([extract_signals(records), block_signals(records), exception_signals(records)],
                        how="vertical_relaxed")
    return records, signals


# --- signals -------------------------------------------------------------------------------------

# The FlashLB planner of dynamic EPLB, one INFO line per planning round (Ascend/MindIE-LLM@8b4871ad31f5
# examples/atb_models/atb_llm/models/deepseekv2/eplb/eplb_planner/policy/flash_lb.py:532-533):
# `new_par: {mean}, cur_par: {mean}, ptr_par: {mean}, change: {numpy array of layer ids}`. A par is a
# peak-to-average ratio of rank load (max over ranks / mean, replicas sharing an expert's hotness), averaged over
# the layers considered; `change` lists the layers the round rewrites (`[ 3 10 41]`, or `[]`). Numbers are numpy
# float64 as an f-string prints them (`1.2345`, `nan`, `1e-05`). The whole line must be there: a line that only
# mentions new_par adds nothing.
_FNUM = r"(nan|inf|-?[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)"
_FLASHLB = (r"(?:^|\s)new_par: " + _FNUM + r", cur_par: " + _FNUM + r", ptr_par: " + _FNUM
            + r", change: \[([0-9 ,]*)\]\s*$")
_FLASHLB_SIGNALS = ("flashlb_new_par", "flashlb_cur_par", "flashlb_ptr_par")

# (signal, regex with one group) on MindIE start-up and KV lines.
_SIGNAL_PATTERNS: list[tuple[str, str]] = [
    ("kv_blocks", r"NpuBlockNum:\s*(-?\d+)"),
    ("kv_blocks", r"num_npu_blocks:\s*(-?\d+)"),
    ("kv_blocks", r"Invalid number of NPU blocks:\s*(-?\d+)"),
    ("num_speculative_tokens", r"number of (?:sepculative|speculative) tokens is (\d+)"),  # the typo is MindIE's
]
_PREFILTER = r"NpuBlockNum:|num_npu_blocks:|number of NPU blocks|ulative tokens is|out of memory|new_par: "


def extract_signals(records: pl.DataFrame) -> pl.DataFrame:
    base = records.filter(pl.col("message").str.contains(_PREFILTER)).select(
        "file", "line", "source", "node", "ts", "proc", "pid", "message"
    )
    if base.height == 0:
        return empty_signals()
    engine = pl.coalesce(pl.format("{} pid {}", pl.col("proc"), pl.col("pid")), pl.col("proc"), pl.lit("mindie"))
    keys = [pl.col("file"), pl.col("line"), pl.col("source"), pl.col("node"), pl.col("ts"), engine.alias("engine")]
    parts = []
    for name, pattern in _SIGNAL_PATTERNS:
        value = pl.col("message").str.extract(pattern, 1).cast(pl.Float64, strict=False)
        parts.append(base.select(*keys, signal=pl.lit(name), value=value, text=pl.lit(None, pl.String)))
    mtp = pl.when(pl.col("message").str.contains(r"Init MtpWorker")).then(pl.lit("mtp"))
    parts.append(base.select(*keys, signal=pl.lit("speculative_method"), value=pl.lit(None, pl.Float64), text=mtp))
    for i, name in enumerate(_FLASHLB_SIGNALS, 1):
        value = pl.col("message").str.extract(_FLASHLB, i).cast(pl.Float64, strict=False)
        parts.append(base.select(*keys, signal=pl.lit(name), value=value, text=pl.lit(None, pl.String)))
    changed = pl.col("message").str.extract(_FLASHLB, 4)
    ids = changed.str.extract_all(r"[0-9]+")
    parts.append(base.select(*keys, signal=pl.lit("flashlb_layers_changed"),
                             value=pl.when(changed.is_not_null()).then(ids.list.len().cast(pl.Float64)),
                             text=pl.when(changed.is_not_null()).then(ids.list.join(","))))
    frame = pl.concat(parts, how="vertical_relaxed")
    frame = frame.filter(pl.col("value").is_not_null() & ~pl.col("value").is_nan() | pl.col("text").is_not_null())
    frame = pl.concat([conform_signals(frame), oom.oom_signals(records)], how="vertical_relaxed")
    return conform_signals(frame.sort("line", maintain_order=True))


SOURCE = SourceKind(
    name=KIND,
    parse=parse,
    summary="MindIE server, LLM and ATB logs, alone or as one tee'd daemon stream with CANN lines",
    file_name=r"(?i)^mindie|mindie-?service|mindieservice",
    name_trust=1,
    line_heads=(HEAD_ONLY,),
    # MindIE codes, a stamped [pid] head without a level, and the daemon's own stdout (a tee'd mixed stream)
    sniff=r"\[MIE[0-9A-Z]{2}[EW][0-9A-Z]{6}\]|^Daemon (?:start success|is killing)"
    r"|^\[\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:[+-]\d\d:?\d\d)?\] \[\d+\]",
    hints=_PREFILTER + "|" + CANN_HINTS + "|out of memory",
    line_oriented=True,
    batchable=True,
    signals={"kv_blocks": "KV cache blocks (MindIE `NpuBlockNum`, `num_npu_blocks`)",
             "num_speculative_tokens": "speculative tokens per step configured (`number of sepculative tokens is N`)",
             "speculative_method": "`mtp` when MindIE starts an MtpWorker (text)",
             "flashlb_new_par": "MindIE dynamic EPLB (FlashLB): mean over layers of the rank peak-to-average ratio the "
             "new placement would give (`new_par:`)",
             "flashlb_cur_par": "MindIE FlashLB: the same ratio of the current placement (`cur_par:`)",
             "flashlb_ptr_par": "MindIE FlashLB: the same ratio after re-pointing replicas only (`ptr_par:`)",
             "flashlb_layers_changed": "MindIE FlashLB: layers the planning round rewrites (`change:`; text: their ids)"},
    # MindIE run logs (MINDIE_LOG_PATH, possibly per component as `llm:/path;...`, else ~/mindie/log) and the
    # ATB operator logs (MindIE-LLM logging_configuration.md; FaultDiag's collection guide).
    locations=(Location(roots=("$MINDIE_LOG_PATH", "~/mindie/log"), patterns=("debug/*.log", "*.log"),
                        source="Ascend/MindIE-LLM docs/zh/user_guide/user_manual/logging_configuration.md"),
               Location(roots=("~/atb/log",), patterns=("*.log", "*/*.log"), source="FaultDiag collection guide")),
    sniff_rank=20,
)
