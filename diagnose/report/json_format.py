"""JSON report: the schema documented in docs/schemas.md, findings in ranked order, stable bytes."""

from __future__ import annotations

import json

from diagnose.model import Report


def render(report: Report, **_options) -> str:
    return json.dumps(report.to_dict(), ensure_ascii=False, indent=2, sort_keys=False) + "\n"
