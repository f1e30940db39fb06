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

The sentence for the reports is a phrase every format says in its own language (diagnose/report/).
"""

from __future__ import annotations

from datetime import datetime

from diagnose.messages import Joined, Phrase, Words
from diagnose.model import Coverage, Finding, InputFile, Report, Skipped, Status, Unread
from diagnose.model.timewindow import TimeWindow

COMPLETE, PARTIAL, NOTHING = Status.COMPLETE, Status.PARTIAL, Status.NOTHING


def window_span(window: TimeWindow | None) -> Phrase:
    since, until = (window.since, window.until) if window else (None, None)
    if since and until:
        return Phrase("coverage.span", since=_when(since), until=_when(until))
    return Phrase("coverage.span_since", since=_when(since)) if since else Phrase("coverage.span_until", until=_when(until))


def _when(ts: datetime | None) -> str:
    return ts.strftime("%Y-%m-%d %H:%M:%S") if ts else "?"


def assess(inputs: list[InputFile], derived: list[InputFile], skipped: list[Skipped], findings: list[Finding],
           window: TimeWindow | None = None, roots: list[str] | None = None) -> Coverage:
    """``Report.coverage``. ``window``: dated records before and after --since/--until; ``roots``: the paths given, to tell named files from files
    found inside a folder or archive."""
    not_read = [s for s in skipped if not s.by_design]
    in_part = [i for i in inputs if i.incomplete]
    out = Coverage(status=COMPLETE, files_read=len(inputs), lines=sum(i.lines for i in inputs),
                   incomplete=[Unread(i.path, i.incomplete) for i in in_part],
                   not_read=[Unread(s.path, s.reason) for s in not_read])
    reason = _nothing(inputs, derived, skipped, findings, window, roots)
    if reason and inputs and not_read:  # say what was left out, which may be why nothing was found
        reason = Joined([reason, Phrase("coverage.also_unread", unread=Phrase("coverage.not_read", n=len(not_read)))])
    if reason:
        out.status, out.reason, out.text = NOTHING, reason, Phrase("coverage.nothing", reason=reason)
    elif not_read or in_part:
        parts = ([Phrase("coverage.not_read", n=len(not_read))] if not_read else []) + \
                ([Phrase("coverage.in_part", n=len(in_part))] if in_part else [])
        out.status, out.text = PARTIAL, Phrase("coverage.partial", parts=Joined(parts, "coverage.list_join"))
    return out


def _nothing(inputs, derived, skipped, findings, window, roots) -> Words | None:
    """Why nothing was analysed, or None."""
    facts = sum(d.lines for d in derived)
    if not inputs and not facts:
        if not skipped:
            return Phrase("coverage.no_files")
        if all(s.by_design for s in skipped):
            why = Joined([s.reason for s in skipped], "coverage.why_join", distinct=True)
            return Phrase("coverage.none_logs", n=len(skipped), why=why)
        if len(skipped) == 1:
            return Phrase("coverage.one_unread", path=skipped[0].path, why=skipped[0].reason)
        return Phrase("coverage.none_read", n=len(skipped))
    if sum(i.lines for i in inputs) == 0 and not facts:
        if len(inputs) == 1 and inputs[0].path == "<stdin>":
            return Phrase("coverage.stdin_empty")
        return Phrase("coverage.all_empty", files=Phrase("coverage.files", n=len(inputs)))
    # A window past every dated line analysed nothing, unless undated inputs (configuration files, profiler
    # tables) still gave findings: those stand, and the report does not say it looked at nothing.
    if window and window.dated and not window.kept and not findings:
        return Phrase("coverage.window", window=window_span(window), first=_when(window.first),
                      last=_when(window.last))
    named = set(roots or []) | {"<stdin>"}
    if (not facts and not findings and inputs and all(i.kind == "unknown" for i in inputs)
            and any(i.path not in named for i in inputs)):
        return Phrase("coverage.unknown_only", files=Phrase("coverage.files", n=len(inputs)))
    return None


def nothing_analysed(report: Report) -> bool:
    return report.status == NOTHING


def partial(report: Report) -> bool:
    return report.status == PARTIAL
