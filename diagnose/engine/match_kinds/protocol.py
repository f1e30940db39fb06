"""What every match kind provides, and what it is given.

A match kind is one module of this package: its ``[match]`` fields (name → (type, meaning), the types
``rulefile`` validates), the typed match it builds from a validated table, the checks a table of its kind
must pass beyond field types, the patterns of the lines it needs kept in memory, and its evaluation. The
dispatch table in ``__init__`` lists them; nothing else names a kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import polars as pl

from diagnose.engine.match import Match


@dataclass
class Hit:
    """One finding's worth of a match: the rows that are its evidence (HIT_COLUMNS, best first), how many
    events it counts, the facts its summary quotes, and what the finding takes instead of the rule's text
    (severity, category, title, remediation, references, consequence, generic)."""

    hits: pl.DataFrame
    count: int
    facts: dict[str, Any] = field(default_factory=dict)
    overrides: dict[str, Any] = field(default_factory=dict)


@dataclass
class Context:
    """The frames a rule reads, and what the run learned that later kinds need."""

    records: pl.DataFrame
    signals: pl.DataFrame
    series: pl.DataFrame | None = None
    lang: str = "en"
    explained: pl.DataFrame | None = None  # (file, event) every earlier hit covers: phase-1 kinds leave them
    cached: dict[str, Any] = field(default_factory=dict)  # values several rules of one kind share
    # files (-> node) whose periodic samples past the run's budget were not kept: their series ends at the cut
    cut: dict[str, str | None] = field(default_factory=dict)

    def once(self, key: str, compute: Callable[[], Any]) -> Any:
        if key not in self.cached:
            self.cached[key] = compute()
        return self.cached[key]


Fields = dict[str, tuple[str, str]]


@dataclass(frozen=True)
class MatchKind:
    name: str
    fields: Fields  # the [match] fields besides `kind`
    build: Callable[[dict[str, Any], dict[str, Any], Callable[[Any, str], float]], Match]  # (raw, fast-path table, seconds)
    evaluate: Callable[[Match, tuple[str, ...] | None, Context], list[Hit]]  # (match, the rule's sources, context)
    check: Callable[[dict[str, Any]], Iterable[tuple[str, str]]] = lambda table: ()  # (field, problem)
    keeps: Callable[[Match], Iterable[str]] = lambda match: ()  # line patterns it needs kept beyond its selectors
    phase: int = 0  # 1: runs after every phase-0 rule, on what they left unexplained
    any_source: bool = False  # reads text wherever it is: the rule's sources never keep it from running
    summary: str = ""  # what a rule of this kind looks for, in a phrase (the rule pages, docs/rules.md)
