"""The report: every part typed, so a renderer reads fields, never keys of a dictionary.

``Document`` is what the JSON report holds (docs/schemas.md is generated from it); ``Report`` adds what only
the pages draw (frames of signals, series and events, the curve panels) and what renderers need of the rules
that ran. ``Words`` fields (diagnose/messages.py) are said in each output's own language when it is rendered.
A field that is ``UNSET`` is left out of the JSON report.
"""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any, ClassVar

import msgspec
import polars as pl

from diagnose import __version__
from diagnose.messages import Phrase, Words
from diagnose.model.findings import Finding, RuleInfo
from diagnose.model.inputfiles import InputFile, Skipped

UNSET = msgspec.UNSET
Unset = msgspec.UnsetType


class Status(enum.StrEnum):
    """What a run covered (diagnose/analysis/coverage.py); the exit code follows it."""

    COMPLETE = "complete"
    PARTIAL = "partial"
    NOTHING = "nothing-analysed"


class Unread(msgspec.Struct, frozen=True):
    path: str
    reason: Words  # why it was not read, or read only in part


class Coverage(msgspec.Struct, kw_only=True):
    """What the run covered (diagnose/analysis/coverage.py); the exit code follows it (4 and 5, docs/ci.md).
    A run that read nothing, or less than it was given, never reads as clean."""

    # complete; partial (an input not read, or a file read only in part); nothing-analysed (then ``reason`` says
    # why, and the verdict is nothing-analysed)
    status: Status = Status.COMPLETE
    files_read: int = 0
    lines: int = 0
    incomplete: list[Unread] = msgspec.field(default_factory=list)  # files read only in part
    # inputs not read whose loss matters; those left out by design are listed in ``skipped`` only
    not_read: list[Unread] = msgspec.field(default_factory=list)
    reason: Words | Unset = UNSET  # why nothing was analysed
    text: Words | Unset = UNSET  # the sentence every format prints, when not complete


class RootCause(msgspec.Struct, tag_field="kind", tag="root-cause", kw_only=True):
    """The top ranked finding of severity warning or worse (diagnose/analysis/verdict.py); a run that ended
    abnormally always has one, the finding that says what ended it."""

    rule_id: str
    category: str
    title: Words
    where: str  # a few of the nodes and ranks it was seen on ("-": none known)
    first_seen: str  # YYYY-MM-DD HH:MM:SS, or "-"
    file: str | None  # the first evidence line
    line: int | None
    text: Words  # the verdict's sentence


class NoKnownCause(msgspec.Struct, tag_field="kind", tag="no-known-cause", kw_only=True):
    """Errors no rule explains fail the run (it ended abnormally, or ``--fail-on-unrecognised``): the first of them
    by time, by its signature."""

    signature: str
    file: str | None
    line: int | None
    first_seen: str | None
    errors: int  # errors no rule explains (the counts of the listed error signatures)
    text: Words


class Unexplained(msgspec.Struct, tag_field="kind", tag="unexplained-errors", kw_only=True):
    """The run did not end abnormally, and errors no rule explains were logged: listed, not a failure (unless
    ``--fail-on-unrecognised``)."""

    signature: str
    file: str | None
    line: int | None
    first_seen: str | None
    errors: int
    text: Words


class Notes(msgspec.Struct, tag_field="kind", tag="notes"):
    """Only informational findings, and no error that no rule explains."""

    text: Words


class Clean(msgspec.Struct, tag_field="kind", tag="clean"):
    """No finding and no error that no rule explains."""

    text: Words


class NothingAnalysed(msgspec.Struct, tag_field="kind", tag="nothing-analysed"):
    """The run read nothing it could analyse (exit 4); ``coverage.reason`` says why."""

    text: Words


Verdict = RootCause | NoKnownCause | Unexplained | Notes | Clean | NothingAnalysed


def verdict_kind(verdict: Verdict | None) -> str | None:
    """``root-cause``, ``no-known-cause``, ``unexplained-errors``, ``notes``, ``clean`` or ``nothing-analysed``."""
    return None if verdict is None else type(verdict).__struct_config__.tag


class Comparison(msgspec.Struct, kw_only=True):
    """A row of a validation run's comparison with its baseline (diagnose/validation/compare.py)."""

    metric: str
    scope: str | None
    baseline: float | None
    this: float | None
    change: float | None
    unit: str
    tolerance: float
    verdict: str  # regressed | improved | ok | changed | no baseline | missing in this run | not comparable | -


class Example(msgspec.Struct, frozen=True):
    """A signature's earliest line (by time, then file and line)."""

    file: str
    line: int
    text: str  # the whole line
    message: str | None  # the line without its header


class Signature(msgspec.Struct, kw_only=True):
    """Errors no rule explains, grouped by their masked message (diagnose/analysis/signatures.py).

    Which records: WARNING, ERROR and CRITICAL records and records with an error code; of a multi-line event (a
    Python traceback) only the exception line and the error-code lines. Left out: every record of an event that a
    fired rule's selectors match or a finding quotes, and the other lines of a CANN error block holding one.
    Ordered by ``count`` (descending), then ``signature``; the top 20 are listed and ``unrecognised_more`` counts
    the rest. ``diagnose rules new --from-report REPORT.json --index N`` writes a starter rule for one."""

    # the message, header stripped, its variable parts masked: <TS> timestamps, <UUID>, <REQ> request ids, <IP>,
    # <PORT>, <PATH>, <SIZE> sizes with units, <HEX> hex numbers and addresses, <PID> pids and tids, <RANK>,
    # <DEV> device ids, <N> other numbers; whitespace squeezed
    signature: str
    count: int
    first_seen: str | None
    last_seen: str | None
    nodes: list[str]
    ranks: list[int]
    level: str | None
    code: str | None
    source: str | None
    example: Example
    # with a JSON --baseline: not among that report's listed signatures (only its top 20 are known, so a rare
    # signature may be reported new again)
    new: bool | Unset = UNSET


class SuppressedFinding(msgspec.Struct, tag_field="kind", tag="finding", kw_only=True):
    """A finding a ``[[suppress]]`` entry of the configuration file took out of ``findings``."""

    rule_id: str
    name: str
    severity: str
    title: Words
    count: int
    nodes: list[str]
    fingerprint: str | None
    reason: str  # the entry's reason
    suppression: str  # where the suppression is written (".diagnose.toml: suppress[0]")


class SuppressedSignature(msgspec.Struct, tag_field="kind", tag="signature", kw_only=True):
    """A signature of unexplained errors a ``[[suppress]]`` entry took out of ``unrecognised``."""

    signature: str
    count: int
    level: str | None
    reason: str
    suppression: str


Suppressed = SuppressedFinding | SuppressedSignature


class Gate(msgspec.Struct, kw_only=True):
    """Whether the run fails, and why: the one decision the exit code follows and every format states
    (diagnose/analysis/gate.py). ``fails`` names the reasons (findings, unrecognised, nothing-analysed,
    partial, incomplete); ``failing`` the rule ids of the findings that fail it."""

    exit_code: int
    fails: list[str]
    fail_on: str
    failing: list[str] = msgspec.field(default_factory=list)
    unrecognised: bool = False  # errors no rule explains fail the run


class SlowRule(msgspec.Struct, kw_only=True):
    """A rule that took longer than its time budget (diagnose/engine/run.py ``RULE_SECONDS``): the run names it
    instead of only being slow (a user's ``.{1,5000}`` on long lines ran for minutes)."""

    rule: str
    path: str
    seconds: float
    budget: float


class Document(msgspec.Struct, kw_only=True):
    """The JSON report (``--format json``): stable, fields only ever added."""

    version: str = __version__  # the diagnose release that wrote it
    inputs: list[InputFile] = msgspec.field(default_factory=list)  # every file read
    skipped: list[Skipped] = msgspec.field(default_factory=list)  # every input not read, with the reason
    errors: list[str] = msgspec.field(default_factory=list)  # internal errors: the run is incomplete
    findings: list[Finding] = msgspec.field(default_factory=list)  # ranked: the most likely root cause first
    verdict: Verdict | Unset = UNSET  # the run in one sentence, by its kind
    comparisons: list[Comparison] | Unset = UNSET  # validation runs against a baseline
    unrecognised: list[Signature] = msgspec.field(default_factory=list)  # the top signatures
    unrecognised_more: int = 0  # how many more signatures there are
    unrecognised_new: int | Unset = UNSET  # with a JSON --baseline: how many of all are new
    derived: list[InputFile] | Unset = UNSET  # inputs the run derived itself (preflight and validation facts)
    coverage: Coverage | Unset = UNSET  # what the run covered
    findings_new: int | Unset = UNSET  # with a findings baseline (--baseline report.json)
    suppressed: list[Suppressed] = msgspec.field(default_factory=list)  # what the configuration's suppressions took out
    gate: Gate | Unset = UNSET  # whether the run fails and why: the exit code follows it
    slow_rules: list[SlowRule] | Unset = UNSET  # rules over their time budget (none: left out)


class Report(msgspec.Struct, kw_only=True):
    """Everything a renderer needs; renderers never re-read inputs. The document's fields first (empty lists
    and None where the document leaves a field out), then what only pages and rule tables use."""

    findings: list[Finding] = msgspec.field(default_factory=list)
    inputs: list[InputFile] = msgspec.field(default_factory=list)
    skipped: list[Skipped] = msgspec.field(default_factory=list)
    errors: list[str] = msgspec.field(default_factory=list)
    verdict: Verdict | None = None
    comparisons: list[Comparison] = msgspec.field(default_factory=list)
    unrecognised: list[Signature] = msgspec.field(default_factory=list)
    unrecognised_more: int = 0
    unrecognised_new: int | None = None
    derived: list[InputFile] = msgspec.field(default_factory=list)
    coverage: Coverage | None = None
    findings_new: int | None = None
    suppressed: list[Suppressed] = msgspec.field(default_factory=list)
    gate: Gate | None = None
    slow_rules: list[SlowRule] = msgspec.field(default_factory=list)
    # Not in the JSON report:
    rules_checked: list[RuleInfo] = msgspec.field(default_factory=list)  # every rule that ran, catalog order
    signals: Any = None  # pl.DataFrame | None: for curve-drawing renderers (html)
    series: Any = None  # pl.DataFrame | None: periodic metric rows, compact (diagnose/model/series.py)
    panels: list[tuple[str, str, tuple[str, ...]]] = msgspec.field(default_factory=list)  # the page's curve panels
    timeline: Any = None  # pl.DataFrame | None: the page's events (diagnose/analysis/timeline_events.py)

    INTERNAL: ClassVar[tuple[str, ...]] = ()

    @property
    def incomplete(self) -> bool:
        return bool(self.errors)

    @property
    def status(self) -> Status:
        return self.coverage.status if self.coverage is not None else Status.COMPLETE

    def rule(self, rule_id: str) -> RuleInfo | None:
        return next((r for r in self.rules_checked if r.id == rule_id), None)

    def document(self) -> Document:
        """The JSON report's part of this report."""
        return Document(
            inputs=self.inputs, skipped=self.skipped, errors=self.errors, findings=self.findings,
            verdict=self.verdict if self.verdict is not None else UNSET,
            comparisons=self.comparisons or UNSET, unrecognised=self.unrecognised,
            unrecognised_more=self.unrecognised_more,
            unrecognised_new=self.unrecognised_new if self.unrecognised_new is not None else UNSET,
            derived=self.derived or UNSET, coverage=self.coverage if self.coverage is not None else UNSET,
            findings_new=self.findings_new if self.findings_new is not None else UNSET, suppressed=self.suppressed,
            gate=self.gate if self.gate is not None else UNSET,
            slow_rules=self.slow_rules or UNSET,
        )


def builtins(value: Any, say) -> Any:
    """A struct (or a list of them) as plain JSON values: ``Words`` said by ``say``, times as
    ``YYYY-MM-DD HH:MM:SS[.ffffff]``, and the fields a struct keeps ``INTERNAL`` left out."""
    def hook(obj: Any) -> Any:
        if isinstance(obj, Words):
            return say(obj)
        raise NotImplementedError(f"cannot encode {type(obj).__name__}")

    plain = msgspec.to_builtins(value, builtin_types=(datetime,), enc_hook=hook)
    return _strip(value, plain)


def _strip(value: Any, plain: Any) -> Any:
    if isinstance(plain, datetime):
        return plain.isoformat(sep=" ")
    if isinstance(value, list) and isinstance(plain, list):
        return [_strip(v, p) for v, p in zip(value, plain)]
    if isinstance(value, msgspec.Struct) and isinstance(plain, dict):
        internal = getattr(type(value), "INTERNAL", ())
        return {k: _strip(getattr(value, k, None), p) for k, p in plain.items() if k not in internal}
    if isinstance(value, dict) and isinstance(plain, dict):
        return {k: _strip(value.get(k), p) for k, p in plain.items()}
    return plain


__all__ = ["Clean", "Comparison", "Coverage", "Document", "Example", "Gate", "NoKnownCause", "NothingAnalysed", "Notes",
           "Phrase", "Report", "RootCause", "Signature", "Status", "Suppressed", "SuppressedFinding",
           "SuppressedSignature", "Unexplained", "Unread", "UNSET", "Verdict", "builtins", "verdict_kind"]
