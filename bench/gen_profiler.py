#!/usr/bin/env python3
"""Write a synthetic torch_npu profiler capture of a DeepSeek-V3/R1 W8A8 decode run, one folder per rank.

    python bench/gen_profiler.py OUT [--ranks 2] [--layers 58] [--steps 200] [--slow-rank 1] [--bf16-layers 0]
                                     [--trace kernels|minimal] [--trace-layout line|lines] [--trace-host]
                                     [--trace-steps N] [--trace-only]

Per rank: ``<host>_<pid>_<ts>_ascend_pt/`` with ``profiler_info_<rank>.json``, ``profiler_metadata.json``,
``ASCEND_PROFILER_OUTPUT/{kernel_details.csv, op_statistic.csv, step_trace_time.csv, trace_view.json}`` and
``analyse.done``. kernel_details has the CANN 8 header (``OP State``, ``Block Num``, dtype/shape and PipeUtilization
columns, start times quoted with a trailing TAB) and 9 kernels per layer and step: 58 layers x 200 steps = 104,400
rows (about 50 MB) per rank. What the data holds, so that both tools can be checked for the same conclusions:
  * one ``NonZero`` on the AI CPU per step (layer 0), MC2 ``MoeDistributeDispatchV2Aicpu``/``CombineV2Aicpu``
    kernels on the AI CPU (not fallbacks);
  * ``--slow-rank``: that rank computes 40% longer; the others wait for it in communication;
  * ``--bf16-layers N``: the GroupedMatmul of the first N MoE layers runs in BF16 (quantization not applied).
trace_view.json holds the same kernels as kernel_details (one ``Ascend Hardware`` X event per row, ``args["Task Type"]``
= the row's Accelerator Core), ``ProfilerStep#N`` and the Overlap Analysis events per step; in one line (as torch_npu
writes it) unless ``--trace-layout lines``: about 33 MB per rank at the defaults, 3x that with ``--trace-host`` (a CANN
launch and a flow pair per kernel). ``--trace-steps`` makes the trace longer than the kernel table (with
``--trace-only``, only the trace is written: ``--ranks 1 --trace-only --trace-steps 13100`` is a 2 GB trace).
``--trace minimal`` writes the small trace of the committed sample instead (lanes and three steps, no kernels):
samples/profiler-w8a8 is ``--ranks 1 --layers 8 --steps 2 --bf16-layers 2 --slow-rank -1 --trace minimal``.
The rank folders are named after the host and pid (the old naming), so the rank comes from profiler_info_<r>.json.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import polars as pl

PMU = [
    "aicore_time(us)", "aic_total_cycles", "aic_mac_time(us)", "aic_mac_ratio", "aic_scalar_time(us)", "aic_scalar_ratio",
    "aic_mte1_time(us)", "aic_mte1_ratio", "aic_mte2_time(us)", "aic_mte2_ratio", "aic_fixpipe_time(us)",
    "aic_fixpipe_ratio", "aic_icache_miss_rate", "aiv_time(us)", "aiv_total_cycles", "aiv_vec_time(us)", "aiv_vec_ratio",
    "aiv_scalar_time(us)", "aiv_scalar_ratio", "aiv_mte2_time(us)", "aiv_mte2_ratio", "aiv_mte3_time(us)",
    "aiv_mte3_ratio", "aiv_icache_miss_rate", "cube_utilization(%)",
]
HEAD = [
    "Step Id", "Model ID", "Task ID", "Stream ID", "Name", "Type", "OP State", "Accelerator Core", "Start Time(us)",
    "Duration(us)", "Wait Time(us)", "Block Num", "Mix Block Num", "HF32 Eligible", "Input Shapes", "Input Data Types",
    "Input Formats", "Output Shapes", "Output Data Types", "Output Formats", "Context ID", *PMU,
]
TOK = 64  # decode tokens per rank and step


def layer_kernels(bf16: bool, first: bool) -> list[tuple]:
    """(name, type, core, duration us, input shapes, input dtypes, output shapes, output dtypes) of one layer."""
    gmm_in = "BF16;BF16;INT64" if bf16 else "INT8;INT8;INT64"
    last = (
        ("aclnnNonzero_NonZeroAiCpu_NonZero", "NonZero", "AI_CPU", 38.0, f"{TOK},256", "BOOL", "512,2", "INT64")
        if first
        else ("aclnnAddRmsNorm_AddRmsNorm_AddRmsNorm", "AddRmsNorm", "AI_VECTOR_CORE", 9.0, f"{TOK},7168;{TOK},7168;7168",
              "DT_BF16;DT_BF16;DT_BF16", f"{TOK},7168;{TOK},1;{TOK},7168", "DT_BF16;FLOAT;DT_BF16")
    )
    return [
        ("aclnnRmsNorm_RmsNormAiCore_RmsNorm", "RmsNorm", "AI_VECTOR_CORE", 8.0, f"{TOK},7168;7168", "DT_BF16;DT_BF16",
         f"{TOK},7168;{TOK},1", "DT_BF16;FLOAT"),
        ("aclnnDynamicQuant_DynamicQuant_DynamicQuant", "DynamicQuant", "AI_VECTOR_CORE", 6.0, f"{TOK},7168", "DT_BF16",
         f"{TOK},7168;{TOK}", "INT8;FLOAT"),
        ("aclnnQuantMatmulV4_QuantBatchMatmulV3_QuantBatchMatmulV3", "QuantBatchMatmulV3", "AI_CORE", 28.0,
         f"{TOK},7168;7168,2112;2112", "INT8;INT8;FLOAT", f"{TOK},2112", "DT_BF16"),
        ("aclnnFusedInferAttentionScoreV3_FusedInferAttentionScore_FusedInferAttentionScore", "FusedInferAttentionScore",
         "MIX_AIC", 55.0, f"{TOK},1,128,512;8192,128,512", "DT_BF16;DT_BF16", f"{TOK},1,128,512", "DT_BF16"),
        ("aclnnMoeGatingTopK_MoeGatingTopK_MoeGatingTopK", "MoeGatingTopK", "AI_VECTOR_CORE", 7.0, f"{TOK},256;256",
         "DT_BF16;FLOAT", f"{TOK},8;{TOK},8", "DT_BF16;INT32"),
        ("MoeDistributeDispatchV2Aicpu", "MoeDistributeDispatchV2", "AI_CPU", 42.0, "", "", "", ""),
        ("aclnnGroupedMatmul_GroupedMatmul_GroupedMatmul", "GroupedMatmul", "MIX_AIC", 95.0 if not bf16 else 160.0,
         f"{TOK * 8},7168;8,7168,4096;8", gmm_in, f"{TOK * 8},4096", "DT_BF16"),
        ("MoeDistributeCombineV2Aicpu", "MoeDistributeCombineV2", "AI_CPU", 40.0, "", "", "", ""),
        last,
    ]


def kernel_details(rank: int, layers: int, steps: int, slow: bool, bf16_layers: int, t0: float,
                   first_step: int = 1) -> pl.DataFrame:
    """The kernel rows of steps ``first_step .. first_step + steps - 1`` (any slice of steps gives the same rows)."""
    proto = []
    for layer in range(layers):
        bf16 = 3 <= layer < 3 + bf16_layers  # DeepSeek: layers 0-2 are dense, MoE from layer 3
        for k in layer_kernels(bf16, layer == 0):
            proto.append((layer, *k))
    base = pl.DataFrame(
        proto, orient="row",
        schema=["layer", "Name", "Type", "Accelerator Core", "dur", "ishape", "idt", "oshape", "odt"],
    ).with_row_index("k")
    per_layer = base.height
    steps_df = pl.DataFrame({"step": list(range(first_step, first_step + steps))})
    f = steps_df.join(base, how="cross")
    factor = 1.4 if slow else 1.0
    jitter = ((pl.col("k") * 7919 + pl.col("step") * 104729 + rank * 31) % 97).cast(pl.Float64) / 970.0
    is_comm = pl.col("Type").str.starts_with("MoeDistribute")
    dur = pl.when(is_comm).then(pl.col("dur") * (1.0 if slow else 2.2)).otherwise(pl.col("dur") * factor) * (1 + jitter)
    f = f.with_columns(dur=dur.round(3))
    f = f.with_columns(start=t0 + (pl.col("step") - 1) * 60000.0 + pl.col("dur").cum_sum().over("step") * 1.05)
    pmu = {c: (pl.col("dur") * 0.93).round(3) if c.endswith("time(us)") else pl.lit(0.41) for c in PMU}
    q = lambda c: pl.when(pl.col(c) == "").then(pl.lit("N/A")).otherwise(pl.format('"{}"', pl.col(c)))  # noqa: E731
    return f.select(
        pl.col("step").alias("Step Id"),
        pl.lit(4294967295).alias("Model ID"),
        (pl.col("k") + (pl.col("step") - 1) * per_layer).alias("Task ID"),
        pl.lit(2).alias("Stream ID"),
        "Name", "Type",
        pl.lit("static").alias("OP State"),
        "Accelerator Core",
        pl.format("{}\t", pl.col("start").round(3)).alias("Start Time(us)"),
        pl.col("dur").alias("Duration(us)"),
        pl.lit(0.6).alias("Wait Time(us)"),
        pl.lit(24).alias("Block Num"),
        pl.when(pl.col("Accelerator Core") == "MIX_AIC").then(48).otherwise(0).alias("Mix Block Num"),
        pl.lit("NO").alias("HF32 Eligible"),
        q("ishape").alias("Input Shapes"),
        pl.when(pl.col("idt") == "").then(pl.lit("N/A")).otherwise(pl.col("idt")).alias("Input Data Types"),
        pl.when(pl.col("idt") == "").then(pl.lit("N/A")).otherwise(pl.lit("ND")).alias("Input Formats"),
        q("oshape").alias("Output Shapes"),
        pl.when(pl.col("odt") == "").then(pl.lit("N/A")).otherwise(pl.col("odt")).alias("Output Data Types"),
        pl.when(pl.col("odt") == "").then(pl.lit("N/A")).otherwise(pl.lit("ND")).alias("Output Formats"),
        pl.lit("N/A").alias("Context ID"),
        **pmu,
    )


HW_PID, OVERLAP_PID = 800, 900  # the lanes' pids (real ones are large numbers; only their names matter)


def _trace_lanes(rank: int) -> list[dict]:
    lanes = [(4100 + rank, "Python", 0), (4376750 + rank, "CANN", 1), (HW_PID, "Ascend Hardware", 2),
             (OVERLAP_PID, "Overlap Analysis", 3)]
    out = []
    for pid, name, order in lanes:
        out.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}})
        out.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": order}})
    out.append({"ph": "M", "name": "thread_name", "pid": HW_PID, "tid": 2, "args": {"name": "Stream 2"}})
    return out


def _str(col: str) -> pl.Expr:
    return pl.col(col).cast(pl.String)


def trace_events(kd: pl.DataFrame, rank: int, host: bool) -> pl.Series:
    """The trace events of these kernel rows, one JSON text each: an ``Ascend Hardware`` X event per kernel (with
    ``args["Task Type"]`` the kernel's core), per step ``ProfilerStep#N`` on the Python lane and the Overlap Analysis
    events (Computing, Communication(Not Overlapped), Free) of step_trace_time.csv; with ``host``, a CANN launch
    (``AscendCL@aclnn<Type>``) and a host-to-device flow pair (``s``/``f``) per kernel."""
    ts = pl.col("Start Time(us)").str.strip_chars("\t")
    hw = kd.select(pl.concat_str([
        pl.lit('{"name": "'), pl.col("Name"), pl.lit(f'", "pid": {HW_PID}, "tid": '), _str("Stream ID"),
        pl.lit(', "ts": "'), ts, pl.lit('", "dur": '), _str("Duration(us)"),
        pl.lit(', "args": {"Model Id": 4294967295, "Task Type": "'), pl.col("Accelerator Core"),
        pl.lit('", "Stream Id": '), _str("Stream ID"), pl.lit(', "Task Id": '), _str("Task ID"),
        pl.lit(', "Batch Id": 0, "Subtask Id": 4294967295, "connection_id": '), _str("Task ID"), pl.lit('}, "ph": "X"}'),
    ]).alias("e"))
    parts = [hw]
    if host:
        cann, tid = 4376750 + rank, 4100 + rank
        launch = (ts.cast(pl.Float64) - 25.0).round(3).cast(pl.String)
        parts.append(kd.select(pl.concat_str([
            pl.lit('{"name": "AscendCL@aclnn'), pl.col("Type"), pl.lit(f'", "pid": {cann}, "tid": {tid}, "ts": "'), launch,
            pl.lit('", "dur": 4.2, "args": {"Thread Id": ' + str(tid) + ', "Mode": "ACL_OP", "level": "acl", "id": "aclnn'),
            pl.col("Type"), pl.lit('", "item_id": "0", "connection_id": '), _str("Task ID"), pl.lit('}, "ph": "X"}'),
        ]).alias("e")))
        parts.append(kd.select(pl.concat_str([
            pl.lit('{"ph": "s", "bp": "e", "name": "HostToDevice", "id": "'), _str("Task ID"),
            pl.lit(f'", "pid": {cann}, "tid": {tid}, "ts": "'), launch, pl.lit('", "cat": "HostToDevice"}'),
        ]).alias("e")))
        parts.append(kd.select(pl.concat_str([
            pl.lit('{"ph": "f", "bp": "e", "name": "HostToDevice", "id": "'), _str("Task ID"),
            pl.lit(f'", "pid": {HW_PID}, "tid": '), _str("Stream ID"), pl.lit(', "ts": "'), ts,
            pl.lit('", "cat": "HostToDevice"}'),
        ]).alias("e")))
    comm = pl.col("Type").str.starts_with("MoeDistribute")
    steps = kd.group_by("Step Id").agg(
        t=pl.col("Start Time(us)").str.strip_chars("\t").cast(pl.Float64).min(),
        c=pl.col("Duration(us)").filter(~comm).sum(), n=pl.col("Duration(us)").filter(comm).sum(),
    ).sort("Step Id")
    for s, t, c, n in steps.iter_rows():
        events = [
            {"ph": "X", "name": f"ProfilerStep#{s}", "pid": 4100 + rank, "tid": 4100 + rank, "ts": f"{t:.3f}",
             "dur": 59000.0, "cat": "cpu_op", "args": {"Sequence number": -1}},
            {"ph": "X", "name": "Computing", "pid": OVERLAP_PID, "tid": 0, "ts": f"{t:.3f}", "dur": round(c, 3)},
            {"ph": "X", "name": "Communication(Not Overlapped)", "pid": OVERLAP_PID, "tid": 1, "ts": f"{t + c:.3f}",
             "dur": round(n, 3)},
            {"ph": "X", "name": "Free", "pid": OVERLAP_PID, "tid": 2, "ts": f"{t + c + n:.3f}", "dur": 850.0},
        ]
        parts.append(pl.DataFrame({"e": [json.dumps(e) for e in events]}))
    return pl.concat(parts)["e"]


def write_minimal_trace(path: Path, rank: int, args, t0: float) -> None:
    """The small trace of the committed sample (samples/profiler-w8a8): lanes, and ProfilerStep/Computing of the
    first three steps, one event per line; no kernels."""
    events = [
        {"ph": "M", "name": "process_name", "pid": 4100 + rank, "tid": 0, "args": {"name": "Python"}},
        {"ph": "M", "name": "process_name", "pid": HW_PID, "tid": 0, "args": {"name": "Ascend Hardware"}},
        {"ph": "M", "name": "process_name", "pid": OVERLAP_PID, "tid": 0, "args": {"name": "Overlap Analysis"}},
    ]
    for s in range(1, min(args.steps, 3) + 1):
        ts = t0 + (s - 1) * 60000.0
        events.append({"ph": "X", "name": f"ProfilerStep#{s}", "pid": 4100 + rank, "tid": 4100 + rank, "ts": f"{ts:.3f}",
                       "dur": 59000.0, "cat": "cpu_op", "args": {"Sequence number": -1}})
        events.append({"ph": "X", "name": "Computing", "pid": OVERLAP_PID, "tid": 0, "ts": f"{ts:.3f}", "dur": 50000.0})
    path.write_text("[\n" + ",\n".join(json.dumps(e) for e in events) + "\n]\n")


def write_trace(path: Path, rank: int, args, t0: float, slow: bool) -> int:
    """``trace_view.json`` of the rank's kernels, written ``args.trace_chunk`` steps at a time: one line (the
    default, ``[{...}, {...}]``) or one event per line (``--trace-layout lines``). ``--trace-steps`` may run past
    the kernel table's steps (a longer trace for memory tests). Returns the bytes written."""
    sep, head, tail = (", ", "[", "]") if args.trace_layout == "line" else (",\n", "[\n", "\n]\n")
    steps = args.trace_steps or args.steps
    size = 0
    with open(path, "w", encoding="utf-8") as out:
        size += out.write(head + sep.join(json.dumps(e) for e in _trace_lanes(rank)))
        for first in range(1, steps + 1, args.trace_chunk):
            n = min(args.trace_chunk, steps + 1 - first)
            kd = kernel_details(rank, args.layers, n, slow, args.bf16_layers, t0, first_step=first)
            size += out.write(sep + trace_events(kd, rank, args.trace_host).str.join(sep).item())
        size += out.write(tail)
    return size


def write_rank(out: Path, rank: int, args) -> None:
    t0 = 1751872031000000.0 + rank * 3.0
    folder = out / f"ascend{rank // 8:02d}_{41000 + rank}_20250707101200{rank:03d}_ascend_pt"
    prof = folder / "ASCEND_PROFILER_OUTPUT"
    prof.mkdir(parents=True, exist_ok=True)
    slow = rank == args.slow_rank
    if args.trace_only:
        write_trace(prof / "trace_view.json", rank, args, t0, slow)
        return
    kd = kernel_details(rank, args.layers, args.steps, slow, args.bf16_layers, t0)
    kd.write_csv(prof / "kernel_details.csv", quote_style="necessary")
    stat = (
        kd.group_by("Type", "Accelerator Core")
        .agg(Count=pl.len(), total=pl.col("Duration(us)").sum(), mn=pl.col("Duration(us)").min(),
             avg=pl.col("Duration(us)").mean(), mx=pl.col("Duration(us)").max())
        .with_columns(ratio=(pl.col("total") / pl.col("total").sum() * 100).round(3))
        .sort("total", descending=True)
        .select(pl.lit(rank).alias("Device_id"), pl.col("Type").alias("OP Type"), pl.col("Accelerator Core").alias("Core Type"),
                "Count", pl.col("total").round(3).alias("Total Time(us)"), pl.col("mn").alias("Min Time(us)"),
                pl.col("avg").round(3).alias("Avg Time(us)"), pl.col("mx").alias("Max Time(us)"), pl.col("ratio").alias("Ratio(%)"))
    )
    stat.write_csv(prof / "op_statistic.csv")
    comp = kd.filter(~pl.col("Type").str.starts_with("MoeDistribute")).group_by("Step Id").agg(c=pl.col("Duration(us)").sum()).sort("Step Id")
    comm_base = 2 * args.layers * 41.0
    steps = comp.select(
        pl.lit(rank).alias("Device_id"), pl.col("Step Id").alias("Step"), pl.col("c").round(3).alias("Computing"),
        pl.lit(comm_base * (1.0 if slow else 3.0)).round(3).alias("Communication(Not Overlapped)"),
        pl.lit(120.0).alias("Overlapped"), pl.lit(comm_base * (1.0 if slow else 3.0) + 120).round(3).alias("Communication"),
        pl.lit(850.0).alias("Free"), pl.lit(0.0).alias("Stage"), pl.lit(0.0).alias("Bubble"),
        pl.lit(comm_base * (1.0 if slow else 3.0)).round(3).alias("Communication(Not Overlapped and Exclude Receive)"),
        pl.lit(0.0).alias("Preparing"),
    )
    steps.write_csv(prof / "step_trace_time.csv")
    if args.trace == "minimal":
        write_minimal_trace(prof / "trace_view.json", rank, args, t0)
    else:
        write_trace(prof / "trace_view.json", rank, args, t0, slow)
    (folder / f"profiler_info_{rank}.json").write_text(json.dumps({
        "config": {"common_config": {"activities": ["ProfilerActivity.CPU", "ProfilerActivity.NPU"], "record_shapes": True},
                   "experimental_config": {"_profiler_level": "Level1", "_aic_metrics": "PipeUtilization",
                                           "_data_simplification": True}},
        "start_info": {"syscnt_enable": True, "freq": 100.0}, "end_info": {}, "rank_id": rank,
        "torch_npu_version": "2.5.1.post1", "cann_version": "8.1.RC1"}, indent=1))
    (folder / "profiler_metadata.json").write_text(json.dumps({
        "ENV_VARIABLES": {"ASCEND_GLOBAL_LOG_LEVEL": "3", "HCCL_BUFFSIZE": "200", "TASK_QUEUE_ENABLE": "1"},
        "distributed_args": {"tp": 1, "pp": 1, "dp": args.ranks, "rank": rank, "world_size": args.ranks},
        "parallel_group_info": {"exp": {"group_name": "exp", "group_rank": rank, "global_ranks": list(range(args.ranks))}},
    }, indent=1))
    (prof / "analyse.done").write_text("")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--layers", type=int, default=58)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--slow-rank", type=int, default=1, help="rank that computes 40%% longer (-1: none)")
    ap.add_argument("--bf16-layers", type=int, default=0, help="MoE layers whose GroupedMatmul runs in BF16")
    ap.add_argument("--trace", choices=("kernels", "minimal"), default="kernels",
                    help="trace_view.json with every kernel (default), or the small one of samples/profiler-w8a8")
    ap.add_argument("--trace-layout", choices=("line", "lines"), default="line",
                    help="trace_view.json in one line (default) or one event per line")
    ap.add_argument("--trace-host", action="store_true", help="add a CANN launch and a flow pair per kernel to the trace")
    ap.add_argument("--trace-steps", type=int, default=0, help="steps in trace_view.json (default: --steps)")
    ap.add_argument("--trace-chunk", type=int, default=100, help=argparse.SUPPRESS)
    ap.add_argument("--trace-only", action="store_true", help="write only trace_view.json (memory tests)")
    args = ap.parse_args()
    for rank in range(args.ranks):
        write_rank(args.out, rank, args)
    rows = args.layers * args.steps * 9
    if args.trace_only:
        sizes = [p.stat().st_size for p in args.out.glob("*_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json")]
        print(f"wrote trace_view.json of {args.trace_steps or args.steps} steps for {args.ranks} rank(s) under "
              f"{args.out}: {max(sizes) / 1e6:.0f} MB each")
        return
    print(f"wrote {args.ranks} rank folder(s) under {args.out}: {rows} kernel_details rows each")


if __name__ == "__main__":
    main()
