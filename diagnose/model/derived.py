"""Where each fact of a derived input came from: preflight facts and the validation comparison are facts the
run derives itself, and each records the real file and line it was read from, so a finding never points at a
file that does not exist (diagnose/analysis/provenance.py relocates them)."""

from __future__ import annotations

# {derived path: {fact number (its record's line): (real file, real line)}}
Origins = dict[str, dict[int, tuple[str, int]]]


def add(origins: Origins, derived_path: str, lines: list[tuple[str, int] | None], first_line: int = 1) -> None:
    """Record the origin of each fact of a derived input, numbered from ``first_line`` (``None``: a fact of no
    single origin)."""
    table = origins.setdefault(derived_path, {})
    for i, origin in enumerate(lines, first_line):
        if origin is not None and origin[0]:
            table[i] = (origin[0], max(1, int(origin[1] or 1)))


def locate(origins: Origins, file: str, line: int) -> tuple[str, int]:
    """The real place of ``file:line``: itself unless ``file`` is derived. A derived line without an origin of
    its own points at the first origin of its text (every derived text has at least one)."""
    table = origins.get(file)
    if table is None:
        return file, line
    if line in table:
        return table[line]
    return table[min(table)] if table else (file, line)
