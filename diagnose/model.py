"""The contract between the rooms: record and signal schemas, findings, and the report.

Every parser returns two polars frames with exactly these columns (``empty_records()`` and
``empty_signals()`` give them; ``conform_*`` fills missing columns with nulls and casts):

records, one row per input line, nothing dropped
    file       str       display path of the file (archive members as ``archive.tgz!member``)
    line       u32       1-based line number in the decoded file
    source     str       kind of the file: vllm, mindie, plog, npu-smi, version-info, ..., unknown
    node       str?      node/host the file belongs to (from its path, or a Ray ``ip=`` prefix)
    ts         datetime? timestamp (microseconds, wall clock of the node; see timeline.py)
    year_known bool      the timestamp carried its own year (False: dated by timeline.py)
    proc       str?      process label, e.g. ``EngineCore_DP0``, ``Worker_TP0_EP0``, ``mindie-server``
    pid        i64?
    rank       i32?      distributed rank, when the line or its path says it
    device     i32?      NPU device id
    level      str?      DEBUG, INFO, WARNING, ERROR, CRITICAL
    component  str?      logger location (``core.py:123``) or module (``HCCL``)
    code       str?      error code found on the line (``EI0006``, ``MIE04E010109``, ``ERR02200``)
    message    str       the line's message (header stripped); the whole line for raw lines
    text       str       the whole line as read (colour codes and CR removed)
    parsed     bool      the header was recognised; False = kept as a raw record
    event      u32       line number of the record that opened this multi-line event (tracebacks)

signals, numbers (and a few strings) that parsers extract, one row per observation
    file, line, source, node, ts (as above)
    engine     str?      the instance the value belongs to (``Engine 000``, a process, a device)
    signal     str       name, e.g. ``kv_cache_usage_pct``; the catalog is SIGNALS below
    value      f64?      numeric value
    text       str?      string value (versions, config keys) for ``mismatch`` rules
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import polars as pl

SEVERITIES = ("info", "warning", "error", "critical")
SEVERITY_RANK = {name: i for i, name in enumerate(SEVERITIES)}

CATEGORIES = (
    "mtp",
    "quantization",
    "operators",
    "moe-load",
    "kv-cache",
    "memory",
    "communication",
    "versions",
    "device",
    "engine",
    "config",
    "performance",
)

RECORD_SCHEMA: dict[str, pl.DataType] = {
    "file": pl.String,
    "line": pl.UInt32,
    "source": pl.String,
    "node": pl.String,
    "ts": pl.Datetime("us"),
    "year_known": pl.Boolean,
    "proc": pl.String,
    "pid": pl.Int64,
    "rank": pl.Int32,
    "device": pl.Int32,
    "level": pl.String,
    "component": pl.String,
    "code": pl.String,
    "message": pl.String,
    "text": pl.String,
    "parsed": pl.Boolean,
    "event": pl.UInt32,
}

SIGNAL_SCHEMA: dict[str, pl.DataType] = {
    "file": pl.String,
    "line": pl.UInt32,
    "source": pl.String,
    "node": pl.String,
    "ts": pl.Datetime("us"),
    "engine": pl.String,
    "signal": pl.String,
    "value": pl.Float64,
    "text": pl.String,
}

# Signals the built-in parsers emit. Rules may name others (user parsers), but these are documented.
SIGNALS: dict[str, str] = {
    "kv_cache_usage_pct": "KV cache usage in percent (vLLM throughput line `GPU KV cache usage`)",
    "running_reqs": "requests running in the engine",
    "waiting_reqs": "requests waiting (V1 `Waiting`, V0 `Pending`)",
    "swapped_reqs": "requests swapped out (V0)",
    "prompt_throughput": "average prompt throughput, tokens/s",
    "gen_throughput": "average generation throughput, tokens/s",
    "prefix_cache_hit_pct": "prefix cache hit rate in percent",
    "spec_acceptance_pct": "speculative decoding draft acceptance rate in percent (V0 fractions scaled)",
    "spec_mean_acceptance_len": "mean acceptance length (1.00 = no draft token accepted)",
    "spec_accepted_tokens": "draft tokens accepted in the interval",
    "spec_drafted_tokens": "draft tokens proposed in the interval",
    "spec_pos_acceptance": "acceptance at one draft position (fraction); `engine` carries `#<pos>`",
    "spec_first_pos_acceptance": "derived: acceptance at draft position 1 (fraction), on lines with 2+ positions",
    "spec_last_pos_acceptance": "derived: acceptance at the last draft position (fraction), on lines with 2+ positions",
    "max_num_seqs": "max_num_seqs configured (`--max-num-seqs`, args/config)",
    "kv_concurrency_vs_max_num_seqs": "derived: `Maximum concurrency` at max_model_len divided by max_num_seqs",
    "dp_running_imbalance": "derived: max/mean `Running` across DP engines (`Engine NNN`) in one logging round; on the busiest engine",
    "dp_kv_usage_gap": "derived: KV usage of that busiest engine minus the mean of the other engines, points",
    "gen_throughput_drop_pct": "derived: generation throughput of an engine's last quarter of periodic lines below its first quarter, % (only when as many requests run)",
    "spec_acceptance_drop_pts": "derived: draft acceptance of an engine's first quarter of metric lines minus its last quarter, points",
    "kv_cache_tokens": "KV cache capacity in tokens (`GPU KV cache size`)",
    "kv_blocks": "KV cache blocks (`# npu blocks`)",
    "max_concurrency": "maximum concurrency at max_model_len (`Maximum concurrency for N tokens`)",
    "max_model_len": "maximum model length configured (from the concurrency line or args)",
    "weights_gb": "memory taken by model weights per rank (`Loading model weights took`)",
    "speculative_method": "speculative decoding method configured (text: mtp, deepseek_mtp, eagle, ...)",
    "num_speculative_tokens": "speculative tokens per step configured",
    "quantization": "quantization method configured (text)",
    "vllm_version": "vLLM version printed at start-up (text)",
    "tensor_parallel_size": "tensor-parallel size configured",
    # validation runs (parsers/bench_results.py, parsers/accuracy.py); `engine` = run label (file stem
    # without timestamp) for bench_*, the dataset for accuracy_pct, the model name for set-up values
    "bench_completed": "benchmark requests completed (`completed`, `Successful requests:`, AISBench Success Requests)",
    "bench_failed_requests": "benchmark requests failed (`failed`, or num_prompts − completed / errors in legacy files)",
    "bench_num_prompts": "benchmark requests sent (`num_prompts`, AISBench Total Requests)",
    "bench_duration_s": "benchmark duration, s",
    "bench_request_throughput": "benchmark request throughput, req/s",
    "bench_output_throughput": "benchmark output token throughput, tokens/s",
    "bench_total_throughput": "benchmark total (prompt + output) token throughput, tokens/s",
    "bench_input_tokens": "benchmark total input tokens",
    "bench_output_tokens": "benchmark total generated tokens",
    "bench_max_concurrency": "benchmark max concurrency (`--max-concurrency`, AISBench batch_size)",
    "bench_request_rate": "benchmark request rate, req/s (inf = all at once)",
    "bench_<stat>_<m>_ms": "latency statistic, ms: stat mean|median|p99|p90..., m ttft|tpot|itl|e2el (e.g. bench_p99_tpot_ms)",
    "bench_latency_avg_ms": "`vllm bench latency` average batch latency, ms (also bench_latency_p50_ms/p90/p99)",
    "bench_latency_climb_pct": "end-to-end latency of the last quarter of a stress run's requests over the first quarter, %",
    "bench_length_capped_pct": "share of outputs that stopped at the max-tokens limit, %",
    "bench_temperature": "sampling temperature of a benchmark/accuracy run",
    "bench_max_tokens": "output-token limit of a run (max_tokens, AISBench max_out_len, lm-eval max_gen_toks)",
    "bench_tp": "tensor-parallel size the benchmark says it ran against (metadata)",
    "bench_model": "model name the benchmark used (text)",
    "bench_quantization": "quantization the benchmark run declares (text, metadata)",
    "accuracy_pct": "accuracy of one dataset in percent (AISBench score, lm-eval fraction × 100); engine = dataset",
    # derived by diagnose/compare.py from a --baseline (see parsers/comparison.py for the facts format)
    "regression_pct": "how much worse than the baseline a performance metric is, % (only beyond tolerance); engine = metric",
    "accuracy_drop_points": "accuracy lost against the baseline, points (only beyond tolerance); engine = dataset",
    "comparison_not_comparable": "1 per difference (quantization, concurrency, ...) that makes the baseline comparison not like for like",
    "bench_server_mismatch": "1 per benchmark set-up value (tp, model) that differs from the server log's",
    "served_model": "model path or served model name the vLLM server was started with (text)",
    # EPLB log lines (vllm.py) and MindIE expert-hotspot dumps (parsers/expert_hotspot.py)
    "eplb_imbalance_current_mean": "vllm-ascend EPLB: mean over layers of per-layer rank max/mean, current placement",
    "eplb_imbalance_current_max": "vllm-ascend EPLB: max over layers of per-layer rank max/mean, current placement",
    "eplb_imbalance_updated_mean": "vllm-ascend EPLB: mean over layers of rank max/mean after the planned rebalance",
    "eplb_imbalance_updated_max": "vllm-ascend EPLB: max over layers of rank max/mean after the planned rebalance",
    "eplb_balancedness": "upstream vLLM EPLB balancedness = avg/max tokens per EP rank (1.0 = perfect)",
    "eplb_avg_tokens": "upstream vLLM EPLB avg_tokens per EP rank",
    "eplb_max_tokens": "upstream vLLM EPLB max_tokens on one EP rank",
    "expert_hotspot_max_over_mean": "MindIE hotspot dump, last block: per layer row, busiest local expert over the row mean; engine: `<stage> rank <r> layer <l>`",
    "expert_hotspot_row_tokens": "MindIE hotspot dump, last block: tokens of one layer row (running total)",
    # npu-smi (engine npu<id> or npu<id>/chip<c>) and version files / start-up version lines (text)
    "driver_version": "Ascend driver (HDK) version: npu-smi header `Version:`, driver version.info, `-t board` "
    "Software Version (text, lower-case)",
    "firmware_version": "NPU firmware version (`npu-smi info -t board` Firmware Version, firmware version.info)",
    "npu_health": "npu-smi Health of one NPU/chip (text: OK, Warning, Alarm, Critical, UNKNOWN)",
    "npu_model": "NPU name in npu-smi (text: 910B2C, Ascend910, 310P3)",
    "npu_compatibility": "driver/firmware Compatibility from `npu-smi info -t board` (text: OK, NOK, UNKNOWN)",
    "faulty_chip_count": "Faulty Chip Count from `npu-smi info -t board`",
    "hbm_used_mb": "HBM in use on one NPU/chip, MB (npu-smi HBM-Usage)",
    "hbm_total_mb": "HBM capacity of one NPU/chip, MB",
    "mem_used_mb": "device memory (DDR) in use, MB (npu-smi Memory-Usage; the only pair on 310P)",
    "mem_total_mb": "device memory (DDR) capacity, MB",
    "aicore_pct": "AI Core utilisation in percent (npu-smi AICore(%))",
    "power_w": "NPU power draw, W",
    "temp_c": "NPU temperature, degrees C",
    "npu_process_count": "processes npu-smi lists on one NPU/chip (0 = `No running processes found`), at its chip row",
    "cann_version": "CANN version (toolkit install.info, version.cfg, `latest ->` symlinks, start-up lines; text)",
    "cann_generation": "major.minor of every CANN-family version seen (derived per bundle; text, e.g. 8.2)",
    "driver_cann_combo": "driver and CANN version seen on one node (derived; text `driver=24.1.rc2.2 cann=8.3.RC2`)",
    "atb_version": "NNAL/ATB version (`Ascend-cann-atb : 8.0.T63`; text)",
    "atb_models_version": "ATB-Models version (text)",
    "mindie_version": "MindIE version (`Ascend-mindie : MindIE 2.0.T3.B010`; text)",
    "vllm_ascend_version": "vllm-ascend version (collect_env `vLLM Ascend Version:`, pip lines; text)",
    "torch_npu_version": "torch_npu version (pip lines, `torch_npu version`; text)",
    "hccl_connect_timeout_s": "HCCL_CONNECT_TIMEOUT in force, s (plog `set by ... to [N]s`, env, `wait socket establish timeout ... timeout[N]`)",
    "hccl_exec_timeout_s": "HCCL_EXEC_TIMEOUT in force, s (plog `set by ... to [N]s`, env, `notify wait timeout ... timeout=Ns`)",
    "hccl_watchdog_timeout_s": "torch_npu watchdog timeout of a collective, s (`WorkHCCL(... Timeout(ms)=N)`)",
    "hccl_remote_rank": "remote rank named by an HCCL error (`remote rank[N]`, `remoteRank[N]`)",
    "hccl_link_remote_rank": "LINK_ERROR_INFO row: remote (dest) rank; text = its IP; engine = local `ip(rank)`",
    "hccl_link_local_rank": "LINK_ERROR_INFO row: local (src) rank; text = its IP",
    "hccl_link_error": "LINK_ERROR_INFO row: value = dest port; text = `dest_ip(rank r):port <- src_ip(rank r) role status`",
    "hccl_stuck_location": "`Cluster Exception Location[IP/ID]` the others wait on: text `ip/id`, value = id",
    "hccl_peer": "the peer an HCCL error names (text): `rank 29 (10.20.0.31:16666, link time out)`, `ip/id (Cluster Exception Location, ...)`",
    "npu_nic": "device NIC named by an HCCP/HCCL init or listen line (text): `192.168.20.148 (device 0)`, `ip:port`",
    "aicore_fault_kernel": "kernel of an aicore fault/timeout (`fault kernel_name=...`, text)",
    # NPU out-of-memory message numbers (parsers/oom.py), GiB; `engine` is `NPU <n>`
    "npu_oom_request_gib": "allocation that failed (`Tried to allocate`), GiB",
    "npu_oom_total_gib": "NPU HBM total capacity printed with the OOM, GiB",
    "npu_oom_allocated_gib": "memory already allocated by this process's PyTorch allocator at the OOM, GiB",
    "npu_oom_reserved_gib": "memory reserved by this process's PyTorch allocator at the OOM, GiB",
    "npu_oom_free_gib": "free HBM at the OOM, GiB",
    "npu_oom_held_elsewhere_gib": "total − reserved (or allocated) − free at the OOM: HBM held outside this process, GiB",
    # MindIE config.json (parsers/mindie_config.py); `engine` is the model instance, `ModelConfig[0]`
    "mindie_world_size": "MindIE ModelConfig worldSize",
    "mindie_device_count": "number of NPU ids in BackendConfig npuDeviceIds for one model instance",
    "mindie_device_world_gap": "|len(npuDeviceIds) − worldSize| in a single-node MindIE config (0 = consistent)",
    "mindie_multi_node": "MindIE multiNodesInferEnabled (1 = multi-node, device ids come from the rank table)",
    "mindie_model_instances": "MindIE modelInstanceNumber",
    "mindie_dp": "MindIE ModelConfig dp (attention data parallel)",
    "mindie_tp": "MindIE ModelConfig tp (attention tensor parallel)",
    "mindie_moe_tp": "MindIE ModelConfig moe_tp",
    "mindie_moe_ep": "MindIE ModelConfig moe_ep (expert parallel)",
    "mindie_max_seq_len": "MindIE maxSeqLen (tokens)",
    "mindie_max_input_token_len": "MindIE maxInputTokenLen (tokens)",
    "mindie_npu_mem_size": "MindIE npuMemSize (GB for the KV cache; -1 = automatic)",
    "mindie_cpu_mem_size": "MindIE cpuMemSize (GB)",
    "mindie_cache_block_size": "MindIE cacheBlockSize (tokens per KV block)",
    "mindie_max_prefill_tokens": "MindIE maxPrefillTokens",
    "mindie_max_prefill_batch_size": "MindIE maxPrefillBatchSize",
    "mindie_max_batch_size": "MindIE maxBatchSize",
    "mindie_max_iter_times": "MindIE maxIterTimes",
    # profiler (diagnose/parsers/profiling.py); `engine` is the rank (`rank 3`) or `device N`
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
    # preflight facts (source `preflight`, diagnose/preflight/checks.py): one per `key = value  # note` line
    "mtp_enabled": "preflight: the launch enables MTP speculative decoding (1/0)",
    "mtp_layer_in_weights": "preflight: the weight map has tensors of the MTP layer model.layers.<num_hidden_layers>.* (1/0)",
    "mtp_layer_in_quant_desc": "preflight: quant_model_description.json has entries for the MTP layer (1/0)",
    "quant_desc_missing_tensors": "preflight: weight-map tensors without a quant_model_description.json entry",
    "quant_desc_extra_entries": "preflight: quant_model_description.json entries naming no weight-map tensor",
    "moe_static_w8a8_experts": "preflight: routed-expert weights typed static W8A8 in the quantization description",
    "fp8_on_a2a3": "preflight: FP8 checkpoint for an Atlas A2/A3 target (1)",
    "quantization_flag_missing": "preflight: msModelSlim checkpoint launched without --quantization ascend (1/0)",
    "heads_per_attention_rank": "preflight: attention heads / attention TP size",
    "heads_per_attention_rank_graph": "preflight: the same, when vllm-ascend torchair graph mode is on",
    "experts_mod_ep": "preflight: (routed + redundant experts) mod expert-parallel size",
    "world_size_mismatch": "preflight: DP x TP differs from the NPUs given or the MindIE world size (1/0)",
    "weight_gib_per_npu": "preflight: estimated weight memory per NPU, GiB (from the weight map and quantization description)",
    "kv_bytes_per_token": "preflight: KV cache bytes per token per NPU (MLA: (kv_lora_rank + qk_rope_head_dim) x layers x 2)",
    "kv_pool_gib_per_npu": "preflight: estimated KV cache memory per NPU, GiB",
    "concurrent_seqs_at_max_len": "preflight: sequences of max_model_len tokens the estimated KV cache holds per engine",
    "concurrency_shortfall": "preflight: max_num_seqs minus concurrent_seqs_at_max_len when positive, else 0",
    "r1_max_model_len": "preflight: max_model_len of a reasoning (R1) model",
}


def empty_records() -> pl.DataFrame:
    return pl.DataFrame(schema=RECORD_SCHEMA)


def empty_signals() -> pl.DataFrame:
    return pl.DataFrame(schema=SIGNAL_SCHEMA)


def _conform(frame: pl.DataFrame, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    exprs = []
    for name, dtype in schema.items():
        if name in frame.columns:
            exprs.append(pl.col(name).cast(dtype))
        else:
            exprs.append(pl.lit(None, dtype=dtype).alias(name))
    return frame.select(exprs)


# Columns filled from one value per file (pl.lit): they reference no chunk, and a copy per row would cost more.
_SHARED = frozenset({"file", "source"})


def compact_strings(frame: pl.DataFrame) -> pl.DataFrame:
    """Copy the string columns into buffers of their own. Polars strings are views: a few rows filtered out of
    a chunk keep the whole chunk's text alive, so kept rows would hold on to every byte read."""
    cols = [pl.concat_str([pl.col(name), pl.lit("")]).alias(name)
            for name, dtype in frame.schema.items() if dtype == pl.String and name not in _SHARED]
    return frame.with_columns(cols) if cols and frame.height else frame


def conform_records(frame: pl.DataFrame) -> pl.DataFrame:
    return _conform(frame, RECORD_SCHEMA)


def conform_signals(frame: pl.DataFrame) -> pl.DataFrame:
    return _conform(frame, SIGNAL_SCHEMA)


@dataclass(frozen=True)
class Evidence:
    file: str
    line: int
    text: str


@dataclass
class Finding:
    rule_id: str
    name: str
    category: str
    severity: str
    title: str
    summary: str
    count: int
    first_seen: datetime | None
    last_seen: datetime | None
    nodes: list[str]
    ranks: list[int]
    evidence: list[Evidence]
    remediation: str
    references: list[str]
    consequence: bool = False  # the rule describes an echo of another failure (engine death, timeouts)
    caused_by: str | None = None  # rule id of the finding this one is a consequence of
    facts: dict[str, Any] = field(default_factory=dict)  # the numbers behind the summary

    def short_where(self, sep: str = ",") -> str:
        """A few nodes and ranks for a table cell (``node-0,node-1 rank 0,8,13``); empty when unknown."""
        parts = []
        if self.nodes:
            parts.append(sep.join(self.nodes[:3]) + ("…" if len(self.nodes) > 3 else ""))
        if self.ranks:
            parts.append("rank " + ",".join(map(str, self.ranks[:4])) + ("…" if len(self.ranks) > 4 else ""))
        return " ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule_id": self.rule_id,
            "name": self.name,
            "category": self.category,
            "severity": self.severity,
            "title": self.title,
            "summary": self.summary,
            "count": self.count,
            "first_seen": _iso(self.first_seen),
            "last_seen": _iso(self.last_seen),
            "nodes": list(self.nodes),
            "ranks": list(self.ranks),
            "evidence": [dataclasses.asdict(e) for e in self.evidence],
            "remediation": self.remediation,
            "references": list(self.references),
            "caused_by": self.caused_by,
        }


@dataclass(frozen=True)
class InputFile:
    path: str
    kind: str
    lines: int
    bytes: int
    raw_lines: int = 0  # lines kept as raw records because no header parsed
    node: str | None = None
    encoding: str = "utf-8"
    note: str | None = None  # e.g. truncated compressed data: what was read is used

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "kind": self.kind,
            "lines": self.lines,
            "bytes": self.bytes,
            "raw_lines": self.raw_lines,
            "node": self.node,
            "encoding": self.encoding,
            "note": self.note,
        }


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "reason": self.reason}


@dataclass
class Report:
    """Everything a reporter needs; reporters never re-read inputs."""

    findings: list[Finding]
    inputs: list[InputFile]
    skipped: list[Skipped]
    errors: list[str] = field(default_factory=list)  # internal errors: the run is incomplete
    rules_checked: list[dict[str, str]] = field(default_factory=list)  # id, name, category, severity, title
    signals: pl.DataFrame | None = None  # for curve-drawing reporters (html)
    series: pl.DataFrame | None = None  # periodic metric rows, compact (diagnose/series.py): html curves
    # html timeline: dated WARNING+ records and evidence lines, capped (diagnose/report/html.py timeline_frame)
    timeline: pl.DataFrame | None = None
    # validation runs against a baseline (diagnose/compare.py): metric, scope, baseline, this, change, unit,
    # tolerance, verdict; in to_dict() only when non-empty
    comparisons: list[dict[str, Any]] = field(default_factory=list)
    # errors no rule explains (diagnose/signatures.py): the top signatures, how many more, and with a JSON
    # --baseline how many are new; in to_dict() as unrecognised, unrecognised_more, unrecognised_new
    unrecognised: list[dict[str, Any]] = field(default_factory=list)
    unrecognised_more: int = 0
    unrecognised_new: int | None = None

    @property
    def incomplete(self) -> bool:
        return bool(self.errors)

    def to_dict(self) -> dict[str, Any]:
        from diagnose import __version__

        out = {
            "version": __version__,
            "inputs": [i.to_dict() for i in self.inputs],
            "skipped": [s.to_dict() for s in self.skipped],
            "errors": list(self.errors),
            "findings": [f.to_dict() for f in self.findings],
        }
        if self.comparisons:
            out["comparisons"] = [dict(c) for c in self.comparisons]
        out["unrecognised"] = [dict(u) for u in self.unrecognised]
        out["unrecognised_more"] = self.unrecognised_more
        if self.unrecognised_new is not None:
            out["unrecognised_new"] = self.unrecognised_new
        return out


def _iso(ts: datetime | None) -> str | None:
    return ts.isoformat(sep=" ") if ts is not None else None
