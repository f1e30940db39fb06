"""MindIE expert-hotspot dumps (``prefill/prefill_<rank>.csv``, ``decode/decode_<rank>.csv``; format from the MindIE expert-hotspot dump documentation).

No header; each write appends a block of ``layers`` rows x ``local experts`` columns of running token totals.
For the normal report this parser looks at the last complete block only (the totals since warm-up or the
last reset) and emits, per layer row, the busiest local expert over the row mean
(``expert_hotspot_max_over_mean``) and the row's tokens (``expert_hotspot_row_tokens``). The rows per block
are detected as the smallest period at which the totals never fall; when that fails every row is a sample.
The weekly analysis (window differences, placement) is ``diagnose expert-load``.
"""

from __future__ import annotations

import polars as pl
import re

from diagnose.model import conform_records, conform_signals, empty_signals
from diagnose.parsers.lineframe import FileContext
from diagnose.parsers.kind import SourceKind

KIND = "expert-hotspot"

ROW = r"^\s*\d+(?:\s*,\s*\d+)+\s*$"
NAME = re.compile(r"(prefill|decode)_(\d+)\.csv$", re.IGNORECASE)
PREFERRED = (58, 59, 61, 60, 57)


def block_period(flat: pl.Series, width: int) -> int | None:
    """Rows per block: the smallest divisor d of the row count (DeepSeek's 58/59/61 first) at which every cell
    of row r+d is >= row r (running totals), with some growth. None when no period fits.

    ``flat`` holds the cells row by row (``width`` per row); only the first 4096 rows are compared.
    """
    if width <= 0 or flat.len() == 0:
        return None
    n = flat.len() // width
    rows = min(n, 4096)
    head = flat.slice(0, rows * width)
    cands = sorted({d for d in range(1, n + 1) if n % d == 0}, key=lambda d: (d not in PREFERRED, d))
    for d in cands:
        k = (rows // d) * d
        if n // d < 2 or k < 2 * d:
            continue
        a = head.slice(0, (k - d) * width)
        b = head.slice(d * width, (k - d) * width)
        ge = (b >= a).fill_null(False)
        if ge.mean() >= 0.999 and (b > a).fill_null(False).any():
            return d
    return None


def parse(lines: pl.DataFrame, ctx: FileContext) -> tuple[pl.DataFrame, pl.DataFrame]:
    m = NAME.search(ctx.path.replace("\\", "/"))
    stage, rank = (m.group(1).lower(), int(m.group(2))) if m else ("dump", None)
    frame = lines.with_columns(parsed=pl.col("text").str.contains(ROW)).with_columns(
        vals=pl.when(pl.col("parsed")).then(
            pl.col("text").str.split(",").list.eval(pl.element().str.strip_chars().cast(pl.Int64, strict=False))),
    )
    records = conform_records(frame.with_columns(
        file=pl.lit(ctx.path), source=pl.lit(KIND), node=pl.lit(ctx.node, pl.String), year_known=pl.lit(False),
        rank=pl.lit(rank, pl.Int32), message=pl.col("text"), event=pl.col("line"),
        level=pl.when(pl.col("parsed")).then(pl.lit("INFO")),
    ))
    rows = frame.filter(pl.col("parsed")).with_columns(width=pl.col("vals").list.len())
    empty = empty_signals()
    if rows.height == 0 or m is None:  # `_bak.csv` copies and `_topk` id dumps: records only
        return records, empty
    width = rows["width"].mode().sort()[0]
    rows = rows.filter(pl.col("width") == width)
    period = None
    try:
        period = block_period(rows["vals"].explode(), width)
    except Exception:  # noqa: BLE001 - no period: every row is a sample
        period = None
    if period:
        n_blocks = rows.height // period
        rows = rows.with_row_index("_i").filter(pl.col("_i") >= (n_blocks - 1) * period).with_columns(
            layer=(pl.col("_i") % period).cast(pl.Int64))
        engine = pl.format("{} rank {} layer {}", pl.lit(stage), pl.lit(rank if rank is not None else "?"), pl.col("layer"))
    else:
        engine = pl.format("{} rank {}", pl.lit(stage), pl.lit(rank if rank is not None else "?"))
    mean = pl.col("vals").list.mean()
    base = rows.select(
        file=pl.lit(ctx.path), line=pl.col("line"), source=pl.lit(KIND), node=pl.lit(ctx.node, pl.String),
        ts=pl.lit(None, pl.Datetime("us")), engine=engine, _max=pl.col("vals").list.max().cast(pl.Float64),
        _mean=mean, _sum=pl.col("vals").list.sum().cast(pl.Float64),
    )
    ratio = base.select("file", "line", "source", "node", "ts", "engine", signal=pl.lit("expert_hotspot_max_over_mean"),
                        value=pl.when(pl.col("_mean") > 0).then(pl.col("_max") / pl.col("_mean")))
    tokens = base.select("file", "line", "source", "node", "ts", "engine", signal=pl.lit("expert_hotspot_row_tokens"),
                         value=pl.col("_sum"))
    signals = pl.concat([ratio, tokens]).filter(pl.col("value").is_not_null()).sort("line", "signal")
    return records, conform_signals(signals)


SOURCE = SourceKind(
    name=KIND,
    parse=parse,
    summary="MindIE expert-hotspot dumps (`prefill/prefill_<rank>.csv`, `decode/decode_<rank>.csv`)",
    file_name=r"(?i)^(?:prefill|decode)_\d+\.csv$",
    sniff=r"^\d+(?:,\d+){3,}$",  # rows of integers only
    signals={
        "expert_hotspot_max_over_mean": "MindIE hotspot dump, last block: per layer row, busiest local expert over "
        "the row mean; engine: `<stage> rank <r> layer <l>`",
        "expert_hotspot_row_tokens": "MindIE hotspot dump, last block: tokens of one layer row (running total)",
    },
    sniff_rank=90,
)
