"""Readable files and the meter every byte read goes through.

A ``SourceFile`` is one file to read (on disk, an archive member, standard input); its ``open()`` gives a
stream of its decompressed bytes that charges the budget as it is read: the per-file size, the total size and
the decompression ratio are checked on every read, so a bomb is stopped while it is read, before it costs
memory, and reported instead.
"""

from __future__ import annotations

import io
import lzma
import struct
import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from typing import BinaryIO, Callable

from diagnose.ingest.budget import Budget, BudgetExceeded, SkipFile
from diagnose.model.inputfiles import note, skip

try:
    from zstandard import ZstdError as _ZstdError
except ImportError:  # pragma: no cover - a dependency; without it a .tar.zst is skipped as unreadable
    class _ZstdError(Exception):
        pass

# What broken archives and compressed streams raise (the stdlib readers differ, and fuzzing found them all).
ARCHIVE_ERRORS = (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError, zlib.error, NotImplementedError,
                  RuntimeError, ValueError, KeyError, IndexError, TypeError, struct.error, lzma.LZMAError,
                  _ZstdError)


@dataclass
class SourceFile:
    """One readable file. ``open()`` gives a metered stream of its (decompressed) bytes."""

    path: str  # display path (ingest/names.py): a real path, or ``archive.tgz!member/path``
    rel: str  # path relative to the input root given on the command line (display form too)
    node: str | None
    size: int | None
    mtime: float | None
    open: Callable[[], BinaryIO]
    note: str | None = None  # set while reading, e.g. a truncated gzip whose head was read
    standalone: bool = False  # a file of its own (not a member of an archive stream): can be read in parallel
    disk_bytes: int | None = None  # its size on disk (compressed, for a .gz): what the read stage schedules by

    def read(self) -> bytes:
        with self.open() as stream:
            return stream.read()


class Ratio:
    """Decompressed bytes against compressed bytes for one archive or .gz file. ``compressed`` is the size
    on disk, or for a stream (standard input) the bytes taken from it so far. ``parent``: the archive a zip
    member belongs to, charged with the member's bytes too, so many members that each stay under the ratio (zip
    entries that share their compressed data) still add up to a bomb of the archive."""

    def __init__(self, compressed: int | None, parent: Ratio | None = None):
        self.compressed = compressed
        self.out = 0
        self.parent = parent


class Counted(io.RawIOBase):
    """The compressed side of a stream of unknown size: counts what the decompressor takes into ``ratio``."""

    def __init__(self, raw: BinaryIO, ratio: Ratio):
        self._raw, self._ratio = raw, ratio
        ratio.compressed = ratio.compressed or 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self._raw.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        self._ratio.compressed += n
        return n


class Metered(io.RawIOBase):
    """A read-only stream that charges the budget and stops bombs and truncation cleanly."""

    def __init__(self, raw: BinaryIO, budget: Budget, ratio: Ratio | None, owner: SourceFile | None = None,
                 limit: int | None = None, tally: bool = True):
        self._raw, self._budget, self._ratio, self._owner = raw, budget, ratio, owner
        self._count = 0
        self._tally = tally  # False: charge only the ratio (a tar stream, whose members charge the rest)
        self._limit = limit  # a file still being written is read up to its size when the walk saw it

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        want = len(buffer)
        if self._limit is not None:
            want = min(want, self._limit - self._count)
            if want <= 0:
                return 0
        try:
            # Straight into the caller's buffer: no intermediate bytes object to allocate and copy. A buffered
            # stream (a .gz, an archive member) is asked for one read of its source at a time, so the bytes
            # before a read that fails (EIO, a cut) come out before the error does.
            readinto = getattr(self._raw, "readinto1", None) or getattr(self._raw, "readinto", None)
            if readinto is not None:
                n = readinto(memoryview(buffer)[:want]) or 0
            else:
                data = self._raw.read(want)
                n = len(data)
                buffer[:n] = data
        except ARCHIVE_ERRORS as exc:
            if not self._tally:  # a tar stream's meter: the member being read (or the walk) says what failed
                raise
            # A device that fails (EIO) or a truncated or corrupt compressed stream: keep what was read, say so.
            if self._owner is not None:
                if isinstance(exc, OSError) and exc.errno is not None:
                    self._owner.note = note("read_error", n=self._count, error=str(exc.strerror or exc))
                else:
                    self._owner.note = note("truncated", n=self._count, error=str(exc))
            return 0
        if n == 0 and self._limit is not None and self._count < self._limit and self._owner is not None:
            # Shorter than when the walk listed it: cut while read (a rotation, a truncation), read in part.
            self._owner.note = self._owner.note or note("shrank", n=self._count, size=self._limit)
        self._count += n
        if not self._tally:
            self._charge_ratio(n)
            return n
        self._budget.charge(n)
        if self._count > self._budget.max_file_bytes:
            raise BudgetExceeded(skip("file_limit", n=self._budget.max_file_bytes))
        if self._budget.used_bytes > self._budget.max_total_bytes:
            raise BudgetExceeded(skip("total_limit", n=self._budget.max_total_bytes))
        self._charge_ratio(n)
        return n

    def _charge_ratio(self, n: int) -> None:
        ratio = self._ratio
        while ratio is not None:
            if ratio.compressed:
                ratio.out += n
                if ratio.out > self._budget.bomb_floor and ratio.out > ratio.compressed * self._budget.max_ratio:
                    raise BudgetExceeded(skip("bomb", ratio=self._budget.max_ratio, n=ratio.compressed, out=ratio.out))
            ratio = ratio.parent

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            super().close()


def _stream(opener: Callable[[], BinaryIO], budget: Budget, ratio: Ratio | None,
            limit: int | None = None) -> Callable[[SourceFile], BinaryIO]:
    def open_for(owner: SourceFile) -> BinaryIO:
        try:
            raw = opener()
        except ARCHIVE_ERRORS as exc:
            raise SkipFile(skip("cannot_open", error=str(exc))) from None
        return io.BufferedReader(Metered(raw, budget, ratio, owner, limit), buffer_size=1 << 20)

    return open_for


def source(path, rel, node, size, mtime, opener, budget, ratio=None, limit=None, standalone=False,
           disk_bytes=None) -> SourceFile:
    """A SourceFile whose ``open()`` meters ``opener()``'s stream against ``budget`` (and ``ratio``)."""
    src = SourceFile(path, rel, node, size, mtime, open=lambda: None, standalone=standalone,  # type: ignore[arg-type]
                     disk_bytes=disk_bytes if disk_bytes is not None else size)
    bound = _stream(opener, budget, ratio, limit)
    src.open = lambda: bound(src)
    return src


def opened(opener) -> BinaryIO:
    stream = opener()
    return stream if stream is not None else io.BytesIO(b"")


class Prefixed(io.RawIOBase):
    """``head`` (bytes already taken from ``rest``) and then the rest of ``rest``: a stream whose first bytes
    were looked at is read on from its start without holding more than that head."""

    def __init__(self, head: bytes, rest: BinaryIO):
        self._head, self._at, self._rest = head, 0, rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._at < len(self._head):
            n = min(len(buffer), len(self._head) - self._at)
            buffer[:n] = self._head[self._at:self._at + n]
            self._at += n
            if self._at == len(self._head):
                self._head, self._at = b"", 0
            return n
        data = self._rest.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        try:
            self._rest.close()
        finally:
            super().close()
