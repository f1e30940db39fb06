"""The coverage lines every format prints on a run that was not complete: the sentence, then the files read in
part and the inputs not read, each with its reason (``limit`` of each; the JSON report has all)."""

from __future__ import annotations

from diagnose.messages import Messages
from diagnose.model import Report, Status


def coverage_lines(report: Report, msg: Messages, limit: int = 20) -> list[tuple[str, str]]:
    """(level, line) in the output's language; empty for a complete run."""
    cov = report.coverage
    if cov is None or cov.status == Status.COMPLETE:
        return []
    level = "error" if cov.status == Status.NOTHING else "warning"
    out = [(level, msg.say(cov.text))]
    for items, label, more in ((cov.incomplete, "coverage.read_in_part", "coverage.read_in_part_more"),
                               (cov.not_read, "coverage.unread", "coverage.unread_more")):
        for item in items[:limit]:
            out.append((level, msg(label, path=item.path, reason=msg.say(item.reason))))
        if len(items) > limit:
            out.append((level, msg(more, n=len(items) - limit)))
    return out
