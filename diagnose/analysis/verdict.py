"""The one-line verdict at the top of every report: the most likely root cause, or, when no rule explains
the errors the logs hold, the first of them, or that nothing is wrong.

``kind``: ``root-cause`` (the top finding, warning or worse), ``no-known-cause`` (errors or exceptions that no
rule explains: the first of them by time), ``notes`` (only informational findings), ``clean``.
"""

from __future__ import annotations

from typing import Any

from diagnose.messages import messages
from diagnose.model import SEVERITY_RANK, Finding

_ERROR_LEVELS = ("ERROR", "CRITICAL")


def _is_error(item: dict[str, Any]) -> bool:
    return item.get("level") in _ERROR_LEVELS or bool(item.get("code"))


def verdict(findings: list[Finding], unrecognised: list[dict[str, Any]], lang: str = "en") -> dict[str, Any]:
    msg = messages(lang)
    loud = [f for f in findings if SEVERITY_RANK[f.severity] >= SEVERITY_RANK["warning"]]
    if loud:
        top = loud[0]
        where = top.short_where(", ") or "-"
        when = top.first_seen.strftime("%Y-%m-%d %H:%M:%S") if top.first_seen else "-"
        ev = top.evidence[0] if top.evidence else None
        return {"kind": "root-cause", "rule_id": top.rule_id, "category": top.category, "title": top.title,
                "where": where, "first_seen": when, "file": ev.file if ev else None, "line": ev.line if ev else None,
                "text": msg("verdict.root_cause" if top.first_seen or not ev else "verdict.root_cause_untimed",
                            title=top.title, rule=top.rule_id, when=when, file=ev.file if ev else None,
                            line=ev.line if ev else None,
                            where="" if where == "-" else msg("verdict.where", where=where))}
    errors = [u for u in unrecognised if _is_error(u)]
    if errors:
        first = min(errors, key=lambda u: (u.get("first_seen") is None, u.get("first_seen") or "", -u["count"]))
        ex = first.get("example") or {}
        message = (ex.get("message") or ex.get("text") or first["signature"]).strip()
        message = message if len(message) <= 200 else message[:199] + "…"
        when = first.get("first_seen") or "-"
        return {"kind": "no-known-cause", "signature": first["signature"], "file": ex.get("file"),
                "line": ex.get("line"), "first_seen": first.get("first_seen"), "errors": sum(u["count"] for u in errors),
                "text": msg("verdict.no_known_cause", file=ex.get("file"), line=ex.get("line"), when=when,
                            message=message)}
    if findings:
        return {"kind": "notes", "text": msg("verdict.notes", n=len(findings))}
    return {"kind": "clean", "text": msg("verdict.clean")}
