"""Derive the preflight facts from a model card and a launch, and write them as the ``preflight`` text kind.

A fact is ``key = value  # how it was computed``; the rules (sources = ["preflight"]) match these lines, and
the note after ``#`` is what a finding's evidence shows, so every number carries its arithmetic. Facts that
compare two settings (MTP on but no MTP weights, max-num-seqs above what the KV cache holds) are written as
their own line so a rule stays a one-line match.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import polars as pl

from diagnose.preflight.launch import Launch
from diagnose.preflight.modelcard import QUANT_DESC, ModelCard, quant_desc_frame, tensor_table

GIB = float(1 << 30)
HEADER = "# diagnose preflight facts"
LIST_LIMIT = 5  # names listed one per line after a count
R1_MIN_LEN = 32768
VLLM_DEFAULT_SEQS = 256
MINDIE_DEFAULT_SEQS = 200
MINDIE_DEFAULT_LEN = 2560
# Launch values the layout and capacity facts rest on: when one could not be read, those facts are not written.
_LAYOUT_KEYS = frozenset({"tensor_parallel_size", "data_parallel_size", "max_model_len", "max_num_seqs",
                          "gpu_memory_utilization", "speculative_config", "num_speculative_tokens", "additional_config",
                          "eplb_config"})
_REASONING = re.compile(r"(?i)(?:^|[^a-z0-9])(?:r1|reasoner|qwq)(?:[^0-9]|$)")


@dataclass
class Target:
    npus: int | None = None  # devices the deployment gets (all nodes)
    npu_mem_gib: float = 64.0  # HBM per NPU
    reserve_gib: float = 4.0  # activations, HCCL buffers, graphs: not weights, not KV


@dataclass
class Fact:
    key: str
    value: Any
    note: str = ""

    def shown(self) -> str:
        """The value as the facts say it (and as rules compare it): booleans 1/0, floats to 2 decimals."""
        v = self.value
        if isinstance(v, bool):
            v = int(v)
        if isinstance(v, float):
            v = f"{v:.0f}" if v.is_integer() and abs(v) < 1e15 else f"{v:.2f}"
        return str(v)

    def line(self) -> str:
        text = f"{self.key} = {self.shown()}"
        return f"{text}  # {self.note}" if self.note else text


def _n(x: float) -> str:
    """1,234 for integers, 2 decimals otherwise."""
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.2f}"


def compute(card: ModelCard | None, launch: Launch | None, target: Target) -> list[Fact]:
    facts: list[Fact] = []
    for problem in (card.problems if card else []) + (launch.problems if launch else []):
        facts.append(Fact("input_problem", problem))
    known = card is not None and (bool(card.config) or _deepseek_named(card, launch))
    if card is None and launch is not None and _deepseek_named(None, launch):
        card, known = ModelCard(path=launch.model or "model"), True
    table = tensor_table(card) if card is not None and card.weight_map is not None else None
    if card is not None and known:
        facts += _model_facts(card, launch, table)
    if launch is not None:
        facts += _launch_facts(card if known else None, launch, table, target)
    return facts


def _deepseek_named(card: ModelCard | None, launch: Launch | None) -> bool:
    names = [card.path if card else "", launch.model or "" if launch else "", launch.served_name or "" if launch else ""]
    return any("deepseek" in n.lower() for n in names)


def is_reasoning(card: ModelCard | None, launch: Launch | None) -> str | None:
    for n in [card.name if card else None, launch.model if launch else None, launch.served_name if launch else None]:
        if n and _REASONING.search(n.rstrip("/").rsplit("/", 1)[-1]):
            return n.rstrip("/").rsplit("/", 1)[-1]
    return None


def _mtp_range(card: ModelCard) -> tuple[int, int]:
    first = int(card.cfg("num_hidden_layers", 0) or 0)
    return first, first + int(card.cfg("num_nextn_predict_layers", 0) or 0)


def _model_facts(card: ModelCard, launch: Launch | None, table: pl.DataFrame | None) -> list[Fact]:
    f: list[Fact] = []
    src = "config.json" if card.config else "DeepSeek-V3 default (no config.json)"
    f.append(Fact("model_dir", card.path))
    for key in ("num_hidden_layers", "num_nextn_predict_layers", "num_attention_heads", "n_routed_experts",
                "n_shared_experts", "num_experts_per_tok", "kv_lora_rank", "qk_rope_head_dim"):
        value = card.cfg(key)
        if value is not None:
            f.append(Fact(key, value, src))
    qm = card.quant_method
    desc_type = (card.quant_desc or {}).get("model_quant_type")
    ckpt = qm or (f"msmodelslim {desc_type}" if desc_type else ("msmodelslim" if card.quant_desc else "bf16"))
    f.append(Fact("checkpoint_quant", ckpt, "config.json quantization_config" if qm else
                  (QUANT_DESC if card.quant_desc else "no quantization_config, no quant_model_description.json")))
    name = is_reasoning(card, launch)
    if name:
        f.append(Fact("reasoning_model", 1, f"name {name!r}: DeepSeek-R1 style chain of thought"))
    first, end = _mtp_range(card)
    mtp_prefixes = [f"model.layers.{i}." for i in range(first, end)]
    if table is not None:
        shards = len(set((card.weight_map or {}).values()))
        f.append(Fact("weight_tensors", table.height, f"model.safetensors.index.json weight_map, {shards} shard files"))
        if end > first:
            n_mtp = table.filter(pl.col("layer").is_between(first, end - 1)).height
            f.append(Fact("mtp_layer_in_weights", int(n_mtp > 0),
                          f"config: num_hidden_layers {first} + num_nextn_predict_layers {end - first} -> MTP layer "
                          f"{'/'.join(p + '*' for p in mtp_prefixes)}; {_n(n_mtp)} of {_n(table.height)} weight-map tensors"))
        else:
            f.append(Fact("mtp_layer_in_weights", 0, "config.json declares num_nextn_predict_layers 0 (no MTP layer)"))
    if card.quant_desc is not None:
        f += _quant_desc_facts(card, table, first, end)
    fp8_inv = table.filter(pl.col("suffix") == "weight_scale_inv").height if table is not None else 0
    fp8 = (qm or "").lower().startswith("fp8") or fp8_inv > 0
    if fp8:
        qc = card.config.get("quantization_config") or {}
        block = qc.get("weight_block_size") if isinstance(qc, dict) else None
        f.append(Fact("fp8_checkpoint", 1, f"quantization_config.quant_method {qm or '?'}, weight_block_size {block}, "
                                            f"{_n(fp8_inv)} *.weight_scale_inv tensors"))
        f.append(Fact("fp8_on_a2a3", 1, "FP8 weights; Atlas A2/A3 (910B/910C) have no FP8 matmul: convert to BF16 or "
                                        "Ascend W8A8 (msModelSlim)"))
    return f


def _quant_desc_facts(card: ModelCard, table: pl.DataFrame | None, first: int, end: int) -> list[Fact]:
    f: list[Fact] = []
    desc = quant_desc_frame(card)
    f.append(Fact("quant_desc_entries", desc.height, f"{QUANT_DESC} tensor entries (model_quant_type "
                                                     f"{(card.quant_desc or {}).get('model_quant_type', '?')})"))
    if table is not None:
        missing = table.filter(~pl.col("in_desc"))
        by_module = (
            missing.with_columns(m=pl.coalesce(pl.col("pattern"), pl.col("name")))
            .group_by("m").agg(pl.len().alias("n"), pl.col("layer").n_unique().alias("layers"))
            .sort(["n", "m"], descending=[True, False])
        )
        parts = [f"{m} ({_n(n)} tensors, {layers} layers)" for m, n, layers in by_module.head(6).iter_rows()]
        more = f" and {by_module.height - 6} more" if by_module.height > 6 else ""
        f.append(Fact("quant_desc_missing_tensors", missing.height,
                      f"by module: {', '.join(parts)}{more}" if parts else f"every weight-map tensor has an entry in {QUANT_DESC}"))
        ordered = missing.sort([pl.col("suffix") != "weight", pl.col("layer").fill_null(-1), pl.col("name")])
        for name in ordered.head(LIST_LIMIT)["name"].to_list() if missing.height else []:
            f.append(Fact("quant_desc_missing", name))
        extra = desc.join(table.select("name"), on="name", how="anti")
        f.append(Fact("quant_desc_extra_entries", extra.height, f"{QUANT_DESC} entries naming no weight-map tensor"))
        for name in extra.sort("name").head(LIST_LIMIT)["name"].to_list() if extra.height else []:
            f.append(Fact("quant_desc_extra", name))
    if end > first:
        n_mtp = desc.filter(pl.col("name").str.extract(r"^model\.layers\.(\d+)\.", 1).cast(pl.Int32, strict=False)
                            .is_between(first, end - 1)).height
        f.append(Fact("mtp_layer_in_quant_desc", int(n_mtp > 0),
                      f"{_n(n_mtp)} {QUANT_DESC} entries for model.layers.{first}.* (the MTP layer is built with the "
                      f"main quantization config)"))
    experts = desc.filter(pl.col("name").str.contains(r"\.experts\.\d+\.(?:gate|up|down)_proj\.weight$"))
    static = experts.filter(pl.col("qtype") == "W8A8")
    if experts.height:
        types = ", ".join(f"{t} {_n(n)}" for t, n in experts.group_by("qtype").len().sort("qtype").iter_rows())
        f.append(Fact("moe_static_w8a8_experts", static.height,
                      f"routed-expert weights by type: {types}; the MoE path implements only W8A8_DYNAMIC / W4A8_DYNAMIC"))
    return f


def _launch_facts(card: ModelCard | None, launch: Launch, table: pl.DataFrame | None, target: Target) -> list[Fact]:
    f: list[Fact] = [Fact("launch_engine", launch.engine, launch.source)]
    if launch.command:
        f.append(Fact("launch_command", " ".join(launch.command.split())[:400]))
    # A value that did not parse is an input_problem above; nothing is derived from it (an unreadable
    # --speculative-config is not "speculative decoding off").
    if "speculative_config" not in launch.unknown:
        mtp_note = (f"speculative method {launch.spec_method!r}, num_speculative_tokens {launch.num_spec_tokens}"
                    if launch.spec_method or launch.num_spec_tokens else "no speculative decoding configured")
        f.append(Fact("mtp_enabled", int(launch.mtp_enabled), mtp_note))
        if launch.num_spec_tokens:
            f.append(Fact("num_speculative_tokens", launch.num_spec_tokens))
    if launch.engine == "vllm":
        f.append(Fact("quantization", launch.quantization or "none", "--quantization"))
        if card is not None and card.quant_desc is not None:
            missing = (launch.quantization or "").lower() != "ascend"
            f.append(Fact("quantization_flag_missing", int(missing),
                          f"checkpoint has {QUANT_DESC} (msModelSlim); launch has "
                          f"{'--quantization ' + launch.quantization if launch.quantization else 'no --quantization'}"))
    if card is None or launch.unknown & _LAYOUT_KEYS:
        return f
    heads = int(card.cfg("num_attention_heads", 0) or 0)
    routed = int(card.cfg("n_routed_experts", 0) or 0)
    # Parallel layout.
    if launch.engine == "mindie":
        world = launch.world_size or 1
        multi = bool(launch.args.get("multiNodesInferEnabled"))
        # Multi-node: MindIE rewrites worldSize from the rank table; only --npus says the real size.
        known = not multi or bool(target.npus)
        if multi:
            world = target.npus or ((launch.dp or 1) * launch.tp if launch.tp else world)
        tp = launch.tp or world
        moe_div = (launch.moe_ep or 1) * (launch.moe_tp or 1) if (launch.moe_ep or launch.moe_tp) else world
        ep = launch.moe_ep or 0
        tp_note = f"ModelConfig tp {launch.tp}" if launch.tp else f"no ModelConfig tp: attention TP = world size {world}"
        f.append(Fact("world_size", world, ("worldSize" if not multi else
                                            f"multi-node: {'--npus' if target.npus else 'dp x tp (rank table unknown)'}")))
        if launch.tp and launch.dp and known:
            f.append(Fact("world_size_mismatch", int(launch.dp * launch.tp != world),
                          f"ModelConfig dp {launch.dp} x tp {launch.tp} = {launch.dp * launch.tp}, world size {world}"))
        if (launch.moe_ep or launch.moe_tp) and known:
            f.append(Fact("moe_world_mismatch", int(moe_div != world),
                          f"moe_ep {launch.moe_ep or 1} x moe_tp {launch.moe_tp or 1} = {moe_div}, world size {world}"))
    else:
        tp, dp = launch.tp or 1, launch.dp or 1
        world = tp * dp
        moe_div = world
        ep = world if launch.expert_parallel else 0
        tp_note = f"--tensor-parallel-size {tp}"
        f.append(Fact("tensor_parallel_size", tp))
        f.append(Fact("data_parallel_size", dp))
        f.append(Fact("world_size", world, f"DP {dp} x TP {tp}"))
        if target.npus:
            f.append(Fact("world_size_mismatch", int(world != target.npus),
                          f"DP {dp} x TP {tp} = {world} ranks, {target.npus} NPUs given (--npus)"))
    if heads and tp:
        per = heads / tp
        f.append(Fact("heads_per_attention_rank", per if not per.is_integer() else int(per),
                      f"{heads} attention heads / {tp_note}; MLA kernels accept 8, 16, 32, 64, 128"))
        if launch.graph_mode:
            f.append(Fact("heads_per_attention_rank_graph", per if not per.is_integer() else int(per),
                          f"{heads} heads / TP {tp} with torchair graph mode; vllm-ascend MLA graph mode accepts 32, 64, 128"))
    if ep and routed:
        total = routed + launch.redundant_experts
        f.append(Fact("expert_parallel_size", ep))
        f.append(Fact("experts_mod_ep", total % ep,
                      f"({routed} routed + {launch.redundant_experts} redundant experts) mod EP {ep} = {total % ep}"
                      f"; {total / ep:g} experts per rank"))
    f += _capacity(card, launch, table, target, tp, moe_div)
    return f


def _weights(card: ModelCard, launch: Launch, table: pl.DataFrame, tp: int, moe_div: int) -> tuple[float, str]:
    first, end = _mtp_range(card)
    frame = table
    if not launch.mtp_enabled:
        frame = frame.filter(pl.col("layer").is_null() | (pl.col("layer") < first))
    # The MTP layer's embed_tokens is the main embedding (vLLM shares it with the draft model).
    frame = frame.filter(~((pl.col("layer") >= first) & (pl.col("pattern") == "embed_tokens")).fill_null(False))
    div = pl.when(pl.col("split") == "tp").then(tp).when(pl.col("split") == "moe").then(moe_div).otherwise(1)
    frame = frame.with_columns(
        gib=pl.col("elements").cast(pl.Float64) * pl.col("bytes_per") / div / GIB,
        group=pl.when(pl.col("split") == "moe").then(pl.lit("routed experts"))
        .when(pl.col("pattern").str.starts_with("self_attn")).then(pl.lit("attention"))
        .when(pl.col("pattern").str.starts_with("mlp")).then(pl.lit("dense+shared MLP"))
        .when(pl.col("pattern").is_in(["embed_tokens", "lm_head", "shared_head.head", "eh_proj"])).then(pl.lit("embeddings/heads"))
        .otherwise(pl.lit("norms/other")),
    )
    total = float(frame["gib"].sum())
    groups = frame.group_by("group").agg(pl.col("gib").sum()).sort("gib", descending=True)
    experts = frame.filter(pl.col("split") == "moe")
    moe_layers = experts["layer"].n_unique() if experts.height else 0
    ew = experts.filter(pl.col("suffix") == "weight")
    eb = ew["bytes_per"].mode().to_list()[0] if ew.height else None
    parts = []
    for group, gib in groups.iter_rows():
        if group == "routed experts" and moe_layers:
            parts.append(f"routed experts {gib:.2f} ({moe_layers} MoE layers x {card.cfg('n_routed_experts')} experts"
                         f" / {moe_div} ranks, {eb:g} B/weight)")
        else:
            parts.append(f"{group} {gib:.2f}")
    unknown = table.filter(pl.col("elements") == 0).height
    note = " + ".join(parts) + f" GiB; TP {tp}" + (f"; {unknown} tensors of unknown shape not counted" if unknown else "")
    if not launch.mtp_enabled and end > first:
        note += f"; MTP layer {first} not loaded (MTP off)"
    return total, note


def _capacity(card: ModelCard, launch: Launch, table: pl.DataFrame | None, target: Target, tp: int, moe_div: int) -> list[Fact]:
    f: list[Fact] = []
    mindie = launch.engine == "mindie"
    max_len = launch.max_model_len
    len_note = "--max-model-len" if not mindie else "maxSeqLen"
    if max_len is None:
        max_len = MINDIE_DEFAULT_LEN if mindie else int(card.cfg("max_position_embeddings", 0) or 0) or None
        len_note = "maxSeqLen default" if mindie else "default: max_position_embeddings of config.json"
    seqs = launch.max_num_seqs or (MINDIE_DEFAULT_SEQS if mindie else VLLM_DEFAULT_SEQS)
    seqs_note = ("maxBatchSize" if mindie else "--max-num-seqs") + ("" if launch.max_num_seqs else " default")
    if max_len:
        f.append(Fact("max_model_len", max_len, len_note))
    f.append(Fact("max_num_seqs", seqs, seqs_note + " (per DP engine)"))
    name = is_reasoning(card, launch)
    if name and max_len:
        f.append(Fact("r1_max_model_len", max_len, f"{name} is a reasoning model: DeepSeek allows R1 outputs of up "
                                                   f"to {R1_MIN_LEN} tokens ({len_note} {max_len})"))
    kvr, rope = card.cfg("kv_lora_rank"), card.cfg("qk_rope_head_dim")
    first, end = _mtp_range(card)
    if not (kvr and rope and first):
        return f
    layers = first + ((end - first) if launch.mtp_enabled else 0)
    per_token = (int(kvr) + int(rope)) * layers * 2
    layer_note = f"{layers} layers" + (f" ({first} + {end - first} MTP)" if layers > first else "")
    f.append(Fact("kv_bytes_per_token", per_token, f"MLA: (kv_lora_rank {kvr} + qk_rope_head_dim {rope}) x {layer_note} x 2 B "
                                                   f"(BF16); the latent is not split across TP ranks"))
    if table is None and launch.kv_pool_gb is None:
        return f
    util = launch.mem_util or (0.8 if mindie else 0.9)
    if launch.kv_pool_gb is not None:
        pool = launch.kv_pool_gb
        pool_note = f"MindIE npuMemSize {pool:g} GiB"
    else:
        weights, wnote = _weights(card, launch, table, tp, moe_div)
        f.append(Fact("weight_gib_per_npu", round(weights, 2), wnote))
        pool = target.npu_mem_gib * util - weights - target.reserve_gib
        pool_note = (f"{target.npu_mem_gib:g} GiB x {util:g} {'NPU_MEMORY_FRACTION' if mindie else 'gpu-memory-utilization'}"
                     f" - {weights:.2f} GiB weights - {target.reserve_gib:g} GiB reserve (activations, HCCL, graphs)")
    f.append(Fact("kv_pool_gib_per_npu", round(pool, 2), pool_note))
    tokens = max(pool, 0.0) * GIB / per_token
    f.append(Fact("kv_tokens_per_engine", int(tokens), f"{max(pool, 0):.2f} GiB / {_n(per_token)} B per token"))
    if not max_len:
        return f
    per_seq = per_token * max_len / GIB
    fit = tokens / max_len
    how = f"KV pool {pool:.2f} GiB per NPU / ({_n(per_token)} B/token x {max_len} tokens = {per_seq:.2f} GiB per sequence)"
    f.append(Fact("concurrent_seqs_at_max_len", round(fit, 2), how))
    short = seqs - fit
    if short > 0:
        f.append(Fact("concurrency_shortfall", round(short, 1),
                      f"max-num-seqs {seqs} > {fit:.1f} sequences of {max_len} tokens: {how}"))
    else:
        f.append(Fact("concurrency_shortfall", 0, f"max-num-seqs {seqs} <= {fit:.1f} sequences of {max_len} tokens"))
    return f


def render(facts: list[Fact], model: str | None, launch: str | None) -> str:
    lines = [HEADER]
    if model:
        lines.append(f"# model: {model}")
    if launch:
        lines.append(f"# launch: {launch}")
    lines += [fact.line() for fact in facts]
    return "\n".join(lines) + "\n"
