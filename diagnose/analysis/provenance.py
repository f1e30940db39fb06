"""Where a derived line came from.

Two stages write lines of their own and parse them like any input: preflight (facts from a model directory
and a launch, ``diagnose/preflight/bundle.py``) and the baseline comparison (``<validation>``,
``diagnose/validation/compare.py``). Rules match those lines, but a finding must never send a user to a file
that does not exist: each derived line records the real file and line its fact came from (the launch script,
the ``config.json``, the result file), and ``relocate`` points every evidence line and unrecognised-error
example there before the report is built. The derived line's text stays the evidence text: it says what was
concluded, with its arithmetic.

Derived inputs are listed apart from the files read (``Report.derived``); they are not counted as files.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from diagnose.model import Evidence, Finding

# {derived path: {line in the derived text: (real file, real line)}}
Origins = dict[str, dict[int, tuple[str, int]]]


def add(origins: Origins, derived_path: str, lines: list[tuple[str, int] | None], first_line: int = 1) -> None:
    """Record the origin of each line of a derived text (``None``: a comment or a line of no single origin)."""
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


def relocate(findings: list[Finding], unrecognised: list[dict[str, Any]],
             origins: Origins | None) -> tuple[list[Finding], list[dict[str, Any]]]:
    """Findings and unrecognised-error signatures with every derived location replaced by its origin."""
    if not origins:
        return findings, unrecognised
    out = []
    for f in findings:
        evidence = []
        for e in f.evidence:
            file, line = locate(origins, e.file, e.line)
            evidence.append(e if (file, line) == (e.file, e.line) else Evidence(file, line, e.text))
        out.append(dataclasses.replace(f, evidence=evidence))
    moved = []
    for u in unrecognised:
        ex = u.get("example") or {}
        if ex.get("file") in origins:
            file, line = locate(origins, ex["file"], int(ex.get("line") or 1))
            u = {**u, "example": {**ex, "file": file, "line": line}}
        moved.append(u)
    return out, moved
