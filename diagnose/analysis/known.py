"""A findings baseline: ``--baseline previous-report.json`` marks each finding ``new`` or ``known``.

An earlier ``diagnose --format json`` (or ``--json FILE``) report is the baseline. A finding is known when the
baseline holds a finding (or a suppressed finding) of the same rule id with the same fingerprint
(diagnose/analysis/fingerprint.py); otherwise it is new. Known findings stay in every report, marked; with
``--fail-on-new`` only new findings (and new unrecognised error signatures) decide the exit code, so a CI
job can adopt diagnose on logs that already have known problems and still fail on the next one.

The same ``--baseline`` keeps its other meanings (diagnose/validation: benchmark numbers; diagnose/signatures:
new error signatures); a baseline that is not a diagnose JSON report (a folder, a TOML of expected numbers)
marks no finding.
"""

from __future__ import annotations

from typing import Any

import msgspec

from diagnose.bounded import REPORT_BYTES, json_loads, read_capped
from diagnose.analysis.fingerprint import of_report_finding
from diagnose.model import NoKnownCause


def read_report(path: str | None) -> dict[str, Any] | None:
    """The earlier report, when ``path`` is a diagnose JSON report; None otherwise."""
    if not path or not str(path).lower().endswith(".json"):
        return None
    try:
        data = json_loads(read_capped(path, REPORT_BYTES, follow=True))
    except (OSError, ValueError):
        return None
    if isinstance(data, dict) and isinstance(data.get("findings"), list) and "inputs" in data:
        return data
    return None


def known_fingerprints(report: dict[str, Any]) -> set[tuple[str, str]]:
    """(rule id, fingerprint) of every finding of an earlier report, suppressed ones included."""
    items = [f for f in report.get("findings", []) if isinstance(f, dict)]
    items += [s for s in report.get("suppressed", []) or [] if isinstance(s, dict) and s.get("kind") == "finding"]
    known = set()
    for item in items:
        fp = of_report_finding(item)
        if fp and isinstance(item.get("rule_id"), str):
            known.add((item["rule_id"], fp))
    return known


def mark(findings: list, known: set[tuple[str, str]]) -> int:
    """Set ``baseline_state`` on each finding (which must have its fingerprint); returns how many are new."""
    new = 0
    for f in findings:
        f.baseline_state = "known" if (f.rule_id, f.fingerprint) in known else "new"
        new += f.baseline_state == "new"
    return new


def only_new(report):
    """The report as ``--fail-on-new`` judges it: only new findings, and the errors no rule explains only
    when one of their signatures is new."""
    findings = [f for f in report.findings if f.baseline_state != "known"]
    verdict = report.verdict
    if isinstance(verdict, NoKnownCause) and not any(u.new is True for u in report.unrecognised):
        verdict = None
    return msgspec.structs.replace(report, findings=findings, verdict=verdict)
