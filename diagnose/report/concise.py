"""Concise report: one line per finding, ``file:line: severity RULE title``, then one summary line.

For grep, editors and terminals that turn ``file:line`` into a link (like ruff's ``concise`` output). Paths
are the display paths (archive members as ``archive.tgz!member``); a finding without evidence names line 1
of a file of its node. Coverage problems (nothing analysed, inputs not read or read in part) and internal
errors follow as ``diagnose: ...`` lines, so a short output is never mistaken for a clean run.
"""

from __future__ import annotations

from collections import Counter

from diagnose.messages import Messages, messages
from diagnose.model import Report, verdict_kind
from diagnose.report.coverage_lines import coverage_lines
from diagnose.report.sarif import primary_location
from diagnose.report.text import clean


def render(report: Report, lang: str = "en", **_options) -> str:
    msg = messages(lang)
    out = []
    for f in report.findings:
        file, line = primary_location(f, report)
        cause = msg("concise.because", rule=f.caused_by) if f.caused_by else ""
        out.append(f"{clean(file)}:{line}: {msg.severity(f.severity)} {f.rule_id} {clean(msg.say(f.title))}{cause}")
    for _, text in coverage_lines(report, msg):
        out.append(f"diagnose: {clean(text)}")
    for err in report.errors:
        out.append("diagnose: " + msg("concise.internal_error", error=clean(err)))
    out.append(_summary(report, msg))
    return "\n".join(out) + "\n"


def _summary(report: Report, msg: Messages) -> str:
    sev = Counter(f.severity for f in report.findings)
    parts = [f"{sev[s]} {msg.severity(s)}" for s in ("critical", "error", "warning", "info") if sev[s]]
    n = len(report.findings)
    text = msg("concise.found", n=n, severities=msg("concise.list_join").join(parts)) if n else msg("concise.none")
    unknown = len(report.unrecognised) + (report.unrecognised_more or 0)
    if unknown:
        text += msg("concise.unrecognised", n=unknown)
    if verdict_kind(report.verdict) == "nothing-analysed":
        text += msg("concise.nothing")
    return text + msg("concise.full_stop")
