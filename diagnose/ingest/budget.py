"""Limits that keep a hostile or huge input from taking the machine with it."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from diagnose.messages import Phrase, messages

MiB = 1024 * 1024
GiB = 1024 * MiB


@dataclass
class Budget:
    max_file_bytes: int = 2 * GiB  # one file or archive member after decompression
    max_line_bytes: int = 4 * MiB  # one line: a longer one keeps its head, the rest is passed over (not held)
    max_total_bytes: int = 64 * GiB  # everything read in one run
    max_members: int = 200_000  # archive members and directory entries
    max_ratio: int = 200  # decompressed/compressed bytes above this (and above 64 MiB) is a bomb
    max_depth: int = 64  # directory nesting
    bomb_floor: int = 64 * MiB  # below this much output from one archive or .gz, no ratio counts as a bomb
    max_seconds: int = 3600  # reading stops after this long; the files not reached are listed as skipped
    # Periodic metric samples the run keeps (diagnose/model/series.py, about 40 bytes each; a vLLM metric line
    # gives six): the first this many in the order the files are read, cut between lines; later samples are
    # not kept and their files are read in part (their error lines are still read). Measured on a log of
    # nothing but metric lines (bench/attacks.py metric-only-log, 900 MB): with 8 million samples (321 MB of
    # series) the run peaked at 1.27 to 1.57 GB, four to five times the series (the rules' pass is the peak),
    # so 6 million (a million metric lines, about 240 MB of log) keep it under 1.5 GB whatever the logs' size.
    max_series_rows: int = 6_000_000

    used_bytes: int = 0
    used_members: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def charge(self, n: int) -> None:
        with self._lock:  # files are read by two threads at once (pipeline.parse_sources)
            self.used_bytes += n


class SkipFile(Exception):
    """Raised while opening or reading an input that must be skipped; ``reason`` says why (a ``skip.*``
    phrase of the catalog, diagnose/model/inputfiles.py)."""

    def __init__(self, reason: Phrase):
        self.reason = reason
        super().__init__(messages("en").say(reason))


class BudgetExceeded(SkipFile):
    """Raised while reading a stream that would exceed a limit."""


_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_budget(items: list[str], budget: Budget | None = None) -> Budget:
    """``KEY=VALUE`` settings (``max_file_bytes=8G``, ``max_members=500000``) over the defaults.

    Raises ValueError with a message naming the key when one is unknown or its value is not a size.
    """
    budget = budget or Budget()
    names = [f for f in Budget.__dataclass_fields__ if not f.startswith("used")]
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in names:
            raise ValueError(f"{item!r}: use KEY=VALUE with KEY one of {', '.join(names)}")
        text = value.strip().upper().rstrip("B")
        try:
            number = float(text[:-1]) * _UNITS[text[-1]] if text and text[-1] in _UNITS else float(text)
        except ValueError:
            raise ValueError(f"{item!r}: {value!r} is not a number or size like 512M, 8G") from None
        if number <= 0:
            raise ValueError(f"{item!r}: must be positive")
        setattr(budget, key, int(number))
    return budget
