"""``kernel_details*.csv`` / ``op_summary*.csv``: one row per kernel launch. AI CPU fallbacks, quantized-matmul
coverage, FP8 inputs, GroupedMatmul time and tokens per rank (MoE imbalance within one file)."""

from __future__ import annotations

import polars as pl

from diagnose.parsers.lineframe import FileContext
from diagnose.parsers.kinds.profiling.shared import (
    COMM_CORE, DISPATCH, EPOCH_US, FP8, GMM, HALF, MATMUL, MC2, QUANT, QUANT_OPS, base_name, clean, dtypes, finish,
    first_line, fmt, folder_key, keep_rows, num, rank_from_path, raw_records, signal_frame, top_ops,
)

# --- kernel_details / op_summary -------------------------------------------------------------------


def parse_kernels(frame: pl.DataFrame, cols: dict[str, str], lines: pl.DataFrame, ctx: FileContext):
    """(records, signals) of a kernel table read as ``frame`` (its columns ``cols``) from ``lines``: records of the
    header, the notable rows, the evidence lines and any line that is not a data row."""
    has_dtype = "in_dtypes" in cols
    has_shape = "in_shapes" in cols
    raw = {key: (pl.col(cols[key]) if key in cols else pl.lit(None, pl.String)).alias(f"_r{key}")
           for key in ("name", "type", "core", "in_shapes", "in_dtypes", "out_dtypes", "device")}
    k = frame.select(
        "line",
        *raw.values(),
        start=pl.col(cols["start"]) if "start" in cols else pl.lit(None, pl.String),
        dur=num(cols["dur"]) if "dur" in cols else pl.lit(None, pl.Float64),
    )
    # A kernel table repeats a few hundred distinct kernels (name, dtypes, shapes) per step: every string
    # test runs once per distinct kernel (``_kid``, in first-seen order); the rows get only the kernel's flags, and
    # the few rows that are reported get its strings (``detail``).
    keys = [f"_r{key}" for key in raw]
    groups = k.select(keys).with_row_index("_row").group_by(keys, maintain_order=True).agg(pl.col("_row"))
    kid = groups.select(pl.int_range(pl.len(), dtype=pl.UInt32).alias("_kid"), "_row").explode("_row").sort("_row")["_kid"]
    kernels = groups.drop("_row").with_columns(
        name=clean("_rname"), _t=clean("_rtype"), core=clean("_rcore").str.to_uppercase(),
        ind=dtypes("_rin_dtypes"), outd=dtypes("_rout_dtypes"), shapes=clean("_rin_shapes"),
    )
    rank = rank_from_path(ctx.path)
    label = f"rank {rank}" if rank is not None else "profile " + (folder_key(ctx.path).rsplit("/", 1)[-1] or base_name(ctx.path))
    dev = pl.col("_rdevice").str.strip_chars(" \t\"'").cast(pl.Float64, strict=False).cast(pl.Int32)
    name, ind = pl.col("name").fill_null(""), pl.col("ind").fill_null("")
    kernels = kernels.with_columns(
        type=pl.coalesce(pl.col("_t"), pl.col("name").str.extract(r"_([A-Za-z0-9]+)$", 1), pl.col("name")),
        _n_aicpu=name.str.contains("AiCpu|AICPU"),
        _n_mc2=name.str.contains(MC2),
        _n_hcom=name.str.contains(r"^hcom_"),
        _q=ind.str.contains(QUANT),
        _half=ind.str.contains(HALF),
        _fp8=ind.str.contains(FP8),
        _tokens=pl.col("shapes").str.extract(r"^(\d+)", 1).cast(pl.Float64, strict=False),
        _w=pl.col("shapes").str.split(";").list.get(1, null_on_oob=True),
        device=dev,
        engine=pl.when(dev.is_not_null() & pl.lit(rank is None)).then(pl.format("device {}", dev)).otherwise(pl.lit(label)),
    )
    typ = pl.col("type").fill_null("")
    kernels = kernels.with_columns(
        _mm=typ.str.contains(MATMUL),
        _gmm=typ.str.contains(GMM),
        _disp=typ.str.contains(DISPATCH),
        _qop=typ.str.contains(QUANT_OPS),
        _t_mc2=typ.str.contains(MC2),
    )
    core = pl.col("core").fill_null("")
    aicpu_like = (core == "AI_CPU") | pl.col("_n_aicpu")
    mc2 = aicpu_like & (pl.col("_n_mc2") | pl.col("_t_mc2"))
    kernels = kernels.with_columns(
        _comm=core.str.contains(COMM_CORE) | pl.col("_n_hcom"),
        _mc2=mc2,
        _aicpu=aicpu_like & ~mc2,
    )
    flags = ["_comm", "_aicpu", "_mm", "_q", "_qop", "_half", "_fp8", "_gmm", "_disp"]
    k = pl.concat([k.select("line", "start", "dur"), kernels.select(flags)[kid], kid.to_frame()], how="horizontal")
    strings = kernels.drop(keys + flags).with_row_index("_kid")

    def detail(rows: pl.DataFrame) -> pl.DataFrame:
        return rows.join(strings, on="_kid", how="left", maintain_order="left")
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
    ai_ops = top_ops(detail(k.filter(pl.col("_aicpu"))), with_dtype=has_dtype)
    ai_tail = f" (AI CPU {share:.1f}% of device time: {fmt(agg['aicpu'])} of {fmt(agg['dev'])} us in {agg['n_aicpu']} launches)"
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
    ts = pl.when(start.is_between(*EPOCH_US)).then(pl.from_epoch(start.cast(pl.Int64), time_unit="us"))
    level = pl.when(pl.col("_aicpu")).then(pl.lit("WARNING")).otherwise(pl.lit("INFO"))
    notable = pl.col("_aicpu") | (pl.lit(quant_mode) & unq)  # MC2 rows: thousands, not news
    rows = detail(k.filter(notable)).select("line", message=msg, ts=ts, level=level, device="device", component="type")
    notes = []
    if not has_dtype or not has_shape:
        missing = [c for c, ok in (("Input Data Types", has_dtype), ("Input Shapes", has_shape)) if not ok]
        skipped = ["quantized-operator coverage", "FP8/INT8 dtype checks"] if not has_dtype else []
        skipped += ["MoE token counts (GroupedMatmul first dimension)"] if not has_shape else []
        notes.append(
            f"profiler: no {' / '.join(missing)} column (captured with aic_metrics=AiCoreNone?): "
            f"{', '.join(skipped)} could not run; AI CPU and timing checks did"
        )
    header = int(frame["line"][0]) - 1 if frame.height else first_line(lines)
    if notes:
        rows = pl.concat([rows, pl.DataFrame({"line": [header], "message": [notes[0]], "level": ["WARNING"]})], how="diagonal_relaxed")

    # signals
    out: list[dict] = []
    eng = detail(k.head(1))["engine"][0] if k.height else None
    if k.height:
        worst_ai = k.filter(pl.col("_aicpu")).sort("dur", descending=True, nulls_last=True)
        line = int(worst_ai["line"][0]) if worst_ai.height else header
        text = f"{eng}: {share:.1f}% of {fmt(agg['dev'])} us device time on the AI CPU ({fmt(agg['aicpu'])} us, {agg['n_aicpu']} launches)"
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
            unqk = detail(k.filter(unq))
            worst = unqk.sort("dur", descending=True, nulls_last=True)
            line = int(worst["line"][0]) if worst.height else header
            ops = top_ops(unqk, with_dtype=True, by_weight=True)
            text = (
                f"{eng}: {cov:.1f}% of {fmt(agg['mm'])} us matmul time runs with quantized inputs; "
                f"{fmt(agg['mm'] - agg['qmm'])} us does not"
            )
            text += f"; BF16/FP16 matmuls: {ops}" if ops else ""
            out.append(dict(line=line, engine=eng, signal="quant_matmul_coverage_pct", value=cov, text=text))
    out += moe_from_kernels(detail(k.filter(pl.col("_gmm") | pl.col("_disp"))), header)
    records = finish(raw_records(keep_rows(lines, frame["line"], rows["line"], [r["line"] for r in out]), ctx), rows)
    return records, signal_frame(out, ctx)


def moe_from_kernels(k: pl.DataFrame, header: int) -> list[dict]:
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
    ranks = ", ".join(f"{r['engine']} {fmt(r['gmm_time_us'])} us" for r in per.sort("engine").head(16).iter_rows(named=True))
    disp = ""
    if "moe_dispatch_combine_us" in per.columns and per["moe_dispatch_combine_us"].drop_nulls().len():
        least = per.sort("moe_dispatch_combine_us", nulls_last=True).row(0, named=True)
        disp = (f"; dispatch/combine wait is shortest on {least['engine']} "
                f"({fmt(least['moe_dispatch_combine_us'] or 0)} us): the others wait for it")
    text = (f"{top['engine']} spends {fmt(top['gmm_time_us'])} us in GroupedMatmul, {ratio:.2f}x the mean "
            f"{fmt(mean)} us over {per.height} ranks{tok_txt}{disp}; per rank: {ranks}")
    return [dict(line=top["line"], engine=top["engine"], signal="moe_rank_imbalance", value=ratio, text=text)]
