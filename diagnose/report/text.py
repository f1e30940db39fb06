"""Human report for the terminal (rich): a summary table, then one panel per finding.

Log text is never interpreted as markup and control characters are removed from it, so a log line cannot
restyle or move the terminal. Without colour (a pipe, a file, --no-color) the output is plain text.
"""

from __future__ import annotations

import io
import re
from collections import Counter

from rich import box
from rich.console import Console, Group
from rich.markdown import Markdown
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from diagnose.model import Finding, Report
from diagnose.report.triage_note import new_mark, triage_note

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
SEVERITY_STYLE = {"critical": "bold white on red", "error": "bold red", "warning": "yellow", "info": "cyan"}
_LABELS = {
    "en": {
        "findings": "Findings", "none": "No findings.", "evidence": "Evidence", "fix": "What to do",
        "because": "because of", "read": "read", "files": "files", "lines": "lines", "raw": "kept raw",
        "skipped": "Skipped", "errors": "Internal errors (the run is incomplete)", "means": "What it means",
        "refs": "References", "seen": "seen", "times": "times", "where": "where", "in_part": "Read in part",
    },
    "zh": {
        "findings": "发现的问题", "none": "未发现问题。", "evidence": "证据", "fix": "处理建议",
        "because": "起因", "read": "已读取", "files": "个文件", "lines": "行", "raw": "未解析（保留原文）",
        "skipped": "已跳过", "errors": "内部错误（结果不完整）", "means": "含义",
        "refs": "参考", "seen": "出现", "times": "次", "where": "位置", "in_part": "只读取了一部分",
    },
}


def clean(text: str) -> str:
    return _CONTROL.sub("", text.replace("\t", "    "))


def render(report: Report, color: bool = False, width: int = 110, lang: str = "en", **_options) -> str:
    out = io.StringIO()
    console = Console(
        file=out, force_terminal=color, no_color=not color, color_system="standard" if color else None,
        width=width, highlight=False, emoji=False, markup=False, legacy_windows=False,
    )
    lab = _LABELS.get(lang, _LABELS["en"])
    console.print(_header(report, lab))
    if report.verdict:
        style = {"root-cause": "bold", "no-known-cause": "bold yellow", "clean": "green",
                 "nothing-analysed": "bold red"}.get(report.verdict["kind"], "")
        console.print(Text(clean(report.verdict["text"]), style=style))
    coverage = getattr(report, "coverage", None) or {}
    if coverage.get("status") == "partial":  # diagnose/coverage.py: a clean list covers only what was read
        console.print(Text(clean(coverage["text"]), style="bold yellow"))
    note = triage_note(report, lang)  # new/known since a findings baseline; suppressed by the configuration
    if note:
        console.print(Text(note, style="dim"))
    if report.findings:
        console.print(_summary_table(report.findings, lab, lang))
        for i, finding in enumerate(report.findings, 1):
            console.print(_panel(i, finding, lab))
    elif not report.verdict:
        console.print(Text(lab["none"], style="green"))
    if getattr(report, "unrecognised", None):  # errors no rule explains (diagnose/signatures.py)
        console.print(_unrecognised(report, lang))
    if getattr(report, "comparisons", None):  # validation runs (diagnose/validation)
        from diagnose.report.comparison import comparison_table

        console.print(comparison_table(report, lang))
    in_part = coverage.get("incomplete") or []
    if in_part:
        console.print(Text(f"{lab['in_part']} ({len(in_part)}):", style="bold"))
        for item in in_part[:50]:
            console.print(Text(f"  {clean(item['path'])}: {clean(item['reason'])}"))
    if report.skipped:
        console.print(Text(f"{lab['skipped']} ({len(report.skipped)}):", style="bold"))
        for s in report.skipped[:50]:
            console.print(Text(f"  {clean(s.path)}: {clean(s.reason)}"))
        if len(report.skipped) > 50:
            console.print(Text(f"  … {len(report.skipped) - 50} more (see --format json)"))
    if report.errors:
        console.print(Text(lab["errors"] + ":", style="bold red"))
        for e in report.errors:
            console.print(Text(f"  {clean(e)}"))
    return out.getvalue()


def _header(report: Report, lab: dict) -> Text:
    kinds = Counter(i.kind for i in report.inputs)
    lines = sum(i.lines for i in report.inputs)
    raw = sum(i.raw_lines for i in report.inputs)
    kind_text = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))
    text = Text(f"diagnose: {lab['read']} {len(report.inputs)} {lab['files']} ({kind_text or '-'}), "
                f"{lines} {lab['lines']}, {raw} {lab['raw']}")
    if report.skipped:
        text.append(f"; {len(report.skipped)} {lab['skipped'].lower()}")
    return text


def _summary_table(findings: list[Finding], lab: dict, lang: str = "en") -> Table:
    table = Table(title=lab["findings"], box=box.SIMPLE_HEAVY, title_justify="left", expand=False)
    table.add_column("#", justify="right")
    table.add_column("severity")
    table.add_column("rule")
    table.add_column("category")
    table.add_column("title", overflow="fold")
    table.add_column("count", justify="right")
    table.add_column(lab["where"], overflow="fold")
    table.add_column("first seen", no_wrap=True)
    for i, f in enumerate(findings, 1):
        table.add_row(
            str(i),
            Text(f.severity, style=SEVERITY_STYLE[f.severity]),
            f.rule_id,
            f.category,
            Text((f"[{new_mark(f, lang)}] " if new_mark(f, lang) else "") + clean(f.title)
                 + (f"  ← {f.caused_by}" if f.caused_by else "")),
            str(f.count),
            Text(clean(_where(f))),
            f.first_seen.strftime("%m-%d %H:%M:%S") if f.first_seen else "-",
        )
    return table


def _where(f: Finding) -> str:
    return f.short_where(',') or "-"


def _panel(i: int, f: Finding, lab: dict) -> Panel:
    parts: list = []
    summary = Text(clean(f.summary))
    parts.append(summary)
    if f.caused_by:
        parts.append(Text(f"{lab['because']} {f.caused_by}", style="italic"))
    if f.evidence:
        parts.append(Text(f"\n{lab['evidence']}:", style="bold"))
        for e in f.evidence:
            line = Text(f"  {clean(e.file)}:{e.line}: ", style="dim")
            line.append(clean(e.text)[:400])
            parts.append(line)
    if f.remediation:
        parts.append(Text(f"\n{lab['fix']}:", style="bold"))
        parts.append(Markdown(f.remediation))
    if f.references:
        parts.append(Text(f"\n{lab['refs']}: " + " ".join(f.references), style="dim"))
    title = Text(f"{i}. ")
    title.append(f"[{f.severity.upper()}]", style=SEVERITY_STYLE[f.severity])
    title.append(f" {f.rule_id} {f.name}: {clean(f.title)}")
    return Panel(Group(*parts), title=title, title_align="left", box=box.ROUNDED, expand=True)


_UNRECOGNISED = {
    "en": ("Unrecognised errors (no rule explains them)", "signatures", "new error signatures since the baseline",
           "more signatures in the JSON report", "first", "last", "e.g.", "NEW",
           "Turn one into a rule: diagnose rules new --from-report REPORT.json --index N -o DIR"),
    "zh": ("未识别的错误（没有规则能解释）", "类", "个新错误特征（相对基线）", "类见 JSON 报告", "首次", "末次", "例", "新",
           "生成规则草稿：diagnose rules new --from-report REPORT.json --index N -o DIR"),
}


def _unrecognised(report: Report, lang: str) -> Group:
    """The signatures of errors no rule matched: count, signature, when, where, one example line."""
    t = _UNRECOGNISED.get(lang, _UNRECOGNISED["en"])
    items = report.unrecognised
    more = getattr(report, "unrecognised_more", 0) or 0
    head = Text(f"\n{t[0]}: {len(items) + more} {t[1]}", style="bold")
    new = getattr(report, "unrecognised_new", None)
    if new is not None:
        head.append(f"; {new} {t[2]}", style="bold yellow" if new else "")
    parts: list = [head]
    for i, u in enumerate(items, 1):
        line = Text(f"{i:>3}. {u['count']:>5}x  ")
        if u.get("new"):
            line.append(f"[{t[7]}] ", style="bold yellow")
        line.append(clean(u["signature"])[:300])
        parts.append(line)
        where = [f"{t[4]} {(u['first_seen'] or '-')[:19]}", f"{t[5]} {(u['last_seen'] or '-')[:19]}"]
        if u["nodes"]:
            where.append(", ".join(u["nodes"][:4]) + (" …" if len(u["nodes"]) > 4 else ""))
        if u["ranks"]:
            where.append("rank " + ",".join(map(str, u["ranks"][:8])) + ("…" if len(u["ranks"]) > 8 else ""))
        parts.append(Text("             " + "; ".join(where), style="dim"))
        ex = u["example"]
        parts.append(Text(f"             {t[6]} {clean(ex['file'])}:{ex['line']}: {clean(ex['text'])[:300]}", style="dim"))
    if more:
        parts.append(Text(f"  … {more} {t[3]}"))
    parts.append(Text(f"  {t[8]}", style="dim"))
    return Group(*parts)

