"""MindSpeed-RL's token-collect JSON: tokens per logical expert, per MoE layer, from vllm-ascend rollouts.

Source: ``Ascend/MindSpeed-RL`` (reference profiling-and-expert-load.md §D9). With ``generate.token_collects: true``
the rollout counts ``topk_ids`` with ``torch.unique`` on every MoE call, so the counts are of logical experts, and
writes ``{"<moe layer>": {"<expert id>": tokens}}`` (JSON string keys, ``indent=2``):

* 2025 layout (@23dcffabb8a1): rank 0 merges every rank into one ``token_collects_all.json`` in
  ``token_save_path`` (``mindspeed_rl/models/rollout/vllm_adapter/fused_moe.py:488``; its own map generator reads it
  back as ``[layers, experts]``, ``cli/eplb_generate_map_ds.py:62``);
* current layout (@05a90d77cb6c): each rank keeps ``eplb_token_collects_<rank>.json`` (``docs/zh/features/EPLB.md``
  lines 107-117); the ranks' files add up.

Either way the writer reads the file if it is there, adds, and writes it back, so the counts are running totals
that keep growing across runs that reuse the folder. Snapshots of one file over days are a chain like MindIE's
(expertload/logical.py takes differences); a lone snapshot is everything since the folder was first used.
"""

from __future__ import annotations

import json

import polars as pl
import regex

from diagnose.expertload.readers.base import MAX_EXPERTS, MAX_JSON_BYTES, MAX_LAYERS, count_ok, refuse
from diagnose.ingest.metered import SourceFile
from diagnose.model.expertload import Refused

NAME = regex.compile(r"(?:^|[/!\\])(?:token_collects_all|eplb_token_collects_(\d+))(?:[._-][\w.-]*)?\.json$")
SCHEMA = {"layer": pl.Int32, "expert": pl.Int32, "tokens": pl.Int64}


def rank_of(path: str) -> int:
    m = NAME.search(path.replace("\\", "/"))
    return int(m.group(1)) if m and m.group(1) else 0


def looks_like(data: object) -> bool:
    """``{"<int>": {"<int>": ...}}``: the shape of a token-collect file (any name)."""
    return (isinstance(data, dict) and bool(data) and all(isinstance(k, str) and k.strip().isdigit() for k in data)
            and all(isinstance(v, dict) and all(isinstance(e, str) and e.strip().isdigit() for e in v)
                    for v in data.values()))


def read(src: SourceFile, data: object | None = None) -> pl.DataFrame | Refused | None:
    """(layer, expert, tokens) of one snapshot; None when the JSON is not of this shape. ``data``: the JSON when
    the caller parsed it already."""
    if data is None:
        if (src.size or 0) > MAX_JSON_BYTES:
            return refuse(src.path, "too_big", max=MAX_JSON_BYTES)
        try:
            data = json.loads(src.read().decode("utf-8", errors="replace"))
        except (ValueError, RecursionError):
            return refuse(src.path, "bad_json") if NAME.search(src.path.replace("\\", "/")) else None
    if not looks_like(data):
        return refuse(src.path, "bad_json") if NAME.search(src.path.replace("\\", "/")) else None
    rows: dict[str, list[int]] = {"layer": [], "expert": [], "tokens": []}
    for layer, experts in data.items():
        li = int(layer)
        if li >= MAX_LAYERS:
            return refuse(src.path, "bad_json")
        for expert, count in experts.items():
            e = int(expert)
            bad = count_ok(count)
            if e >= MAX_EXPERTS or bad is not None:
                return refuse(src.path, bad or "bad_json", line="-", text=str(count)[:40], width="-")
            rows["layer"].append(li)
            rows["expert"].append(e)
            rows["tokens"].append(int(count))
    return pl.DataFrame(rows, schema=SCHEMA).group_by("layer", "expert").agg(pl.col("tokens").sum()).sort("layer", "expert")
