"""Preflight facts (``diagnose preflight`` writes them; see diagnose.preflight.checks).

One fact per line: ``key = value`` with an optional ``  # note`` (the arithmetic behind the value).
Two ways in, one frame: ``parse`` reads a facts file (written by ``--facts``, or a rule's fixture) and
``from_facts`` takes the facts a run derives itself (diagnose/preflight/factsource.py) as values, never as
text to read back. Every fact is a parsed record (``component`` = key, ``message`` = the whole line so a
rule's regex sees the note too) and a signal named after the key: numeric values in ``value``, anything else
in ``text``.
Lines starting with ``#`` are comments; other lines are kept as raw records.
"""

from __future__ import annotations

import polars as pl

from diagnose.model import conform_records, conform_signals
from diagnose.parsers.lineframe import FileContext
from diagnose.parsers.kind import SourceKind

KIND = "preflight"

FACT = r"^(?P<key>[a-z][a-z0-9_]*) = (?P<val>.*?)(?:  # (?P<note>.*))?$"


def parse(lines: pl.DataFrame, ctx: FileContext) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A facts file (``diagnose preflight --facts FILE``, or a rule's fixture): its lines read back into
    key and value; comments and other lines are kept as records too."""
    g = pl.col("text").str.extract_groups(FACT).struct.field
    frame = lines.with_columns(_key=g("key"), _val=g("val").str.strip_chars(), file=pl.lit(ctx.path))
    return _frames(frame, ctx.node)


def from_facts(path: str, facts: list[tuple[str, str, str]], node: str | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The facts a run derives itself, as records and signals, without writing them out and reading them
    back: ``(key, value as shown, line)`` each, numbered 1.. in ``path`` (a derived input, whose lines'
    origins the caller records). The same frames as ``parse`` gives for those lines written to a file, so
    a rule's fixtures (facts files) test what a run sees."""
    frame = pl.DataFrame(
        {"line": list(range(1, len(facts) + 1)), "text": [t for _, _, t in facts],
         "_key": [k for k, _, _ in facts], "_val": [v for _, v, _ in facts], "file": [path] * len(facts)},
        schema={"line": pl.UInt32, "text": pl.String, "_key": pl.String, "_val": pl.String, "file": pl.String},
    )
    return _frames(frame, node)


def _frames(frame: pl.DataFrame, node: str | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Records and signals of fact rows (``file``, ``line``, ``text``, ``_key``, ``_val``): a record per row
    (``component`` = key, ``message`` = the whole line so a rule's regex sees the note too) and a signal per
    fact named after its key."""
    frame = frame.with_columns(
        source=pl.lit(KIND),
        node=pl.lit(node, pl.String),
        parsed=pl.col("_key").is_not_null() | pl.col("text").str.starts_with("#"),
        component=pl.col("_key"),
        message=pl.col("text"),
        level=pl.when(pl.col("_key") == "input_problem").then(pl.lit("ERROR")).otherwise(None),
        year_known=pl.lit(False),
        event=pl.col("line"),
    )
    records = conform_records(frame)
    lowered = pl.col("_val").str.to_lowercase()
    number = (
        pl.when(lowered == "true").then(pl.lit("1")).when(lowered == "false").then(pl.lit("0")).otherwise(pl.col("_val"))
        .str.replace_all(",", "")
        .cast(pl.Float64, strict=False)
    )
    signals = frame.filter(pl.col("_key").is_not_null()).select(
        "file",
        "line",
        "source",
        "node",
        pl.lit(None, pl.Datetime("us")).alias("ts"),
        pl.lit("preflight").alias("engine"),
        pl.col("_key").alias("signal"),
        number.alias("value"),
        pl.when(number.is_null()).then(pl.col("_val")).otherwise(None).alias("text"),
    )
    return records, conform_signals(signals)


SIGNALS: dict[str, str] = {
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

SOURCE = SourceKind(
    name=KIND,
    parse=parse,
    summary="facts written by `diagnose preflight --facts FILE` (and derived from model files in a bundle)",
    file_name=r"(?i)\.facts$",
    sniff=r"^# diagnose preflight facts",
    signals=SIGNALS,
    sniff_rank=70,
)
