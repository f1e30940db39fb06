"""The expert-load result as JSON (``window``, ``layers``, ``hot_experts``, ``recommendation``, ...)."""

from __future__ import annotations

import json
from typing import Any


def render(result: dict[str, Any]) -> str:
    return json.dumps(result, ensure_ascii=False, indent=1, default=str) + "\n"
