"""Analyses across files, run once on all signals of a run: ranks named from ``profiler_info_<r>.json``, the slow rank
and the MoE imbalance across ranks whose data sit in separate folders."""

from __future__ import annotations

import polars as pl

from diagnose.model import conform_signals
from diagnose.parsers.kinds.profiling.shared import KIND, folder_key
from diagnose.parsers.kinds.profiling.kernels import moe_imbalance
from diagnose.parsers.kinds.profiling.steps import straggler

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
            extra.append(cross_rows(rows, where["file"], prof))
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
            extra.append(cross_rows(rows, where["file"], prof))
    if not extra:
        return signals
    return pl.concat([signals, *extra], how="vertical_relaxed")


def cross_rows(rows: list[dict], file: str, prof: pl.DataFrame) -> pl.DataFrame:
    node = prof.filter(pl.col("file") == file)["node"]
    frame = pl.DataFrame(rows, schema={"line": pl.UInt32, "engine": pl.String, "signal": pl.String, "value": pl.Float64, "text": pl.String})
    return conform_signals(frame.with_columns(file=pl.lit(file), source=pl.lit(KIND), node=pl.lit(node[0] if node.len() else None, pl.String)))
