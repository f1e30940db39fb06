"""A rule's ``[match]`` table, typed: one class per match kind, with its selectors.

A *selector* picks rows: ``regex`` (+ ``not_regex``, ``field``, ``level``) picks log records; ``signal`` (+
``above``, ``below``, ``text_regex``, ``not_regex``) picks parsed values. A match kind combines selectors
(``pattern``: one; ``threshold``: a signal plus ``also`` conditions on the same line; ``absence``: ``when``,
``missing`` and an optional ``require``; ``mismatch``: a signal compared across nodes or devices).

``SCHEMA`` is the one place that says which fields each part takes and of what type; ``rulefile`` validates
a rule file against it and builds these objects, and every other module reads them, never the raw table
(``raw`` keeps it, in file order, for the generated docs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from diagnose.scan.fastregex import dfa_safe

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
SCOPES = ("bundle", "node", "file")
ACROSS = ("node", "device", "engine", "file")
WITHIN = ("node", "file")

# field -> (type, meaning); "regex" fields are compiled, "duration" fields look like 30s / 5m / 1h / 500ms.
SELECTOR_FIELDS: dict[str, tuple[str, str]] = {
    "regex": ("regex", "pattern over the record's message (or `field`)"),
    "not_regex": ("regex", "the record (or the signal's text) must not match this"),
    "field": ("field", "`message` (header stripped, the default) or `text` (the whole line)"),
    "level": ("levels", "a level or list of levels the record must have"),
    "signal": ("str", "a parsed value instead of a log record"),
    "above": ("number", "the signal's value must be above this"),
    "below": ("number", "the signal's value must be below this"),
    "text_regex": ("regex", "pattern over the signal's text"),
    "sources": ("sources", "source kinds this selector reads (default: the rule's)"),
}
SCHEMA: dict[str, dict[str, tuple[str, str]]] = {
    "pattern": {**SELECTOR_FIELDS,
                "min_count": ("int", "events needed (default 1)"),
                "window": ("duration", "with min_count: that many events within this span"),
                "classify": ("classify", "label -> regex over the events' lines; the first that matches is {phase}"),
                "classify_default": ("str", "{phase} when no classifier matches")},
    "threshold": {"signal": ("str", "the signal (required)"),
                  "above": ("number", "exactly one of above/below"),
                  "below": ("number", "exactly one of above/below"),
                  "samples": ("int", "consecutive samples needed (default 1)"),
                  "sustained": ("duration", "the run must last this long"),
                  "also": ("selectors", "conditions on other signals of the same line and engine"),
                  "rising": ("str", "an `also` signal that must rise over the run"),
                  "sources": ("sources", "source kinds (default: the rule's)"),
                  "engine_regex": ("regex", "only engines whose name matches")},
    "absence": {"when": ("selector", "what is seen (required)"),
                "missing": ("selector", "what is expected with it and never seen (required)"),
                "require": ("selector", "fire only where this is seen too"),
                "scope": ("scope", "bundle (default), node or file: where `missing` is looked for")},
    "code": {"family": ("str", "an error-code table under knowledge/codes/ (cann, acl, hccl, mindie, torch_npu, fault_event)")},
    "traceback": {"exception": ("regex", "pattern over the exception type, e.g. `KeyError$` (dotted names too)"),
                  "message": ("regex", "pattern over the exception's message; named groups become summary fields"),
                  "not_message": ("regex", "the message must not match"),
                  "frames": ("regex", "some frame (`path:function`) of the traceback must match"),
                  "not_frames": ("regex", "no frame may match"),
                  "min_count": ("int", "tracebacks needed (default 1)")},
    "mismatch": {"signal": ("str", "the signal compared (required)"),
                 "across": ("across", "node (default), device, engine or file"),
                 "within": ("within", "compare only inside one node or file"),
                 "sources": ("sources", "source kinds (default: the rule's)"),
                 "ignore_regex": ("regex", "values to leave out")},
}


@dataclass(frozen=True)
class Selector:
    regex: str | None = None
    not_regex: str | None = None
    field: str = "message"
    level: tuple[str, ...] = ()
    signal: str | None = None
    above: float | None = None
    below: float | None = None
    text_regex: str | None = None
    sources: tuple[str, ...] | None = None  # None: the rule's sources; (): any source

    @property
    def reads_records(self) -> bool:
        """A regex over log records (with a signal, a regex would read the signal's text)."""
        return self.regex is not None and self.signal is None

    @property
    def text_first(self) -> bool:
        """A regex over the text alone: it runs on every text line whatever kind its file was read as (real files
        mix kinds; a paste may be sniffed as plain text). Only a selector that reads a parsed field (a level)
        or a signal is limited to the rule's ``sources``; its own ``sources`` always apply."""
        return self.reads_records and not self.level and self.sources is None

    def sources_for(self, rule_sources):
        """The sources this selector reads: its own, else none (text-first), else the rule's."""
        if self.sources is not None:
            return self.sources
        return None if self.text_first else rule_sources


@dataclass(frozen=True)
class Match:
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)  # the table as written

    kind = ""

    def selectors(self) -> Iterator[tuple[str, Selector]]:
        """(role, selector) of every selector: ``match``, ``also``, ``when``, ``missing``, ``require``."""
        return iter(())

    @property
    def sources(self) -> tuple[str, ...] | None:
        return None


@dataclass(frozen=True)
class PatternMatch(Match):
    selector: Selector = field(default_factory=Selector)
    min_count: int = 1
    window_s: float | None = None
    classify: tuple[tuple[str, str], ...] = ()
    classify_default: str = "unknown"

    kind = "pattern"

    def selectors(self):
        yield "match", self.selector

    @property
    def sources(self):
        return self.selector.sources


@dataclass(frozen=True)
class ThresholdMatch(Match):
    signal: str = ""
    above: float | None = None
    below: float | None = None
    samples: int = 1
    sustained_s: float | None = None
    also: tuple[Selector, ...] = ()
    rising: str | None = None
    signal_sources: tuple[str, ...] | None = None
    engine_regex: str | None = None

    kind = "threshold"

    @property
    def selector(self) -> Selector:
        """The rows of the signal beyond the threshold."""
        return Selector(signal=self.signal, above=self.above, below=self.below, sources=self.signal_sources)

    def selectors(self):
        yield "match", self.selector
        for sel in self.also:
            yield "also", sel

    @property
    def sources(self):
        return self.signal_sources


@dataclass(frozen=True)
class AbsenceMatch(Match):
    when: Selector = field(default_factory=Selector)
    missing: Selector = field(default_factory=Selector)
    require: Selector | None = None
    scope: str = "bundle"

    kind = "absence"

    def selectors(self):
        yield "when", self.when
        yield "missing", self.missing
        if self.require is not None:
            yield "require", self.require


@dataclass(frozen=True)
class MismatchMatch(Match):
    signal: str = ""
    across: str = "node"
    within: str | None = None
    signal_sources: tuple[str, ...] | None = None
    ignore_regex: str | None = None

    kind = "mismatch"

    @property
    def selector(self) -> Selector:
        return Selector(signal=self.signal, sources=self.signal_sources)

    def selectors(self):
        yield "match", self.selector

    @property
    def sources(self):
        return self.signal_sources


@dataclass(frozen=True)
class CodeMatch(Match):
    """Error codes of one family (knowledge/codes/<family>.toml) on log lines that no other rule explains: one
    finding per code, its category, severity and next step from the table (engine/codes.py)."""

    family: str = ""

    kind = "code"


@dataclass(frozen=True)
class TracebackMatch(Match):
    """Python exceptions (the ``exception`` signals of parsers/families/traceback.py) by type, message and the frames
    that raised them. Without ``exception``, a traceback whose exception line was lost still matches by its
    frames."""

    exception: str | None = None
    message: str | None = None
    not_message: str | None = None
    frames: str | None = None
    not_frames: str | None = None
    min_count: int = 1

    kind = "traceback"


MATCH_CLASSES: dict[str, type[Match]] = {
    c.kind: c for c in (PatternMatch, ThresholdMatch, AbsenceMatch, MismatchMatch, CodeMatch, TracebackMatch)
}


def selector_from(table: dict[str, Any]) -> Selector:
    """A selector from a validated table (rulefile checks the fields first)."""
    level = table.get("level")
    sources = table.get("sources")
    return Selector(
        regex=table.get("regex"),
        not_regex=table.get("not_regex"),
        field=table.get("field", "message"),
        level=() if level is None else ((level,) if isinstance(level, str) else tuple(level)),
        signal=table.get("signal"),
        above=table.get("above"),
        below=table.get("below"),
        text_regex=table.get("text_regex"),
        sources=None if sources is None else tuple(sources),
    )


def dfa_safe_table(table: dict[str, Any], fields: dict[str, tuple[str, str]]) -> dict[str, Any]:
    """``table`` with every regex field (nested selectors and classifiers too) rewritten by ``dfa_safe``, so a
    rule's patterns, the user's included, stay on the regex engine's fast path on non-ASCII text."""
    out = dict(table)
    for name, (kind, _) in fields.items():
        value = out.get(name)
        if not value:
            continue
        if kind == "regex" and isinstance(value, str):
            out[name] = dfa_safe(value)
        elif kind == "selector" and isinstance(value, dict):
            out[name] = dfa_safe_table(value, SELECTOR_FIELDS)
        elif kind == "selectors" and isinstance(value, list):
            out[name] = [dfa_safe_table(v, SELECTOR_FIELDS) if isinstance(v, dict) else v for v in value]
        elif kind == "classify" and isinstance(value, dict):
            out[name] = {k: dfa_safe(v) if isinstance(v, str) else v for k, v in value.items()}
    return out


def match_from(raw: dict[str, Any], seconds) -> Match:
    """A typed match from a validated table; ``seconds`` turns a duration field into seconds. ``raw`` stays as
    written (docs quote it); the typed match carries the fast-path form of every regex."""
    kind = raw["kind"]
    table = dfa_safe_table(raw, SCHEMA.get(kind, {}))
    sources = table.get("sources")
    sources = None if sources is None else tuple(sources)
    if kind == "pattern":
        return PatternMatch(
            raw=raw,
            selector=selector_from({k: v for k, v in table.items() if k in SELECTOR_FIELDS}),
            min_count=int(table.get("min_count", 1)),
            window_s=seconds(table["window"], "match.window") if "window" in table else None,
            classify=tuple((table.get("classify") or {}).items()),
            classify_default=table.get("classify_default", "unknown"),
        )
    if kind == "threshold":
        return ThresholdMatch(
            raw=raw, signal=table["signal"], above=table.get("above"), below=table.get("below"),
            samples=int(table.get("samples", 1)),
            sustained_s=seconds(table["sustained"], "match.sustained") if "sustained" in table else None,
            also=tuple(selector_from(a) for a in table.get("also", [])), rising=table.get("rising"),
            signal_sources=sources, engine_regex=table.get("engine_regex"),
        )
    if kind == "absence":
        return AbsenceMatch(
            raw=raw, when=selector_from(table["when"]), missing=selector_from(table["missing"]),
            require=selector_from(table["require"]) if "require" in table else None,
            scope=table.get("scope", "bundle"),
        )
    if kind == "code":
        return CodeMatch(raw=raw, family=table["family"])
    if kind == "traceback":
        return TracebackMatch(raw=raw, exception=table.get("exception"), message=table.get("message"),
                              not_message=table.get("not_message"), frames=table.get("frames"),
                              not_frames=table.get("not_frames"), min_count=int(table.get("min_count", 1)))
    return MismatchMatch(
        raw=raw, signal=table["signal"], across=table.get("across", "node"), within=table.get("within"),
        signal_sources=sources, ignore_regex=table.get("ignore_regex"),
    )
