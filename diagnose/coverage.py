"""What a run covered, so a run that read nothing, or less than it was given, never looks clean.

``assess`` looks at what the read stage and the time window left and returns ``Report.coverage``:

- ``nothing-analysed``: no input file was found or could be read; every input was empty (``diagnose -
  </dev/null``); ``--since``/``--until`` exclude every dated record; or a folder or archive held no file of a
  known kind (only the generic rules searched it) and nothing was found. A file named on the command line is
  always searched by the generic rules and counts as analysed. Exit code 4 unless ``--allow-empty``.
- ``partial``: something was analysed, but an input was not read (a reading budget, a corrupt or truncated
  archive, an unreadable file) or a file was read only in part (a truncated ``.gz``: the lines before the
  cut are used). Files that are not logs by design (binaries, links, Python source: ``Skipped.by_design``)
  do not count. A clean run with partial coverage exits 5 unless ``--allow-partial``; findings still exit 1.
- ``complete``: everything given was read.

The sentence for the reports is in the run's language; every format prints it (diagnose/report/).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from diagnose.model import Finding, InputFile, Skipped

COMPLETE, PARTIAL, NOTHING = "complete", "partial", "nothing-analysed"

_TEXT = {
    "en": {
        "nothing": "Nothing was analysed: {reason}.",
        "no_files": "no input files found",
        "none_read": "none of the {n} inputs could be read",
        "none_logs": "no file to analyse ({n} skipped: {why})",
        "one_unread": "the only input could not be read ({path}: {why})",
        "stdin_empty": "standard input was empty",
        "all_empty": "every input was empty ({n}, 0 lines)",
        "files": "{n} file|{n} files",
        "window": "no record falls within {window} (the logs run from {first} to {last})",
        "unknown_only": "no file of a known kind ({n} of no known kind searched by the generic rules only, "
                        "nothing found)",
        "also_unread": "; {unread}",
        "partial": "Partial coverage: {parts}; the findings cover only what was read.",
        "not_read": "{n} input not read|{n} inputs not read",
        "in_part": "{n} file read only in part|{n} files read only in part",
    },
    "zh": {
        "nothing": "未分析任何内容：{reason}。",
        "no_files": "未找到输入文件",
        "none_read": "{n} 个输入都无法读取",
        "none_logs": "没有可分析的文件（跳过 {n} 个：{why}）",
        "one_unread": "唯一的输入无法读取（{path}：{why}）",
        "stdin_empty": "标准输入为空",
        "all_empty": "所有输入都为空（{n}，0 行）",
        "files": "{n} 个文件|{n} 个文件",
        "window": "{window} 内没有任何记录（日志时间范围为 {first} 至 {last}）",
        "unknown_only": "没有可识别类型的文件（{n} 个未知类型的文件仅由通用规则搜索，未发现问题）",
        "also_unread": "；{unread}",
        "partial": "覆盖不完整：{parts}；结果只反映已读取的内容。",
        "not_read": "{n} 个输入未读取|{n} 个输入未读取",
        "in_part": "{n} 个文件只读取了一部分|{n} 个文件只读取了一部分",
    },
}


def _count(template: str, n: int) -> str:
    one, many = template.split("|")
    return (one if n == 1 else many).format(n=n)


def window_span(window: dict[str, Any] | None, lang: str) -> str:
    since, until = (window or {}).get("since"), (window or {}).get("until")
    fmt = "%Y-%m-%d %H:%M:%S"
    if lang == "zh":
        return (f"{since:{fmt}} 至 {until:{fmt}}" if since and until else
                f"{since:{fmt}} 之后" if since else f"{until:{fmt}} 之前")
    return (f"--since {since:{fmt}} --until {until:{fmt}}" if since and until else
            f"--since {since:{fmt}}" if since else f"--until {until:{fmt}}")


def _when(ts: datetime | None) -> str:
    return ts.strftime("%Y-%m-%d %H:%M:%S") if ts else "?"


def assess(inputs: list[InputFile], derived: list[InputFile], skipped: list[Skipped], findings: list[Finding],
           window: dict[str, Any] | None = None, roots: list[str] | None = None, lang: str = "en") -> dict[str, Any]:
    """``Report.coverage``. ``window``: dated records before and after --since/--until (``dated``, ``kept``,
    ``first``, ``last``, ``since``, ``until``); ``roots``: the paths given, to tell named files from files
    found inside a folder or archive."""
    t = _TEXT.get(lang, _TEXT["en"])
    not_read = [s for s in skipped if not s.by_design]
    in_part = [i for i in inputs if i.incomplete]
    out: dict[str, Any] = {
        "status": COMPLETE,
        "files_read": len(inputs),
        "lines": sum(i.lines for i in inputs),
        "incomplete": [{"path": i.path, "reason": i.incomplete} for i in in_part],
        "not_read": [s.to_dict() for s in not_read],
    }
    reason = _nothing(inputs, derived, skipped, findings, window, roots, t, lang)
    if reason and inputs and not_read:  # say what was left out, which may be why nothing was found
        reason += t["also_unread"].format(unread=_count(t["not_read"], len(not_read)))
    if reason:
        out.update(status=NOTHING, reason=reason, text=t["nothing"].format(reason=reason))
    elif not_read or in_part:
        parts = ([_count(t["not_read"], len(not_read))] if not_read else []) + \
                ([_count(t["in_part"], len(in_part))] if in_part else [])
        out.update(status=PARTIAL, text=t["partial"].format(parts=", ".join(parts)))
    return out


def _nothing(inputs, derived, skipped, findings, window, roots, t, lang) -> str | None:
    """Why nothing was analysed, or None."""
    facts = sum(d.lines for d in derived)
    if not inputs and not facts:
        if not skipped:
            return t["no_files"]
        if all(s.by_design for s in skipped):
            return t["none_logs"].format(n=len(skipped), why="; ".join(sorted({s.reason for s in skipped})))
        if len(skipped) == 1:
            return t["one_unread"].format(path=skipped[0].path, why=skipped[0].reason)
        return t["none_read"].format(n=len(skipped))
    if sum(i.lines for i in inputs) == 0 and not facts:
        if len(inputs) == 1 and inputs[0].path == "<stdin>":
            return t["stdin_empty"]
        return t["all_empty"].format(n=_count(t["files"], len(inputs)))
    if window and window.get("dated") and not window.get("kept"):
        return t["window"].format(window=window_span(window, lang), first=_when(window.get("first")),
                                  last=_when(window.get("last")))
    named = set(roots or []) | {"<stdin>"}
    if (not facts and not findings and inputs and all(i.kind == "unknown" for i in inputs)
            and any(i.path not in named for i in inputs)):
        return t["unknown_only"].format(n=_count(t["files"], len(inputs)))
    return None


def nothing_analysed(report) -> bool:
    return (getattr(report, "coverage", None) or {}).get("status") == NOTHING


def partial(report) -> bool:
    return (getattr(report, "coverage", None) or {}).get("status") == PARTIAL


_LABELS = {"en": ("read in part", "not read", "more (see the JSON report)"),
           "zh": ("只读取了一部分", "未读取", "项见 JSON 报告")}


def lines_for(report, lang: str = "en", limit: int = 20) -> list[tuple[str, str]]:
    """(level, line) for the reports: the coverage sentence, then the files read in part and the inputs not
    read (``limit`` of each; the JSON report has all). Empty for a complete run."""
    cov = getattr(report, "coverage", None) or {}
    if cov.get("status", COMPLETE) == COMPLETE:
        return []
    level = "error" if cov["status"] == NOTHING else "warning"
    in_part, unread, more = _LABELS.get(lang, _LABELS["en"])
    out = [(level, cov["text"])]
    for key, label in (("incomplete", in_part), ("not_read", unread)):
        items = cov.get(key) or []
        for item in items[:limit]:
            out.append((level, f"{label}: {item['path']}: {item['reason']}"))
        if len(items) > limit:
            out.append((level, f"{label}: … {len(items) - limit} {more}"))
    return out
