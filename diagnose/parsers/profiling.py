"""Ascend profiler output (torch_npu ``*_ascend_pt/ASCEND_PROFILER_OUTPUT/``, msprof ``PROF_*``, msprof-analyze
cluster output): CSV and JSON read by header name into the records and signals frames.

Files, by name (the sniffer already calls them ``profiler``):
    kernel_details*.csv, op_summary*.csv   one row per kernel launch
    op_statistic*.csv                       one row per op type and core type
    step_trace_time*.csv                    per step (and Device_id): Computing, Communication(Not Overlapped), Free
    cluster_step_trace_time*.csv            the same per rank (msprof-analyze cluster output)
    trace_view*.json                        Chrome trace (bare array, one event per line or all in one line)
    communication*.json, profiler_metadata*.json   read to check they are whole JSON; no analysis yet
    profiler_info*.json                     the folder's rank (``profiler_info_<rank>.json`` or ``rank_id``)

Drift handled (column names across CANN 7/8 and torch_npu releases): ``Task Type``/``Accelerator Core``/``Accelerator``, ``Block Dim``/``Block Num``,
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

import csv
import json
import re

import polars as pl

from diagnose.model import conform_records, conform_signals, empty_signals
from diagnose.parsers.common import FileContext
from diagnose.parsers.kind import SourceKind

KIND = "profiler"

# Normalised header (lower case, no spaces/underscores/brackets) -> our column. First alias present wins.
_ALIASES: dict[str, tuple[str, ...]] = {
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

_QUANT = r"(?:^|;)(?:INT8|INT4|FLOAT8\w*|FP8\w*|HIFLOAT8|F8E4M3\w*|F8E5M2\w*)(?:;|$)"
_FP8 = r"(?:^|;)(?:FLOAT8\w*|FP8\w*|HIFLOAT8|F8E4M3\w*|F8E5M2\w*)(?:;|$)"
_HALF = r"(?:^|;)(?:BF16|BFLOAT16|FLOAT16|FP16|HALF)(?:;|$)"
_MATMUL = r"(?i)^(?:WeightQuant|Quant|Transpose)?(?:BatchMatMul|MatMul|GroupedMatmul)"
_QUANT_OPS = r"(?i)^(?:DynamicQuant|QuantBatchMatmul|WeightQuantBatchMatmul|GroupedMatmulSwigluQuant|DequantSwigluQuant|AscendQuant)"
_GMM = r"(?i)^GroupedMatmul"
_DISPATCH = r"(?i)^MoeDistribute(?:Dispatch|Combine)"
# MC2 fused communication kernels run on the AI CPU of the comm stream and carry an `Aicpu` suffix: no fallback.
_MC2 = (
    r"Aicpu$|(?i)^(?:MoeDistribute(?:Dispatch|Combine)|MatmulAllReduce|AllGatherMatmul|MatmulReduceScatter"
    r"|MatmulAllToAll|AlltoAllAllGather|BatchMatMulReduceScatter|DispatchFFNCombine|Mc2)"
)
_COMM_CORE = r"(?i)^(?:HCCL|COMMUNICATION)$"
_EPOCH_US = (1.4e15, 2.3e15)  # 2014..2042: start times that are wall-clock microseconds

MAX_LIST = 6


# --- entry point ---------------------------------------------------------------------------------


def parse(lines: pl.DataFrame, ctx: FileContext) -> tuple[pl.DataFrame, pl.DataFrame]:
    base = _base(ctx.path)
    records = _raw_records(lines, ctx)
    what = file_type(base)
    if what == "json" or (what is None and base.endswith(".json")):
        return _json_file(base, lines, records, ctx)
    if what == "trace":
        return _trace_view(lines, records, ctx)
    if what == "info":
        return _profiler_info(base, lines, records, ctx)
    table = _read_csv(lines, ctx.data)
    if table is None:
        note = "profiler: could not read this file as CSV; its lines are kept as raw records"
        return _note(records, _first_line(lines), note), empty_signals()
    frame, cols = table
    what = what or _guess_csv(cols)
    if what == "kernels":
        return _kernels(frame, cols, records, ctx)
    if what == "opstat":
        return _op_statistic(frame, cols, records, ctx)
    if what in ("step", "cluster_step"):
        return _step_trace(frame, cols, records, ctx, cluster=what == "cluster_step")
    return records, empty_signals()


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


def _guess_csv(cols: dict[str, str]) -> str | None:
    if "dur" in cols and ("name" in cols or "type" in cols):
        return "kernels"
    if "computing" in cols and "free" in cols:
        return "cluster_step" if "index" in cols else "step"
    if "total" in cols and "core" in cols:
        return "opstat"
    return None


def _base(path: str) -> str:
    return path.replace("\\", "/").replace("!", "/").rsplit("/", 1)[-1]


# --- rank and folder ------------------------------------------------------------------------------

_RANK_IN_PATH = re.compile(r"(?:^|[/_.-])rank[_-]?(\d+)(?=[/_.-]|$)", re.IGNORECASE)


def folder_key(path: str) -> str:
    """The profiler folder a file belongs to: the ``*_ascend_pt``/``PROF_*`` folder, else the file's folder."""
    parts = path.replace("\\", "/").split("/")[:-1]
    for i in range(len(parts) - 1, -1, -1):
        if parts[i].endswith(("_ascend_pt", "_ascend_ms")) or parts[i].startswith("PROF_"):
            return "/".join(parts[: i + 1])
    if parts and parts[-1] in ("ASCEND_PROFILER_OUTPUT", "mindstudio_profiler_output"):
        parts = parts[:-1]
    return "/".join(parts)


def rank_from_path(path: str) -> int | None:
    key = folder_key(path).rsplit("/", 1)[-1]
    m = _RANK_IN_PATH.search(key) or re.search(r"profiler_info_(\d+)\.json$", path)
    return int(m.group(1)) if m else None


def _engine_expr(ctx: FileContext, cols: dict[str, str]) -> pl.Expr:
    rank = rank_from_path(ctx.path)
    if rank is not None:
        return pl.lit(f"rank {rank}")
    label = "profile " + (folder_key(ctx.path).rsplit("/", 1)[-1] or _base(ctx.path))
    if "device" in cols:
        dev = _num(cols["device"])
        return pl.when(dev.is_not_null()).then(pl.format("device {}", dev.cast(pl.Int64))).otherwise(pl.lit(label))
    return pl.lit(label)


# --- frames ---------------------------------------------------------------------------------------


def _raw_records(lines: pl.DataFrame, ctx: FileContext) -> pl.DataFrame:
    rank = rank_from_path(ctx.path)
    return lines.with_columns(
        file=pl.lit(ctx.path),
        source=pl.lit(KIND),
        node=pl.lit(ctx.node, pl.String),
        message=pl.col("text"),
        parsed=pl.lit(False),
        event=pl.col("line"),
        year_known=pl.lit(False),
        rank=pl.lit(rank, pl.Int32),
    )


def _finish(records: pl.DataFrame, rows: pl.DataFrame | None) -> pl.DataFrame:
    """Overlay per-row fields (line, message, ts, level, device, rank) onto the raw records."""
    if rows is not None and rows.height:
        cols = [c for c in ("message", "ts", "level", "device", "rank", "component") if c in rows.columns]
        over = rows.select(pl.col("line").cast(pl.UInt32), *[pl.col(c).alias(f"_{c}") for c in cols]).unique(
            "line", keep="first"
        )
        records = records.join(over, on="line", how="left")
        upd = {c: pl.coalesce(pl.col(f"_{c}"), pl.col(c)) if c in records.columns else pl.col(f"_{c}") for c in cols}
        upd["parsed"] = pl.col("_message").is_not_null() | pl.col("parsed")
        records = records.with_columns(**upd).drop([f"_{c}" for c in cols])
        if "ts" in cols:
            records = records.with_columns(year_known=pl.col("ts").is_not_null())
    return conform_records(records.sort("line"))


def _note(records: pl.DataFrame, line: int, message: str) -> pl.DataFrame:
    row = pl.DataFrame({"line": [line], "message": [message], "level": ["WARNING"]})
    return _finish(records, row)


def _signals(rows: list[dict], ctx: FileContext) -> pl.DataFrame:
    if not rows:
        return empty_signals()
    frame = pl.DataFrame(
        rows, schema={"line": pl.UInt32, "engine": pl.String, "signal": pl.String, "value": pl.Float64, "text": pl.String}
    )
    return conform_signals(frame.with_columns(file=pl.lit(ctx.path), source=pl.lit(KIND), node=pl.lit(ctx.node, pl.String)))


def _first_line(lines: pl.DataFrame) -> int:
    nonempty = lines.filter(pl.col("text").str.strip_chars() != "")
    return int(nonempty["line"][0]) if nonempty.height else 1


def _norm(header: str) -> str:
    return re.sub(r"[\s_()\"'\t]", "", header).lower()


def _read_csv(lines: pl.DataFrame, data: bytes | None = None) -> tuple[pl.DataFrame, dict[str, str]] | None:
    """Read the CSV with polars; every row keeps the line number it came from (``line``). ``data`` is the
    file's bytes when the reader kept them: read directly when the header is line 1 and no line is blank."""
    body = lines.filter(pl.col("text") != "")  # lines_frame strips line ends: blank lines are ""
    if body.height == 0:
        return None
    try:
        header = next(csv.reader([body["text"][0]]))
    except (csv.Error, StopIteration):
        return None
    if len(header) < 2:
        return None
    cols: dict[str, str] = {}
    normed = {_norm(c): c for c in reversed(header)}
    for ours, aliases in _ALIASES.items():
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


def _num(col: str) -> pl.Expr:
    """A numeric cell: quotes, TABs and spaces stripped; ``N/A`` and other text give null."""
    return pl.col(col).str.strip_chars(" \t\"'").cast(pl.Float64, strict=False)


def _str(cols: dict[str, str], key: str) -> pl.Expr:
    return _clean(cols[key]) if key in cols else pl.lit(None, pl.String)


def _clean(col: str) -> pl.Expr:
    return pl.col(col).str.replace_all(r"[\"\t]", "").str.strip_chars()


def _dtypes(col: str) -> pl.Expr:
    """``DT_BF16;FLOAT`` -> ``BF16;FLOAT``: one spelling per dtype list."""
    return pl.col(col).str.to_uppercase().str.replace_all(r"[\s\"]", "").str.replace_all(r"(^|;)DT_", "$1")


def _fmt(x: float) -> str:
    return f"{x:.1f}" if abs(x) < 1e6 else f"{x:.0f}"


# --- kernel_details / op_summary -------------------------------------------------------------------


def _kernels(frame: pl.DataFrame, cols: dict[str, str], records: pl.DataFrame, ctx: FileContext):
    has_dtype = "in_dtypes" in cols
    has_shape = "in_shapes" in cols
    raw = {key: (pl.col(cols[key]) if key in cols else pl.lit(None, pl.String)).alias(f"_r{key}")
           for key in ("name", "type", "core", "in_shapes", "in_dtypes", "out_dtypes", "device")}
    k = frame.select(
        "line",
        *raw.values(),
        start=pl.col(cols["start"]) if "start" in cols else pl.lit(None, pl.String),
        dur=_num(cols["dur"]) if "dur" in cols else pl.lit(None, pl.Float64),
    )
    # A kernel table repeats a few hundred distinct kernels (name, dtypes, shapes) per step: every string
    # test runs once per distinct kernel, and one join hands the results to all rows.
    keys = [f"_r{key}" for key in raw]
    kernels = k.select(keys).unique().with_columns(
        name=_clean("_rname"), _t=_clean("_rtype"), core=_clean("_rcore").str.to_uppercase(),
        ind=_dtypes("_rin_dtypes"), outd=_dtypes("_rout_dtypes"), shapes=_clean("_rin_shapes"),
    )
    rank = rank_from_path(ctx.path)
    label = f"rank {rank}" if rank is not None else "profile " + (folder_key(ctx.path).rsplit("/", 1)[-1] or _base(ctx.path))
    dev = pl.col("_rdevice").str.strip_chars(" \t\"'").cast(pl.Float64, strict=False).cast(pl.Int32)
    name, ind = pl.col("name").fill_null(""), pl.col("ind").fill_null("")
    kernels = kernels.with_columns(
        type=pl.coalesce(pl.col("_t"), pl.col("name").str.extract(r"_([A-Za-z0-9]+)$", 1), pl.col("name")),
        _n_aicpu=name.str.contains("AiCpu|AICPU"),
        _n_mc2=name.str.contains(_MC2),
        _n_hcom=name.str.contains(r"^hcom_"),
        _q=ind.str.contains(_QUANT),
        _half=ind.str.contains(_HALF),
        _fp8=ind.str.contains(_FP8),
        _tokens=pl.col("shapes").str.extract(r"^(\d+)", 1).cast(pl.Float64, strict=False),
        _w=pl.col("shapes").str.split(";").list.get(1, null_on_oob=True),
        device=dev,
        engine=pl.when(dev.is_not_null() & pl.lit(rank is None)).then(pl.format("device {}", dev)).otherwise(pl.lit(label)),
    )
    typ = pl.col("type").fill_null("")
    kernels = kernels.with_columns(
        _mm=typ.str.contains(_MATMUL),
        _gmm=typ.str.contains(_GMM),
        _disp=typ.str.contains(_DISPATCH),
        _qop=typ.str.contains(_QUANT_OPS),
        _t_mc2=typ.str.contains(_MC2),
    )
    core = pl.col("core").fill_null("")
    aicpu_like = (core == "AI_CPU") | pl.col("_n_aicpu")
    mc2 = aicpu_like & (pl.col("_n_mc2") | pl.col("_t_mc2"))
    kernels = kernels.with_columns(
        _comm=core.str.contains(_COMM_CORE) | pl.col("_n_hcom"),
        _mc2=mc2,
        _aicpu=aicpu_like & ~mc2,
    )
    k = k.join(kernels, on=keys, how="left", nulls_equal=True, maintain_order="left")
    dur = pl.col("dur").fill_null(0)
    agg = k.select(
        dev=dur.filter(~pl.col("_comm")).sum(),
        aicpu=dur.filter(pl.col("_aicpu")).sum(),
        n_aicpu=pl.col("_aicpu").sum(),
        mm=dur.filter(pl.col("_mm")).sum(),
        qmm=dur.filter(pl.col("_mm") & (pl.col("_q") | pl.col("_qop"))).sum(),
        quant_seen=(pl.col("_q") | pl.col("_qop")).any(),
        fp8_seen=pl.col("_fp8").any(),
    ).row(0, named=True)
    share = 100.0 * agg["aicpu"] / agg["dev"] if agg["dev"] else 0.0
    ai_ops = _top_ops(k.filter(pl.col("_aicpu")), with_dtype=has_dtype)
    ai_tail = f" (AI CPU {share:.1f}% of device time: {_fmt(agg['aicpu'])} of {_fmt(agg['dev'])} us in {agg['n_aicpu']} launches)"
    dt = pl.format("{}->{}", pl.col("ind").fill_null("?"), pl.col("outd").fill_null("?"))
    d = pl.col("dur").round(3).cast(pl.String).fill_null("N/A")
    base_msg = pl.format("{} operator {} ({}) {} us", core.replace("", "KERNEL"), pl.col("name").fill_null("?"), pl.col("type").fill_null("?"), d)
    base_msg = pl.format("{}, {}", base_msg, dt) if has_dtype else pl.format("{}, dtypes not recorded", base_msg)
    quant_mode = has_dtype and agg["quant_seen"]
    unq = pl.col("_mm") & ~pl.col("_q") & ~pl.col("_qop") & pl.col("_half")
    msg = (
        pl.when(pl.col("_aicpu"))
        .then(pl.format("AI_CPU {}{}", base_msg.str.replace(r"^\S+ ", ""), pl.lit(ai_tail)))
        .when(pl.col("_mc2"))
        .then(pl.format("MC2 communication kernel {} ({}) on the AI CPU, {} us (not a fallback)", pl.col("name").fill_null("?"), pl.col("type").fill_null("?"), d))
        .when(pl.lit(quant_mode) & unq)
        .then(pl.format("unquantized matmul {} ({}) {} us, {} [{}] in a quantized deployment", pl.col("name").fill_null("?"), pl.col("type").fill_null("?"), d, pl.col("ind").fill_null("?"), pl.col("shapes").fill_null("")))
        .otherwise(base_msg)
    )
    start = pl.col("start").str.strip_chars(" \t\"'").cast(pl.Float64, strict=False)
    ts = pl.when(start.is_between(*_EPOCH_US)).then(pl.from_epoch(start.cast(pl.Int64), time_unit="us"))
    level = pl.when(pl.col("_aicpu")).then(pl.lit("WARNING")).otherwise(pl.lit("INFO"))
    notable = pl.col("_aicpu") | (pl.lit(quant_mode) & unq)  # MC2 rows: thousands, not news
    rows = k.filter(notable).select("line", message=msg, ts=ts, level=level, device="device", component="type")
    notes = []
    if not has_dtype or not has_shape:
        missing = [c for c, ok in (("Input Data Types", has_dtype), ("Input Shapes", has_shape)) if not ok]
        skipped = ["quantized-operator coverage", "FP8/INT8 dtype checks"] if not has_dtype else []
        skipped += ["MoE token counts (GroupedMatmul first dimension)"] if not has_shape else []
        notes.append(
            f"profiler: no {' / '.join(missing)} column (captured with aic_metrics=AiCoreNone?): "
            f"{', '.join(skipped)} could not run; AI CPU and timing checks did"
        )
    header = int(frame["line"][0]) - 1 if frame.height else _first_line(records)
    if notes:
        rows = pl.concat([rows, pl.DataFrame({"line": [header], "message": [notes[0]], "level": ["WARNING"]})], how="diagonal_relaxed")

    # signals
    out: list[dict] = []
    eng = k["engine"][0] if k.height else None
    if k.height:
        worst_ai = k.filter(pl.col("_aicpu")).sort("dur", descending=True, nulls_last=True)
        line = int(worst_ai["line"][0]) if worst_ai.height else header
        text = f"{eng}: {share:.1f}% of {_fmt(agg['dev'])} us device time on the AI CPU ({_fmt(agg['aicpu'])} us, {agg['n_aicpu']} launches)"
        if ai_ops:
            text += f": {ai_ops}"
        out.append(dict(line=line, engine=eng, signal="aicpu_time_share_pct", value=share, text=text))
        out.append(dict(line=line, engine=eng, signal="aicpu_time_us", value=agg["aicpu"], text=ai_ops or None))
        out.append(dict(line=header, engine=eng, signal="device_time_us", value=agg["dev"], text=None))
    if has_dtype and agg["mm"] > 0:
        out.append(dict(line=header, engine=eng, signal="matmul_time_us", value=agg["mm"], text=None))
        out.append(dict(line=header, engine=eng, signal="quant_matmul_time_us", value=agg["qmm"], text=None))
        if agg["fp8_seen"]:
            out.append(dict(line=header, engine=eng, signal="fp8_kernels", value=1.0, text="FP8 input dtypes in kernels"))
        if quant_mode:
            cov = 100.0 * agg["qmm"] / agg["mm"]
            unqk = k.filter(unq)
            worst = unqk.sort("dur", descending=True, nulls_last=True)
            line = int(worst["line"][0]) if worst.height else header
            ops = _top_ops(unqk, with_dtype=True, by_weight=True)
            text = (
                f"{eng}: {cov:.1f}% of {_fmt(agg['mm'])} us matmul time runs with quantized inputs; "
                f"{_fmt(agg['mm'] - agg['qmm'])} us does not"
            )
            text += f"; BF16/FP16 matmuls: {ops}" if ops else ""
            out.append(dict(line=line, engine=eng, signal="quant_matmul_coverage_pct", value=cov, text=text))
    out += _moe_from_kernels(k, header)
    records = _finish(_keep(records, frame["line"], rows["line"], [r["line"] for r in out]), rows)
    return records, _signals(out, ctx)


def _keep(records: pl.DataFrame, data_lines: pl.Series, *keep) -> pl.DataFrame:
    """Drop the records of ordinary data rows (numbers, not messages: analysed above and counted by the pipeline,
    as its retention filter does for log lines); keep the header, notable rows, evidence lines and any line that
    was not a data row."""
    want = pl.concat([pl.Series(list(k), dtype=pl.UInt32) if not isinstance(k, pl.Series) else k.cast(pl.UInt32) for k in keep])
    return records.filter(~pl.col("line").is_in(data_lines.cast(pl.UInt32).implode()) | pl.col("line").is_in(want.implode()))


def _top_ops(k: pl.DataFrame, with_dtype: bool, by_weight: bool = False) -> str:
    if k.height == 0:
        return ""
    keys = ["type", "name"] if not by_weight else ["type", "ind", "_w"]
    g = (
        k.group_by(keys)
        .agg(n=pl.len(), t=pl.col("dur").fill_null(0).sum(), ind1=pl.col("ind").first(), outd=pl.col("outd").first(),
             name1=pl.col("name").first())
        .sort(["t", "n"], descending=True)
    )
    parts = []
    for r in g.head(MAX_LIST).iter_rows(named=True):
        if by_weight:
            first = (r["ind1"] or "?").split(";")[0]
            w = f", weight [{r['_w']}]" if r.get("_w") else ""
            parts.append(f"{r['type']} {first} x{r['n']} {_fmt(r['t'])} us{w}")
        else:
            dt = f", {r['ind1']}->{r['outd']}" if with_dtype and r["ind1"] else ""
            parts.append(f"{r['name1']} ({r['type']}) x{r['n']} {_fmt(r['t'])} us{dt}")
    more = f", ... {g.height - MAX_LIST} more" if g.height > MAX_LIST else ""
    return "; ".join(parts) + more


def _moe_from_kernels(k: pl.DataFrame, header: int) -> list[dict]:
    """Per-rank (per-engine) GroupedMatmul time and tokens; max/mean when one file holds several ranks."""
    gmm = k.filter(pl.col("_gmm") | pl.col("_disp"))
    if gmm.height == 0:
        return []
    per = (
        gmm.group_by("engine")
        .agg(
            gmm_t=pl.col("dur").filter(pl.col("_gmm")).fill_null(0).sum(),
            tokens=pl.col("_tokens").filter(pl.col("_gmm")).sum(),
            has_tokens=pl.col("_tokens").filter(pl.col("_gmm")).is_not_null().any(),
            disp=pl.col("dur").filter(pl.col("_disp")).fill_null(0).sum(),
            line=pl.col("line").filter(pl.col("_gmm")).sort_by(pl.col("dur").filter(pl.col("_gmm")), descending=True).first(),
        )
        .sort("engine")
    )
    out = []
    for r in per.iter_rows(named=True):
        line = r["line"] if r["line"] is not None else header
        out.append(dict(line=line, engine=r["engine"], signal="gmm_time_us", value=r["gmm_t"], text=None))
        if r["has_tokens"]:
            out.append(dict(line=line, engine=r["engine"], signal="gmm_tokens", value=r["tokens"], text=None))
        if r["disp"]:
            out.append(dict(line=line, engine=r["engine"], signal="moe_dispatch_combine_us", value=r["disp"], text=None))
    if per.height >= 2:
        out += moe_imbalance(per.rename({"gmm_t": "gmm_time_us", "tokens": "gmm_tokens", "disp": "moe_dispatch_combine_us"}))
    return out


def moe_imbalance(per: pl.DataFrame) -> list[dict]:
    """``per``: engine, line, gmm_time_us, gmm_tokens, moe_dispatch_combine_us (one row per rank)."""
    per = per.filter(pl.col("gmm_time_us") > 0)
    if per.height < 2:
        return []
    mean = per["gmm_time_us"].mean()
    top = per.sort("gmm_time_us", descending=True).row(0, named=True)
    ratio = top["gmm_time_us"] / mean if mean else 0.0
    tok = per["gmm_tokens"].drop_nulls() if "gmm_tokens" in per.columns else pl.Series([], dtype=pl.Float64)
    tok_txt = ""
    if tok.len() >= 2 and tok.mean():
        tok_txt = f"; tokens max/mean {tok.max() / tok.mean():.2f}"
    ranks = ", ".join(f"{r['engine']} {_fmt(r['gmm_time_us'])} us" for r in per.sort("engine").head(16).iter_rows(named=True))
    disp = ""
    if "moe_dispatch_combine_us" in per.columns and per["moe_dispatch_combine_us"].drop_nulls().len():
        least = per.sort("moe_dispatch_combine_us", nulls_last=True).row(0, named=True)
        disp = (f"; dispatch/combine wait is shortest on {least['engine']} "
                f"({_fmt(least['moe_dispatch_combine_us'] or 0)} us): the others wait for it")
    text = (f"{top['engine']} spends {_fmt(top['gmm_time_us'])} us in GroupedMatmul, {ratio:.2f}x the mean "
            f"{_fmt(mean)} us over {per.height} ranks{tok_txt}{disp}; per rank: {ranks}")
    return [dict(line=top["line"], engine=top["engine"], signal="moe_rank_imbalance", value=ratio, text=text)]


# --- op_statistic ---------------------------------------------------------------------------------


def _op_statistic(frame: pl.DataFrame, cols: dict[str, str], records: pl.DataFrame, ctx: FileContext):
    if "core" not in cols or "total" not in cols:
        return records, empty_signals()
    s = frame.select(
        "line",
        engine=_engine_expr(ctx, cols),
        type=_str(cols, "type"),
        core=_str(cols, "core").str.to_uppercase(),
        count=_num(cols["count"]) if "count" in cols else pl.lit(None, pl.Float64),
        total=_num(cols["total"]),
    )
    mc2 = pl.col("type").fill_null("").str.contains(_MC2)
    s = s.with_columns(_aicpu=(pl.col("core") == "AI_CPU") & ~mc2)
    dev = s["total"].fill_null(0).sum()
    ai = s.filter(pl.col("_aicpu"))
    ai_t = ai["total"].fill_null(0).sum()
    share = 100.0 * ai_t / dev if dev else 0.0
    msg = pl.when(pl.col("_aicpu")).then(
        pl.format("AI_CPU operator {} ({}) {} us, {} launches in op_statistic (AI CPU {}% of device time)",
                  pl.col("type").fill_null("?"), pl.col("type").fill_null("?"),
                  pl.col("total").round(2).cast(pl.String).fill_null("N/A"),
                  pl.col("count").cast(pl.Int64).cast(pl.String).fill_null("?"), pl.lit(f"{share:.1f}"))
    )
    rows = s.select("line", message=msg, level=pl.when(pl.col("_aicpu")).then(pl.lit("WARNING")))
    records = _finish(records, rows.filter(pl.col("message").is_not_null()))
    eng = s["engine"][0] if s.height else None
    out = []
    if s.height:
        worst = ai.sort("total", descending=True, nulls_last=True)
        line = int(worst["line"][0]) if worst.height else int(s["line"][0])
        ops = "; ".join(f"{r['type']} x{int(r['count'] or 0)} {_fmt(r['total'] or 0)} us" for r in worst.head(MAX_LIST).iter_rows(named=True))
        text = f"{eng}: {share:.1f}% of {_fmt(dev)} us device time on the AI CPU ({_fmt(ai_t)} us)" + (f": {ops}" if ops else "")
        out.append(dict(line=line, engine=eng, signal="aicpu_time_share_pct", value=share, text=text))
    return records, _signals(out, ctx)


# --- step_trace_time / cluster_step_trace_time ----------------------------------------------------


def _step_trace(frame: pl.DataFrame, cols: dict[str, str], records: pl.DataFrame, ctx: FileContext, cluster: bool):
    need = ("computing", "comm_no", "free")
    if not all(c in cols for c in need):
        missing = [c for c in need if c not in cols]
        note = f"profiler: step trace without the {', '.join(missing)} column(s): slow-rank check could not run"
        return _note(records, _first_line(records), note), empty_signals()
    if cluster and "rowtype" in cols and "index" in cols:
        t = frame.filter(pl.col(cols["rowtype"]).str.strip_chars().str.to_lowercase() == "rank")
        engine = pl.format("rank {}", pl.col(cols["index"]).str.strip_chars())
    else:
        t = frame
        engine = _engine_expr(ctx, cols)
    s = t.select(
        "line",
        engine=engine,
        step=_str(cols, "step"),
        computing_us=_num(cols["computing"]),
        comm_not_overlapped_us=_num(cols["comm_no"]),
        free_us=_num(cols["free"]),
    ).filter(pl.col("computing_us").is_not_null())
    msg = pl.format(
        "step {} {}: computing {} us, communication not overlapped {} us, free {} us",
        pl.col("step").fill_null("-"), pl.col("engine"), *[pl.col(c).round(1).cast(pl.String).fill_null("N/A") for c in ("computing_us", "comm_not_overlapped_us", "free_us")],
    )
    records = _finish(records, s.select("line", message=msg))
    long = s.unpivot(index=["line", "engine"], on=["computing_us", "comm_not_overlapped_us", "free_us"],
                     variable_name="signal", value_name="value").with_columns(text=pl.lit(None, pl.String))
    signals = _signals(long.to_dicts(), ctx)
    per = per_rank_step(s)
    extra = straggler(per)
    if extra:
        signals = pl.concat([signals, _signals(extra, ctx)])
    return records, signals


def per_rank_step(s: pl.DataFrame) -> pl.DataFrame:
    """Mean per step of each rank: engine, line (first row), computing_us, comm_not_overlapped_us, free_us."""
    return s.group_by("engine").agg(
        pl.col("line").min(),
        pl.col("computing_us").mean(),
        pl.col("comm_not_overlapped_us").mean(),
        pl.col("free_us").mean(),
    ).sort("engine")


def straggler(per: pl.DataFrame, min_ranks: int = 2) -> list[dict]:
    """The slow rank: the one whose own time (computing + free) per step is longest; the others then wait for it
    in communication. ``straggler_ratio`` = its own time / the median own time of the other ranks."""
    per = per.drop_nulls(["computing_us", "comm_not_overlapped_us", "free_us"])
    if per.height < min_ranks:
        return []
    per = per.with_columns(own=pl.col("computing_us") + pl.col("free_us"))
    slow = per.sort("own", descending=True).row(0, named=True)
    others = per.filter(pl.col("engine") != slow["engine"])
    med = others["own"].median()
    if not med:
        return []
    ratio = slow["own"] / med
    comp_med, free_med = per["computing_us"].median(), per["free_us"].median()
    cause = "free time (device idle: host-bound)" if (slow["free_us"] - free_med) > (slow["computing_us"] - comp_med) else "computing time"
    waiting = others.filter(pl.col("comm_not_overlapped_us") > slow["comm_not_overlapped_us"] * 1.1 + 1).sort(
        "comm_not_overlapped_us", descending=True)
    wait_txt = ", ".join(f"{r['engine']} {r['comm_not_overlapped_us'] / 1000:.1f} ms" for r in waiting.head(8).iter_rows(named=True))
    if waiting.height > 8:
        wait_txt += f", ... {waiting.height - 8} more"
    text = (
        f"{slow['engine']} is the slow rank: computing {slow['computing_us'] / 1000:.1f} ms + free {slow['free_us'] / 1000:.1f} ms "
        f"per step, {ratio:.2f}x the median {med / 1000:.1f} ms of the other {others.height} ranks, mostly {cause}; "
        f"its own communication wait {slow['comm_not_overlapped_us'] / 1000:.1f} ms; "
        f"waiting for it (communication not overlapped): {wait_txt or 'none notably'}"
    )
    rank_no = re.search(r"(\d+)$", slow["engine"])
    return [
        dict(line=slow["line"], engine=slow["engine"], signal="straggler_ratio", value=ratio, text=text),
        dict(line=slow["line"], engine=slow["engine"], signal="slow_rank",
             value=float(rank_no.group(1)) if rank_no else None, text=slow["engine"]),
    ]


# --- JSON files -----------------------------------------------------------------------------------


def _whole_json(lines: pl.DataFrame):
    text = lines.select(pl.col("text").str.join("\n")).item() if lines.height else ""
    body = text.strip()
    if not body:
        return None, "empty", text
    try:
        return json.loads(body), None, text
    except json.JSONDecodeError as exc:
        closed = (body[0] == "[" and body.endswith("]")) or (body[0] == "{" and body.endswith("}"))
        why = "invalid JSON" if closed else "truncated (the JSON is not closed)"
        return None, f"{why}: {exc.msg} at line {exc.lineno} column {exc.colno}", text


def _json_file(base: str, lines: pl.DataFrame, records: pl.DataFrame, ctx: FileContext):
    data, err, _ = _whole_json(lines)
    if err:
        return _note(records, _first_line(lines), f"profiler: {base} is {err}; its content was not analysed"), empty_signals()
    records = records.with_columns(parsed=pl.lit(True))
    return conform_records(records), empty_signals()


def _profiler_info(base: str, lines: pl.DataFrame, records: pl.DataFrame, ctx: FileContext):
    data, err, _ = _whole_json(lines)
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
        records = _note(records, _first_line(lines), f"profiler: {base} is {err}")
    else:
        records = conform_records(records.with_columns(parsed=pl.lit(True), rank=pl.lit(rank, pl.Int32)))
    if rank is None:
        return records, empty_signals()
    row = dict(line=_first_line(lines), engine=f"rank {rank}", signal="profiler_rank", value=float(rank), text=folder_key(ctx.path))
    return records, _signals([row], ctx)


def _trace_view(lines: pl.DataFrame, records: pl.DataFrame, ctx: FileContext):
    """Chrome trace: per-line events when the file has one event per line, else the whole text (line 1)."""
    body = lines.with_columns(j=pl.col("text").str.strip_chars().str.strip_chars_end(","))
    objs = body.filter(pl.col("j").str.starts_with("{"))
    stripped = lines.select(pl.col("text").str.join("\n")).item().strip() if lines.height else ""
    truncated = bool(stripped) and not (stripped.endswith("]") or stripped.endswith("}"))
    notes: list[tuple[int, str]] = []
    if objs.height >= 2:
        ev = objs.select(
            "line",
            ph=pl.col("j").str.json_path_match("$.ph"),
            name=pl.col("j").str.json_path_match("$.name"),
            pid=pl.col("j").str.json_path_match("$.pid"),
            dur=pl.col("j").str.json_path_match("$.dur").cast(pl.Float64, strict=False),
            ts=pl.col("j").str.json_path_match("$.ts").cast(pl.Float64, strict=False),
            task=pl.col("j").str.json_path_match("$.args['Task Type']"),
            lane=pl.col("j").str.json_path_match("$.args.name"),
        )
        bad = ev.filter(pl.col("ph").is_null())
        if truncated:  # the cut last event is reported as the truncation below
            bad = bad.filter(pl.col("line") != ev["line"].max())
        if bad.height:
            notes.append((int(bad["line"][0]), f"profiler: {bad.height} trace event line(s) could not be read, first at line {int(bad['line'][0])}"))
    else:
        data, err, _ = _whole_json(lines)
        if err and truncated:
            data = _salvage(stripped)
        if isinstance(data, dict):
            data = data.get("traceEvents", [])
        if not isinstance(data, list):
            data = []
        rows = [e for e in data if isinstance(e, dict)]
        ev = pl.DataFrame(
            {
                "line": [1] * len(rows),
                "ph": [str(e.get("ph")) for e in rows],
                "name": [str(e.get("name", "")) for e in rows],
                "pid": [str(e.get("pid")) for e in rows],
                "dur": [_float(e.get("dur")) for e in rows],
                "ts": [_float(e.get("ts")) for e in rows],
                "task": [str((e.get("args") or {}).get("Task Type")) if isinstance(e.get("args"), dict) else None for e in rows],
                "lane": [str((e.get("args") or {}).get("name")) if isinstance(e.get("args"), dict) else None for e in rows],
            },
            schema={"line": pl.UInt32, "ph": pl.String, "name": pl.String, "pid": pl.String, "dur": pl.Float64,
                    "ts": pl.Float64, "task": pl.String, "lane": pl.String},
        )
    if truncated:
        n = ev.filter(pl.col("ph").is_not_null()).height
        notes.append((_first_line(lines), f"profiler: trace_view.json is truncated (the JSON array is not closed): "
                                          f"{n} events before the cut were analysed, the rest is lost"))
    lanes = ev.filter((pl.col("ph") == "M") & (pl.col("name") == "process_name")).select("pid", "lane").unique("pid")
    hw_pids = lanes.filter(pl.col("lane") == "Ascend Hardware")["pid"]
    k = ev.filter((pl.col("ph") == "X") & pl.col("pid").is_in(hw_pids.implode()))
    mc2 = pl.col("name").fill_null("").str.contains(_MC2)
    k = k.with_columns(
        type=pl.col("name").str.extract(r"_([A-Za-z0-9]+)$", 1).fill_null(pl.col("name")),
        _aicpu=((pl.col("task") == "AI_CPU") | pl.col("name").fill_null("").str.contains("AiCpu")) & ~mc2,
        engine=pl.lit(_engine_label(ctx)),
    )
    dev = k["dur"].fill_null(0).sum()
    ai = k.filter(pl.col("_aicpu"))
    ai_t = ai["dur"].fill_null(0).sum()
    share = 100.0 * ai_t / dev if dev else 0.0
    tail = f" (AI CPU {share:.1f}% of device time in trace_view: {_fmt(ai_t)} of {_fmt(dev)} us in {ai.height} launches)"
    ts = pl.when(pl.col("ts").is_between(*_EPOCH_US)).then(pl.from_epoch(pl.col("ts").cast(pl.Int64), time_unit="us"))
    rows = ai.filter(pl.col("line") > 1) if objs.height >= 2 else ai.head(0)
    rows = rows.select("line", message=pl.format("AI_CPU operator {} ({}) {} us, dtypes not in trace_view{}", pl.col("name"), pl.col("type"),
                                                  pl.col("dur").round(2), pl.lit(tail)),
                       ts=ts, level=pl.lit("WARNING"))
    if objs.height < 2 and ai.height:  # one-line trace: one summary record on line 1
        rows = pl.DataFrame({"line": [1], "message": [f"AI_CPU operator {ai['name'][0]} ({ai['type'][0]}) {ai['dur'][0]:.2f} us, dtypes not in trace_view{tail}"],
                             "level": ["WARNING"]})
    if notes:
        rows = pl.concat([rows, pl.DataFrame({"line": [n[0] for n in notes], "message": [n[1] for n in notes],
                                              "level": ["WARNING"] * len(notes)})], how="diagonal_relaxed")
    out = []
    if k.height:
        worst = ai.sort("dur", descending=True, nulls_last=True)
        line = int(worst["line"][0]) if worst.height else _first_line(lines)
        ops = _top_ops(ai.with_columns(ind=pl.lit(None, pl.String), outd=pl.lit(None, pl.String)), with_dtype=False)
        text = f"{_engine_label(ctx)}: {share:.1f}% of {_fmt(dev)} us device time on the AI CPU ({_fmt(ai_t)} us, {ai.height} launches)" + (f": {ops}" if ops else "")
        out.append(dict(line=line, engine=_engine_label(ctx), signal="aicpu_time_share_pct", value=share, text=text))
    if objs.height >= 2:  # ordinary events are analysed, not kept (a trace has millions)
        records = _keep(records, objs["line"], rows["line"], [r["line"] for r in out])
    return _finish(records, rows), _signals(out, ctx)


def _engine_label(ctx: FileContext) -> str:
    rank = rank_from_path(ctx.path)
    return f"rank {rank}" if rank is not None else "profile " + (folder_key(ctx.path).rsplit("/", 1)[-1] or _base(ctx.path))


def _float(v) -> float | None:
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _salvage(text: str):
    """The events of a truncated JSON array: cut after the last complete event and close the array."""
    pos = len(text)
    for _ in range(50):
        pos = text.rfind("}", 0, pos)
        if pos <= 0:
            return []
        try:
            data = json.loads(text[: pos + 1] + "]")
            return data if isinstance(data, list) else []
        except json.JSONDecodeError:
            continue
    return []


# --- across files ---------------------------------------------------------------------------------


def cross_file_signals(signals: pl.DataFrame) -> pl.DataFrame:
    """Run once on all signals of a run: name ranks from ``profiler_info_<r>.json`` beside a folder's files, then
    add the slow-rank and MoE-imbalance signals across ranks whose data sit in separate files."""
    prof = signals.filter(pl.col("source") == KIND)
    if prof.height == 0:
        return signals
    infos = prof.filter(pl.col("signal") == "profiler_rank").select(pl.col("text").alias("_fk"), pl.col("engine").alias("_re"))
    if infos.height:
        keys = pl.col("file").map_elements(folder_key, return_dtype=pl.String)
        signals = signals.with_columns(_fk=pl.when(pl.col("source") == KIND).then(keys)).join(
            infos.unique("_fk"), on="_fk", how="left"
        ).with_columns(
            _m=pl.col("_re").is_not_null() & pl.col("engine").fill_null("").str.contains(r"^(?:profile|device) ")
        ).with_columns(  # texts that start with the folder label name the rank instead
            text=pl.when(pl.col("_m") & pl.col("text").fill_null("").str.starts_with(pl.col("engine")))
            .then(pl.concat_str([pl.col("_re"), pl.col("text").str.slice(pl.col("engine").str.len_chars())]))
            .otherwise(pl.col("text")),
        ).with_columns(
            engine=pl.when(pl.col("_m")).then(pl.col("_re")).otherwise(pl.col("engine"))
        ).drop("_fk", "_re", "_m")
        prof = signals.filter(pl.col("source") == KIND)
    extra: list[pl.DataFrame] = []
    step = prof.filter(pl.col("signal").is_in(["computing_us", "comm_not_overlapped_us", "free_us"]))
    # Files that already compared their ranks (cluster trace, multi-device files) are left alone.
    done = prof.filter(pl.col("signal").is_in(["straggler_ratio", "moe_rank_imbalance"]))["file"].unique()
    step = step.filter(~pl.col("file").is_in(done.implode()))
    if step.select("file").n_unique() >= 2 and step.select("engine").n_unique() >= 2:
        wide = step.pivot(on="signal", index=["file", "line", "engine"], values="value", aggregate_function="first")
        per = wide.group_by("engine").agg(
            pl.col("file").first(), pl.col("line").min(),
            *[pl.col(c).mean() for c in ("computing_us", "comm_not_overlapped_us", "free_us") if c in wide.columns],
        )
        rows = straggler(per)
        if rows:
            where = per.filter(pl.col("engine") == rows[0]["engine"]).row(0, named=True)
            extra.append(_cross_rows(rows, where["file"], prof))
    moe = prof.filter(pl.col("signal").is_in(["gmm_time_us", "gmm_tokens", "moe_dispatch_combine_us"]))
    moe = moe.filter(~pl.col("file").is_in(done.implode()))
    if moe.select("file").n_unique() >= 2 and moe.select("engine").n_unique() >= 2:
        wide = moe.pivot(on="signal", index=["engine"], values="value", aggregate_function="sum")
        lines = moe.filter(pl.col("signal") == "gmm_time_us").group_by("engine").agg(pl.col("file").first(), pl.col("line").first())
        per = wide.join(lines, on="engine", how="inner")
        for c in ("gmm_tokens", "moe_dispatch_combine_us"):
            if c not in per.columns:
                per = per.with_columns(pl.lit(None, pl.Float64).alias(c))
        rows = moe_imbalance(per)
        if rows:
            where = per.filter(pl.col("engine") == rows[0]["engine"]).row(0, named=True)
            extra.append(_cross_rows(rows, where["file"], prof))
    if not extra:
        return signals
    return pl.concat([signals, *extra], how="vertical_relaxed")


def _cross_rows(rows: list[dict], file: str, prof: pl.DataFrame) -> pl.DataFrame:
    node = prof.filter(pl.col("file") == file)["node"]
    frame = pl.DataFrame(rows, schema={"line": pl.UInt32, "engine": pl.String, "signal": pl.String, "value": pl.Float64, "text": pl.String})
    return conform_signals(frame.with_columns(file=pl.lit(file), source=pl.lit(KIND), node=pl.lit(node[0] if node.len() else None, pl.String)))


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
    sniff_rank=80,
)
