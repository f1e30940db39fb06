"""The terminal report's section on errors no rule explains (diagnose/analysis/signatures.py): per signature its
count, the signature, when and where, and one example line, each wrapped under its own indent. Texts from
the message catalog (``[text.unrecognised]``)."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from diagnose.messages import Messages
from diagnose.model import Report
from diagnose.report.textlayout import Hanging, clean

SIGNATURE_CHARS = 300


def unrecognised(report: Report, msg: Messages) -> Group:
    items = report.unrecognised
    more = report.unrecognised_more or 0
    head = Text(msg("text.unrecognised.head", n=len(items) + more), style="bold")
    new = report.unrecognised_new
    if new is not None:
        head.append(msg("text.unrecognised.new", n=new), style="bold yellow" if new else "")
    grid = Table.grid(padding=(0, 1), expand=False)
    grid.add_column(justify="right", no_wrap=True)
    grid.add_column(justify="right", no_wrap=True)
    grid.add_column(ratio=1, overflow="fold")
    for i, u in enumerate(items, 1):
        signature = Text()
        if u.new is True:
            signature.append(f"[{msg('text.unrecognised.new_mark')}] ", style="bold yellow")
        signature.append(clean(u.signature)[:SIGNATURE_CHARS])
        where = [msg("text.unrecognised.first", when=(u.first_seen or "-")[:19]),
                 msg("text.unrecognised.last", when=(u.last_seen or "-")[:19])]
        if u.nodes:
            where.append(", ".join(u.nodes[:4]) + (" …" if len(u.nodes) > 4 else ""))
        if u.ranks:
            where.append(msg("text.unrecognised.ranks",
                             ranks=",".join(map(str, u.ranks[:8])) + ("…" if len(u.ranks) > 8 else "")))
        ex = u.example
        example = Text(msg("text.unrecognised.example", where=f"{clean(ex.file)}:{ex.line}") + " ", style="dim")
        example.append(clean(ex.text)[:SIGNATURE_CHARS])
        body = Group(Hanging(signature, 0, 0), Hanging(Text(" · ".join(clean(w) for w in where), style="dim"), 0, 2),
                     Hanging(example, 0, 4))
        grid.add_row(f" {i}.", f"{u.count:,}×", body)
    parts: list = [head, grid]
    if more:
        parts.append(Text("  " + msg("text.unrecognised.more", n=more)))
    parts.append(Hanging(Text(msg("text.unrecognised.hint"), style="dim"), 2, 4))
    return Group(*parts)
