"""Read a few lines of a log file back by number, for evidence whose text was not kept in memory.

The pipeline keeps the text of most periodic metric lines out of memory (diagnose/model/series.py); when a
finding quotes one, its text is read here: one pass over the file counting newlines per block, splitting only
the blocks that hold a wanted line. Only files on disk (plain or .gz); archive members and stdin were
streams, and their evidence shows the signal's value instead.
"""

from __future__ import annotations

import gzip
import os

from diagnose.ingest.names import candidates
from diagnose.model.memberpath import in_archive

_BLOCK = 8 * 1024 * 1024


def read_lines(path: str, wanted: set[int]) -> dict[int, str]:
    """{line number: text} for the wanted 1-based line numbers found in ``path``; {} if it cannot be read."""
    if not wanted or in_archive(path):
        return {}
    # The path is in its display form (ingest/names.py): a name that was not UTF-8 is found again by its bytes.
    path = next((real for real in candidates(path) if os.path.isfile(real)), None)
    if path is None:
        return {}
    opener = gzip.open if path.endswith(".gz") else open
    found: dict[int, str] = {}
    try:
        with opener(path, "rb") as fh:
            first, carry = 1, b""
            while len(found) < len(wanted):
                block = fh.read(_BLOCK)
                if not block:
                    if carry:
                        _take(carry.split(b"\n"), first, wanted, found)
                    break
                block = carry + block
                cut = block.rfind(b"\n")
                if cut < 0:
                    carry = block
                    continue
                body, carry = block[:cut], block[cut + 1:]
                count = body.count(b"\n") + 1
                if any(first <= n < first + count for n in wanted):
                    _take(body.split(b"\n"), first, wanted, found)
                first += count
    except (OSError, EOFError, gzip.BadGzipFile):
        return found
    return found


def _take(lines: list[bytes], first: int, wanted: set[int], found: dict[int, str]) -> None:
    for n in wanted:
        if first <= n < first + len(lines):
            found[n] = lines[n - first].decode("utf-8", errors="replace").rstrip("\r")
