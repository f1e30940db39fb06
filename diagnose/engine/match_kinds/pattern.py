"""The ``pattern`` match kind: log records (or parsed values) one selector picks, at least ``min_count``
events of them, within ``window`` when given; ``classify`` labels the events by the first classifier that
matches any of their lines."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import polars as pl

from diagnose.engine.match import SELECTOR_FIELDS, Match, Selector, selector_from
from diagnose.engine.match_kinds.protocol import Context, Hit, MatchKind
from diagnose.engine.selectors import select

FIELDS = {**SELECTOR_FIELDS,
          "min_count": ("int", "events needed (default 1)"),
          "window": ("duration", "with min_count: that many events within this span"),
          "classify": ("classify", "label -> regex over the events' lines; the first that matches is {phase}"),
          "classify_default": ("str", "{phase} when no classifier matches")}


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


def build(raw: dict[str, Any], table: dict[str, Any], seconds) -> PatternMatch:
    return PatternMatch(
        raw=raw,
        selector=selector_from({k: v for k, v in table.items() if k in SELECTOR_FIELDS}),
        min_count=int(table.get("min_count", 1)),
        window_s=seconds(table["window"], "match.window") if "window" in table else None,
        classify=tuple((table.get("classify") or {}).items()),
        classify_default=table.get("classify_default", "unknown"),
    )


def check(table: dict[str, Any]):
    if "regex" not in table and "signal" not in table:
        yield "match", "needs `regex` (over log lines) or `signal` (a parsed value)"


def evaluate(m: PatternMatch, sources, ctx: Context) -> list[Hit]:
    found = match_pattern(m, ctx.records, ctx.signals, sources, ctx.series)
    return [found] if found is not None else []


def match_pattern(m: PatternMatch, records: pl.DataFrame, signals: pl.DataFrame, sources,
                  series: pl.DataFrame | None = None) -> Hit | None:
    hits = select(m.selector, records, signals, sources, series)
    if hits.height == 0:
        return None
    # A multi-line message (a traceback) counts once: keep the first matching line of each event.
    events = hits.unique(subset=["file", "event"], keep="first", maintain_order=True).sort(["ts", "file", "line"], nulls_last=True)
    need = m.min_count
    if events.height < need:
        return None
    if m.window_s is not None and need > 1:
        window = timedelta(seconds=m.window_s)
        ts = events["ts"].drop_nulls().sort()
        spans = ts.shift(-(need - 1)) - ts
        if not (spans.drop_nulls() <= window).any():
            return None
    facts: dict[str, Any] = {}
    if m.selector.regex is not None:
        first = events.head(1)
        groups = first.select(pl.col("vtext").str.extract_groups(m.selector.regex)).to_series()[0] or {}
        facts.update({k: v for k, v in groups.items() if not k.isdigit() and v is not None})
    if m.classify:
        facts["phase"] = _classify(m, events, records)
    return Hit(events, events.height, facts)


def _classify(m: PatternMatch, events: pl.DataFrame, records: pl.DataFrame) -> str:
    """Label the matched events by the first classifier that matches any line of any matched event."""
    keys = events.select("file", "event").unique()
    text = records.join(keys, on=["file", "event"], how="semi").select("message").to_series()
    for label, pattern in m.classify:
        if text.str.contains(pattern).any():
            return label
    return m.classify_default


KIND = MatchKind("pattern", FIELDS, build, evaluate, check,
                 summary="a log line matches a pattern")
