"""MindIE service ``config.json`` (``mindie-service/conf/config.json``, MindIE service parameter reference).

Layout: ``ServerConfig``, ``BackendConfig`` {``modelInstanceNumber``, ``npuDeviceIds`` (one list per model
instance), ``multiNodesInferEnabled``, ``ModelDeployConfig`` {``maxSeqLen``, ``maxInputTokenLen``,
``ModelConfig`` [{``worldSize``, ``npuMemSize``, ``cpuMemSize``, ``backendType``, ``dp``, ``tp``, ``moe_tp``,
``moe_ep``, ``plugin_params`` …}]}, ``ScheduleConfig`` {``cacheBlockSize``, ``maxPrefillTokens``, ``maxBatchSize``
…}}.

Records: one per line (nothing dropped); a line that holds an interesting key is ``parsed`` and its message reads
``BackendConfig.ModelDeployConfig.maxSeqLen = 32768``. Signals: the numbers below (``engine`` names the model
instance, ``ModelConfig[0]``), with the line of their key. ``mindie_device_world_gap`` = |len(npuDeviceIds[i]) −
worldSize| is emitted only for single-node configs: with ``multiNodesInferEnabled`` MindIE rewrites both from
the rank table. A config that is not valid JSON (comments, trailing commas) is read leniently; if that fails
too, the numbers are taken line by line.
"""

from __future__ import annotations

import bisect
import json
import re
from typing import Any

import polars as pl

from diagnose.bounded import json_loads
from diagnose.model import conform_records, conform_signals, empty_signals
from diagnose.parsers.lineframe import FileContext
from diagnose.parsers.kind import Location, SourceKind

KIND = "mindie-config"

# config key → signal name (numbers).
NUMERIC_KEYS: dict[str, str] = {
    "worldSize": "mindie_world_size",
    "maxSeqLen": "mindie_max_seq_len",
    "maxInputTokenLen": "mindie_max_input_token_len",
    "npuMemSize": "mindie_npu_mem_size",
    "cpuMemSize": "mindie_cpu_mem_size",
    "cacheBlockSize": "mindie_cache_block_size",
    "maxPrefillTokens": "mindie_max_prefill_tokens",
    "maxPrefillBatchSize": "mindie_max_prefill_batch_size",
    "maxBatchSize": "mindie_max_batch_size",
    "maxIterTimes": "mindie_max_iter_times",
    "modelInstanceNumber": "mindie_model_instances",
    "dp": "mindie_dp",
    "tp": "mindie_tp",
    "moe_tp": "mindie_moe_tp",
    "moe_ep": "mindie_moe_ep",
}
# Keys whose lines are worth a parsed record even without a signal.
OTHER_KEYS = {"npuDeviceIds", "multiNodesInferEnabled", "plugin_params", "backendType", "modelName", "modelWeightPath",
              "truncation", "maxPreemptCount"}

_KEY_TOKEN = r'(?:^|[^\\])"(\w+)"\s*:'


def parse(lines: pl.DataFrame, ctx: FileContext) -> tuple[pl.DataFrame, pl.DataFrame]:
    text = "\n".join(lines["text"].to_list())
    # Where each key is written: (line, key) in document order, one polars pass over the lines.
    tokens = (
        lines.select("line", key=pl.col("text").str.extract_all(_KEY_TOKEN))
        .explode("key")
        .drop_nulls("key")
        .with_columns(pl.col("key").str.extract(r'"(\w+)"', 1))
    )
    doc = _load(text)
    if doc is not None:
        entries = _locate(list(_walk(doc, ())), tokens["line"].to_list(), tokens["key"].to_list())
    else:
        entries = _scan_lines(lines)
    signals = _signals(doc, entries, ctx)
    interesting = set(NUMERIC_KEYS) | OTHER_KEYS
    keyed = [(ln, ".".join(path), _show(v)) for path, v, ln in entries if path and path[-1] in interesting and ln]
    first_per_line: dict[int, str] = {}
    for ln, dotted, shown in keyed:
        first_per_line.setdefault(ln, f"{dotted} = {shown}")
    labels = pl.DataFrame(
        {"line": list(first_per_line), "_msg": list(first_per_line.values())},
        schema={"line": pl.UInt32, "_msg": pl.String},
    )
    frame = lines.join(labels, on="line", how="left").sort("line").with_columns(
        file=pl.lit(ctx.path),
        source=pl.lit(KIND),
        node=pl.lit(ctx.node, pl.String),
        parsed=pl.col("_msg").is_not_null(),
        message=pl.coalesce("_msg", "text"),
        component=pl.lit("config.json"),
        year_known=pl.lit(False),
        event=pl.col("line"),
    )
    return conform_records(frame), signals


def _load(text: str) -> Any:
    try:
        return json_loads(text)
    except ValueError:
        pass
    # Lenient: drop // comments outside strings and trailing commas (configs pasted from guides).
    stripped = re.sub(r'(?m)^((?:[^"\n/]|"(?:[^"\\\n]|\\.)*"|/(?!/))*)//.*$', r"\1", text)
    stripped = re.sub(r",(\s*[}\]])", r"\1", stripped)
    try:
        return json_loads(stripped)
    except ValueError:
        return None


def _walk(node: Any, path: tuple):
    """(path, value) for every object key, in document order."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield path + (key,), value
            yield from _walk(value, path + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk(value, path[:-1] + (f"{path[-1]}[{i}]",) if path else (f"[{i}]",))


def _locate(walked: list, token_lines: list[int], token_keys: list[str]) -> list[tuple[tuple, Any, int | None]]:
    """Give each walked key the line of its next occurrence in the text (its first one if none is left)."""
    where: dict[str, list[int]] = {}
    for j, key in enumerate(token_keys):
        where.setdefault(key, []).append(j)
    out = []
    pos = 0
    for path, value in walked:
        spots = where.get(path[-1], [])
        k = bisect.bisect_left(spots, pos)
        if k < len(spots):
            found: int | None = spots[k]
            pos = spots[k] + 1
        else:
            found = spots[0] if spots else None
        out.append((path, value, token_lines[found] if found is not None else None))
    return out


def _scan_lines(lines: pl.DataFrame) -> list[tuple[tuple, Any, int | None]]:
    """Unreadable JSON: `"key": number` pairs line by line (flat paths)."""
    pairs = lines.select(
        "line", m=pl.col("text").str.extract_groups(r'"(?P<k>\w+)"\s*:\s*(?P<v>-?\d+(?:\.\d+)?|true|false|"[^"]*")')
    ).unnest("m").drop_nulls("k")
    out = []
    for ln, k, v in pairs.iter_rows():
        try:
            value = json_loads(v)
        except ValueError:
            value = v
        out.append(((k,), value, ln))
    return out


def _show(value: Any) -> str:
    if isinstance(value, (dict, list)):
        shown = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        return shown if len(shown) <= 200 else shown[:197] + "..."
    return json.dumps(value, ensure_ascii=False) if isinstance(value, (str, bool)) or value is None else str(value)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _instance(path: tuple) -> str:
    for part in path:
        if part.startswith("ModelConfig["):
            return part
    return "config"


def _signals(doc: Any, entries: list, ctx: FileContext) -> pl.DataFrame:
    rows: list[dict] = []

    def add(signal: str, line: int | None, engine: str, value: float | None = None, text: str | None = None):
        if value is None and text is None:
            return
        rows.append({"line": line or 1, "engine": engine, "signal": signal, "value": value, "text": text})

    for path, value, line in entries:
        key = path[-1]
        if key in NUMERIC_KEYS:
            add(NUMERIC_KEYS[key], line, _instance(path), _number(value))
        elif key == "plugin_params":
            params = _plugin_params(value)
            kinds = str(params.get("plugin_type", "")).lower()
            if "mtp" in kinds:
                add("speculative_method", line, _instance(path), text="mtp")
                n = _number(params.get("num_speculative_tokens"))
                add("num_speculative_tokens", line, _instance(path), n if n is not None else None)
        elif key == "npuDeviceIds" and isinstance(value, list):
            groups = value if value and all(isinstance(v, list) for v in value) else [value]
            for i, ids in enumerate(groups):
                add("mindie_device_count", line, f"ModelConfig[{i}]", float(len(ids)))
        elif key == "multiNodesInferEnabled":
            add("mindie_multi_node", line, "config", 1.0 if value in (True, "true", 1) else 0.0)
    _gap(rows)
    if not rows:
        return empty_signals()
    frame = pl.DataFrame(rows, schema={"line": pl.UInt32, "engine": pl.String, "signal": pl.String,
                                       "value": pl.Float64, "text": pl.String}, orient="row")
    frame = frame.with_columns(file=pl.lit(ctx.path), source=pl.lit(KIND), node=pl.lit(ctx.node, pl.String))
    return conform_signals(frame.sort("line", maintain_order=True))


def _gap(rows: list[dict]) -> None:
    """Single-node configs: |devices listed − worldSize| per model instance, on the worldSize line."""
    if any(r["signal"] == "mindie_multi_node" and r["value"] == 1.0 for r in rows):
        return
    devices = {r["engine"]: r for r in rows if r["signal"] == "mindie_device_count"}
    for r in [r for r in rows if r["signal"] == "mindie_world_size" and r["value"] is not None]:
        dev = devices.get(r["engine"]) or (next(iter(devices.values())) if len(devices) == 1 else None)
        if dev is not None:
            rows.append({"line": r["line"], "engine": r["engine"], "signal": "mindie_device_world_gap",
                         "value": abs(dev["value"] - r["value"]), "text": None})


def _plugin_params(value: Any) -> dict:
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = json_loads(value)
            return parsed if isinstance(parsed, dict) else {}
        except ValueError:
            found = re.search(r"plugin_type\W+(\w+)", value)
            n = re.search(r"num_speculative_tokens\W+(\d+)", value)
            return {"plugin_type": found.group(1) if found else "", "num_speculative_tokens": n.group(1) if n else None}
    return {}


SIGNALS: dict[str, str] = {
    "mindie_world_size": "MindIE ModelConfig worldSize; `engine` is the model instance, `ModelConfig[0]`",
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
}

SOURCE = SourceKind(
    name=KIND,
    parse=parse,
    summary="MindIE `config.json` (BackendConfig, ModelDeployConfig, ScheduleConfig)",
    file_name=r"(?i)config[\w.-]*\.json$",
    sniff=r'"(?:BackendConfig|ModelDeployConfig|ScheduleConfig|npuDeviceIds|multiNodesInferEnabled|maxSeqLen'
    r'|maxInputTokenLen|npuMemSize|cacheBlockSize|maxPrefillTokens|modelInstanceNumber)"\s*:',
    signals=SIGNALS,
    sniff_rank=30,
    locations=(Location(roots=("$MIES_INSTALL_PATH", "/usr/local/Ascend/mindie/latest/mindie-service"),
                        patterns=("conf/config.json",), source="MindIE service install layout"),),
)
