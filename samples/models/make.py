"""Write the preflight sample model directories (JSON metadata only, no weights). Deterministic.

    python samples/models/make.py            # (re)writes the three directories beside this script

deepseek-r1-w8a8/                      a correct DeepSeek-R1 W8A8 (msModelSlim) layout: 61 layers + MTP layer 61,
                                       attention W8A8 (kv_b_proj FLOAT), dense MLP and experts W8A8_DYNAMIC
deepseek-r1-w8a8-no-mtp/               the same without any `model.layers.61.*` tensor (config still declares it)
deepseek-r1-w8a8-attn-unquantized-desc/  weights as the correct one; the quantization description has no
                                       `self_attn.*` entry (the KeyError vLLM-Ascend raises at load)
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

CONFIG = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "auto_map": {
        "AutoConfig": "configuration_deepseek.DeepseekV3Config",
        "AutoModel": "modeling_deepseek.DeepseekV3Model",
        "AutoModelForCausalLM": "modeling_deepseek.DeepseekV3ForCausalLM",
    },
    "aux_loss_alpha": 0.001,
    "bos_token_id": 0,
    "eos_token_id": 1,
    "ep_size": 1,
    "first_k_dense_replace": 3,
    "hidden_act": "silu",
    "hidden_size": 7168,
    "initializer_range": 0.02,
    "intermediate_size": 18432,
    "kv_lora_rank": 512,
    "max_position_embeddings": 163840,
    "model_type": "deepseek_v3",
    "moe_intermediate_size": 2048,
    "moe_layer_freq": 1,
    "n_group": 8,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "norm_topk_prob": True,
    "num_attention_heads": 128,
    "num_experts_per_tok": 8,
    "num_hidden_layers": 61,
    "num_key_value_heads": 128,
    "num_nextn_predict_layers": 1,
    "q_lora_rank": 1536,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "rms_norm_eps": 1e-06,
    "rope_scaling": {
        "beta_fast": 32,
        "beta_slow": 1,
        "factor": 40,
        "mscale": 1.0,
        "mscale_all_dim": 1.0,
        "original_max_position_embeddings": 4096,
        "type": "yarn",
    },
    "rope_theta": 10000,
    "routed_scaling_factor": 2.5,
    "scoring_func": "sigmoid",
    "tie_word_embeddings": False,
    "topk_group": 4,
    "topk_method": "noaux_tc",
    "torch_dtype": "bfloat16",
    "transformers_version": "4.46.3",
    "use_cache": True,
    "v_head_dim": 128,
    "vocab_size": 129280,
    "quantize": "w8a8_dynamic",
}

STATIC = ("weight", "weight_scale", "weight_offset", "input_scale", "input_offset", "quant_bias", "deq_scale")
DYNAMIC = ("weight", "weight_scale", "weight_offset")
LAYERS = 61
MTP = 61
EXPERTS = 256
DENSE = 3


def tensors(with_mtp: bool = True) -> list[tuple[str, str, int]]:
    """(name, quant type, shard) in checkpoint order."""
    out: list[tuple[str, str, int]] = [("model.embed_tokens.weight", "FLOAT", 1)]
    last = MTP if with_mtp else LAYERS - 1
    for layer in range(0, last + 1):
        shard = layer + 2
        p = f"model.layers.{layer}."
        if layer == MTP:
            out += [(p + "embed_tokens.weight", "FLOAT", shard), (p + "enorm.weight", "FLOAT", shard),
                    (p + "hnorm.weight", "FLOAT", shard), (p + "eh_proj.weight", "FLOAT", shard)]
        out += [(p + "input_layernorm.weight", "FLOAT", shard), (p + "post_attention_layernorm.weight", "FLOAT", shard)]
        for mod in ("q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "o_proj"):
            out += [(f"{p}self_attn.{mod}.{s}", "W8A8", shard) for s in STATIC]
        out += [(p + "self_attn.q_a_layernorm.weight", "FLOAT", shard),
                (p + "self_attn.kv_a_layernorm.weight", "FLOAT", shard),
                (p + "self_attn.kv_b_proj.weight", "FLOAT", shard)]
        if layer < DENSE:
            for mod in ("gate_proj", "up_proj", "down_proj"):
                out += [(f"{p}mlp.{mod}.{s}", "W8A8_DYNAMIC", shard) for s in DYNAMIC]
        else:
            out += [(p + "mlp.gate.weight", "FLOAT", shard), (p + "mlp.gate.e_score_correction_bias", "FLOAT", shard)]
            for e in range(EXPERTS):
                for mod in ("gate_proj", "up_proj", "down_proj"):
                    out += [(f"{p}mlp.experts.{e}.{mod}.{s}", "W8A8_DYNAMIC", shard) for s in DYNAMIC]
            for mod in ("gate_proj", "up_proj", "down_proj"):
                out += [(f"{p}mlp.shared_experts.{mod}.{s}", "W8A8_DYNAMIC", shard) for s in DYNAMIC]
        if layer == MTP:
            out += [(p + "shared_head.norm.weight", "FLOAT", shard), (p + "shared_head.head.weight", "FLOAT", shard)]
    out += [("model.norm.weight", "FLOAT", 1), ("lm_head.weight", "FLOAT", 1)]
    return out


def write(folder: Path, with_mtp: bool, desc_filter=None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    items = tensors(with_mtp)
    shards = max(s for _, _, s in items)
    shard_name = "quant_model_weight_w8a8_dynamic-{:05d}-of-{:05d}.safetensors"
    index = {
        "metadata": {"total_size": 0},
        "weight_map": {name: shard_name.format(s, shards) for name, _, s in items},
    }
    desc = {"model_quant_type": "W8A8_DYNAMIC", "version": "1.0.0"}
    desc.update({name: qtype for name, qtype, _ in items if desc_filter is None or desc_filter(name)})
    (folder / "config.json").write_text(json.dumps(CONFIG, indent=2) + "\n", encoding="utf-8")
    # One entry per line, as the HF/msModelSlim tools write them (the files stay diff- and grep-friendly).
    # The two big files are stored gzip-compressed (preflight reads `NAME.gz` when `NAME` is absent):
    # 26 MB of JSON per directory would bloat the repository. mtime=0 keeps the bytes reproducible.
    for name, obj in (("model.safetensors.index.json", index), ("quant_model_description.json", desc)):
        (folder / name).unlink(missing_ok=True)
        with open(folder / (name + ".gz"), "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
            gz.write(_dump(obj).encode("utf-8"))


def _dump(obj: dict) -> str:
    return json.dumps(obj, indent=1, separators=(",", ": ")) + "\n"


def main(root: Path = HERE) -> None:
    write(root / "deepseek-r1-w8a8", with_mtp=True)
    write(root / "deepseek-r1-w8a8-no-mtp", with_mtp=False)
    write(root / "deepseek-r1-w8a8-attn-unquantized-desc", with_mtp=True,
          desc_filter=lambda name: ".self_attn." not in name)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
