"""The table of what the index holds (templates per project and origin, releases harvested), written into
docs/knowledge.md between markers so the numbers there are always the committed index's own."""

from __future__ import annotations

from pathlib import Path

from diagnose.knowledge.index import message_index
from diagnose.knowledge.indexfile import index_path

BEGIN, END = "<!-- index-sizes:begin -->", "<!-- index-sizes:end -->"


def size_table(path: Path | None = None) -> str:
    idx = message_index(path)
    rows = ["| project | origin | templates | releases | range |", "|---|---|---:|---:|---|"]
    for s in sorted(idx.stats(), key=lambda s: (s.origin, -s.templates)):
        span = s.releases[0] if len(s.releases) == 1 else f"{s.releases[0]} .. {s.releases[-1]}"
        rows.append(f"| {s.project} | {s.origin} | {s.templates:,} | {len(s.releases)} | {span} |")
    size = (path or index_path()).stat().st_size
    rows.append(f"\n{len(idx):,} sites in all; the file is {size / 1e6:.2f} MB.")
    return "\n".join(rows)


def rewrite(doc: Path, table: str) -> str:
    """``doc``'s text with the table between the markers replaced."""
    text = doc.read_text(encoding="utf-8")
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{table}\n{END}{tail}"
