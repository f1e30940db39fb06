"""The one writer of every file and stream a command writes.

A file is written through a temporary file in the same folder and a rename, so a reader never sees half a
report and a failed write (an unwritable folder, a full disk) leaves the target as it was: whole
(``write_file``), or streamed when it is too large to hold (``replacing``: an incident bundle). A target that is
no regular file (``/dev/null``, ``/dev/stdout``, a FIFO, ``/dev/full``) is written as it is: a rename would put a
regular file in place of the device. A file that grows by whole lines (watch's JSON lines) is appended to, one
line per call (``append_line``): a reader of a growing file sees each line whole or not at all. A folder of files
a tool reads whole (msit's input) is written file by file, each atomically (``write_folder``). A failure raises
``WriteFailed`` with its parts (what was written, where, the operating system's reason); the command says it in
the run's language (diagnose/commands/outputs.py ``failure_line``) and exits 6. A stream whose reader went away
(``| head``) is no failure: the rest is dropped.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import IO, BinaryIO, Iterator

import click


class WriteFailed(Exception):
    """An output that could not be written: ``what`` (the option that named it, or ``stdout``/``stderr``),
    ``target`` and ``reason`` (the operating system's words)."""

    def __init__(self, what: str, target: str, reason: str):
        self.what, self.target, self.reason = what, target, reason
        super().__init__(f"cannot write {what} {target}: {reason}")


def write_file(target: str | os.PathLike, data: str | bytes, what: str = "-o",
               through_special: bool = True) -> None:
    """Write ``data`` (text is UTF-8) to ``target`` atomically; raise WriteFailed. ``through_special``: see
    ``replacing``."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    with replacing(target, what, through_special) as fh:
        fh.write(payload)


@contextlib.contextmanager
def replacing(target: str | os.PathLike, what: str = "-o", through_special: bool = True) -> Iterator[BinaryIO]:
    """A binary stream whose bytes replace ``target`` in one rename when the block ends without an error (the
    data on disk before the rename); an error leaves the target as it was and no temporary file. Raises
    WriteFailed for an operating-system error, and lets any other error through. A target that is no regular
    file is written through (a user's ``-o /dev/stdout``) unless ``through_special`` is false: in a folder that
    is not trusted (the cache), a FIFO or a link to a device in a file's place is replaced by the rename, never
    opened (a FIFO without a reader would block the run)."""
    path = Path(target)
    if through_special and _special(path):
        try:
            with open(path, "wb") as fh:
                yield fh
        except OSError as exc:
            raise WriteFailed(what, str(target), str(exc.strerror or exc)) from None
        return
    folder = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=folder)
    except OSError as exc:
        raise WriteFailed(what, str(target), str(exc.strerror or exc)) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _mode_for(path))
        os.replace(tmp, path)
    except BaseException as exc:  # an interrupt too: never leave the temporary file behind
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise WriteFailed(what, str(target), str(exc.strerror or exc)) from None
        raise


def append_line(target: str | os.PathLike, line: str, what: str) -> None:
    """One line appended to ``target`` with one write and flushed to disk; raise WriteFailed."""
    try:
        with open(target, "ab") as fh:
            fh.write(line.encode("utf-8") + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise WriteFailed(what, str(target), str(exc.strerror or exc)) from None


def write_folder(target: str | os.PathLike, files: dict[str, str | bytes], what: str) -> None:
    """Create the folder ``target`` if needed and write each of ``files`` (name -> data) into it atomically, one
    by one (a folder a tool reads whole, such as msit's input); raise WriteFailed on the first that fails."""
    folder = Path(target)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteFailed(what, str(target), str(exc.strerror or exc)) from None
    for name, data in files.items():
        write_file(folder / name, data, what)


def write_stream(text: str, err: bool = False, color: bool | None = None) -> None:
    """``text`` on standard output (or error); raise WriteFailed on a full disk. ``color``: as click.echo's
    (None: colour codes kept only on a terminal)."""
    stream = sys.stderr if err else sys.stdout
    try:
        click.echo(text, nl=False, err=err, color=color)
        stream.flush()
    except BrokenPipeError:
        _drop(stream)
    except OSError as exc:
        _drop(stream)
        raise WriteFailed("stderr" if err else "stdout", "", str(exc.strerror or exc)) from None


def _drop(stream: IO[str]) -> None:
    # What is still buffered would fail again when Python flushes at exit, with a complaint of its own.
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (a test runner's capture)
        pass


def _special(path: Path) -> bool:
    try:
        return not stat.S_ISREG(path.stat().st_mode)  # the link's target, for /dev/stdout
    except OSError:  # not there yet (or not reachable: the temporary file says why)
        return False


def _mode_for(path: Path) -> int:
    """The target's own permissions when it exists, else what a plain open() would give (0666 & ~umask)."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask
