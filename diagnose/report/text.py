"""Human report for the terminal (rich): the verdict, a compact list of the findings, then each finding's
summary, evidence and remediation under its own heading.

Laid out for 80 columns and up: no column is narrower than its words (titles wrap at word boundaries, the
severity is never cut), and long lines (evidence, log text) wrap under their own indent. Log text is never
interpreted as markup and control characters are removed from it, so a log line cannot restyle or move the
terminal. Without colour (a pipe, a file, --color never) the output is plain text.
"""

from __future__ import annotations

import io
from collections import Counter

from rich.console import Console, Group
from rich.markdown import Markdown
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from diagnose.messages import Messages, messages
from diagnose.model import Finding, Report, Status, verdict_kind
from diagnose.report.comparison import comparison_table
from diagnose.report.text_unrecognised import unrecognised
from diagnose.report.textlayout import Hanging, Heading, Trimmed, clean
from diagnose.report.triage_note import new_mark, triage_note

SEVERITY_STYLE = {"critical": "bold white on red", "error": "bold red", "warning": "yellow", "info": "cyan"}
VERDICT_STYLE = {"root-cause": "bold", "no-known-cause": "bold yellow", "unexplained-errors": "yellow", "notes": "green",
                 "clean": "green",
                 "nothing-analysed": "bold red"}
EVIDENCE_CHARS = 400  # of one evidence line; the JSON report has it whole
INDENT = 3  # the details of a finding, under its heading

def render(report: Report, color: bool = False, width: int = 100, lang: str = "en", **_options) -> str:
    out = io.StringIO()
    console = Console(
        file=out, force_terminal=color, no_color=not color, color_system="standard" if color else None,
        width=width, highlight=False, emoji=False, markup=False, legacy_windows=False,
    )
    msg = messages(lang)
    if report.verdict:
        console.print(Hanging(clean(msg.say(report.verdict.text)), 0, 2,
                              style=VERDICT_STYLE.get(verdict_kind(report.verdict), "")))
    coverage = report.coverage
    if report.status == Status.PARTIAL:  # diagnose/analysis/coverage.py: a clean list covers only what was read
        console.print(Hanging(clean(msg.say(coverage.text)), 0, 2, style="bold yellow"))
    console.print(Hanging(_inputs_line(report, msg), 0, 2, style="dim"))
    note = triage_note(report, msg)  # new/known since a findings baseline; suppressed by the configuration
    if note:
        console.print(Hanging(note, 0, 2, style="dim"))
    if report.findings:
        console.print()
        console.print(Text(msg("text.findings", n=len(report.findings)), style="bold"))
        console.print(_finding_list(report.findings, msg))
        for i, finding in enumerate(report.findings, 1):
            console.print()
            console.print(_details(i, finding, msg))
    elif not report.verdict:
        console.print(Text(msg("text.none"), style="green"))
    if getattr(report, "unrecognised", None):  # errors no rule explains (diagnose/analysis/signatures.py)
        console.print()
        console.print(unrecognised(report, msg))
    if getattr(report, "comparisons", None):  # validation runs (diagnose/validation)
        console.print()
        console.print(comparison_table(report, lang))
    in_part = coverage.incomplete if coverage is not None else []
    if in_part:
        console.print()
        console.print(Text(msg("text.in_part_head", n=len(in_part)), style="bold"))
        for item in in_part[:50]:
            console.print(Hanging(f"{clean(item.path)}: {clean(msg.say(item.reason))}", 2, 6))
        if len(in_part) > 50:
            console.print(Text("  " + msg("text.more", n=len(in_part) - 50)))
    if report.skipped:
        console.print()
        console.print(Text(msg("text.skipped_head", n=len(report.skipped)), style="bold"))
        for s in report.skipped[:50]:
            console.print(Hanging(f"{clean(s.path)}: {clean(msg.say(s.reason))}", 2, 6))
        if len(report.skipped) > 50:
            console.print(Text("  " + msg("text.more", n=len(report.skipped) - 50)))
    if report.errors:
        console.print()
        console.print(Text(msg("text.errors"), style="bold red"))
        for e in report.errors:
            console.print(Hanging(clean(e), 2, 6))
    text = out.getvalue()
    # Without colour, cells padded to their column width would leave trailing blanks on every line.
    return text if color else "\n".join(line.rstrip() for line in text.split("\n"))


def _inputs_line(report: Report, msg: Messages) -> str:
    kinds = Counter(i.kind for i in report.inputs)
    lines = sum(i.lines for i in report.inputs)
    raw = sum(i.raw_lines for i in report.inputs)
    kind_text = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))
    skipped = msg("text.read_skipped", n=len(report.skipped)) if report.skipped else ""
    return msg("text.read", files=msg("text.files", n=len(report.inputs)), kinds=kind_text or "-",
               lines=msg("text.lines", n=lines), raw=raw, skipped=skipped)


def _finding_list(findings: list[Finding], msg: Messages) -> Table:
    """One entry per finding: number, severity, rule and title; under the title, how often, where, when and
    what caused it. The title column takes the rest of the width and wraps at words."""
    grid = Table.grid(padding=(0, 1), expand=False)
    grid.add_column(justify="right", no_wrap=True)
    grid.add_column(no_wrap=True, min_width=max(Text(_severity(f, msg)).cell_len for f in findings))
    grid.add_column(no_wrap=True)
    grid.add_column(ratio=1, overflow="fold")
    for i, f in enumerate(findings, 1):
        body = Text()
        mark = new_mark(f, msg)
        if mark:
            body.append(f"[{mark}] ", style="bold yellow")
        body.append(clean(msg.say(f.title)))
        body.append("\n")
        body.append(" · ".join(_facts(f, msg)), style="dim")
        grid.add_row(f" {i}", Text(_severity(f, msg), style=SEVERITY_STYLE[f.severity]), f.rule_id, body)
    return grid


def _severity(f: Finding, msg: Messages) -> str:
    return msg.severity(f.severity).upper()


def _facts(f: Finding, msg: Messages) -> list[str]:
    parts = [msg("text.seen_once") if f.count == 1 else msg("text.seen", n=f.count)]
    where = f.short_where(",")
    if where:
        parts.append(clean(where))
    if f.first_seen:
        parts.append(msg("text.first", when=f.first_seen.strftime("%m-%d %H:%M:%S")))
    if f.caused_by:
        parts.append(msg("text.because", rule=f.caused_by))
    return parts


def _details(i: int, f: Finding, msg: Messages) -> Group:
    head = Text(f"{i}. ", style="bold")
    head.append(_severity(f, msg), style=SEVERITY_STYLE[f.severity])
    head.append(f" {f.rule_id} {f.name}", style="bold")
    head.append(msg("text.category", category=msg.category_id(f.category)), style="dim")
    parts: list = [Heading(head), Hanging(Text(clean(msg.say(f.title)), style="bold"), INDENT, INDENT)]
    summary = msg.say(f.summary)
    if summary:
        parts.append(Hanging(clean(summary), INDENT, INDENT))
    if f.caused_by:
        parts.append(Hanging(Text(msg("text.because", rule=f.caused_by), style="italic"), INDENT, INDENT))
    if f.evidence:
        parts.append(Text(f"\n{' ' * INDENT}{msg('text.evidence')}", style="bold"))
        for e in f.evidence:
            line = Text()
            line.append(f"{clean(e.file)}:{e.line}: ", style="dim")
            line.append(clean(e.text)[:EVIDENCE_CHARS])
            parts.append(Hanging(line, INDENT + 2, INDENT + 6))
    remediation = msg.say(f.remediation)
    if remediation:
        parts.append(Text(f"\n{' ' * INDENT}{msg('text.fix')}", style="bold"))
        parts.append(Padding(Trimmed(Markdown(remediation)), (0, 0, 0, INDENT + 1)))
    if f.references:
        parts.append(Text(""))
        parts.append(Hanging(Text(msg("text.refs") + " " + msg("text.refs_join").join(clean(r) for r in f.references),
                                  style="dim"), INDENT, INDENT + 2))
    return Group(*parts)


__all__ = ["render", "clean", "SEVERITY_STYLE"]
