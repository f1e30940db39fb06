"""``step_trace_time*.csv`` and msprof-analyze ``cluster_step_trace_time*.csv``: per step and rank Computing,
Communication(Not Overlapped), Free; the slow rank (straggler) among the ranks of one file."""

from __future__ import annotations

import re

import polars as pl

from diagnose.model import empty_signals
from diagnose.parsers.lineframe import FileContext
from diagnose.parsers.kinds.profiling.shared import engine_expr, finish, first_line, note, num, signal_frame, text_col

# --- step_trace_time / cluster_step_trace_time ----------------------------------------------------


def parse_step_trace(frame: pl.DataFrame, cols: dict[str, str], records: pl.DataFrame, ctx: FileContext, cluster: bool):
    need = ("computing", "comm_no", "free")
    if not all(c in cols for c in need):
        missing = [c for c in need if c not in cols]
        why = f"profiler: step trace without the {', '.join(missing)} column(s): slow-rank check could not run"
        return note(records, first_line(records), why), empty_signals()
    if cluster and "rowtype" in cols and "index" in cols:
        t = frame.filter(pl.col(cols["rowtype"]).str.strip_chars().str.to_lowercase() == "rank")
        engine = pl.format("rank {}", pl.col(cols["index"]).str.strip_chars())
    else:
        t = frame
        engine = engine_expr(ctx, cols)
    s = t.select(
        "line",
        engine=engine,
        step=text_col(cols, "step"),
        computing_us=num(cols["computing"]),
        comm_not_overlapped_us=num(cols["comm_no"]),
        free_us=num(cols["free"]),
    ).filter(pl.col("computing_us").is_not_null())
    msg = pl.format(
        "step {} {}: computing {} us, communication not overlapped {} us, free {} us",
        pl.col("step").fill_null("-"), pl.col("engine"), *[pl.col(c).round(1).cast(pl.String).fill_null("N/A") for c in ("computing_us", "comm_not_overlapped_us", "free_us")],
    )
    records = finish(records, s.select("line", message=msg))
    long = s.unpivot(index=["line", "engine"], on=["computing_us", "comm_not_overlapped_us", "free_us"],
                     variable_name="signal", value_name="value").with_columns(text=pl.lit(None, pl.String))
    signals = signal_frame(long.to_dicts(), ctx)
    per = per_rank_step(s)
    extra = straggler(per)
    if extra:
        signals = pl.concat([signals, signal_frame(extra, ctx)])
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
