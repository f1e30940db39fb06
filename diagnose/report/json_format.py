"""JSON report: the schema documented in docs/schemas.md (generated from ``diagnose.model.Document``),
findings in ranked order, stable bytes; every phrase said in the output's language."""

from __future__ import annotations

import json

from diagnose.messages import messages
from diagnose.model import Report, builtins


def render(report: Report, lang: str = "en", **_options) -> str:
    doc = builtins(report.document(), messages(lang).say)
    return json.dumps(doc, ensure_ascii=False, indent=2, sort_keys=False) + "\n"
