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
    signal     str       name, e.g. ``kv_cache_usage_pct``; each kind documents its own (``SourceKind.signals``,
                         ``diagnose rules signals`` lists them)
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
    generic: bool = False  # says only the family of a failure (an unlisted or "inner error" code): ranked after specific ones
    fingerprint: str | None = None  # stable across runs (diagnose/analysis/fingerprint.py): findings baselines, SARIF
    baseline_state: str | None = None  # with a findings baseline (--baseline report.json): "new" or "known"

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
            "fingerprint": self.fingerprint,
            **({"baseline_state": self.baseline_state} if self.baseline_state else {}),
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
    incomplete: str | None = None  # why the file was read only in part (a truncated .gz): the run's coverage is partial

    def to_dict(self) -> dict[str, Any]:
        out = {
            "path": self.path,
            "kind": self.kind,
            "lines": self.lines,
            "bytes": self.bytes,
            "raw_lines": self.raw_lines,
            "node": self.node,
            "encoding": self.encoding,
            "note": self.note,
        }
        if self.incomplete:
            out["incomplete"] = self.incomplete
        return out


# Reasons for skipping a file that is not a log by design (nothing of the incident is lost by not reading it);
# any other skipped input means the run covered less than it was given (diagnose/analysis/coverage.py).
BY_DESIGN = ("binary file", "symbolic link", "link inside archive", "special file", "not a regular file",
             "Python source", "not in the model directory")


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str

    @property
    def by_design(self) -> bool:
        """Not a log (a binary, a link, Python source): leaving it out loses nothing."""
        return self.reason.startswith(BY_DESIGN)

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
    series: pl.DataFrame | None = None  # periodic metric rows, compact (diagnose/model/series.py): html curves
    # curve panels of the incident page: (title, unit, signals), from the source kinds that have some
    panels: list[tuple[str, str, tuple[str, ...]]] = field(default_factory=list)
    # html timeline: dated WARNING+ records and evidence lines, capped (diagnose/analysis/timeline_events.py)
    timeline: pl.DataFrame | None = None
    # validation runs against a baseline (diagnose/compare.py): metric, scope, baseline, this, change, unit,
    # tolerance, verdict; in to_dict() only when non-empty
    comparisons: list[dict[str, Any]] = field(default_factory=list)
    # errors no rule explains (diagnose/analysis/signatures.py): the top signatures, how many more, and with a JSON
    # --baseline how many are new; in to_dict() as unrecognised, unrecognised_more, unrecognised_new
    unrecognised: list[dict[str, Any]] = field(default_factory=list)
    unrecognised_more: int = 0
    unrecognised_new: int | None = None
    # the one-line verdict (diagnose/analysis/verdict.py): kind, text, and where it points
    verdict: dict[str, Any] = field(default_factory=dict)
    # inputs the run derived itself (preflight facts, validation facts): not files read; their findings'
    # evidence points at the files the facts came from
    derived: list[InputFile] = field(default_factory=list)
    # what the run covered (diagnose/analysis/coverage.py): status complete / partial / nothing-analysed, the reason,
    # the inputs read in part or not read, and a sentence for the reports
    coverage: dict[str, Any] = field(default_factory=dict)
    # findings and signatures the configuration suppresses, each with its reason (diagnose/analysis/suppression.py)
    suppressed: list[dict[str, Any]] = field(default_factory=list)
    # with a findings baseline (--baseline report.json): how many findings are new; None without one
    findings_new: int | None = None
    # rules that took longer than their time budget: rule, path, seconds, budget (diagnose/engine/run.py)
    slow_rules: list[dict[str, Any]] = field(default_factory=list)

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
        if self.verdict:
            out["verdict"] = dict(self.verdict)
        if self.comparisons:
            out["comparisons"] = [dict(c) for c in self.comparisons]
        out["unrecognised"] = [dict(u) for u in self.unrecognised]
        out["unrecognised_more"] = self.unrecognised_more
        if self.unrecognised_new is not None:
            out["unrecognised_new"] = self.unrecognised_new
        if self.derived:
            out["derived"] = [d.to_dict() for d in self.derived]
        if self.coverage:
            out["coverage"] = dict(self.coverage)
        if self.findings_new is not None:
            out["findings_new"] = self.findings_new
        out["suppressed"] = [dict(s) for s in self.suppressed]
        if self.slow_rules:
            out["slow_rules"] = [dict(s) for s in self.slow_rules]
        return out


def _iso(ts: datetime | None) -> str | None:
    return ts.isoformat(sep=" ") if ts is not None else None
