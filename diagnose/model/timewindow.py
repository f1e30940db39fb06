"""The time window a run was asked for (``--since``/``--until``) and what it left of the dated records."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class TimeWindow:
    """Dated records before the window was applied (``dated``, ``first``, ``last``) and after it (``kept``): a
    window past every dated line analysed nothing (diagnose/analysis/coverage.py says so)."""

    dated: int
    kept: int
    first: datetime | None
    last: datetime | None
    since: datetime | None
    until: datetime | None
