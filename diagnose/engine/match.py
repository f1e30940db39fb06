"""A rule's ``[match]`` table, typed: one class per match kind, with its selectors.

A *selector* picks rows: ``regex`` (+ ``not_regex``, ``field``, ``level``) picks log records; ``signal`` (+
``above``, ``below``, ``text_regex``, ``not_regex``) picks parsed values. A match kind combines selectors
(``pattern``: one; ``threshold``: a signal plus ``also`` conditions on the same line; ``absence``: ``when``,
``missing`` and an optional ``require``; ``mismatch``: a signal compared across nodes or devices).

Each kind is a module of ``match_kinds/`` that declares its fields (``SELECTOR_FIELDS`` here are those of a
selector); ``rulefile`` validates a rule file against them and builds the typed match, and every other module
reads that, never the raw table (``raw`` keeps it, in file order, for the generated docs).
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
