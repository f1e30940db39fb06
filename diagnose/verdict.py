"""The one-line verdict at the top of every report: the most likely root cause, or, when no rule explains
the errors the logs hold, the first of them, or that nothing is wrong.

``kind``: ``root-cause`` (the top finding, warning or worse), ``no-known-cause`` (errors or exceptions that no
rule explains: the first of them by time), ``notes`` (only informational findings), ``clean``.
"""

from __future__ import annotations

from typing import Any

from diagnose.model import SEVERITY_RANK, Finding

_TEXT = {
    "en": {"root-cause": "Root cause: {title} ({rule}){where}, first seen {when}.",
           "root-cause-untimed": "Root cause: {title} ({rule}){where}, see {file}:{line}.",
           "no-known-cause": "No known cause: first error at {file}:{line} ({when}): {message}",
           "notes": "No problem found; {n} informational note{s}.",
           "clean": "No findings."},
    "zh": {"root-cause": "根因：{title}（{rule}）{where}，首次出现 {when}。",
           "root-cause-untimed": "根因：{title}（{rule}）{where}，见 {file}:{line}。",
           "no-known-cause": "未知原因：最早的错误位于 {file}:{line}（{when}）：{message}",
           "notes": "未发现问题；{n} 条提示信息{s}。",
           "clean": "未发现问题。"},
}
_ERROR_LEVELS = ("ERROR", "CRITICAL")


def _is_error(item: dict[str, Any]) -> bool:
    return item.get("level") in _ERROR_LEVELS or bool(item.get("code"))


def verdict(findings: list[Finding], unrecognised: list[dict[str, Any]], lang: str = "en") -> dict[str, Any]:
    text = _TEXT.get(lang, _TEXT["en"])
    loud = [f for f in findings if SEVERITY_RANK[f.severity] >= SEVERITY_RANK["warning"]]
    if loud:
        top = loud[0]
        where = top.short_where(", ") or "-"
        when = top.first_seen.strftime("%Y-%m-%d %H:%M:%S") if top.first_seen else "-"
        ev = top.evidence[0] if top.evidence else None
        return {"kind": "root-cause", "rule_id": top.rule_id, "category": top.category, "title": top.title,
                "where": where, "first_seen": when, "file": ev.file if ev else None, "line": ev.line if ev else None,
                "text": text["root-cause" if top.first_seen or not ev else "root-cause-untimed"].format(
                    title=top.title, rule=top.rule_id, when=when, file=ev.file if ev else None,
                    line=ev.line if ev else None,
                    where="" if where == "-" else (f"，位置 {where}" if lang == "zh" else f" on {where}"))}
    errors = [u for u in unrecognised if _is_error(u)]
    if errors:
        first = min(errors, key=lambda u: (u.get("first_seen") is None, u.get("first_seen") or "", -u["count"]))
        ex = first.get("example") or {}
        message = (ex.get("message") or ex.get("text") or first["signature"]).strip()
        message = message if len(message) <= 200 else message[:199] + "…"
        when = first.get("first_seen") or "-"
        return {"kind": "no-known-cause", "signature": first["signature"], "file": ex.get("file"),
                "line": ex.get("line"), "first_seen": first.get("first_seen"), "errors": sum(u["count"] for u in errors),
                "text": text["no-known-cause"].format(file=ex.get("file"), line=ex.get("line"), when=when,
                                                      message=message)}
    if findings:
        return {"kind": "notes", "text": text["notes"].format(n=len(findings), s="" if len(findings) == 1 or lang == "zh" else "s")}
    return {"kind": "clean", "text": text["clean"]}
