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

from diagnose.messages import Messages, messages
from diagnose.model import Finding, Report
from diagnose.report.reasons import skip_reason

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
SEVERITY_STYLE = {"critical": "bold white on red", "error": "bold red", "warning": "yellow", "info": "cyan"}


def clean(text: str) -> str:
    return _CONTROL.sub("", text.replace("\t", "    "))


def render(report: Report, color: bool = False, width: int = 110, lang: str = "en", **_options) -> str:
    out = io.StringIO()
    console = Console(
        file=out, force_terminal=color, no_color=not color, color_system="standard" if color else None,
        width=width, highlight=False, emoji=False, markup=False, legacy_windows=False,
    )
    msg = messages(lang)
    console.print(_header(report, msg))
    if report.verdict:
        style = {"root-cause": "bold", "no-known-cause": "bold yellow", "clean": "green"}.get(report.verdict["kind"], "")
        console.print(Text(clean(report.verdict["text"]), style=style))
    if report.findings:
        console.print(_summary_table(report.findings, msg))
        for i, finding in enumerate(report.findings, 1):
            console.print(_panel(i, finding, msg))
    elif not report.verdict:
        console.print(Text(msg("text.none"), style="green"))
    if getattr(report, "unrecognised", None):  # errors no rule explains (diagnose/signatures.py)
        console.print(_unrecognised(report, msg))
    if getattr(report, "comparisons", None):  # validation runs (diagnose/validation)
        from diagnose.report.comparison import comparison_table

        console.print(comparison_table(report, lang))
    if report.skipped:
        console.print(Text(msg("text.skipped_head", n=len(report.skipped)), style="bold"))
        for s in report.skipped[:50]:
            console.print(Text(f"  {clean(s.path)}: {clean(skip_reason(s.reason, msg))}"))
        if len(report.skipped) > 50:
            console.print(Text("  " + msg("text.more_skipped", n=len(report.skipped) - 50)))
    if report.errors:
        console.print(Text(msg("text.errors"), style="bold red"))
        for e in report.errors:
            console.print(Text(f"  {clean(e)}"))
    return out.getvalue()


def _header(report: Report, msg: Messages) -> Text:
    kinds = Counter(i.kind for i in report.inputs)
    lines = sum(i.lines for i in report.inputs)
    raw = sum(i.raw_lines for i in report.inputs)
    kind_text = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))
    text = Text(msg("text.header", files=len(report.inputs), kinds=kind_text or "-", lines=lines, raw=raw))
    if report.skipped:
        text.append(msg("text.header_skipped", n=len(report.skipped)))
    return text


def _summary_table(findings: list[Finding], msg: Messages) -> Table:
    table = Table(title=msg("text.findings"), box=box.SIMPLE_HEAVY, title_justify="left", expand=False)
    table.add_column("#", justify="right")
    table.add_column(msg("text.col.severity"))
    table.add_column(msg("text.col.rule"))
    table.add_column(msg("text.col.category"))
    table.add_column(msg("text.col.title"), overflow="fold")
    table.add_column(msg("text.col.count"), justify="right")
    table.add_column(msg("text.col.where"), overflow="fold")
    table.add_column(msg("text.col.first_seen"), no_wrap=True)
    for i, f in enumerate(findings, 1):
        table.add_row(
            str(i),
            Text(msg.severity(f.severity), style=SEVERITY_STYLE[f.severity]),
            f.rule_id,
            msg.category_id(f.category),
            Text(clean(f.title) + (f"  ← {f.caused_by}" if f.caused_by else "")),
            str(f.count),
            Text(clean(_where(f))),
            f.first_seen.strftime("%m-%d %H:%M:%S") if f.first_seen else "-",
        )
    return table


def _where(f: Finding) -> str:
    return f.short_where(',') or "-"


def _panel(i: int, f: Finding, msg: Messages) -> Panel:
    parts: list = []
    summary = Text(clean(f.summary))
    parts.append(summary)
    if f.caused_by:
        parts.append(Text(msg("text.because", rule=f.caused_by), style="italic"))
    if f.evidence:
        parts.append(Text("\n" + msg("text.evidence"), style="bold"))
        for e in f.evidence:
            line = Text(f"  {clean(e.file)}:{e.line}: ", style="dim")
            line.append(clean(e.text)[:400])
            parts.append(line)
    if f.remediation:
        parts.append(Text("\n" + msg("text.fix"), style="bold"))
        parts.append(Markdown(f.remediation))
    if f.references:
        parts.append(Text("\n" + msg("text.refs") + " " + " ".join(f.references), style="dim"))
    title = Text(f"{i}. ")
    title.append(f"[{msg.severity(f.severity).upper()}]", style=SEVERITY_STYLE[f.severity])
    title.append(f" {f.rule_id} {f.name}: {clean(f.title)}")
    return Panel(Group(*parts), title=title, title_align="left", box=box.ROUNDED, expand=True)


def _unrecognised(report: Report, msg: Messages) -> Group:
    """The signatures of errors no rule matched: count, signature, when, where, one example line."""
    items = report.unrecognised
    more = getattr(report, "unrecognised_more", 0) or 0
    head = Text("\n" + msg("text.unrecognised.head", n=len(items) + more), style="bold")
    new = getattr(report, "unrecognised_new", None)
    if new is not None:
        head.append(msg("text.unrecognised.new", n=new), style="bold yellow" if new else "")
    parts: list = [head]
    for i, u in enumerate(items, 1):
        line = Text(f"{i:>3}. {u['count']:>5}x  ")
        if u.get("new"):
            line.append(f"[{msg('text.unrecognised.new_mark')}] ", style="bold yellow")
        line.append(clean(u["signature"])[:300])
        parts.append(line)
        where = [msg("text.unrecognised.first", when=(u["first_seen"] or "-")[:19]),
                 msg("text.unrecognised.last", when=(u["last_seen"] or "-")[:19])]
        if u["nodes"]:
            where.append(", ".join(u["nodes"][:4]) + (" …" if len(u["nodes"]) > 4 else ""))
        if u["ranks"]:
            where.append(msg("text.unrecognised.ranks", ranks=",".join(map(str, u["ranks"][:8]))
                             + ("…" if len(u["ranks"]) > 8 else "")))
        parts.append(Text("             " + msg("text.unrecognised.join").join(where), style="dim"))
        ex = u["example"]
        parts.append(Text("             " + msg("text.unrecognised.example", where=f"{clean(ex['file'])}:{ex['line']}",
                                                   text=clean(ex["text"])[:300]), style="dim"))
    if more:
        parts.append(Text("  … " + msg("text.unrecognised.more", n=more)))
    parts.append(Text("  " + msg("text.unrecognised.hint"), style="dim"))
    return Group(*parts)

