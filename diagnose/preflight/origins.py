"""Which file and line each preflight fact came from, so a finding on a fact points at a real place
(``diagnose/analysis/provenance.py``): the ``config.json`` key, the weight map, the quantization description, or the
launch (the script line holding the flag, the log line with vLLM's ``non-default args``, the MindIE
``config.json`` key).

A fact that combines several inputs (the KV capacity: config, weights and launch) points at the input the
user changes to fix it, which is the launch for every launch-derived fact.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from diagnose.preflight.checks import Fact
from diagnose.preflight.launch import Launch

_CONFIG_KEYS = {"model_dir", "num_hidden_layers", "num_nextn_predict_layers", "num_attention_heads", "n_routed_experts",
                "n_shared_experts", "num_experts_per_tok", "kv_lora_rank", "qk_rope_head_dim", "checkpoint_quant",
                "reasoning_model", "fp8_checkpoint", "fp8_on_a2a3", "kv_bytes_per_token"}
_INDEX_KEYS = {"weight_tensors", "mtp_layer_in_weights", "weight_gib_per_npu"}
_QUANT_KEYS = {"quant_desc_entries", "quant_desc_missing_tensors", "quant_desc_missing", "quant_desc_extra_entries",
               "quant_desc_extra", "mtp_layer_in_quant_desc", "moe_static_w8a8_experts"}
# The config.json key a model fact is read from (when it is not the fact's own name).
_CONFIG_FIELD = {"checkpoint_quant": "quantization_config", "fp8_checkpoint": "quantization_config",
                 "fp8_on_a2a3": "quantization_config", "kv_bytes_per_token": "kv_lora_rank"}
# The launch setting behind a fact: vLLM flags (either spelling) and MindIE config keys.
_LAUNCH_FIELD = {
    "mtp_enabled": (("--speculative-config", "--speculative_config"), ("plugin_params",)),
    "num_speculative_tokens": (("--speculative-config", "--speculative_config"), ("plugin_params",)),
    "quantization": (("--quantization", "-q "), ()),
    "quantization_flag_missing": (("--quantization",), ()),
    "tensor_parallel_size": (("--tensor-parallel-size", "-tp"), ()),
    "heads_per_attention_rank": (("--tensor-parallel-size", "-tp"), ('"tp"',)),
    "heads_per_attention_rank_graph": (("torchair", "--tensor-parallel-size"), ('"tp"',)),
    "data_parallel_size": (("--data-parallel-size", "-dp"), ()),
    "world_size": (("--tensor-parallel-size", "-tp"), ('"worldSize"',)),
    "world_size_mismatch": (("--tensor-parallel-size", "-tp"), ('"worldSize"', '"dp"')),
    "moe_world_mismatch": ((), ('"moe_ep"', '"moe_tp"')),
    "expert_parallel_size": (("--enable-expert-parallel", "--enable_expert_parallel"), ('"moe_ep"',)),
    "experts_mod_ep": (("--enable-expert-parallel", "--enable_expert_parallel"), ('"moe_ep"',)),
    "max_model_len": (("--max-model-len", "--max_model_len"), ('"maxSeqLen"',)),
    "r1_max_model_len": (("--max-model-len", "--max_model_len"), ('"maxSeqLen"',)),
    "max_num_seqs": (("--max-num-seqs", "--max_num_seqs"), ('"maxBatchSize"',)),
    "concurrency_shortfall": (("--max-num-seqs", "--max_num_seqs"), ('"maxBatchSize"',)),
    "concurrent_seqs_at_max_len": (("--max-model-len", "--max_model_len"), ('"maxSeqLen"',)),
    "kv_pool_gib_per_npu": (("--gpu-memory-utilization", "--gpu_memory_utilization"), ('"npuMemSize"',)),
    "kv_tokens_per_engine": (("--gpu-memory-utilization", "--gpu_memory_utilization"), ('"npuMemSize"',)),
}
_AT_LINE = re.compile(r"^(?P<file>.+) line (?P<line>\d+)$")


@dataclass
class Sources:
    """The texts the facts were computed from: display path -> text (None when unknown, e.g. not kept)."""

    config: tuple[str, str | None] | None = None
    index: tuple[str, str | None] | None = None
    quant: tuple[str, str | None] | None = None
    launch_text: dict[str, str] = field(default_factory=dict)  # launch file -> text (scripts, MindIE config)


def fact_origins(facts: list[Fact], sources: Sources, launch: Launch | None) -> list[tuple[str, int] | None]:
    """One origin per fact, in order (``None`` when no file holds it: a ``--serve-cmd`` launch alone)."""
    return [_origin(f, sources, launch) for f in facts]


def _origin(fact: Fact, s: Sources, launch: Launch | None) -> tuple[str, int] | None:
    if fact.key == "input_problem":
        return _problem_origin(str(fact.value), s, launch)
    if fact.key in _CONFIG_KEYS:
        order = [("config", _CONFIG_FIELD.get(fact.key, fact.key)), ("index", None), ("launch", None)]
    elif fact.key in _INDEX_KEYS:
        order = [("index", None), ("config", None), ("launch", None)]
    elif fact.key in _QUANT_KEYS:
        order = [("quant", None), ("config", None), ("launch", None)]
    elif launch is not None:  # a launch fact: the launch's own place, or none (a --serve-cmd has no file)
        return _launch_origin(fact.key, s, launch)
    else:
        order = [("config", None), ("index", None)]
    for role, key in order:
        found = _in_role(role, key, s, launch)
        if found is not None:
            return found
    return None


def _in_role(role: str, key: str | None, s: Sources, launch: Launch | None) -> tuple[str, int] | None:
    if role == "launch":
        return _launch_origin(key, s, launch)
    held = {"config": s.config, "index": s.index, "quant": s.quant}[role]
    if held is None:
        return None
    path, text = held
    return path, _line_of(text, [f'"{key}"'] if key else [])


def _launch_origin(key: str | None, s: Sources, launch: Launch | None) -> tuple[str, int] | None:
    if launch is None:
        return None
    at = _AT_LINE.match(launch.source)
    if at:  # vLLM's `non-default args` line in a log
        return at.group("file"), int(at.group("line"))
    text = s.launch_text.get(launch.source)
    if text is None:
        return None  # --serve-cmd: no file holds it
    flags, mindie_keys = _LAUNCH_FIELD.get(key or "", ((), ()))
    wanted = list(mindie_keys if launch.engine == "mindie" else flags)
    line = _line_of(text, wanted)
    if line == 1 and launch.engine == "vllm":
        line = _line_of(text, ["vllm serve", "api_server"])
    return launch.source, line


def _problem_origin(problem: str, s: Sources, launch: Launch | None) -> tuple[str, int] | None:
    if launch is not None and problem.startswith(launch.source):
        return _launch_origin(None, s, launch) or None
    for held in (s.config, s.index, s.quant):
        if held is not None and problem.startswith(held[0].rsplit("/", 1)[-1].removesuffix(".gz")):
            return held[0], 1
    for held in (s.config, s.index, s.quant):
        if held is not None:
            return held[0], 1
    return _launch_origin(None, s, launch)


def _line_of(text: str | None, needles: list[str]) -> int:
    """The first line (1-based) of ``text`` holding one of ``needles``, else 1."""
    if not text or not needles:
        return 1
    for i, line in enumerate(text.splitlines(), 1):
        if any(n in line for n in needles):
            return i
    return 1
