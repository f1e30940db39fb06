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

from diagnose.messages import Messages, messages
from diagnose.model import Finding, InputFile, Skipped

COMPLETE, PARTIAL, NOTHING = "complete", "partial", "nothing-analysed"

# The sentences are in the message catalog (``[coverage]`` in diagnose/messages.toml); why a file was not
# read is the reading code's English, shown in the run's language through diagnose/report/reasons.py.


def window_span(window: dict[str, Any] | None, msg: Messages) -> str:
    since, until = (window or {}).get("since"), (window or {}).get("until")
    if since and until:
        return msg("coverage.span", since=_when(since), until=_when(until))
    return msg("coverage.span_since", since=_when(since)) if since else msg("coverage.span_until", until=_when(until))


def _when(ts: datetime | None) -> str:
    return ts.strftime("%Y-%m-%d %H:%M:%S") if ts else "?"


def assess(inputs: list[InputFile], derived: list[InputFile], skipped: list[Skipped], findings: list[Finding],
           window: dict[str, Any] | None = None, roots: list[str] | None = None, lang: str = "en") -> dict[str, Any]:
    """``Report.coverage``. ``window``: dated records before and after --since/--until (``dated``, ``kept``,
    ``first``, ``last``, ``since``, ``until``); ``roots``: the paths given, to tell named files from files
    found inside a folder or archive."""
    msg = messages(lang)
    not_read = [s for s in skipped if not s.by_design]
    in_part = [i for i in inputs if i.incomplete]
    out: dict[str, Any] = {
        "status": COMPLETE,
        "files_read": len(inputs),
        "lines": sum(i.lines for i in inputs),
        "incomplete": [{"path": i.path, "reason": i.incomplete} for i in in_part],
        "not_read": [s.to_dict() for s in not_read],
    }
    reason = _nothing(inputs, derived, skipped, findings, window, roots, msg)
    if reason and inputs and not_read:  # say what was left out, which may be why nothing was found
        reason += msg("coverage.also_unread", unread=msg("coverage.not_read", n=len(not_read)))
    if reason:
        out.update(status=NOTHING, reason=reason, text=msg("coverage.nothing", reason=reason))
    elif not_read or in_part:
        parts = ([msg("coverage.not_read", n=len(not_read))] if not_read else []) + \
                ([msg("coverage.in_part", n=len(in_part))] if in_part else [])
        out.update(status=PARTIAL, text=msg("coverage.partial", parts=msg("coverage.list_join").join(parts)))
    return out


def _nothing(inputs, derived, skipped, findings, window, roots, msg: Messages) -> str | None:
    """Why nothing was analysed, or None."""
    from diagnose.report.reasons import skip_reason

    facts = sum(d.lines for d in derived)
    if not inputs and not facts:
        if not skipped:
            return msg("coverage.no_files")
        if all(s.by_design for s in skipped):
            why = msg("coverage.why_join").join(sorted({skip_reason(s.reason, msg) for s in skipped}))
            return msg("coverage.none_logs", n=len(skipped), why=why)
        if len(skipped) == 1:
            return msg("coverage.one_unread", path=skipped[0].path, why=skip_reason(skipped[0].reason, msg))
        return msg("coverage.none_read", n=len(skipped))
    if sum(i.lines for i in inputs) == 0 and not facts:
        if len(inputs) == 1 and inputs[0].path == "<stdin>":
            return msg("coverage.stdin_empty")
        return msg("coverage.all_empty", files=msg("coverage.files", n=len(inputs)))
    if window and window.get("dated") and not window.get("kept"):
        return msg("coverage.window", window=window_span(window, msg), first=_when(window.get("first")),
                   last=_when(window.get("last")))
    named = set(roots or []) | {"<stdin>"}
    if (not facts and not findings and inputs and all(i.kind == "unknown" for i in inputs)
            and any(i.path not in named for i in inputs)):
        return msg("coverage.unknown_only", files=msg("coverage.files", n=len(inputs)))
    return None


def nothing_analysed(report) -> bool:
    return (getattr(report, "coverage", None) or {}).get("status") == NOTHING


def partial(report) -> bool:
    return (getattr(report, "coverage", None) or {}).get("status") == PARTIAL


def lines_for(report, lang: str = "en", limit: int = 20) -> list[tuple[str, str]]:
    """(level, line) for the reports: the coverage sentence, then the files read in part and the inputs not
    read (``limit`` of each; the JSON report has all). Empty for a complete run."""
    from diagnose.report.reasons import input_note, skip_reason

    cov = getattr(report, "coverage", None) or {}
    if cov.get("status", COMPLETE) == COMPLETE:
        return []
    msg = messages(lang)
    level = "error" if cov["status"] == NOTHING else "warning"
    out = [(level, cov["text"])]
    for key, label, more, why in (("incomplete", "coverage.read_in_part", "coverage.read_in_part_more", input_note),
                                  ("not_read", "coverage.unread", "coverage.unread_more", skip_reason)):
        items = cov.get(key) or []
        for item in items[:limit]:
            out.append((level, msg(label, path=item["path"], reason=why(item["reason"], msg))))
        if len(items) > limit:
            out.append((level, msg(more, n=len(items) - limit)))
    return out
