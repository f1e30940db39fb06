"""The match kinds, one module each, behind one dispatch table. A rule's ``[match] kind`` names one; its
module says which fields the table takes, how it is built, what more it checks, which lines it needs kept,
how it is evaluated and what it looks for in a phrase (``protocol.MatchKind``). Adding a kind: its module and
its line in ``KINDS``."""

from __future__ import annotations

from typing import Any, Callable

from diagnose.engine.match import Match, dfa_safe_table
from diagnose.engine.match_kinds import absence, code, mismatch, pattern, threshold, traceback
from diagnose.engine.match_kinds.protocol import Context, Hit, MatchKind

KINDS: dict[str, MatchKind] = {k.name: k for k in (
    pattern.KIND, threshold.KIND, absence.KIND, code.KIND, traceback.KIND, mismatch.KIND,
)}
SCHEMA: dict[str, dict[str, tuple[str, str]]] = {name: kind.fields for name, kind in KINDS.items()}


def match_from(raw: dict[str, Any], seconds: Callable[[Any, str], float]) -> Match:
    """A typed match from a validated table; ``seconds`` turns a duration field into seconds. ``raw`` stays as
    written (docs quote it); the typed match carries the fast-path form of every regex."""
    kind = KINDS[raw["kind"]]
    return kind.build(raw, dfa_safe_table(raw, kind.fields), seconds)


__all__ = ["KINDS", "SCHEMA", "Context", "Hit", "MatchKind", "match_from"]
