"""Concise report: one line per finding, ``file:line: severity RULE title``, then one summary line.

For grep, editors and terminals that turn ``file:line`` into a link (like ruff's ``concise`` output). Paths
are the display paths (archive members as ``archive.tgz!member``); a finding without evidence names line 1
of a file of its node. Coverage problems (nothing analysed, inputs not read or read in part) and internal
errors follow as ``diagnose: ...`` lines, so a short output is never mistaken for a clean run.
"""

from __future__ import annotations

from collections import Counter

from diagnose.coverage import lines_for
from diagnose.model import Report
from diagnose.report.sarif import primary_location
from diagnose.report.text import clean


def render(report: Report, lang: str = "en", **_options) -> str:
    out = []
    for f in report.findings:
        file, line = primary_location(f, report)
        cause = f" (← {f.caused_by})" if f.caused_by else ""
        out.append(f"{clean(file)}:{line}: {f.severity} {f.rule_id} {clean(f.title)}{cause}")
    for _, text in lines_for(report, lang):
        out.append(f"diagnose: {clean(text)}")
    for err in report.errors:
        out.append(f"diagnose: internal error (the run is incomplete): {clean(err)}")
    out.append(_summary(report))
    return "\n".join(out) + "\n"


def _summary(report: Report) -> str:
    sev = Counter(f.severity for f in report.findings)
    parts = [f"{sev[s]} {s}" for s in ("critical", "error", "warning", "info") if sev[s]]
    n = len(report.findings)
    text = f"Found {n} finding{'s' if n != 1 else ''} ({', '.join(parts)})" if n else "No findings"
    unknown = len(report.unrecognised) + (report.unrecognised_more or 0)
    if unknown:
        text += f"; {unknown} unrecognised error signature{'s' if unknown != 1 else ''} (see the text or JSON report)"
    if (report.verdict or {}).get("kind") == "nothing-analysed":
        text += "; nothing was analysed"
    return text + "."
