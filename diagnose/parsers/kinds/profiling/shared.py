"""What every table family shares: the kind, the kernel-name patterns, the rank and folder of a file, the records and
signals frames, cell cleaning and number formatting."""

from __future__ import annotations

import re

import polars as pl

from diagnose.bounded import Malformed, json_loads
from diagnose.model import conform_records, conform_signals, empty_signals
from diagnose.parsers.lineframe import FileContext
from diagnose.model.memberpath import base_name

KIND = "profiler"


QUANT = r"(?:^|;)(?:INT8|INT4|FLOAT8\w*|FP8\w*|HIFLOAT8|F8E4M3\w*|F8E5M2\w*)(?:;|$)"
FP8 = r"(?:^|;)(?:FLOAT8\w*|FP8\w*|HIFLOAT8|F8E4M3\w*|F8E5M2\w*)(?:;|$)"
HALF = r"(?:^|;)(?:BF16|BFLOAT16|FLOAT16|FP16|HALF)(?:;|$)"
MATMUL = r"(?i)^(?:WeightQuant|Quant|Transpose)?(?:BatchMatMul|MatMul|GroupedMatmul)"
QUANT_OPS = r"(?i)^(?:DynamicQuant|QuantBatchMatmul|WeightQuantBatchMatmul|GroupedMatmulSwigluQuant|DequantSwigluQuant|AscendQuant)"
GMM = r"(?i)^GroupedMatmul"
DISPATCH = r"(?i)^MoeDistribute(?:Dispatch|Combine)"
# MC2 fused communication kernels run on the AI CPU of the comm stream and carry an `Aicpu` suffix: no fallback.
_MC2_NAMES = (
    r"^(?:MoeDistribute(?:Dispatch|Combine)|MatmulAllReduce|AllGatherMatmul|MatmulReduceScatter"
    r"|MatmulAllToAll|AlltoAllAllGather|BatchMatMulReduceScatter|DispatchFFNCombine|Mc2)"
)
MC2 = r"Aicpu$|(?i)" + _MC2_NAMES  # polars (Rust regex): the flag holds from where it stands
MC2_RE = re.compile(r"Aicpu$|(?i:" + _MC2_NAMES + ")")  # the same for Python's re
COMM_CORE = r"(?i)^(?:HCCL|COMMUNICATION)$"
EPOCH_US = (1.4e15, 2.3e15)  # 2014..2042: start times that are wall-clock microseconds

MAX_LIST = 6




# --- rank and folder ------------------------------------------------------------------------------

RANK_IN_PATH = re.compile(r"(?:^|[/_.-])rank[_-]?(\d+)(?=[/_.-]|$)", re.IGNORECASE)


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
    m = RANK_IN_PATH.search(key) or re.search(r"profiler_info_(\d+)\.json$", path)
    return int(m.group(1)) if m else None


def engine_expr(ctx: FileContext, cols: dict[str, str]) -> pl.Expr:
    rank = rank_from_path(ctx.path)
    if rank is not None:
        return pl.lit(f"rank {rank}")
    label = "profile " + (folder_key(ctx.path).rsplit("/", 1)[-1] or base_name(ctx.path))
    if "device" in cols:
        dev = num(cols["device"])
        return pl.when(dev.is_not_null()).then(pl.format("device {}", dev.cast(pl.Int64))).otherwise(pl.lit(label))
    return pl.lit(label)


# --- frames ---------------------------------------------------------------------------------------


def raw_records(lines: pl.DataFrame, ctx: FileContext) -> pl.DataFrame:
    rank = rank_from_path(ctx.path)
    # Conformed: a table that turns out not to be one is returned as these records (the contract's columns).
    return conform_records(lines.with_columns(
        file=pl.lit(ctx.path),
        source=pl.lit(KIND),
        node=pl.lit(ctx.node, pl.String),
        message=pl.col("text"),
        parsed=pl.lit(False),
        event=pl.col("line"),
        year_known=pl.lit(False),
        rank=pl.lit(rank, pl.Int32),
    ))


def finish(records: pl.DataFrame, rows: pl.DataFrame | None) -> pl.DataFrame:
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


def note(records: pl.DataFrame, line: int, message: str) -> pl.DataFrame:
    row = pl.DataFrame({"line": [line], "message": [message], "level": ["WARNING"]})
    return finish(records, row)


def signal_frame(rows: list[dict], ctx: FileContext) -> pl.DataFrame:
    if not rows:
        return empty_signals()
    frame = pl.DataFrame(
        rows, schema={"line": pl.UInt32, "engine": pl.String, "signal": pl.String, "value": pl.Float64, "text": pl.String}
    )
    return conform_signals(frame.with_columns(file=pl.lit(ctx.path), source=pl.lit(KIND), node=pl.lit(ctx.node, pl.String)))


def first_line(lines: pl.DataFrame) -> int:
    nonempty = lines.filter(pl.col("text").str.strip_chars() != "")
    return int(nonempty["line"][0]) if nonempty.height else 1


def num(col: str) -> pl.Expr:
    """A numeric cell: quotes, TABs and spaces stripped; ``N/A`` and other text give null."""
    return pl.col(col).str.strip_chars(" \t\"'").cast(pl.Float64, strict=False)


def text_col(cols: dict[str, str], key: str) -> pl.Expr:
    return clean(cols[key]) if key in cols else pl.lit(None, pl.String)


def clean(col: str) -> pl.Expr:
    return pl.col(col).str.replace_all(r"[\"\t]", "").str.strip_chars()


def dtypes(col: str) -> pl.Expr:
    """``DT_BF16;FLOAT`` -> ``BF16;FLOAT``: one spelling per dtype list."""
    return pl.col(col).str.to_uppercase().str.replace_all(r"[\s\"]", "").str.replace_all(r"(^|;)DT_", "$1")


def fmt(x: float) -> str:
    return f"{x:.1f}" if abs(x) < 1e6 else f"{x:.0f}"


def keep_rows(records: pl.DataFrame, data_lines: pl.Series, *keep) -> pl.DataFrame:
    """Drop the records (or lines) of ordinary data rows (numbers, not messages: analysed above and counted by the pipeline,
    as its retention filter does for log lines); keep the header, notable rows, evidence lines and any line that
    was not a data row."""
    want = pl.concat([pl.Series(list(k), dtype=pl.UInt32) if not isinstance(k, pl.Series) else k.cast(pl.UInt32) for k in keep])
    return records.filter(~pl.col("line").is_in(data_lines.cast(pl.UInt32).implode()) | pl.col("line").is_in(want.implode()))


def top_ops(k: pl.DataFrame, with_dtype: bool, by_weight: bool = False) -> str:
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
            parts.append(f"{r['type']} {first} x{r['n']} {fmt(r['t'])} us{w}")
        else:
            dt = f", {r['ind1']}->{r['outd']}" if with_dtype and r["ind1"] else ""
            parts.append(f"{r['name1']} ({r['type']}) x{r['n']} {fmt(r['t'])} us{dt}")
    more = f", ... {g.height - MAX_LIST} more" if g.height > MAX_LIST else ""
    return "; ".join(parts) + more


def whole_json(lines: pl.DataFrame):
    text = lines.select(pl.col("text").str.join("\n")).item() if lines.height else ""
    body = text.strip()
    if not body:
        return None, "empty", text
    try:
        return json_loads(body), None, text
    except Malformed as exc:
        closed = (body[0] == "[" and body.endswith("]")) or (body[0] == "{" and body.endswith("}"))
        why = "invalid JSON" if closed else "truncated (the JSON is not closed)"
        return None, f"{why}: {exc.detail}", text


def engine_label(ctx: FileContext) -> str:
    rank = rank_from_path(ctx.path)
    return f"rank {rank}" if rank is not None else "profile " + (folder_key(ctx.path).rsplit("/", 1)[-1] or base_name(ctx.path))
