"""The one-line verdict at the top of every report: the most likely root cause, or, when no rule explains
the errors the logs hold, the first of them, or that nothing is wrong.

Its kind (``root-cause``: the top finding, warning or worse; ``no-known-cause``: errors no rule explains, the
first of them by time, when they fail the run (``--fail-on-unrecognised``); ``unexplained-errors``: such errors in
a run that did not end abnormally and is not failed by them; ``notes``: only informational findings; ``clean``)
is decided here; its sentence is a phrase every renderer says in its own language. A run that ended abnormally
always has a finding that says what ended it (diagnose/analysis/ending.py), so its verdict is a root cause.
"""

from __future__ import annotations

from diagnose.messages import Phrase
from diagnose.model import (
    ERROR_LEVELS, SEVERITY_RANK, Clean, Finding, NoKnownCause, Notes, RootCause, Signature, Unexplained, Verdict,
)


def _is_error(item: Signature) -> bool:
    return item.level in ERROR_LEVELS or bool(item.code)


def verdict(findings: list[Finding], unrecognised: list[Signature], abnormal: bool = False,
            fail_on_unrecognised: bool = False) -> Verdict:
    loud = [f for f in findings if SEVERITY_RANK[f.severity] >= SEVERITY_RANK["warning"]]
    if loud:
        top = loud[0]
        where = top.short_where(", ") or "-"
        when = top.first_seen.strftime("%Y-%m-%d %H:%M:%S") if top.first_seen else "-"
        ev = top.evidence[0] if top.evidence else None
        return RootCause(
            rule_id=top.rule_id, category=top.category, title=top.title, where=where, first_seen=when,
            file=ev.file if ev else None, line=ev.line if ev else None,
            text=Phrase("verdict.root_cause" if top.first_seen or not ev else "verdict.root_cause_untimed",
                        title=top.title, rule=top.rule_id, when=when, file=ev.file if ev else None,
                        line=ev.line if ev else None,
                        where="" if where == "-" else Phrase("verdict.where", where=where)))
    errors = [u for u in unrecognised if _is_error(u)]
    if errors:
        first = min(errors, key=lambda u: (u.first_seen is None, u.first_seen or "", -u.count))
        ex = first.example
        message = (ex.message or ex.text or first.signature).strip()
        message = message if len(message) <= 200 else message[:199] + "…"
        when = first.first_seen or "-"
        n = sum(u.count for u in errors)
        if fail_on_unrecognised or abnormal:
            return NoKnownCause(signature=first.signature, file=ex.file, line=ex.line, first_seen=first.first_seen,
                                errors=n, text=Phrase("verdict.no_known_cause", file=ex.file, line=ex.line, when=when,
                                                      message=message))
        return Unexplained(signature=first.signature, file=ex.file, line=ex.line, first_seen=first.first_seen,
                           errors=n, text=Phrase("verdict.unexplained", n=n, file=ex.file, line=ex.line, when=when,
                                                 message=message))
    if findings:
        return Notes(text=Phrase("verdict.notes", n=len(findings)))
    return Clean(text=Phrase("verdict.clean"))
