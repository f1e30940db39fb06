"""The expert-load result as JSON: the typed result with its words (load_texts.worded)."""

from __future__ import annotations

import json

from diagnose.messages import messages
from diagnose.model.expertload import ExpertLoadResult
from diagnose.report.load.load_texts import worded


def render(result: ExpertLoadResult, lang: str = "en") -> str:
    return json.dumps(worded(result, messages(lang)), ensure_ascii=False, indent=1, default=str) + "\n"
