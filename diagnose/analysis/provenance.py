"""Where a derived fact came from.

Two stages derive facts of their own: preflight (facts from a model directory and a launch,
``diagnose/preflight/factsource.py``) and the baseline comparison (``<validation>``,
``diagnose/validation/compare.py``). Rules match their records like any other, but a finding must never send a
user to a file that does not exist: each fact records the real file and line it came from (the launch script,
the ``config.json``, the result file), and ``relocate`` points every evidence line and unrecognised-error
example there before the report is built. The fact's text stays the evidence text: it says what was concluded,
with its arithmetic. (A fact's record cannot simply sit at its origin's file and line: that place is often a
record of its own, the launch script's line or vLLM's ``non-default args`` line, and rules join a finding's
text on file and line.)

Derived inputs are listed apart from the files read (``Report.derived``); they are not counted as files.
"""

from __future__ import annotations

from typing import Any

import msgspec

from diagnose.model import Evidence, Finding, Signature
from diagnose.model.derived import Origins, locate

def relocate(findings: list[Finding], unrecognised: list[Signature],
             origins: Origins | None) -> tuple[list[Finding], list[Signature]]:
    """Findings and unrecognised-error signatures with every derived location replaced by its origin."""
    if not origins:
        return findings, unrecognised
    out = []
    for f in findings:
        evidence = []
        for e in f.evidence:
            file, line = locate(origins, e.file, e.line)
            evidence.append(e if (file, line) == (e.file, e.line) else Evidence(file, line, e.text))
        out.append(msgspec.structs.replace(f, evidence=evidence))
    moved = []
    for u in unrecognised:
        ex = u.example
        if ex.file in origins:
            file, line = locate(origins, ex.file, int(ex.line or 1))
            u = msgspec.structs.replace(u, example=msgspec.structs.replace(ex, file=file, line=line))
        moved.append(u)
    return out, moved
