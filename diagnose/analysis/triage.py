"""The last two stages: the errors no rule explains, minus the suppressed signatures; then the findings'
fingerprints, the suppressed findings, and new/known against a findings baseline. Both run before the
verdict, so what the configuration suppresses neither leads the report nor decides the exit code."""

from __future__ import annotations

from diagnose.analysis.known import known_fingerprints, mark
from diagnose.analysis.fingerprint import of_findings
from diagnose.analysis.signatures import TOP_N, compute, mark_new, section
from diagnose.analysis.suppression import split_findings, split_signatures


def unrecognised(run) -> None:
    """Errors no rule explains, grouped into signatures (diagnose/analysis/signatures.py). With signature
    suppressions every signature is computed, so the top ones and the counts are those of what is left."""
    s, p = run.settings, run.parsed
    if not any(sup.signature is not None for sup in s.suppressions):
        run.unrecognised = section(run.findings, run.selected, p.records, s.earlier)
        return
    items, _ = compute(run.findings, run.selected, p.records, None)
    items, suppressed = split_signatures(items, s.suppressions)
    new = mark_new(items, s.earlier)
    run.unrecognised = (items[:TOP_N], max(0, len(items) - TOP_N), new)
    run.suppressed.extend(suppressed)


def triage(run) -> None:
    """Fingerprint every finding, take out the suppressed ones and mark the rest new or known."""
    s = run.settings
    findings = run.findings
    for finding, fp in zip(findings, of_findings(findings)):
        finding.fingerprint = fp
    findings, suppressed = split_findings(findings, s.suppressions)
    if s.earlier is not None:
        run.findings_new = mark(findings, known_fingerprints(s.earlier))
    run.findings = findings
    run.suppressed[:0] = suppressed
