"""GitLab Code Quality report (``artifacts:reports:codequality``): a JSON array of issues, each with
``description``, ``check_name``, ``fingerprint``, ``severity`` and ``location.path`` / ``location.lines.begin``
(the fields GitLab reads; https://docs.gitlab.com/ee/ci/testing/code_quality.html, "implement a custom
tool"; ruff's ``--output-format gitlab`` writes the same shape).

Severities: info → ``info``, warning → ``minor``, error → ``major``, critical → ``critical``. A run that must
not pass for clean is an issue of its own: nothing analysed or an internal error → ``blocker``
(``diagnose/nothing-analysed``, ``diagnose/incomplete``), partial coverage → ``major``
(``diagnose/partial-coverage``). Paths are relative to the input given, as in SARIF; fingerprints are the
SARIF ones (rule, path, evidence with numbers and times masked), made unique within the report, so the same
problem in tomorrow's run is the same issue in the merge request.
"""

from __future__ import annotations

import hashlib
import json

from diagnose.messages import Messages, messages
from diagnose.model import Report, Status
from diagnose.report import gate_lines
from diagnose.report.sarif import fingerprint, primary_location, relative_path

SEVERITY = {"info": "info", "warning": "minor", "error": "major", "critical": "critical"}
MAX_DESCRIPTION = 2000


def render(report: Report, paths: list[str] | None = None, lang: str = "en", **_options) -> str:
    msg = messages(lang)
    issues = []
    for f in report.findings:
        file, line = primary_location(f, report)
        path = relative_path(file, paths)
        title, summary = msg.say(f.title), msg.say(f.summary)
        text = msg("gitlab.finding", rule=f.rule_id, title=title, summary=summary) if summary else f"{f.rule_id} {title}"
        if f.caused_by:
            text += msg("gitlab.because", rule=f.caused_by)
        anchor = f.evidence[0].text if f.evidence else summary
        issues.append(_issue(text, f.rule_id, fingerprint(f.rule_id, path, anchor), SEVERITY.get(f.severity, "major"),
                             path, line))
    issues += _run_issues(report, paths, msg)
    seen: dict[str, int] = {}
    for issue in issues:  # GitLab merges issues with one fingerprint: keep every one apart
        fp = issue["fingerprint"]
        seen[fp] = seen.get(fp, 0) + 1
        if seen[fp] > 1:
            issue["fingerprint"] = hashlib.sha256(f"{fp}\0{seen[fp]}".encode()).hexdigest()[:32]
    return json.dumps(issues, ensure_ascii=False, indent=2) + "\n"


def _issue(description: str, check: str, fp: str, severity: str, path: str, line: int) -> dict:
    description = " ".join(description.split())
    if len(description) > MAX_DESCRIPTION:
        description = description[: MAX_DESCRIPTION - 1] + "…"
    return {"description": description, "check_name": check, "fingerprint": fp, "severity": severity,
            "location": {"path": path, "lines": {"begin": max(1, int(line or 1))}}}


def _run_issues(report: Report, paths: list[str] | None, msg: Messages) -> list[dict]:
    """What the run itself says: nothing analysed, partial coverage, internal errors."""
    cov = report.coverage
    unread = (cov.incomplete + cov.not_read) if cov is not None else []
    first = unread[0].path if unread else None
    where = relative_path(first, paths) if first else relative_path((paths or ["input"])[0], None)
    out = []
    status = report.status
    if status in (Status.NOTHING, Status.PARTIAL):
        listed = [f"{i.path}: {msg.say(i.reason)}" for i in unread]
        text = msg.say(cov.text) + (" " + msg("gitlab.list_join").join(listed[:10]) if listed else "")
        check = "diagnose/nothing-analysed" if status == Status.NOTHING else "diagnose/partial-coverage"
        out.append(_issue(text, check, _digest(check, where), "blocker" if status == Status.NOTHING else "major",
                          where, 1))
    if gate_lines.unrecognised_fail(report):
        file, line = gate_lines.unrecognised_place(report)
        place = relative_path(file, paths) if file else where
        check = "diagnose/unrecognised-errors"
        out.append(_issue(gate_lines.unrecognised_text(report, msg), check, _digest(check, place), "major", place, line))
    if report.errors:
        text = msg("gitlab.incomplete") + " " + "; ".join(report.errors[:5])
        out.append(_issue(text, "diagnose/incomplete", _digest("diagnose/incomplete", where), "blocker", where, 1))
    return out


def _digest(check: str, where: str) -> str:
    return hashlib.sha256(f"{check}\0{where}".encode()).hexdigest()[:32]
