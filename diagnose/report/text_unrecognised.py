"""The terminal report's section on errors no rule explains (diagnose/signatures.py): per signature its
count, the signature, when and where, and one example line, each wrapped under its own indent."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from diagnose.model import Report
from diagnose.report.textlayout import Hanging, clean, counted

_TEXT = {
    "en": {"head": "Unrecognised errors (no rule explains them)", "signatures": ("signature", "signatures"),
           "new": ("new error signature since the baseline", "new error signatures since the baseline"),
           "more": "more signatures in the JSON report", "first": "first", "last": "last", "example": "e.g.",
           "new_tag": "NEW", "rank": "rank", "hint": "Turn one into a rule: diagnose rules new --from-report REPORT.json --index N -o DIR"},
    "zh": {"head": "未识别的错误（没有规则能解释）", "signatures": ("类", "类"),
           "new": ("个新错误特征（相对基线）", "个新错误特征（相对基线）"),
           "more": "类见 JSON 报告", "first": "首次", "last": "末次", "example": "例", "new_tag": "新", "rank": "rank",
           "hint": "生成规则草稿：diagnose rules new --from-report REPORT.json --index N -o DIR"},
}
SIGNATURE_CHARS = 300


def unrecognised(report: Report, lang: str) -> Group:
    t = _TEXT.get(lang, _TEXT["en"])
    items = report.unrecognised
    more = getattr(report, "unrecognised_more", 0) or 0
    head = Text(f"{t['head']}: {counted(len(items) + more, t['signatures'])}", style="bold")
    new = getattr(report, "unrecognised_new", None)
    if new is not None:
        head.append(f"; {counted(new, t['new'])}", style="bold yellow" if new else "")
    grid = Table.grid(padding=(0, 1), expand=False)
    grid.add_column(justify="right", no_wrap=True)
    grid.add_column(justify="right", no_wrap=True)
    grid.add_column(ratio=1, overflow="fold")
    for i, u in enumerate(items, 1):
        signature = Text()
        if u.get("new"):
            signature.append(f"[{t['new_tag']}] ", style="bold yellow")
        signature.append(clean(u["signature"])[:SIGNATURE_CHARS])
        where = [f"{t['first']} {(u['first_seen'] or '-')[:19]}", f"{t['last']} {(u['last_seen'] or '-')[:19]}"]
        if u["nodes"]:
            where.append(", ".join(u["nodes"][:4]) + (" …" if len(u["nodes"]) > 4 else ""))
        if u["ranks"]:
            where.append(f"{t['rank']} " + ",".join(map(str, u["ranks"][:8])) + ("…" if len(u["ranks"]) > 8 else ""))
        ex = u["example"]
        example = Text(f"{t['example']} {clean(ex['file'])}:{ex['line']}: ", style="dim")
        example.append(clean(ex["text"])[:SIGNATURE_CHARS])
        body = Group(Hanging(signature, 0, 0), Hanging(Text(" · ".join(clean(w) for w in where), style="dim"), 0, 2),
                     Hanging(example, 0, 4))
        grid.add_row(f" {i}.", f"{u['count']:,}×", body)
    parts: list = [head, grid]
    if more:
        parts.append(Text(f"  … {more:,} {t['more']}"))
    parts.append(Hanging(Text(t["hint"], style="dim"), 2, 4))
    return Group(*parts)
