"""Limits that keep a hostile or huge input from taking the machine with it."""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1024 * 1024
GiB = 1024 * MiB


@dataclass
class Budget:
    max_file_bytes: int = 2 * GiB  # one file or archive member after decompression
    max_total_bytes: int = 64 * GiB  # everything read in one run
    max_members: int = 200_000  # archive members and directory entries
    max_ratio: int = 200  # decompressed/compressed bytes above this (and above 64 MiB) is a bomb
    max_depth: int = 64  # directory nesting

    used_bytes: int = 0
    used_members: int = 0

    def charge(self, n: int) -> None:
        self.used_bytes += n


class SkipFile(Exception):
    """Raised while opening or reading an input that must be skipped; the message is the reason."""


class BudgetExceeded(SkipFile):
    """Raised while reading a stream that would exceed a limit; the message is the skip reason."""
