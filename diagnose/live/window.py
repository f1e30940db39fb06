"""The sliding window: the lines of every followed file that are still inside ``--window``.

Every tick judges the window as a batch run would judge those files (the same source kinds, the same rules):
the window hands the service one in-memory file per followed file, holding that file's lines from the oldest
still in the window to the newest read, and the line number each starts at, so evidence points at the real
file and line.

What leaves the window:
- by **log time**: after each judgement, the lines before the first dated line that was still inside the
  window (the pipeline drops records before ``--since``; the judged frames say where that cut fell);
- by **arrival** for files whose lines carry no time (``npu-smi`` output, configuration): lines that arrived
  longer than the window ago;
- by **size**: past ``max_bytes`` in all, the oldest pieces go first, so memory stays bounded whatever the rate.

A file that was truncated or replaced starts again: its earlier lines leave the window with it.
"""

from __future__ import annotations

import io
import re
from collections import deque
from dataclasses import dataclass, field

from diagnose.ingest.follow import Chunk
from diagnose.ingest.walk import SourceFile
from diagnose.ingest.budget import Budget
from diagnose.ingest.metered import source

_DATED = re.compile(rb"\d\d:\d\d:\d\d")


@dataclass
class Piece:
    first_line: int
    offset: int  # byte offset of data[0] in the file
    data: bytes
    arrived: float  # wall time

    @property
    def lines(self) -> int:
        return self.data.count(b"\n") + (0 if self.data.endswith(b"\n") else 1)


@dataclass
class FileWindow:
    path: str  # display path
    rel: str
    node: str | None
    mtime: float
    dated: bool = False  # its lines carry times (trimmed by log time, not by arrival)
    pieces: deque[Piece] = field(default_factory=deque)

    @property
    def size(self) -> int:
        return sum(len(p.data) for p in self.pieces)

    @property
    def start(self) -> tuple[int, int] | None:
        """(byte offset, line number) of the oldest line in the window."""
        return (self.pieces[0].offset, self.pieces[0].first_line) if self.pieces else None


@dataclass
class Window:
    span_s: float
    max_bytes: int = 64 << 20
    files: dict[str, FileWindow] = field(default_factory=dict)

    def add(self, chunk: Chunk, arrived: float) -> None:
        fw = self.files.get(chunk.key)
        if fw is None or chunk.restarted or (fw.pieces and _end(fw) != chunk.first_line):
            fw = self.files[chunk.key] = FileWindow(chunk.path, chunk.rel, chunk.node, chunk.mtime)
        fw.path, fw.rel, fw.node, fw.mtime = chunk.path, chunk.rel, chunk.node, chunk.mtime
        fw.dated = fw.dated or bool(_DATED.search(chunk.data[:4096]))
        fw.pieces.append(Piece(chunk.first_line, chunk.offset, chunk.data, arrived))

    def move(self, old: str, new: str, chunk_like: Chunk) -> None:
        """The lines of file ``old`` now live in file ``new`` (a copytruncate copy): same lines, same numbers,
        another name."""
        fw = self.files.pop(old, None)
        if fw is not None:
            fw.path, fw.rel, fw.node, fw.mtime = chunk_like.path, chunk_like.rel, chunk_like.node, chunk_like.mtime
            self.files[new] = fw

    def forget(self, keys: set[str]) -> None:
        """Files no longer followed (deleted, or rotated out of the roots) leave the window."""
        for key in [k for k in self.files if k not in keys]:
            del self.files[key]

    @property
    def size(self) -> int:
        return sum(fw.size for fw in self.files.values())

    def sources(self, budget: Budget | None = None) -> tuple[list[SourceFile], dict[str, int]]:
        """One in-memory file per followed file, and the line each display path starts at minus one (the
        shift that turns the read's line numbers into the file's)."""
        budget = budget or Budget()
        out, shifts = [], {}
        for fw in self.files.values():
            if not fw.pieces:
                continue
            data = b"".join(p.data for p in fw.pieces)
            out.append(source(fw.path, fw.rel, fw.node, len(data), fw.mtime, lambda d=data: io.BytesIO(d), budget,
                              limit=len(data), standalone=True))
            shifts[fw.path] = fw.pieces[0].first_line - 1
        return out, shifts

    def trim(self, first_inside: dict[str, int], now_wall: float) -> None:
        """Drop what left the window. ``first_inside``: display path -> the first line still inside by log
        time, for each file the last judgement saw dated lines of."""
        for fw in self.files.values():
            if fw.dated:
                keep_from = first_inside.get(fw.path)
                if keep_from is None:  # a dated file with no dated line inside: all of it is older
                    keep_from = _end(fw)
                while fw.pieces and fw.pieces[0].first_line + fw.pieces[0].lines <= keep_from:
                    fw.pieces.popleft()
                if fw.pieces and fw.pieces[0].first_line < keep_from:
                    fw.pieces[0] = _cut(fw.pieces[0], keep_from)
            else:
                while fw.pieces and now_wall - fw.pieces[0].arrived > self.span_s:
                    fw.pieces.popleft()
        total = self.size
        while total > self.max_bytes:
            oldest = min((fw for fw in self.files.values() if fw.pieces), key=lambda fw: fw.pieces[0].arrived)
            total -= len(oldest.pieces.popleft().data)
        for key in [k for k, fw in self.files.items() if not fw.pieces]:
            del self.files[key]

    def starts(self) -> dict[str, tuple[int, int]]:
        """Followed file key -> (offset, line) of its oldest line in the window: what a restart re-reads."""
        return {key: fw.start for key, fw in self.files.items() if fw.start is not None}


def _cut(piece: Piece, first_line: int) -> Piece:
    """The piece from line ``first_line`` on."""
    at = 0
    for _ in range(first_line - piece.first_line):
        at = piece.data.index(b"\n", at) + 1
    return Piece(first_line, piece.offset + at, piece.data[at:], piece.arrived)


def _end(fw: FileWindow) -> int:
    """The line number after the last line in the window."""
    last = fw.pieces[-1]
    return last.first_line + last.lines
