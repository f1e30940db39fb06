"""The ``absence`` match kind: ``when`` is seen and ``missing`` never is (in the bundle, or per node or
file with ``scope``), optionally only where ``require`` is seen too."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from diagnose.engine.match import Match, Selector, selector_from
from diagnose.engine.match_kinds.protocol import Context, Hit, MatchKind
from diagnose.engine.selectors import select

FIELDS = {"when": ("selector", "what is seen (required)"),
          "missing": ("selector", "what is expected with it and never seen (required)"),
          "require": ("selector", "fire only where this is seen too"),
          "scope": ("scope", "bundle (default), node or file: where `missing` is looked for")}


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


def build(raw: dict[str, Any], table: dict[str, Any], seconds) -> AbsenceMatch:
    return AbsenceMatch(
        raw=raw, when=selector_from(table["when"]), missing=selector_from(table["missing"]),
        require=selector_from(table["require"]) if "require" in table else None,
        scope=table.get("scope", "bundle"),
    )


def check(table: dict[str, Any]):
    for key in ("when", "missing"):
        if key not in table:
            yield f"match.{key}", "missing"


def evaluate(m: AbsenceMatch, sources, ctx: Context) -> list[Hit]:
    found = match_absence(m, ctx.records, ctx.signals, sources, ctx.series, cut=ctx.cut)
    return [found] if found is not None else []


def match_absence(m: AbsenceMatch, records: pl.DataFrame, signals: pl.DataFrame, sources,
                  series: pl.DataFrame | None = None, cut: dict[str, str | None] | None = None) -> Hit | None:
    """``cut``: files (-> node) whose periodic samples past the run's budget were not kept. A signal missing
    from them may come after the cut: where one of them is in scope (the bundle, its node or itself), a
    missing signal is not known to be missing, and the rule does not fire there."""
    scope = {"bundle": [], "node": ["node"], "file": ["file"]}[m.scope]
    when = select(m.when, records, signals, sources, series)
    if when.height == 0:
        return None
    missing = select(m.missing, records, signals, sources, series)
    require = select(m.require, records, signals, sources, series) if m.require is not None else None
    unknown = bool(cut) and m.missing.signal is not None
    if not scope:
        if missing.height or (require is not None and require.height == 0) or unknown:
            return None
        firing = when
    else:
        keys = when.select(scope).unique()
        if unknown:
            column = list(cut) if scope == ["file"] else list(cut.values())
            keys = keys.filter(~pl.col(scope[0]).is_in(column, nulls_equal=True))
        if missing.height:
            keys = keys.join(missing.select(scope).unique(), on=scope, how="anti", nulls_equal=True)
        if require is not None:
            keys = keys.join(require.select(scope).unique(), on=scope, how="semi", nulls_equal=True)
        if keys.height == 0:
            return None
        firing = when.join(keys, on=scope, how="semi", nulls_equal=True)
        if require is not None:
            require = require.join(keys, on=scope, how="semi", nulls_equal=True)
    firing = firing.sort(["ts", "file", "line"], nulls_last=True)
    evidence = firing.unique(["file", "event"], keep="first", maintain_order=True)
    if require is not None and require.height:
        evidence = pl.concat([evidence.head(3), require.sort("ts", nulls_last=True).head(2)], how="vertical_relaxed")
    facts = {
        "when_count": firing.height,
        "require_count": require.height if require is not None else None,
        "scopes": firing.select(scope).n_unique() if scope else 1,
    }
    first = firing.head(1).row(0, named=True)
    facts["when_text"] = first["vtext"] if first["vtext"] is not None else first["value"]
    return Hit(evidence, firing.height, facts)


KIND = MatchKind("absence", FIELDS, build, evaluate, check,
                 summary="something is seen while its expected companion never is")
