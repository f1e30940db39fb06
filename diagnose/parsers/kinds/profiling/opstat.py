"""``op_statistic*.csv``: one row per op type and core type; the AI CPU share of device time."""

from __future__ import annotations

import polars as pl

from diagnose.model import empty_signals
from diagnose.parsers.lineframe import FileContext
from diagnose.parsers.kinds.profiling.shared import MAX_LIST, MC2, engine_expr, finish, fmt, num, signal_frame, text_col

def parse_op_statistic(frame: pl.DataFrame, cols: dict[str, str], records: pl.DataFrame, ctx: FileContext):
    if "core" not in cols or "total" not in cols:
        return records, empty_signals()
    s = frame.select(
        "line",
        engine=engine_expr(ctx, cols),
        type=text_col(cols, "type"),
        core=text_col(cols, "core").str.to_uppercase(),
        count=num(cols["count"]) if "count" in cols else pl.lit(None, pl.Float64),
        total=num(cols["total"]),
    )
    mc2 = pl.col("type").fill_null("").str.contains(MC2)
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
    records = finish(records, rows.filter(pl.col("message").is_not_null()))
    eng = s["engine"][0] if s.height else None
    out = []
    if s.height:
        worst = ai.sort("total", descending=True, nulls_last=True)
        line = int(worst["line"][0]) if worst.height else int(s["line"][0])
        ops = "; ".join(f"{r['type']} x{int(r['count'] or 0)} {fmt(r['total'] or 0)} us" for r in worst.head(MAX_LIST).iter_rows(named=True))
        text = f"{eng}: {share:.1f}% of {fmt(dev)} us device time on the AI CPU ({fmt(ai_t)} us)" + (f": {ops}" if ops else "")
        out.append(dict(line=line, engine=eng, signal="aicpu_time_share_pct", value=share, text=text))
    return records, signal_frame(out, ctx)
