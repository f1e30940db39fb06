"""The prefilter's scan plan: how a chunk's lines are searched for any of a set of patterns, built from the
patterns' necessary literals (diagnose/scan/literals.py), tuned on a sample of the lines when one is given.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from diagnose.cache import JsonStore
from diagnose.scan import literals as literals_module
from diagnose.scan.literals import _parsed, candidate_literals, cover, escape, literal_led, literal_only, measured_cover, members


@dataclass(frozen=True)
class ScanPlan:
    """How a prefilter finds the lines that match any of a set of patterns (``plan``), in two steps. A line
    is wanted when it matches one of ``always`` or ``literals``, or one of ``candidates`` (literal searches
    for the necessary literals of the other members) and then one of ``confirm`` (those members, run only on
    the lines the literal search found). The lines wanted are exactly those matching a pattern."""

    always: tuple[str, ...]
    candidates: tuple[str, ...] = ()
    confirm: tuple[str, ...] = ()
    # The members that are sets of literal strings, as one literal search: wanted wherever found, like
    # ``always``. Kept apart so that a prefilter can run them and ``candidates`` as one search (one pass of
    # the engine's multi-literal automaton over the lines, not two) and tell them apart on the lines found.
    literals: tuple[str, ...] = ()


FOLD_VARIANTS = 32  # case variants of the piece a case-insensitive literal is searched by


def plan(patterns: list[str], hits: Mapping[str, int] | None = None) -> ScanPlan:
    """A ScanPlan for ``patterns``. A member (top-level alternative) that is a set of literal strings is found
    by a search for them; one with necessary literals, by a search for those and a confirmation on the
    lines found; the members without run on every line, in one alternation if they begin with a literal
    and in another if not (an alternation with one member that does not loses the literal search for all:
    engine/filters.py). All the literals of a plan are one alternation: after logged prompts are masked
    (pipeline/repair.py) lines are short, and on short lines one search costs less than several. With
    ``hits`` (``literal_hits`` on a sample), each member is found by its literals seen least often."""
    final, literals, covered, led, rest = set(), set(), set(), set(), set()
    for pattern in patterns:
        for member in members(pattern):
            found = cover(member) if hits is None else measured_cover(member, hits)
            if found is not None and all(s.isascii() for s, icase in found if icase):
                if literal_only(member):
                    final.update(s for s, _ in found)
                    continue
                covered.add(member)
                for s, icase in found:
                    literals.update(_case_variants(_fewest_cases(s.lower())) if icase else [s])
            elif literal_led(member):
                led.add(member)
            else:
                rest.add(member)
    led, rest = _unimplied(led, rest)
    found_alone = (_literal_search(final),) if final else ()
    candidates = (_literal_search(literals),) if literals else ()
    # The members that begin with no literal are searched one by one: each alone keeps the engine's own
    # prefilter (a byte class, a short set of prefixes), which their alternation loses. On 8 MB of plog lines
    # the five of the built-in catalog took 23 ms as one alternation and 14 ms as five scans (MindIE 21 -> 8).
    return ScanPlan((*_alternations(led), *sorted(rest)), candidates, _alternations(*_by_lead(covered)), found_alone)


def _unimplied(led: set[str], rest: set[str]) -> tuple[set[str], set[str]]:
    """``led`` and ``rest`` without the members whose every match holds a match of another member: a line
    either matches is wanted, so that one scan is enough (a rule's whole HCCL link-table row and the plog
    hint for its first cell: 1.3-4 ms per 8 MB of plog lines)."""
    every = led | rest
    implied = {m for m in every if any(n != m and _implies(m, n) for n in every)}
    return led - implied, rest - implied


def _implies(m: str, n: str) -> bool:
    """Whether ``m`` (once one ``(?:...)`` around it is taken off) is ``n`` followed by more, cut between two
    items of its sequence: the same text read the same way (``ab*`` is not ``ab`` then more, nor ``ab|c``)."""
    body = m[3:-1] if m.startswith("(?:") and m.endswith(")") and _same(m[3:-1], m) else m
    if len(body) <= len(n) or not body.startswith(n) or members(n) != [n]:
        return False
    whole, head = _parsed(body), _parsed(n)
    if whole is None or head is None or len(head) == 0 or whole.state.flags != head.state.flags:
        return False
    return len(whole) > len(head) and [repr(item) for item in whole[:len(head)]] == [repr(item) for item in head]


def _same(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` parse to the same items (``(?:x)`` is ``x``: the parser drops a plain group)."""
    pa, pb = _parsed(a), _parsed(b)
    return pa is not None and pb is not None and repr(pa.data) == repr(pb.data) and pa.state.flags == pb.state.flags


def _literal_search(strings: set[str]) -> str:
    return "|".join(escape(s) for s in _minimal(strings))


def _by_lead(patterns: set[str]) -> tuple[set[str], set[str]]:
    led = {p for p in patterns if literal_led(p)}
    return led, patterns - led


def _alternations(*groups: set[str]) -> tuple[str, ...]:
    return tuple("|".join(f"(?:{m})" for m in sorted(g)) for g in groups if g)


def _minimal(strings: set[str]) -> list[str]:
    """``strings`` without those that contain another (they add nothing to a search for any of them)."""
    lengths = sorted({len(s) for s in strings})
    keep = []
    for s in strings:
        inside = (s[i:i + n] for n in lengths if n < len(s) for i in range(len(s) - n + 1))
        if not any(piece in strings for piece in inside):
            keep.append(s)
    return sorted(keep)


def _fewest_cases(literal: str) -> str:
    """The piece of ``literal`` a case-insensitive search looks for: the longest with at most FOLD_VARIANTS
    case variants, preferring one with a space or a sign inside (``fer sh`` of ``infer shape``) and then the
    middle of the literal: a word's first letters (``infe``) begin many words of ordinary log text."""
    for size in range(len(literal), 3, -1):
        pieces = [(at, literal[at:at + size]) for at in range(len(literal) - size + 1)]
        pieces = [(at, p) for at, p in pieces if 2 ** sum(c.isalpha() for c in p) <= FOLD_VARIANTS]
        if pieces:
            middle = (len(literal) - size) / 2
            return max(pieces, key=lambda ap: (any(not c.isalnum() for c in ap[1][1:-1]), -abs(ap[0] - middle)))[1]
    return literal[:3]


def _case_variants(piece: str) -> list[str]:
    out = [""]
    for c in piece:
        options = {c.lower(), c.upper()} if c.isalpha() else {c}
        out = [o + x for o in out for x in sorted(options)]
    return out


def literal_hits(patterns: list[str], lines) -> dict[str, int]:
    """How often each literal a cover of ``patterns`` could be made of occurs in ``lines`` (a polars Series),
    case-insensitive ones counted lower-case: for ``plan``'s ``hits``. Two multi-literal searches."""
    found = set().union(*(candidate_literals(m) for p in patterns for m in members(p)))
    hits: dict[str, int] = {}
    for icase in (False, True):
        strings = sorted({s.lower() if icase else s for s, i in found if i == icase and (s.isascii() or not icase)})
        if not strings:
            continue
        seen = lines.str.extract_many(strings, ascii_case_insensitive=icase, overlapping=True).explode().drop_nulls()
        if icase:
            seen = seen.str.to_lowercase()
        hits.update(dict(seen.value_counts().iter_rows()))
    for s, icase in found:
        hits.setdefault(s.lower() if icase else s, 0)
    return hits


@dataclass(frozen=True)
class Gate:
    """One literal search (``search``, a regex of escaped literals) that every match of each pattern of
    ``covered`` holds: a text without any of them matches none of those patterns."""

    covered: frozenset[str]
    search: str


@functools.lru_cache(maxsize=8)
def gate_searches(patterns: tuple[str, ...]) -> Gate:
    """The Gate of the ``patterns`` whose every member the planner finds by literals (no member in ``always``),
    one search for all of them; the others are not covered. Kept in the cache folder (a catalog's rules
    take 0.05 s to plan)."""
    name = hashlib.sha256("\0".join(patterns).encode()).hexdigest()
    stored = _gate_store().get(name)
    if (isinstance(stored, list) and len(stored) == 2 and isinstance(stored[1], str)  # the cache is not trusted
            and isinstance(stored[0], list) and all(isinstance(p, str) and p in patterns for p in stored[0])):
        return Gate(frozenset(stored[0]), stored[1])
    covered = []
    for pattern in patterns:
        try:
            if not plan([pattern]).always:
                covered.append(pattern)
        except Exception:  # noqa: BLE001 - a pattern the planner cannot read is asked about every text
            continue
    union = plan(covered) if covered else None
    search = "|".join((*union.literals, *union.candidates)) if union is not None and not union.always else ""
    gate = Gate(frozenset(covered if search else ()), search)
    _gate_store().put(name, [sorted(gate.covered), gate.search])
    return gate


@functools.cache
def _gate_store() -> JsonStore:
    # Keyed by the planner's own source: a changed planner plans again.
    source = Path(literals_module.__file__).read_bytes() + Path(__file__).read_bytes()
    return JsonStore("gates-", hashlib.sha256(source).hexdigest())
