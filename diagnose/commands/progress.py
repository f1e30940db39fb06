"""Progress on standard error for long runs: the phase (reading, parsing, rules, report), the bytes read of
the total and the percent, rewritten in place on one line.

Shown only on a terminal and only once the run has taken a second (a small bundle prints nothing). The line
is drawn by a light renderer, not a live display: the pipeline reports bytes once per chunk (8 MB) or small
file, and a ticker redraws four times a second so the elapsed time moves during a long phase. The line is
erased before the report is written.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
import time
import zipfile
from contextlib import contextmanager
from pathlib import Path

from diagnose.messages import messages

PHASES = ("reading", "parsing", "rules", "report")  # named on the line by the catalog's [progress] texts
SHOW_AFTER = 1.0  # seconds before the line first appears
TICK = 0.25  # seconds between redraws
ESTIMATE_SECONDS = 0.5  # longest the walk for the total may take; past it the total is unknown
_UNSIZED = (".tar.bz2", ".tbz2", ".tar.xz", ".txz")  # no cheap way to the uncompressed size


class LineProgress:
    """The progress line. ``phase`` and ``advance`` may be called from the reading workers' threads."""

    def __init__(self, stream, total: int | None, lang: str = "en", show_after: float | None = None,
                 clock=time.monotonic):
        self.stream, self.total, self.clock = stream, total, clock

        msg = messages(lang)
        self.names = {p: msg(f"progress.{p}") for p in PHASES}
        self.start = self.last = clock()
        self.show_after = SHOW_AFTER if show_after is None else show_after
        self.current, self.done, self.path = "reading", 0, ""
        self.drawn = False
        self._lock = threading.Lock()

    def phase(self, name: str) -> None:
        with self._lock:
            self.current = name
        self.draw()

    def advance(self, nbytes: int, path: str) -> None:
        with self._lock:
            self.done += nbytes
            self.path = path
            due = self.clock() - self.last >= TICK
        if due:
            self.draw()

    def line(self, cols: int = 80) -> str:
        """The line, at most ``cols - 1`` wide: one line, never wrapped (\r rewrites only the line it is on)."""
        elapsed = self.clock() - self.start
        name = self.names.get(self.current, self.current)
        if self.total:
            amount = f"{_mb(self.done)} / {_mb(self.total)} MB  {min(100 * self.done / self.total, 100):.0f}%"
        else:
            amount = f"{_mb(self.done)} MB"
        text = f"diagnose: {name}  {amount}  {elapsed:.0f} s"
        room = cols - 1 - _cells(text) - 2
        if self.current == "reading" and self.path and room >= 12:
            # The end of the path names the file: cut from the left.
            path = self.path if len(self.path) <= room else "…" + self.path[-(room - 1):]
            text += "  " + path
        return text[: cols - 1 - (_cells(text) - len(text))]

    def draw(self) -> None:
        if self.clock() - self.start < self.show_after:
            return
        with self._lock:
            text = self.line(_columns(self.stream))
            self.last = self.clock()
            try:
                self.stream.write("\r" + text + "\x1b[K")
                self.stream.flush()
            except (OSError, ValueError):
                return
            self.drawn = True

    def close(self) -> None:
        with self._lock:
            if self.drawn:
                try:
                    self.stream.write("\r\x1b[K")
                    self.stream.flush()
                except (OSError, ValueError):
                    pass
            self.drawn = False


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f}"


def _columns(stream) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 80


def _cells(text: str) -> int:
    """Terminal columns of ``text``: a CJK character takes two."""
    return sum(2 if "\u2e80" <= c <= "\uffef" else 1 for c in text)


@contextmanager
def progress_reporter(paths: list[str] | None = None, enabled: bool = True, lang: str = "en", stream=None):
    """A LineProgress for the run when ``enabled`` and standard error is a terminal, else None."""
    stream = stream or sys.stderr
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    if not enabled or not tty:
        yield None
        return
    progress = LineProgress(stream, input_total(paths or []), lang)
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(TICK):
            progress.draw()

    ticker = threading.Thread(target=tick, name="diagnose-progress", daemon=True)
    ticker.start()
    try:
        yield progress
    finally:
        stop.set()
        ticker.join(1.0)
        progress.close()


def input_total(paths: list[str], budget: float = ESTIMATE_SECONDS) -> int | None:
    """The bytes the inputs will give when read (decompressed), from a walk of their sizes; None when that is
    unknown (standard input, bzip2/xz archives) or the walk takes longer than ``budget`` seconds."""
    deadline = time.monotonic() + budget
    total = 0
    for given in paths:
        if given == "-":
            return None
        root = Path(given)
        files = [root] if not root.is_dir() else _walk(root)
        for path in files:
            size = _size(path)
            if size is None or time.monotonic() > deadline:
                return None
            total += size
    return total


def _walk(root: Path):
    for folder, dirs, names in os.walk(root, followlinks=False):
        dirs.sort()
        for name in sorted(names):
            yield Path(folder) / name


def _size(path: Path) -> int | None:
    try:
        st = path.lstat()
    except OSError:
        return 0
    if not stat.S_ISREG(st.st_mode):
        return 0  # links, FIFOs and devices are not read
    name = path.name.lower()
    try:
        if name.endswith(_UNSIZED):
            return None
        if name.endswith(".zip"):
            with zipfile.ZipFile(path) as zf:
                return sum(info.file_size for info in zf.infolist())
        if name.endswith((".gz", ".tgz")):
            return _gzip_size(path, st.st_size)
    except (OSError, zipfile.BadZipFile, ValueError):
        return st.st_size
    return st.st_size


def _gzip_size(path: Path, size: int) -> int:
    """A gzip file's last four bytes hold its uncompressed size modulo 4 GiB (RFC 1952, ISIZE)."""
    if size < 18:
        return size
    with open(path, "rb") as fh:
        if fh.read(2) != b"\x1f\x8b":
            return size
        fh.seek(-4, os.SEEK_END)
        isize = int.from_bytes(fh.read(4), "little")
    return isize if isize >= size else size  # wrapped past 4 GiB: the compressed size is the better floor


__all__ = ["LineProgress", "progress_reporter", "input_total", "PHASES"]
