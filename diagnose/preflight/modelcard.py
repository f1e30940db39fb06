"""The model directory as metadata: ``config.json``, the ``model.safetensors.index.json`` weight map and the
msModelSlim ``quant_model_description.json``. Never opens ``.safetensors`` data.

``tensor_table`` classifies every weight-map name with polars expressions (layer, module, suffix) and gives
each tensor its element count from the config shapes (DeepSeek-V3/R1 naming), its bytes per element (from
the quantization description and the name: an int8 ``weight`` has a ``weight_scale`` beside it) and how it is
split across ranks (``tp``: tensor-parallel, ``moe``: experts over the expert-parallel group, ``1``: replicated).
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
from diagnose.bounded import json_loads

CONFIG = "config.json"
INDEX = "model.safetensors.index.json"
QUANT_DESC = "quant_model_description.json"

# DeepSeek-V3/R1 shapes, used when config.json lacks a key.
DEEPSEEK_V3 = {
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "vocab_size": 129280,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "num_attention_heads": 128,
    "num_hidden_layers": 61,
    "num_nextn_predict_layers": 1,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "num_experts_per_tok": 8,
    "first_k_dense_replace": 3,
    "max_position_embeddings": 163840,
}

# Keys of a quantization description that are settings, not tensors.
_DESC_TENSOR = r"^(?:model\.|lm_head\.)"

QUANT_TYPES_1B = ("W8A8", "W8A8_DYNAMIC", "W8A16", "W8A8S", "W8A8_MIX", "W8A8C8")
QUANT_TYPES_HALF = ("W4A8_DYNAMIC", "W4A16", "W4A8")


@dataclass
class ModelCard:
    path: str
    config: dict[str, Any] = field(default_factory=dict)
    weight_map: dict[str, str] | None = None  # tensor name -> shard file
    quant_desc: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)  # unreadable or malformed files
    files: list[str] = field(default_factory=list)  # files read
    cache: dict[str, Any] = field(default_factory=dict, repr=False)  # derived frames (tensor table, description)

    def cfg(self, key: str, default: Any = None) -> Any:
        value = self.config.get(key)
        if value is None:
            value = DEEPSEEK_V3.get(key, default) if self.looks_deepseek else default
        return value

    @property
    def looks_deepseek(self) -> bool:
        kind = str(self.config.get("model_type", "")) + " " + " ".join(self.config.get("architectures") or [])
        return "deepseek" in kind.lower() or not self.config

    @property
    def name(self) -> str:
        return Path(self.path.rstrip("/")).name or self.path

    @property
    def quant_method(self) -> str | None:
        qc = self.config.get("quantization_config")
        if isinstance(qc, dict):
            return str(qc.get("quant_method") or qc.get("quant_type") or "") or None
        return None


def _read_json(path: Path, card: ModelCard) -> Any:
    # A gzip copy (``model.safetensors.index.json.gz``) is read the same: weight maps of 671B models are
    # tens of MB and are often shipped compressed.
    packed = path.with_name(path.name + ".gz")
    try:
        if not path.exists() and packed.exists():
            with gzip.open(packed, "rt", encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            path = packed
        else:
            text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
    except (EOFError, ValueError) as exc:  # a broken .gz
        card.problems.append(f"{packed.name}: cannot read: {exc}")
        return None
    except OSError as exc:
        card.problems.append(f"{path.name}: cannot read: {exc.strerror or exc}")
        return None
    card.files.append(str(path))
    return parse_json(text, path.name, card)


def parse_json(text: str, name: str, card: ModelCard) -> Any:
    try:
        return json_loads(text)
    except ValueError as exc:
        card.problems.append(f"{name}: not valid JSON ({exc})")
        return None


def load_model_dir(path: str | Path) -> ModelCard:
    root = Path(path)
    card = ModelCard(path=str(path))
    config = _read_json(root / CONFIG, card)
    index = _read_json(root / INDEX, card)
    desc = _read_json(root / QUANT_DESC, card)
    return fill(card, config, index, desc)


def from_texts(path: str, config: str | None, index: str | None, desc: str | None) -> ModelCard:
    """The same card from file texts (a log bundle holds the files as lines, not as a directory)."""
    card = ModelCard(path=path)
    c = parse_json(config, CONFIG, card) if config is not None else None
    i = parse_json(index, INDEX, card) if index is not None else None
    d = parse_json(desc, QUANT_DESC, card) if desc is not None else None
    return fill(card, c, i, d)


def fill(card: ModelCard, config: Any, index: Any, desc: Any) -> ModelCard:
    if isinstance(config, dict):
        card.config = config
    elif config is not None:
        card.problems.append(f"{CONFIG}: not a JSON object")
    if isinstance(index, dict) and isinstance(index.get("weight_map"), dict):
        card.weight_map = {str(k): str(v) for k, v in index["weight_map"].items()}
    elif index is not None:
        card.problems.append(f"{INDEX}: no `weight_map` object")
    if isinstance(desc, dict):
        card.quant_desc = desc
    elif desc is not None:
        card.problems.append(f"{QUANT_DESC}: not a JSON object")
    return card


# --- the tensor table ------------------------------------------------------------------------------

_SUFFIX = r"\.([A-Za-z_]+)$"  # weight, weight_scale, weight_offset, weight_scale_inv, input_scale, e_score_correction_bias, ...


def _shapes(card: ModelCard) -> dict[str, tuple[int, int, str]]:
    """module pattern (experts index replaced by ``*``) -> (out, in, split)."""
    g = card.cfg
    h, inter, moe = g("hidden_size", 0), g("intermediate_size", 0), g("moe_intermediate_size", 0)
    vocab, heads = g("vocab_size", 0), g("num_attention_heads", 0)
    qlr, kvr = g("q_lora_rank") or 0, g("kv_lora_rank", 0)
    nope, rope, vh = g("qk_nope_head_dim", 0), g("qk_rope_head_dim", 0), g("v_head_dim", 0)
    shared, routed = g("n_shared_experts") or 0, g("n_routed_experts") or 0
    return {
        "embed_tokens": (vocab, h, "tp"),
        "lm_head": (vocab, h, "tp"),
        "shared_head.head": (vocab, h, "tp"),
        "norm": (h, 1, "1"),
        "enorm": (h, 1, "1"),
        "hnorm": (h, 1, "1"),
        "shared_head.norm": (h, 1, "1"),
        "input_layernorm": (h, 1, "1"),
        "post_attention_layernorm": (h, 1, "1"),
        "eh_proj": (h, 2 * h, "1"),
        "self_attn.q_a_proj": (qlr, h, "1"),
        "self_attn.q_a_layernorm": (qlr, 1, "1"),
        "self_attn.q_b_proj": (heads * (nope + rope), qlr, "tp"),
        "self_attn.q_proj": (heads * (nope + rope), h, "tp"),
        "self_attn.kv_a_proj_with_mqa": (kvr + rope, h, "1"),
        "self_attn.kv_a_layernorm": (kvr, 1, "1"),
        "self_attn.kv_b_proj": (heads * (nope + vh), kvr, "tp"),
        "self_attn.o_proj": (h, heads * vh, "tp"),
        "mlp.gate_proj": (inter, h, "tp"),
        "mlp.up_proj": (inter, h, "tp"),
        "mlp.down_proj": (h, inter, "tp"),
        "mlp.gate": (routed, h, "1"),
        "mlp.experts.*.gate_proj": (moe, h, "moe"),
        "mlp.experts.*.up_proj": (moe, h, "moe"),
        "mlp.experts.*.down_proj": (h, moe, "moe"),
        "mlp.shared_experts.gate_proj": (shared * moe, h, "tp"),
        "mlp.shared_experts.up_proj": (shared * moe, h, "tp"),
        "mlp.shared_experts.down_proj": (h, shared * moe, "tp"),
    }


def quant_desc_frame(card: ModelCard) -> pl.DataFrame:
    """Tensor entries of the quantization description: name, qtype."""
    if "desc" in card.cache:
        return card.cache["desc"]
    desc = card.quant_desc or {}
    frame = pl.DataFrame(
        {"name": list(desc.keys()), "qtype": [v if isinstance(v, str) else "" for v in desc.values()]},
        schema={"name": pl.String, "qtype": pl.String},
    )
    card.cache["desc"] = frame.filter(pl.col("name").str.contains(_DESC_TENSOR))
    return card.cache["desc"]


def tensor_table(card: ModelCard) -> pl.DataFrame:
    """One row per weight-map tensor: name, layer, module, suffix, elements, bytes_per, split, qtype, in_desc."""
    if "tensors" in card.cache:
        return card.cache["tensors"]
    names = list((card.weight_map or {}).keys())
    # Anchored expressions only: a weight map has ~140k names.
    frame = pl.DataFrame({"name": pl.Series(names, dtype=pl.String)}).with_columns(
        layer=pl.col("name").str.extract(r"^model\.layers\.(\d+)\.", 1).cast(pl.Int32, strict=False),
        suffix=pl.col("name").str.extract(_SUFFIX, 1),
        module=pl.col("name").str.replace(r"^model\.layers\.\d+\.", "").str.replace(r"^model\.", "")
        .str.replace(_SUFFIX, ""),
    ).with_columns(pattern=pl.col("module").str.replace(r"experts\.\d+\.", "experts.*."))
    shapes = _shapes(card)
    shape_frame = pl.DataFrame(
        {
            "pattern": list(shapes.keys()),
            "out_dim": [s[0] for s in shapes.values()],
            "in_dim": [s[1] for s in shapes.values()],
            "split": [s[2] for s in shapes.values()],
        },
        schema={"pattern": pl.String, "out_dim": pl.Int64, "in_dim": pl.Int64, "split": pl.String},
    )
    frame = frame.join(shape_frame, on="pattern", how="left")
    # The quantization type of a tensor's module is the description entry of its `.weight`.
    desc = quant_desc_frame(card)
    frame = frame.with_columns(_wname=pl.format("{}.weight", pl.concat_str(
        [pl.when(pl.col("layer").is_not_null()).then(pl.format("model.layers.{}.", pl.col("layer"))).otherwise(
            pl.when(pl.col("name").str.starts_with("model.")).then(pl.lit("model.")).otherwise(pl.lit(""))),
         pl.col("module")])))
    frame = frame.join(desc.rename({"name": "_wname", "qtype": "qtype"}), on="_wname", how="left")
    frame = frame.join(desc.select("name", pl.lit(True).alias("in_desc")), on="name", how="left").with_columns(
        in_desc=pl.col("in_desc").fill_null(False)
    )
    # An int8/fp8 weight has a scale beside it in the weight map.
    scaled = frame.filter(pl.col("suffix").is_in(["weight_scale", "weight_scale_inv"])).select(
        pl.format("{}.weight", pl.col("name").str.replace(r"\.weight_scale(?:_inv)?$", "")).alias("name"),
        pl.lit(True).alias("_scaled"),
    ).unique("name")
    frame = frame.join(scaled, on="name", how="left").with_columns(_scaled=pl.col("_scaled").fill_null(False))
    weight_bytes = (
        pl.when(pl.col("qtype").is_in(QUANT_TYPES_HALF)).then(0.5)
        .when(pl.col("qtype").is_in(QUANT_TYPES_1B) | pl.col("_scaled")).then(1.0)
        .otherwise(2.0)
    )
    out = pl.col("out_dim").fill_null(0)
    elements = (
        pl.when(pl.col("suffix") == "weight").then(out * pl.col("in_dim").fill_null(0))
        .when(pl.col("suffix") == "weight_scale_inv").then(((out + 127) // 128) * ((pl.col("in_dim").fill_null(0) + 127) // 128))
        .when(pl.col("suffix").is_in(["input_scale", "input_offset"])).then(pl.lit(1, pl.Int64))
        .otherwise(out)
    )
    bytes_per = (
        pl.when(pl.col("suffix") == "weight").then(weight_bytes)
        .when(pl.col("suffix") == "deq_scale").then(8.0)
        .when(pl.col("suffix").is_in(["bias", "e_score_correction_bias", "input_scale", "input_offset"])).then(2.0)
        .otherwise(4.0)
    )
    table = frame.with_columns(elements=elements, bytes_per=bytes_per).drop("_wname", "_scaled")
    card.cache["tensors"] = table
    return table
