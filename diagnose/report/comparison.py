"""The comparison table of a validation run, for the text and Markdown reports and the incident page."""

from __future__ import annotations

import html
import math
from typing import Any

from diagnose.messages import Messages, messages
from diagnose.model import Comparison


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    if v == math.inf:
        return "inf"
    return f"{v:.2f}".rstrip("0").rstrip(".") if abs(v) < 1e6 else f"{v:.0f}"



_COLUMNS = ("metric", "scope", "baseline", "this", "change", "verdict")


def _title(rows: list[Comparison], msg: Messages) -> str:
    with_baseline = any(r.baseline is not None for r in rows)
    return msg("comparison.title" if with_baseline else "comparison.title_no_baseline")


def _head(msg: Messages) -> list[str]:
    return [msg(f"comparison.col.{c}") for c in _COLUMNS]


def table_cells(rows: list[Comparison], msg: Messages | None = None) -> list[list[str]]:
    msg = msg or messages("en")
    out = []
    for r in rows:
        unit = {"%": "%", "pt": " pt"}.get(r.unit, "")
        change = "-" if r.change is None else f"{r.change:+.2f}{unit}"
        if r.unit == "" and r.change is not None:
            change = f"{r.change:+g}"
        tol = r.tolerance
        verdict = msg.get(f"comparison.verdict.{r.verdict}", r.verdict)
        if r.verdict in ("regressed", "ok", "improved") and tol is not None:
            verdict += f" (±{_fmt(tol)}{unit})"
        out.append([r.metric, r.scope or "-", _fmt(r.baseline), _fmt(r.this), change, verdict])
    return out


def comparison_markdown(report, lang: str = "en") -> str:
    """The comparison table as GitHub Markdown ('' when the report has none), for the Markdown reporter."""
    rows = getattr(report, "comparisons", None) or []
    if not rows:
        return ""
    msg = messages(lang)
    out = [f"### {_title(rows, msg)}", "", "| " + " | ".join(_head(msg)) + " |", "|" + "---|" * 6]
    for r, cells in zip(rows, table_cells(rows, msg)):
        cells = [c.replace("|", "\\|") for c in cells]
        if r.verdict == "regressed":
            cells[5] = f"**{cells[5]}**"
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def comparison_table(report, lang: str = "en"):
    """The comparison table for the terminal report (a rich Table), or None."""
    rows = getattr(report, "comparisons", None) or []
    if not rows:
        return None
    from rich import box  # deferred: rich (only the terminal table; Markdown and the page need none of it)
    from rich.table import Table  # deferred: rich (only the terminal table)
    from rich.text import Text  # deferred: rich (only the terminal table)

    msg = messages(lang)
    table = Table(title=_title(rows, msg), box=box.SIMPLE_HEAVY, title_justify="left", expand=False, pad_edge=False)
    # Numbers are never wrapped (a value split over two lines reads as two values); at 80 columns the scope
    # gives way (cut with an ellipsis) and the verdict wraps at its words.
    for i, name in enumerate(_head(msg)):
        if i == 1:
            table.add_column(name, max_width=24, min_width=8, overflow="ellipsis")
        elif i == 5:
            table.add_column(name, min_width=9)
        else:
            table.add_column(name, justify="right" if 2 <= i <= 4 else "left", no_wrap=True)
    style = {"regressed": "bold red", "improved": "green", "not comparable": "yellow", "missing in this run": "yellow"}
    for r, cells in zip(rows, table_cells(rows, msg)):
        table.add_row(*cells[:5], Text(cells[5], style=style.get(r.verdict, "")))
    return table


def comparison_html(report, msg: Messages) -> str:
    """The comparison table for the incident page ('' when the report has none): the VAL findings say "see
    the comparison table", so the page holds it too."""
    rows = getattr(report, "comparisons", None) or []
    if not rows:
        return ""
    e = lambda text: html.escape(str(text), quote=True)  # noqa: E731
    out = [f"<h2 id=\"comparison\">{e(_title(rows, msg))}</h2><table class=\"comparison\"><tr>"
           + "".join(f"<th>{e(h)}</th>" for h in _head(msg)) + "</tr>"]
    for r, cells in zip(rows, table_cells(rows, msg)):
        mark = " class=\"regressed\"" if r.verdict == "regressed" else ""
        out.append(f"<tr{mark} data-verdict=\"{e(r.verdict)}\">" + "".join(f"<td>{e(c)}</td>" for c in cells) + "</tr>")
    return "".join(out) + "</table>"
