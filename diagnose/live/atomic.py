"""Every file the live programs write goes through here: a temporary file in the target's folder, then one
rename, so a reader (node_exporter scraping a ``.prom`` file, ClusterD reading a fault file, the next run
reading the state) never sees half a file, and a failed write leaves the old file as it was.

This is the atomic helper of ``live/`` and the commands above it (``watch``, ``npd``, ``collect``) until
``diagnose/writer.py``, the one writer of the house plan, exists; it will be unified there.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO, Iterator


class WriteFailed(Exception):
    """A file could not be written; ``target`` and ``reason`` say which and why (the old file is intact)."""

    def __init__(self, target: str, reason: str):
        self.target, self.reason = target, reason
        super().__init__(f"{target}: {reason}")


@contextlib.contextmanager
def replacing(target: str | os.PathLike) -> Iterator[BinaryIO]:
    """A binary stream whose bytes replace ``target`` in one rename when the block ends without an error. A
    target that is no regular file (``/dev/stdout``, a FIFO) is written in place: a rename would put a file
    where the device was."""
    path = Path(target)
    if _special(path):
        try:
            with open(path, "wb") as fh:
                yield fh
        except OSError as exc:
            raise WriteFailed(str(target), str(exc.strerror or exc)) from None
        return
    folder = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=folder)
    except OSError as exc:
        raise WriteFailed(str(target), str(exc.strerror or exc)) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _mode_for(path))
        os.replace(tmp, path)
    except BaseException as exc:  # an interrupt too: never leave the temporary file behind
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise WriteFailed(str(target), str(exc.strerror or exc)) from None
        raise


def write_text(target: str | os.PathLike, text: str) -> None:
    with replacing(target) as fh:
        fh.write(text.encode("utf-8"))


def write_bytes(target: str | os.PathLike, data: bytes) -> None:
    with replacing(target) as fh:
        fh.write(data)


def append_line(target: str | os.PathLike, line: str) -> None:
    """One line appended and flushed to disk (JSON lines): an append of a whole line is what a reader of a
    growing file expects; the line is written with one call, so a reader sees it whole or not at all."""
    try:
        with open(target, "ab") as fh:
            fh.write(line.encode("utf-8") + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise WriteFailed(str(target), str(exc.strerror or exc)) from None


def _special(path: Path) -> bool:
    try:
        return not stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


def _mode_for(path: Path) -> int:
    """The target's own permissions when it exists, else what a plain open() would give (0666 & ~umask)."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask
