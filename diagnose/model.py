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

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "kind": self.kind,
            "lines": self.lines,
            "bytes": self.bytes,
            "raw_lines": self.raw_lines,
            "node": self.node,
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

    @property
    def incomplete(self) -> bool:
        return bool(self.errors)

    def to_dict(self) -> dict[str, Any]:
        from diagnose import __version__

        return {
            "version": __version__,
            "inputs": [i.to_dict() for i in self.inputs],
            "skipped": [s.to_dict() for s in self.skipped],
            "errors": list(self.errors),
            "findings": [f.to_dict() for f in self.findings],
        }


def _iso(ts: datetime | None) -> str | None:
    return ts.isoformat(sep=" ") if ts is not None else None
