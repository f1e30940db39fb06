"""vLLM and vllm-ascend server logs (every line variant of vLLM 0.7 to current).

Head of a logger line, in order: an optional container/collector stamp (``2025-10-15T00:04:48.7Z``,
``2026-05-01 18:27:06.747 |``), an optional docker-compose service (``vllm-1  |``), process prefixes,
possibly nested (``(EngineCore_DP0 pid=1) (Worker_TP0_EP0 pid=2)``, Ray ``ip=``), a torch ``[rank0]:``
prefix, then ``LEVEL MM-DD HH:MM:SS[.mmm] [file:line]`` (``file:line]`` before 0.8) and the message.
Lines without that head are kept as raw records and joined to the event (traceback) they continue.
"""

from __future__ import annotations

import re

import polars as pl

from diagnose.scan.fastregex import dfa_safe
from diagnose.model import conform_records
from diagnose.parsers.families.cann import HINTS as CANN_HINTS
from diagnose.parsers.families.cann import block_signals
from diagnose.parsers.families.tracebacks import EXCEPTION, exception_signals
from diagnose.parsers.lineframe import (
    PLACEHOLDER_YEAR,
    FileContext,
    code_expr,
    datetime_from_parts,
    full_date_expr,
    group_events,
)
from diagnose.parsers.kind import Location, Panel, SourceKind, head_only
from diagnose.parsers.kinds.vllm_signals import (  # noqa: F401 - the signal extraction, re-exported for its users
    _PREFILTER, KIND, PERIODIC_SIGNALS, SIGNALS, derived_signals, extract_signals,
)


# The logger's own part of the head: level, stamp and location. Pastes glue prose or other wrappers in front
# of it, so sniffing looks for this part anywhere in a line.
LOGGER = (
    r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+"
    r"(?P<mo>\d\d)-(?P<dd>\d\d)\s+(?P<hh>\d\d):(?P<mi>\d\d):(?P<ss>\d\d)(?:\.(?P<frac>\d{1,6}))?\s+"
    r"\[?(?P<loc>[^\]\s]+:\d+)\]"
)
HEAD = (
    r"^(?:(?P<iso>\d{4}-\d\d-\d\d)[T ]\d\d:\d\d:\d\d(?:\.\d+)?Z?\s+(?:\|\s+)?)?"
    r"(?:[\w.-]+\s+\|\s+)?"
    r"(?P<procs>(?:\([^()]*\)\s*)*)"
    r"(?:\[rank(?P<rankpfx>\d+)\]:\s*)?"
    + LOGGER + r"\s?(?P<msg>.*)$"
)
# HEAD without the message: captures stop after the location, so the engine never walks the message with
# capture slots (several times faster on the periodic lines); the message is the rest of the line.
HEAD_ONLY = r"^(?P<head>" + HEAD[1:HEAD.index("(?P<msg>")] + ")"

# uvicorn access and lifecycle lines: `(APIServer pid=7) INFO:     10.0.0.1:5 - "POST /v1/..." 200 OK` (no time).
UVICORN_HEAD = r"^(?:\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?Z?\s+(?:\|\s+)?)?(?:[\w.-]+\s+\|\s+)?(?P<procs>(?:\([^()]*\)\s*)*)(?P<level>INFO|WARNING|ERROR|CRITICAL|DEBUG):\s{2,}"
UVICORN = UVICORN_HEAD + r"(?P<msg>.*)$"

# Lines with a process prefix (or torch rank prefix) but no logger head: raw stderr of that process.
RAW_PREFIX = (
    r"^(?:\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?Z?\s+(?:\|\s+)?)?(?:[\w.-]+\s+\|\s+)?"
    r"(?P<procs>(?:\([^()]*\)\s*)+)?(?:\[rank(?P<rankpfx>\d+)\]:\s*)?(?P<msg>.*)$"
)

# A vLLM process prefix at the start of a line (after a container stamp or service name): `(EngineCore_DP0 pid=9)`.
PROC_PREFIX = (r"^(?:\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?Z?\s+(?:\|\s+)?)?(?:[\w.-]+\s+\|\s+)?"
               r"\([A-Za-z][\w-]*(?: rank=\d+| TP\d+)? pid=\d+(?:, ip=[\d.]+)?\) ")

# The innermost process prefix names the process that wrote the line.
PROC = r".*\((?P<name>[A-Za-z][\w-]*)(?:\s+(?:rank=(?P<prank>\d+)|TP(?P<ptp>\d+)))?\s+pid=(?P<pid>\d+)(?:,\s*ip=(?P<ip>[\d.]+))?\)\s*$"

REPEATED = r"\s*\[repeated \d+x across cluster\]\s*$"

# Lines that say a server or engine process ended on purpose or died (SourceKind.stops).
STOPS = (r"[Ss]hutting down|[Ss]hutdown complete|Finished server process|EngineDeadError|Engine core .{0,40}died"
         r"|[Pp]rocess .{0,40}(?:exited|died)|[Rr]eceived signal|SIGTERM|KeyboardInterrupt")


def parse(lines: pl.DataFrame, ctx: FileContext) -> tuple[pl.DataFrame, pl.DataFrame]:
    head = pl.col("text").str.extract_groups(HEAD_ONLY)
    frame = lines.with_columns(h=head)
    f = pl.col("h").struct.field
    logger_line = f("level").is_not_null()
    # The uvicorn and raw-prefix patterns run only on the few lines without a logger head.
    frame = frame.with_columns(_logger=logger_line)
    rest = frame.filter(~pl.col("_logger"))
    nulls = {"u": pl.lit(None, _struct_of(UVICORN)), "r": pl.lit(None, _struct_of(RAW_PREFIX))}
    frame = pl.concat([
        frame.filter(pl.col("_logger")).with_columns(**nulls),
        rest.with_columns(u=pl.col("text").str.extract_groups(UVICORN), r=pl.col("text").str.extract_groups(RAW_PREFIX)),
    ], how="vertical").sort("line")
    u, raw = pl.col("u").struct.field, pl.col("r").struct.field
    logger_line = pl.col("_logger")
    msg_start = f("head").str.len_chars()
    uvicorn = ~logger_line & u("level").is_not_null()
    parsed = logger_line | uvicorn
    procs = pl.when(logger_line).then(f("procs")).when(uvicorn).then(u("procs")).otherwise(raw("procs"))
    frame = frame.with_columns(
        parsed=parsed,
        _uvicorn=uvicorn,
        _procs=procs,
        _rankpfx=pl.when(logger_line).then(f("rankpfx")).otherwise(raw("rankpfx")),
        message=pl.when(logger_line)
        .then(pl.col("text").str.slice(msg_start))
        .when(uvicorn)
        .then(u("msg"))
        .otherwise(raw("msg")),
        level=pl.coalesce(f("level"), u("level")),
        component=f("loc"),
        ts=datetime_from_parts(
            pl.coalesce(f("iso").str.slice(0, 4), pl.lit(str(PLACEHOLDER_YEAR))),
            f("mo"),
            f("dd"),
            f("hh"),
            f("mi"),
            f("ss"),
            f("frac"),
        ),
        _iso_month=f("iso").str.slice(5, 2).cast(pl.Int32, strict=False),
        _month=f("mo").cast(pl.Int32, strict=False),
    )
    if frame.select(pl.col("message").str.contains("across cluster]", literal=True).any()).item():
        frame = frame.with_columns(pl.col("message").str.replace(REPEATED, ""))  # Ray's de-duplication note
    # A chunk has a handful of distinct process prefixes: read each once, not once per line.
    p = pl.col("_p").struct.field
    procs = frame.select("_procs").unique().with_columns(
        _p=pl.col("_procs").str.extract_groups(PROC),
        _ep=pl.col("_procs").str.extract(dfa_safe(r"(?:_|\b)EP(\d+)\b"), 1),
        _tp=pl.col("_procs").str.extract(dfa_safe(r"(?:_|\b)TP(\d+)"), 1),
    )
    frame = frame.join(procs, on="_procs", how="left", nulls_equal=True, maintain_order="left").with_columns(
        proc=pl.coalesce(p("name"), pl.format("rank{}", pl.col("_rankpfx"))),
        pid=p("pid").cast(pl.Int64, strict=False),
        node=p("ip"),
        # Worker_DP1_TP5_EP13: with expert parallelism the EP index is the rank across the DP x TP world
        # (what plogs and HCCL call the rank); the TP index repeats in every DP group.
        rank=pl.coalesce(pl.col("_rankpfx"), p("prank"), pl.col("_ep"), p("ptp"), pl.col("_tp")).cast(pl.Int32, strict=False),
    ).drop("_p", "_ep", "_tp")
    # A container stamp gives the year; it is UTC and the vLLM stamp local, so fix up a new-year crossing.
    frame = frame.with_columns(
        ts=pl.when(pl.col("_iso_month").is_not_null() & (pl.col("_iso_month") == 1) & (pl.col("_month") == 12))
        .then(pl.col("ts").dt.offset_by("-1y"))
        .when(pl.col("_iso_month").is_not_null() & (pl.col("_iso_month") == 12) & (pl.col("_month") == 1))
        .then(pl.col("ts").dt.offset_by("1y"))
        .otherwise(pl.col("ts")),
        year_known=pl.col("_iso_month").is_not_null() & pl.col("ts").is_not_null(),
    )
    # CANN/torch_npu trailers (`[ERROR] 2025-04-08-18:07:20 (PID:..)`, `EI0006: [PID: n] 2025-...`) carry a year.
    full = full_date_expr("message")
    cann = pl.col("message").str.contains(r"^\s*(?:\[(?:ERROR|WARNING|INFO)\] \d{4}-|E[A-Z0-9]\d{4}: \[PID)")
    frame = frame.with_columns(_cann=pl.col("ts").is_null() & cann)
    if frame["_cann"].any():  # rare: skip the full-date extraction on every other chunk
        frame = frame.with_columns(
            ts=pl.when(pl.col("_cann")).then(full).otherwise(pl.col("ts")),
            year_known=pl.when(pl.col("_cann")).then(full.is_not_null()).otherwise(pl.col("year_known")),
        )
    frame = frame.drop("h", "u", "r", "_logger", "_cann").with_columns(
        code=code_expr("message"),
        device=pl.col("message").str.extract(r"\(PID:\d+, Device:(\d+)", 1).cast(pl.Int32, strict=False),
    )
    frame = group_events(frame, ["level", "ts", "component"])
    # The exception line of a traceback a process printed to its stderr (`(EngineCore_DP0 pid=2198) ValueError:
    # ...`: vLLM's process prefix, no level of its own) is an error, as in a text of no known kind, even where it
    # joined the process's last INFO record: vLLM's formatter repeats its head on every line of a record it logs
    # (vllm/logger.py, NewLineFormatter), so a line without one is not part of it (an uncaught exception after the
    # process's start-up lines).
    quiet = pl.col("level").fill_null("INFO").is_in(["DEBUG", "INFO"])
    frame = frame.with_columns(level=pl.when(~pl.col("parsed") & quiet & pl.col("message").str.contains(EXCEPTION))
                               .then(pl.lit("ERROR")).otherwise(pl.col("level")))
    # uvicorn lines carry no time: they happened at (or just after) the line above them.
    frame = frame.with_columns(
        ts=pl.when(pl.col("_uvicorn")).then(pl.col("ts").forward_fill()).otherwise(pl.col("ts")),
        # ... and their year is known when that line's was (a container stamp in front of the uvicorn line made
        # its own `year_known` false, not null: forward-filled, its borrowed time was dated a second time)
        year_known=pl.when(pl.col("_uvicorn")).then(None).otherwise(pl.col("year_known"))
        .forward_fill()
        .fill_null(False),
    )
    frame = frame.with_columns(
        file=pl.lit(ctx.path), source=pl.lit(KIND), node=pl.coalesce(pl.col("node"), pl.lit(ctx.node, pl.String))
    )
    records = conform_records(frame)
    signals = pl.concat([extract_signals(records), block_signals(records), exception_signals(records)],
                        how="vertical_relaxed")
    return records, signals


def _struct_of(pattern: str) -> pl.Struct:
    return pl.Struct({name: pl.String for name in re.findall(r"\(\?P<(\w+)>", pattern)})


def _bundle_pass(signals: pl.DataFrame, series: pl.DataFrame | None) -> pl.DataFrame:
    return pl.concat([signals, derived_signals(signals, series)], how="vertical_relaxed")


SOURCE = SourceKind(
    name=KIND,
    parse=parse,
    summary="vLLM / vllm-ascend server logs of every era, with process prefixes, tracebacks and CANN blocks",
    file_name=r"(?i)vllm|serve|server|api_server|engine",
    line_heads=(HEAD_ONLY, UVICORN_HEAD),
    # the logger part anywhere in a line; torch's per-rank stderr prefix (tracebacks, CANN error blocks); a
    # process prefix without a logger head (a pasted traceback of a worker)
    sniff=head_only(LOGGER) + r"|^\[rank\d+\]:|" + PROC_PREFIX,
    hints=_PREFILTER + "|" + CANN_HINTS + "|out of memory|" + STOPS,
    line_oriented=True,
    batchable=True,
    periodic=PERIODIC_SIGNALS,
    stops=STOPS,
    signals=SIGNALS,
    bundle_pass=_bundle_pass,
    panels=(
        Panel("KV cache usage", "%", ("kv_cache_usage_pct",)),
        Panel("Requests running / waiting", "requests", ("running_reqs", "waiting_reqs", "swapped_reqs")),
        Panel("Speculative decoding acceptance", "%", ("spec_acceptance_pct",)),
        Panel("Mean acceptance length", "tokens", ("spec_mean_acceptance_len",)),
        Panel("Throughput", "tokens/s", ("prompt_throughput", "gen_throughput")),
    ),
    sniff_rank=10,
    # vllm-ascend's file log (one per process, rotated by size to ..._002.log); the console is wherever the
    # launch redirected it (diagnose collect finds the launch command). Override: additional_config
    # ascend_log_path, read from the launch command by collect.
    locations=(Location(roots=("~/ascend/log/vllm_ascend",), patterns=("vllm_ascend_*.log",),
                        source="vllm-project/vllm-ascend vllm_ascend/logger.py"),),
)
