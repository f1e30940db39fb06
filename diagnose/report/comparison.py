"""The comparison table of a validation run, for the text and Markdown reports."""

from __future__ import annotations

import math
from typing import Any


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    if v == math.inf:
        return "inf"
    return f"{v:.2f}".rstrip("0").rstrip(".") if abs(v) < 1e6 else f"{v:.0f}"



_HEAD = {
    "en": ("metric", "scope", "baseline", "this run", "change", "verdict", "Comparison with the baseline",
           "Benchmark and accuracy results (no --baseline)"),
    "zh": ("指标", "范围", "基线", "本次", "变化", "结论", "与基线对比", "压测与精度结果（未指定 --baseline）"),
}


def _title(rows: list[dict[str, Any]], head: tuple[str, ...]) -> str:
    return head[6] if any(r.get("baseline") is not None for r in rows) else head[7]


def table_cells(rows: list[dict[str, Any]]) -> list[list[str]]:
    out = []
    for r in rows:
        unit = {"%": "%", "pt": " pt"}.get(r["unit"], "")
        change = "-" if r.get("change") is None else f"{r['change']:+.2f}{unit}"
        if r["unit"] == "" and r.get("change") is not None:
            change = f"{r['change']:+g}"
        tol = r.get("tolerance")
        verdict = r["verdict"]
        if verdict in ("regressed", "ok", "improved") and tol is not None:
            verdict += f" (±{_fmt(tol)}{unit})"
        out.append([r["metric"], r.get("scope") or "-", _fmt(r.get("baseline")), _fmt(r.get("this")), change, verdict])
    return out


def comparison_markdown(report, lang: str = "en") -> str:
    """The comparison table as GitHub Markdown ('' when the report has none), for the Markdown reporter."""
    rows = getattr(report, "comparisons", None) or []
    if not rows:
        return ""
    head = _HEAD.get(lang, _HEAD["en"])
    out = [f"### {_title(rows, head)}", "", "| " + " | ".join(head[:6]) + " |", "|" + "---|" * 6]
    for cells in table_cells(rows):
        cells = [c.replace("|", "\\|") for c in cells]
        if cells[5].startswith("regressed"):
            cells[5] = f"**{cells[5]}**"
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def comparison_table(report, lang: str = "en"):
    """The comparison table for the terminal report (a rich Table), or None."""
    rows = getattr(report, "comparisons", None) or []
    if not rows:
        return None
    from rich import box
    from rich.table import Table
    from rich.text import Text

    head = _HEAD.get(lang, _HEAD["en"])
    table = Table(title=_title(rows, head), box=box.SIMPLE_HEAVY, title_justify="left", expand=False, pad_edge=False)
    # Numbers are never wrapped (a value split over two lines reads as two values); at 80 columns the scope
    # gives way (cut with an ellipsis) and the verdict wraps at its words.
    for i, name in enumerate(head[:6]):
        if i == 1:
            table.add_column(name, max_width=24, min_width=8, overflow="ellipsis")
        elif i == 5:
            table.add_column(name, min_width=9)
        else:
            table.add_column(name, justify="right" if 2 <= i <= 4 else "left", no_wrap=True)
    style = {"regressed": "bold red", "improved": "green", "not comparable": "yellow", "missing in this run": "yellow"}
    for r, cells in zip(rows, table_cells(rows)):
        table.add_row(*cells[:5], Text(cells[5], style=style.get(r["verdict"], "")))
    return table
