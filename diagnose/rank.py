"""Order findings so that the most likely root cause comes first, and point echoes at their cause.

Order: findings that are not consequences first (warnings and above), then the consequences, then the
informational findings; within each, severity (critical first), then specific before generic (an error code
that only names its family), then the earliest first sighting (the failure that started the chain), then
rule id for a stable order. A finding whose rule is
marked ``consequence`` (engine death, RPC and collective timeouts, daemon kills) gets ``caused_by``: the
highest-ranked non-consequence finding of at least warning severity seen no later than the echo ended.
"""

from __future__ import annotations

from datetime import datetime

from diagnose.model import SEVERITY_RANK, Finding

_FAR = datetime.max


def _tier(f: Finding) -> int:
    if f.consequence:
        return 1
    return 2 if f.severity == "info" else 0


def rank_findings(findings: list[Finding]) -> list[Finding]:
    ordered = sorted(
        findings,
        key=lambda f: (_tier(f), -SEVERITY_RANK[f.severity], f.generic, f.first_seen or _FAR, f.rule_id),
    )
    causes = [f for f in ordered if not f.consequence and SEVERITY_RANK[f.severity] >= SEVERITY_RANK["warning"]]
    for f in ordered:
        if not f.consequence:
            continue
        for cause in causes:
            if f.last_seen is None or cause.first_seen is None or cause.first_seen <= f.last_seen:
                f.caused_by = cause.rule_id
                break
    return ordered
