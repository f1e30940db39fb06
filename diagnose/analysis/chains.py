"""Follow the cause links rules declare (``[[causes]]``, ``[[caused_by]]``: diagnose/engine/links.py).

A driver that differs between nodes makes one rank slow, and the slow rank's kernel times out: three findings
of three rules, where severity alone would put the timeout first. When the findings of both ends of a link
are in the report and the link's conditions hold (the consequence began no earlier than the cause was first
seen and, with ``within``, no later than that long after the cause was last seen; both seen on a common node,
or node and rank), the consequence gets ``caused_by`` and ``linked``: its nearest cause (one that does not lead
to it through another of its causes), the best-ranked of those.

The links make a forest: each finding has at most one cause, and a link that would close a loop is not
followed. Each tree keeps the place of its best-ranked member and is written root first, every cause
before its consequences, so a chain's start leads its chain. Findings outside every chain keep their order.
A finding without times (a version read from ``npu-smi``, a profile) or places meets those conditions: a
state holds for the whole run.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Iterable

from diagnose.model import CauseLink, Finding

_SLACK = timedelta(seconds=1)  # stamps of one event in two logs differ by a second's rounding


def holds(link: CauseLink, cause: Finding, effect: Finding) -> bool:
    """The link's time and place conditions, for these two findings."""
    if cause.first_seen is not None and effect.first_seen is not None and cause.first_seen > effect.first_seen + _SLACK:
        return False  # the consequence began first
    if link.within is not None and cause.last_seen is not None and effect.first_seen is not None:
        if effect.first_seen - cause.last_seen > timedelta(seconds=link.within):
            return False
    if link.place == "any":
        return True
    if cause.nodes and effect.nodes and not set(cause.nodes) & set(effect.nodes):
        return False
    if link.place == "rank" and cause.ranks and effect.ranks and not set(cause.ranks) & set(effect.ranks):
        return False
    return True


def follow(ordered: list[Finding], links: Iterable[CauseLink]) -> list[Finding]:
    """``ordered`` (the ranked findings) with each chain together, its start first; sets ``caused_by`` and
    ``linked`` on the consequences (see the module docstring)."""
    by_effect: dict[str, list[CauseLink]] = {}
    for link in links:
        if link.cause != link.effect:
            by_effect.setdefault(link.effect, []).append(link)
    if not by_effect:
        return ordered
    pos = {id(f): i for i, f in enumerate(ordered)}
    by_rule: dict[str, list[Finding]] = {}
    for f in ordered:
        by_rule.setdefault(f.rule_id, []).append(f)
    parent: dict[int, Finding] = {}

    def ancestors(f: Finding):
        seen = set()
        while id(f) in parent and id(f) not in seen:
            seen.add(id(f))
            f = parent[id(f)]
            yield f

    edges: dict[int, list[Finding]] = {}  # effect -> the causes whose links hold
    for effect in ordered:
        edges[id(effect)] = [c for link in by_effect.get(effect.rule_id, ()) for c in by_rule.get(link.cause, ())
                             if c is not effect and holds(link, c, effect)]

    def leads_to(a: Finding, b: Finding) -> bool:
        """``a`` is a cause of ``b`` through one or more links that hold."""
        todo, seen = list(edges[id(b)]), set()
        while todo:
            c = todo.pop()
            if c is a:
                return True
            if id(c) not in seen:
                seen.add(id(c))
                todo += edges[id(c)]
        return False

    for effect in reversed(ordered):  # in a loop of links, the better-ranked finding is the cause
        candidates = edges[id(effect)]
        # The nearest cause: a driver mismatch that made the rank slow leads to the timeout through the slow rank.
        nearest = [c for c in candidates if not any(d is not c and leads_to(c, d) and not leads_to(d, c)
                                                    for d in candidates)]
        for cause in sorted(nearest, key=lambda c: pos[id(c)]):
            if cause is effect or any(a is effect for a in ancestors(cause)):
                continue  # a loop: this cause is already a consequence of the effect
            parent[id(effect)] = cause
            effect.caused_by, effect.linked = cause.rule_id, True
            break
    if not parent:
        return ordered
    children: dict[int, list[Finding]] = {}
    for f in ordered:
        if id(f) in parent:
            children.setdefault(id(parent[id(f)]), []).append(f)

    def tree(f: Finding) -> list[Finding]:
        out = [f]
        for child in children.get(id(f), ()):  # already in rank order
            out += tree(child)
        return out

    roots = [f for f in ordered if id(f) not in parent]
    trees = [tree(r) for r in roots]
    trees.sort(key=lambda t: min(pos[id(f)] for f in t))
    return [f for t in trees for f in t]


def chain_start(findings: list[Finding], f: Finding) -> list[Finding]:
    """``f``'s causes by declared links, its chain's start first, then ``f`` (just ``[f]`` when nothing
    declared leads to it)."""
    by_rule = {}
    for g in findings:
        by_rule.setdefault(g.rule_id, g)
    path = [f]
    while path[0].linked and path[0].caused_by in by_rule:
        cause = by_rule[path[0].caused_by]
        if any(cause is p for p in path):
            break
        path.insert(0, cause)
    return path
