"""Order findings so that the most likely root cause comes first, and point echoes at their cause.

Order: findings that are not consequences first (warnings and above), then the consequences, then the
generic findings (a code that only names the layer that saw an error, `PTA call acl api failed`: the codes
beside it say more, even when they are echoes), then the informational findings; within each, severity
(critical first), then a problem whose severity was lowered for want of evidence (a short excerpt) before the
findings informational by design (a measurement), then the earliest first sighting (the failure that started the
chain), then rule id for a stable order. A finding whose rule is marked ``consequence`` (engine death, RPC and
collective timeouts, daemon kills) gets ``caused_by``: the highest-ranked non-consequence, non-generic finding of at
least warning severity seen no later than the echo ended. Then the cause links rules declare are followed
(diagnose/analysis/chains.py): a chain's start leads its chain, and its consequences point at their causes.
"""

from __future__ import annotations

from datetime import datetime

from typing import Iterable

from diagnose.analysis.chains import follow
from diagnose.model import SEVERITY_RANK, CauseLink, Finding

_FAR = datetime.max


def _tier(f: Finding, alone: bool) -> int:
    if f.severity == "info":
        return 3
    if f.generic and not alone:
        return 2
    return 1 if f.consequence else 0


def rank_findings(findings: list[Finding], links: Iterable[CauseLink] = ()) -> list[Finding]:
    alone = all(f.generic for f in findings if f.severity != "info")  # nothing more specific to put first
    ordered = sorted(
        findings,
        key=lambda f: (_tier(f, alone), -SEVERITY_RANK[f.severity], not f.demoted, f.generic, f.first_seen or _FAR,
                       f.rule_id),
    )
    chained = follow(ordered, links)  # echoes below still point at the best-ranked cause, not a chain's start
    causes = [f for f in ordered if not f.consequence and SEVERITY_RANK[f.severity] >= SEVERITY_RANK["warning"]
              and (alone or not f.generic)]
    for f in ordered:
        if not f.consequence or f.linked:
            continue
        for cause in causes:
            if f.last_seen is None or cause.first_seen is None or cause.first_seen <= f.last_seen:
                f.caused_by = cause.rule_id
                break
    return chained
