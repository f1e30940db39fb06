"""MindIE expert-hotspot dumps and the ``model_gen_config.json`` rank 0 writes beside them.

Dumps (MindIE-LLM ``examples/atb_models/atb_llm/utils/moe_utils.py: save_eplb_data``; reference
profiling-and-expert-load.md §D4): ``<dump>/prefill/prefill_<rank>.csv`` and ``<dump>/decode/decode_<rank>.csv``,
no header; each write appends a block of ``num_moe_layers`` rows x local-slot columns of running totals. The
``_bak.csv`` copies and ``_topk_`` id dumps do not match ``DUMP_NAME``.

``model_gen_config.json`` (same section, ``flash_causal_deepseekv2.py:432-457``) sits in each stage folder:
``num_moe_layers`` (the MoE layers, plus one when MTP is on), ``num_of_experts`` (routed experts),
``num_dangling_shared_experts`` (devices holding only the shared expert), ``collection_Interval``. It tells the
rows per block without guessing, and how many of them are MTP rows (``num_moe_layers`` beyond the map's layers).

Every dump is checked line by line before it is counted (``check``): each line must be whole numbers of at most
15 digits separated by commas, all lines as wide as the first, at most ``MAX_SLOTS`` wide. Otherwise the file is
refused with the first offending line; a last line cut short (a write in progress) is left out, not refused.
"""

from __future__ import annotations

import io
import os
from typing import Any

import polars as pl
import regex

from diagnose.bounded import json_loads
from diagnose.expertload.readers.base import FIRST_LINE_BYTES, MAX_JSON_BYTES, MAX_LAYERS, MAX_SLOTS, refuse
from diagnose.ingest.metered import SourceFile
from diagnose.model.expertload import Refused
from diagnose.parsers.kinds.expert_hotspot import block_period

DUMP_NAME = regex.compile(r"(?:^|[/!\\])(prefill|decode)_(\d+)\.csv$", regex.IGNORECASE)
CONFIG_NAME = regex.compile(r"(?:^|[/!\\])model_gen_config\.json$", regex.IGNORECASE)
ROW = r"^\s*\d{1,15}(?:\s*,\s*\d{1,15})*\s*$"
# DeepSeek-V3/R1 have 58 MoE layers (61 decoder layers, the first 3 dense); with MTP one more.
PREFERRED_LAYERS = (58, 59, 61, 60, 57, 26, 27, 47, 48, 94)
IN_MEMORY_BYTES = 16 * 1024 * 1024  # a dump up to this size is parsed once and counted in memory


def _on_disk(src: SourceFile) -> bool:
    return "!" not in src.path and not src.path.lower().endswith(".gz") and os.path.isfile(src.path)


def _scan(src: SourceFile, **opts: Any) -> pl.LazyFrame:
    if _on_disk(src):
        return pl.scan_csv(src.path, **opts)
    return pl.read_csv(io.BytesIO(src.read()), **opts).lazy()


def check(src: SourceFile) -> tuple[Refused | None, int]:
    """(refusal, lines to read): the dump is whole numbers in rows of one width, or it is refused."""
    with src.open() as stream:
        head = stream.read(FIRST_LINE_BYTES)
    first = head.split(b"\n", 1)[0]
    if b"\n" not in head and len(head) >= FIRST_LINE_BYTES or first.count(b",") + 1 > MAX_SLOTS:
        return refuse(src.path, "too_wide", max=MAX_SLOTS), 0
    lines = _scan(src, has_header=False, separator="\x1f", quote_char=None, schema={"t": pl.String},
                  truncate_ragged_lines=True)
    lines = lines.with_row_index("n", offset=1).with_columns(pl.col("t").fill_null(""))
    stat = lines.with_columns(ok=pl.col("t").str.contains(ROW), commas=pl.col("t").str.count_matches(","))
    total = stat.select(pl.len()).collect().item()
    if total == 0:
        return None, 0
    width = stat.head(1).collect()["commas"][0]
    bad = stat.filter(~pl.col("ok") | (pl.col("commas") != width)).head(2).collect()
    if bad.height == 0:
        return None, total
    n, text, commas = bad["n"][0], bad["t"][0], bad["commas"][0]
    if n == total and bad.height == 1 and commas <= width and regex.fullmatch(r"[\d,\s]*", text):
        return None, total - 1  # the last line is being written: leave it out
    sample = text.strip()[:40]
    if regex.search(r"-\s*\d", text):
        code = "negative"
    elif regex.search(r"\d{16,}", text) and regex.fullmatch(r"[\d,\s]*", text):
        code = "huge"
    elif commas != width and regex.fullmatch(r"[\d,\s]*", text):
        code = "ragged"
    else:
        code = "bad_cell"
    return refuse(src.path, code, line=n, text=sample, width=width + 1), 0


def cells(src: SourceFile, lines: int | None = None, in_memory: bool = False) -> pl.LazyFrame:
    """The cells as Int64 columns s0, s1, ... of the first ``lines`` lines (after ``check`` passed)."""
    opts: dict[str, Any] = dict(has_header=False, infer_schema=False, truncate_ragged_lines=True)
    small = in_memory and (src.size or 0) <= IN_MEMORY_BYTES
    if _on_disk(src):
        lf = pl.read_csv(src.path, **opts).lazy() if small else pl.scan_csv(src.path, **opts)
    else:
        lf = pl.read_csv(io.BytesIO(src.read()), **opts).lazy()
        small = True
    if lines is not None:
        lf = lf.head(lines)
    cols = lf.collect_schema().names()
    lf = lf.select([pl.col(c).str.strip_chars().cast(pl.Int64, strict=False).fill_null(0).alias(f"s{i}")
                    for i, c in enumerate(cols)])
    return lf.collect().lazy() if small else lf


def detect_layers(src: SourceFile, lines: int | None = None) -> int | None:
    """Rows per block of one file (see ``block_period``); None when the file does not tell."""
    lf = cells(src, lines)
    head = lf.head(4096).collect()
    n = lf.select(pl.len()).collect().item()
    if n == 0 or head.width == 0:
        return None
    width, shown = head.width, head.height
    flat = head.select(pl.concat_list(pl.all()).alias("v"))["v"].explode()  # the cells row by row
    if shown < n:  # the period must divide the whole file: pad the head to a divisor-compatible view
        cands = [d for d in range(1, shown // 2 + 1) if n % d == 0]
        for d in sorted(cands, key=lambda d: (d not in PREFERRED_LAYERS, d)):
            got = block_period(flat.slice(0, (shown // d) * d * width), width)
            if got == d:
                return d
        return None
    return block_period(flat, width)


def read_config(src: SourceFile) -> dict[str, int] | None:
    """``num_moe_layers``, ``num_of_experts``, ``num_dangling_shared_experts`` and the first of
    ``num_of_selected_experts`` (a list, MindIE writes ``[k]``) of a ``model_gen_config.json``;
    None when it is not one (or its numbers are out of range)."""
    if (src.size or 0) > MAX_JSON_BYTES:
        return None
    try:
        data = json_loads(src.read())  # bounded: depth, digits, non-finite numbers (diagnose/bounded.py)
        top_k = data.get("num_of_selected_experts")
        out = {"num_moe_layers": int(data["num_moe_layers"]), "num_of_experts": int(data.get("num_of_experts") or 0),
               "num_dangling_shared_experts": int(data.get("num_dangling_shared_experts") or 0),
               "num_of_selected_experts": int(top_k[0] if isinstance(top_k, list) and top_k else (top_k or 0))}
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    if not 0 < out["num_moe_layers"] <= MAX_LAYERS or min(out.values()) < 0:
        return None
    return out
