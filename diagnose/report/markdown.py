"""GitHub-flavoured Markdown summary (``$GITHUB_STEP_SUMMARY``, merge-request comments, tickets).

A header line, a summary table of the findings, then the top findings with their evidence and remediation.
The whole text stays under ``max_bytes`` (default 1,000,000 bytes; GitHub refuses step summaries over
1 MiB) whatever the input: table rows, sections and evidence lines are capped, and what is left out is
counted ("N more in the JSON report").

Log text is untrusted: in table cells and prose it is escaped (``|``, backticks, ``*_[]~\\``, ``<>&`` as HTML
entities, newlines flattened), and evidence goes into fenced code blocks whose fence is longer than any
backtick run inside, so a log line can neither break the table nor inject HTML or links. Remediation text is
authored Markdown from the rule files and is kept as it is.
"""

from __future__ import annotations

import re
from collections import Counter

from diagnose.messages import Messages, messages
from diagnose.model import Finding, Report, Status, verdict_kind
from diagnose.report.comparison import comparison_markdown
from diagnose.report.sarif import relative_path
from diagnose.report.triage_note import new_mark, triage_note

MAX_BYTES = 1_000_000
MAX_TABLE_ROWS = 100
MAX_SECTIONS = 25
MAX_EVIDENCE = 5
MAX_LINE = 500
ICONS = {"critical": "🛑", "error": "🔴", "warning": "🟠", "info": "🔵"}

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_MD_SPECIAL = re.compile(r"([\\`*_\[\]~|#])")


def escape(text: str) -> str:
    """Inline-safe Markdown for untrusted text (a table cell or a sentence)."""
    text = _CONTROL.sub("", str(text).replace("\r\n", " ").replace("\n", " ").replace("\t", " "))
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", text)


def inline(text: str, cell: bool = False) -> str:
    """Untrusted text with its code spans kept as code: outside backtick pairs escaped; inside, a code span
    (nothing in a code span is interpreted, and the content holds no backtick). In a table ``cell`` a ``|``
    inside a code span is escaped too (GFM splits cells before it reads code spans)."""
    parts = str(text).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: all of it as text
        return escape(text)
    out = []
    for i, part in enumerate(parts):
        clean = _CONTROL.sub("", part.replace("\r\n", " ").replace("\n", " "))
        if cell:
            clean = clean.replace("|", "\\|")
        out.append(f"`{clean}`" if i % 2 and clean.strip() else escape(part) if i % 2 == 0 else escape(f"`{part}`"))
    return "".join(out)


def code_block(lines: list[str], info: str = "text") -> str:
    body = "\n".join(_CONTROL.sub("", line.replace("\t", "    ")) for line in lines)
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{body}\n{fence}\n"


def _clip(text: str, limit: int = MAX_LINE) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render(report: Report, paths: list[str] | None = None, fail_on: str = "error", max_bytes: int = MAX_BYTES,
           lang: str = "en", **_options) -> str:
    msg = messages(lang)
    budget = max(4096, int(max_bytes)) - 512  # room for the closing lines
    out: list[str] = []
    used = 0

    def add(chunk: str) -> bool:
        nonlocal used
        size = len(chunk.encode("utf-8"))
        if used + size > budget:
            return False
        out.append(chunk)
        used += size
        return True

    findings = report.findings
    sev = Counter(f.severity for f in findings)
    sev_text = msg("markdown.list_join").join(f"{sev[s]} {msg.severity(s)}" for s in ("critical", "error", "warning", "info")
                                             if sev[s])
    coverage = report.coverage
    nothing = report.status == Status.NOTHING
    if nothing:  # never "0 findings" for a run that looked at nothing (diagnose/analysis/coverage.py)
        add("## " + msg("markdown.heading_nothing") + "\n\n")
    else:
        add("## " + msg("markdown.heading", n=len(findings)) + (msg("markdown.heading_severities", severities=sev_text)
                                                                if sev_text else "") + "\n\n")
    kinds = Counter(i.kind for i in report.inputs)
    kind_text = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))
    lines = sum(i.lines for i in report.inputs)
    head = msg("markdown.read", n=len(report.inputs), kinds=escape(kind_text) or "-", lines=lines,
               rules=len(report.rules_checked))
    if report.skipped:
        head += msg("markdown.skipped_n", n=len(report.skipped))
    add(head + msg("markdown.full_stop") + "\n\n")
    if report.incomplete:
        add("> [!WARNING]\n> " + msg("markdown.incomplete", n=len(report.errors)) + "\n\n")
    if nothing or report.status == Status.PARTIAL:
        add(f"> [!{'CAUTION' if nothing else 'WARNING'}]\n> " + escape(msg.say(coverage.text)) + "\n\n")
    if report.verdict and verdict_kind(report.verdict) not in ("clean", "nothing-analysed"):
        add("**" + escape(msg.say(report.verdict.text)) + "**\n\n")
    note = triage_note(report, msg)  # new/known since a findings baseline; suppressed by the configuration
    if note:
        add(escape(note) + "\n\n")

    if nothing:
        pass
    elif not findings:
        add((escape(msg.say(report.verdict.text)) if verdict_kind(report.verdict) == "clean" else msg("markdown.none"))
            + "\n\n")
    else:
        add("| # | " + " | ".join(msg(f"markdown.col.{c}") for c in ("severity", "rule", "title", "count", "where",
                                                                        "first_seen")) + " |\n")
        add("|---:|---|---|---|---:|---|---|\n")
        shown_rows = 0
        for i, f in enumerate(findings[:MAX_TABLE_ROWS], 1):
            mark = new_mark(f, msg)
            title = (f"**{mark}** " if mark else "") + inline(msg.say(f.title), cell=True) + (f" ← {escape(f.caused_by)}" if f.caused_by else "")
            first = f.first_seen.strftime("%Y-%m-%d %H:%M:%S") if f.first_seen else "-"
            row = (f"| {i} | {ICONS.get(f.severity, '')} {msg.severity(f.severity)} | {escape(f.rule_id)} "
                   f"| {title} | {f.count} | {escape(_where(f)) or '-'} | {first} |\n")
            if not add(row):
                break
            shown_rows += 1
        if shown_rows < len(findings):
            add("\n_" + msg("markdown.more_rows", n=len(findings) - shown_rows) + "_\n")
        add("\n")

        shown = 0
        for i, f in enumerate(findings[:MAX_SECTIONS], 1):
            if not add(_section(i, f, paths, msg)):
                break
            shown += 1
        if shown < len(findings):
            add("_" + msg("markdown.more_findings", n=len(findings) - shown) + "_\n\n")

    if getattr(report, "unrecognised", None):  # errors no rule explains (diagnose/analysis/signatures.py)
        add(_unrecognised(report, paths, msg))
    if getattr(report, "comparisons", None):  # validation runs: the table the VAL findings refer to
        add(comparison_markdown(report, lang) + "\n")
    in_part = coverage.incomplete if coverage is not None else []
    if in_part:
        add(f"<details><summary>{msg('markdown.in_part', n=len(in_part))}</summary>\n\n")
        for item in in_part[:50]:
            if not add(f"- {escape(item.path)}: {escape(msg.say(item.reason))}\n"):
                break
        add("\n</details>\n\n")
    if report.skipped:
        add(f"<details><summary>{msg('markdown.skipped', n=len(report.skipped))}</summary>\n\n")
        n = 0
        for s in report.skipped[:50]:
            if not add(f"- {escape(s.path)}: {escape(msg.say(s.reason))}\n"):
                break
            n += 1
        if n < len(report.skipped):
            add("- … " + msg("markdown.more_skipped", n=len(report.skipped) - n) + "\n")
        add("\n</details>\n\n")
    if report.errors:
        add(f"**{msg('markdown.errors')}**\n\n")
        for e in report.errors[:20]:
            if not add(f"- {escape(_clip(e))}\n"):
                break
        add("\n")
    text = "".join(out)
    return text if text.endswith("\n") else text + "\n"


def _where(f: Finding) -> str:
    return f.short_where(', ')


def _section(i: int, f: Finding, paths, msg: Messages) -> str:
    parts = [f"### {i}. {ICONS.get(f.severity, '')} {msg.severity(f.severity).upper()} {escape(f.rule_id)} "
             f"{escape(f.name)}: {inline(msg.say(f.title))}\n\n"]
    parts.append(inline(msg.say(f.summary)) + "\n\n")
    if f.caused_by:
        parts.append(f"{msg('markdown.because')} **{escape(f.caused_by)}**\n\n")
    if f.evidence:
        parts.append(f"**{msg('markdown.evidence')}**\n\n")
        lines = [f"{relative_path(e.file, paths)}:{e.line}: {_clip(e.text)}" for e in f.evidence[:MAX_EVIDENCE]]
        parts.append(code_block(lines))
        if len(f.evidence) > MAX_EVIDENCE:
            parts.append("\n_" + msg("markdown.more_evidence", n=len(f.evidence) - MAX_EVIDENCE) + "_\n")
        parts.append("\n")
    remediation = msg.say(f.remediation)
    if remediation:
        parts.append(f"**{msg('markdown.fix')}**\n\n" + _clip(remediation.strip(), 8000) + "\n\n")
    if f.references:
        parts.append(msg("markdown.refs") + " " + "; ".join(escape(r) for r in f.references[:10]) + "\n\n")
    return "".join(parts)


def _unrecognised(report: Report, paths, msg: Messages) -> str:
    items = report.unrecognised
    out = [f"### {msg('markdown.unrecognised.title')}\n\n{msg('markdown.unrecognised.intro')}"]
    new = report.unrecognised_new
    if new is not None:
        out.append(" **" + msg("markdown.unrecognised.new", n=new) + "**")
    cols = ("count", "signature", "first_seen", "last_seen", "where")
    out.append("\n\n| # | " + " | ".join(msg(f"markdown.unrecognised.col.{c}") for c in cols) + " |"
               + "\n|---:|---:|---|---|---|---|\n")
    for i, u in enumerate(items, 1):
        where = ", ".join(u.nodes[:4])
        if u.ranks:
            where += (" " if where else "") + msg("markdown.unrecognised.ranks", ranks=",".join(map(str, u.ranks[:8])))
        mark = f" ({msg('markdown.unrecognised.new_mark')})" if u.new is True else ""
        out.append(f"| {i} | {u.count} | {escape(_clip(u.signature, 300))}{mark} | {(u.first_seen or '-')[:19]} "
                   f"| {(u.last_seen or '-')[:19]} | {escape(where) or '-'} |\n")
    more = report.unrecognised_more or 0
    if more:
        out.append("\n_" + msg("markdown.unrecognised.more", n=more) + "_\n")
    out.append("\n")
    for i, u in enumerate(items[:5], 1):
        ex = u.example
        out.append(msg("markdown.unrecognised.example", i=i) + "\n\n")
        out.append(code_block([f"{relative_path(ex.file, paths)}:{ex.line}: {_clip(ex.text)}"]) + "\n")
    return "".join(out)

