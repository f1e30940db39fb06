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

from diagnose.model import Finding, Report
from diagnose.report.textlayout import Hanging, Heading, Trimmed, clean, counted
from diagnose.report.triage_note import new_mark, triage_note

SEVERITY_STYLE = {"critical": "bold white on red", "error": "bold red", "warning": "yellow", "info": "cyan"}
VERDICT_STYLE = {"root-cause": "bold", "no-known-cause": "bold yellow", "notes": "green", "clean": "green",
                 "nothing-analysed": "bold red"}
EVIDENCE_CHARS = 400  # of one evidence line; the JSON report has it whole
INDENT = 3  # the details of a finding, under its heading

# Nouns that count are (singular, plural); Chinese uses one form.
_LABELS = {
    "en": {
        "read": "Read", "files": ("file", "files"), "lines": ("line", "lines"), "raw": "kept raw",
        "findings": "Findings", "none": "No findings.", "evidence": "Evidence", "fix": "What to do",
        "because": "because of", "seen": "seen", "once": "seen once", "times": ("time", "times"), "first": "first",
        "skipped": "Skipped", "errors": "Internal errors (the run is incomplete)", "refs": "References",
        "more": "more (see --format json)", "in_part": "Read in part",
    },
    "zh": {
        "read": "已读取", "files": ("个文件", "个文件"), "lines": ("行", "行"), "raw": "未解析（保留原文）",
        "findings": "发现的问题", "none": "未发现问题。", "evidence": "证据", "fix": "处理建议",
        "because": "起因", "seen": "出现", "once": "出现 1 次", "times": ("次", "次"), "first": "首次",
        "skipped": "已跳过", "errors": "内部错误（结果不完整）", "refs": "参考",
        "more": "条未列出（见 --format json）", "in_part": "只读取了一部分",
    },
}


def render(report: Report, color: bool = False, width: int = 100, lang: str = "en", **_options) -> str:
    out = io.StringIO()
    console = Console(
        file=out, force_terminal=color, no_color=not color, color_system="standard" if color else None,
        width=width, highlight=False, emoji=False, markup=False, legacy_windows=False,
    )
    lab = _LABELS.get(lang, _LABELS["en"])
    if report.verdict:
        console.print(Hanging(clean(report.verdict["text"]), 0, 2,
                              style=VERDICT_STYLE.get(report.verdict["kind"], "")))
    coverage = getattr(report, "coverage", None) or {}
    if coverage.get("status") == "partial":  # diagnose/coverage.py: a clean list covers only what was read
        console.print(Hanging(clean(coverage["text"]), 0, 2, style="bold yellow"))
    console.print(Hanging(_inputs_line(report, lab, lang), 0, 2, style="dim"))
    note = triage_note(report, lang)  # new/known since a findings baseline; suppressed by the configuration
    if note:
        console.print(Hanging(note, 0, 2, style="dim"))
    if report.findings:
        console.print()
        console.print(Text(f"{lab['findings']} ({len(report.findings)})", style="bold"))
        console.print(_finding_list(report.findings, lab, lang))
        for i, finding in enumerate(report.findings, 1):
            console.print()
            console.print(_details(i, finding, lab))
    elif not report.verdict:
        console.print(Text(lab["none"], style="green"))
    if getattr(report, "unrecognised", None):  # errors no rule explains (diagnose/signatures.py)
        from diagnose.report.text_unrecognised import unrecognised

        console.print()
        console.print(unrecognised(report, lang))
    if getattr(report, "comparisons", None):  # validation runs (diagnose/validation)
        from diagnose.report.comparison import comparison_table

        console.print()
        console.print(comparison_table(report, lang))
    in_part = coverage.get("incomplete") or []
    if in_part:
        console.print()
        console.print(Text(f"{lab['in_part']} ({len(in_part)}):", style="bold"))
        for item in in_part[:50]:
            console.print(Hanging(f"{clean(item['path'])}: {clean(item['reason'])}", 2, 6))
        if len(in_part) > 50:
            console.print(Text(f"  … {len(in_part) - 50} {lab['more']}"))
    if report.skipped:
        console.print()
        console.print(Text(f"{lab['skipped']} ({len(report.skipped)}):", style="bold"))
        for s in report.skipped[:50]:
            console.print(Hanging(f"{clean(s.path)}: {clean(s.reason)}", 2, 6))
        if len(report.skipped) > 50:
            console.print(Text(f"  … {len(report.skipped) - 50} {lab['more']}"))
    if report.errors:
        console.print()
        console.print(Text(lab["errors"] + ":", style="bold red"))
        for e in report.errors:
            console.print(Hanging(clean(e), 2, 6))
    text = out.getvalue()
    # Without colour, cells padded to their column width would leave trailing blanks on every line.
    return text if color else "\n".join(line.rstrip() for line in text.split("\n"))


def _inputs_line(report: Report, lab: dict, lang: str) -> str:
    kinds = Counter(i.kind for i in report.inputs)
    lines = sum(i.lines for i in report.inputs)
    raw = sum(i.raw_lines for i in report.inputs)
    kind_text = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))
    text = (f"{lab['read']} {counted(len(report.inputs), lab['files'])} ({kind_text or '-'}): "
            f"{counted(lines, lab['lines'])}, {raw:,} {lab['raw']}")
    if report.skipped:
        text += f"; {len(report.skipped):,} {lab['skipped'].lower()}"
    return text + ("" if lang == "zh" else ".")


def _finding_list(findings: list[Finding], lab: dict, lang: str) -> Table:
    """One entry per finding: number, severity, rule and title; under the title, how often, where, when and
    what caused it. The title column takes the rest of the width and wraps at words."""
    grid = Table.grid(padding=(0, 1), expand=False)
    grid.add_column(justify="right", no_wrap=True)
    grid.add_column(no_wrap=True, min_width=max(len(f.severity) for f in findings))
    grid.add_column(no_wrap=True)
    grid.add_column(ratio=1, overflow="fold")
    for i, f in enumerate(findings, 1):
        body = Text()
        mark = new_mark(f, lang)
        if mark:
            body.append(f"[{mark}] ", style="bold yellow")
        body.append(clean(f.title))
        body.append("\n")
        body.append(" · ".join(_facts(f, lab, lang)), style="dim")
        grid.add_row(f" {i}", Text(f.severity.upper(), style=SEVERITY_STYLE[f.severity]), f.rule_id, body)
    return grid


def _facts(f: Finding, lab: dict, lang: str) -> list[str]:
    parts = [lab["once"] if f.count == 1 else f"{lab['seen']} {counted(f.count, lab['times'])}"]
    where = f.short_where(",")
    if where:
        parts.append(clean(where))
    if f.first_seen:
        parts.append(f"{lab['first']} {f.first_seen.strftime('%m-%d %H:%M:%S')}")
    if f.caused_by:
        parts.append(f"{lab['because']} {f.caused_by}")
    return parts


def _details(i: int, f: Finding, lab: dict) -> Group:
    head = Text(f"{i}. ", style="bold")
    head.append(f.severity.upper(), style=SEVERITY_STYLE[f.severity])
    head.append(f" {f.rule_id} {f.name}", style="bold")
    head.append(f" ({f.category})", style="dim")
    parts: list = [Heading(head), Hanging(Text(clean(f.title), style="bold"), INDENT, INDENT)]
    if f.summary:
        parts.append(Hanging(clean(f.summary), INDENT, INDENT))
    if f.caused_by:
        parts.append(Hanging(Text(f"{lab['because']} {f.caused_by}", style="italic"), INDENT, INDENT))
    if f.evidence:
        parts.append(Text(f"\n{' ' * INDENT}{lab['evidence']}:", style="bold"))
        for e in f.evidence:
            line = Text()
            line.append(f"{clean(e.file)}:{e.line}: ", style="dim")
            line.append(clean(e.text)[:EVIDENCE_CHARS])
            parts.append(Hanging(line, INDENT + 2, INDENT + 6))
    if f.remediation:
        parts.append(Text(f"\n{' ' * INDENT}{lab['fix']}:", style="bold"))
        parts.append(Padding(Trimmed(Markdown(f.remediation)), (0, 0, 0, INDENT + 1)))
    if f.references:
        parts.append(Text(""))
        parts.append(Hanging(Text(f"{lab['refs']}: " + "; ".join(clean(r) for r in f.references), style="dim"),
                             INDENT, INDENT + 2))
    return Group(*parts)


__all__ = ["render", "clean", "SEVERITY_STYLE"]
