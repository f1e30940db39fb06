"""The prefilter's scan plan: how a chunk's lines are searched for any of a set of patterns, built from the
patterns' necessary literals (diagnose/scan/literals.py), tuned on a sample of the lines when one is given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from diagnose.scan.literals import candidate_literals, cover, escape, literal_led, literal_only, measured_cover, members


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
    found_alone = (_literal_search(final),) if final else ()
    candidates = (_literal_search(literals),) if literals else ()
    # The members that begin with no literal are searched one by one: each alone keeps the engine's own
    # prefilter (a byte class, a short set of prefixes), which their alternation loses. On 8 MB of plog lines
    # the five of the built-in catalog took 23 ms as one alternation and 14 ms as five scans (MindIE 21 -> 8).
    return ScanPlan((*_alternations(led), *sorted(rest)), candidates, _alternations(*_by_lead(covered)), found_alone)


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
