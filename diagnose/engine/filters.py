"""Filters derived from the rules, which keep memory bounded to what the rules can use.

- ``keep``: the records worth keeping after parsing: warnings and errors, lines with an error code, lines
  matching any rule regex (one combined, linear-time alternation); everything else is counted, not kept.
- ``select``: per line-oriented kind, one alternation of the level words and every rule regex that can read
  that kind, run on raw lines before parsing (the prefilter; see pipeline/chunks.py).
- ``periodic``: the threshold rules on periodic metrics, so each chunk keeps the lines a finding may quote
  and sends every sample to the compact series (diagnose/model/series.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import polars as pl

from diagnose.engine.match_kinds import KINDS
from diagnose.scan.fastregex import relaxed
from diagnose.scan.literals import literal_led
from diagnose.engine.rulefile import Rule
from diagnose.engine.selectors import signal_condition
from diagnose.model.series import Condition, Periodic


# Level words as vLLM, MindIE, ATB and CANN print them; a line holding one may be a warning or an error.
LEVEL_WORDS = r"WARN|ERROR|CRITICAL|FATAL|\[(?:error|warn|warning|critical|fatal)\]"


@dataclass(frozen=True)
class RuleFilters:
    keep: pl.Expr | None = None  # None keeps every record
    select: dict[str, list[str]] = field(default_factory=dict)  # kind -> raw-line patterns (any may match)
    periodic: list[Condition] | None = None  # None: rules see every periodic row, no series
    spec: Periodic = field(default_factory=dict)  # source -> periodic signals (the registry's)
    # Keep the text of every line kept for its signals, not only of those a finding may quote: `extract` needs
    # it, because the machine that judges the extracted frames cannot read a quoted line back from its file.
    quote_signal_lines: bool = False

    @classmethod
    def from_rules(cls, rules: list[Rule], prefiltered_kinds: list[str], spec: Periodic) -> "RuleFilters":
        return cls(keep=retention_filter(rules), select=prefilter_patterns(rules, prefiltered_kinds),
                   periodic=series_conditions(rules, spec), spec=spec)


NO_FILTERS = RuleFilters()


def kept_by_level_or_code() -> pl.Expr:
    """The part of ``retention_filter`` that reads no text: warnings and errors, and lines with a code."""
    return pl.col("level").is_in(["WARNING", "ERROR", "CRITICAL"]).fill_null(False) | pl.col("code").is_not_null()


def retention_filter(rules: list[Rule]) -> pl.Expr:
    """Rows any rule could use (see the module docstring)."""
    texts = [pl.col("text").str.contains(g) for g in combined_patterns(rules)]
    return pl.any_horizontal([kept_by_level_or_code(), *texts])


def prefilter_patterns(rules: list[Rule], kinds: list[str]) -> dict[str, list[str]]:
    """Per kind: the level words worth keeping and every rule regex that can read that kind."""
    out = {}
    for kind in kinds:
        usable = [r for r in rules if not r.sources or kind in r.sources]
        # By identity: rules compare field by field, and a list's ``in`` took 20 ms of every run's start-up.
        taken = {id(r) for r in usable}
        text_first = [r for r in rules if id(r) not in taken and any(s.text_first for _, s in r.match.selectors())]
        out[kind] = [LEVEL_WORDS, *combined_patterns(usable, text_first)]
    return out


def combined_patterns(rules: list[Rule], text_first: list[Rule] = ()) -> list[str]:
    """Every regex over records of ``rules`` and the text-first ones of ``text_first`` (rules limited to other
    kinds whose text patterns still read every line), as a few alternations a line matches if any matches.

    One alternation of everything is slow: a single member without a literal to search for first (`\\S*graph`,
    `^\\s*...Error`) turns off the engine's literal prefilter for the whole alternation, and the DFA over all
    members runs on every byte (20 MB/s on request logs, 12 MB/s on MindIE logs, docs/benchmarks.md). The members
    that start with a literal go in one alternation, which keeps its prefilter; the others in a second one."""
    ordered = sorted(relaxed(p) for p in _patterns(rules, text_first))
    led = [p for p in ordered if literal_led(p)]
    rest = [p for p in ordered if not literal_led(p)]
    return ["|".join(f"(?:{p})" for p in group) for group in (led, rest) if group]


def combined_pattern(rules: list[Rule], text_first: list[Rule] = ()) -> str:
    """All of ``combined_patterns`` as one alternation (for tests and tools; the filters use the groups)."""
    return "|".join(f"(?:{g})" for g in combined_patterns(rules, text_first))


def _patterns(rules: list[Rule], text_first: list[Rule]) -> set[str]:
    patterns = set()
    for rule in text_first:
        patterns.update(_anonymous_groups(sel.regex) for _, sel in rule.match.selectors() if sel.text_first)
    for rule in rules:
        for _, sel in rule.match.selectors():
            if sel.reads_records:  # with a signal, the regex reads the signal's text
                patterns.add(_anonymous_groups(sel.regex))
        patterns.update(KINDS[rule.match.kind].keeps(rule.match))  # exception lines, a code family's lines
    # Each becomes a superset of itself (fastregex.relaxed) where it is used: the rules' own regexes decide
    # later; the alternations must stay small enough for the regex engine's DFA.
    return patterns


def _anonymous_groups(pattern: str) -> str:
    # Named groups would clash inside one alternation; their names do not matter for keeping rows.
    return re.sub(r"\(\?P?<([A-Za-z_][A-Za-z0-9_]*)>", "(?:", pattern)


def series_conditions(rules: list[Rule], periodic: Periodic) -> list[Condition]:
    """The threshold rules on periodic signals, as conditions a chunk can test (diagnose/model/series.py)."""
    names = set().union(*periodic.values()) if periodic else set()
    out = []
    for rule in rules:
        m = rule.match
        if m.kind != "threshold" or m.signal not in names:
            continue
        also = tuple((a.signal, signal_condition(a)) for a in m.also if a.signal is not None)
        out.append(Condition(m.signal, signal_condition(m.selector), also))
    return out
