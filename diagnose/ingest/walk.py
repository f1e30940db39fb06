"""Find the files behind the command-line paths: folders, plain files, .gz, tar and zip archives, stdin.

Nothing outside the given paths is followed: archive members are read as streams (ingest/archives.py), links
inside folders and archives are not followed, special files (FIFOs, sockets, devices) are skipped without
being opened. Every byte read goes through a meter that enforces the budget (per-file size, total size,
decompression ratio; ingest/metered.py), so a bomb is stopped while it is read and reported instead of
filling memory. Every name is given in its display form (ingest/names.py), whatever bytes it was made of.

A ``SourceFile`` is consumed before the walk moves on (tar members can only be read in stream order).
"""

from __future__ import annotations

import bz2
import errno
import gzip
import io
import lzma
import os
import select
import stat
import sys
import zipfile
import zlib
from pathlib import Path
from typing import Iterator, NamedTuple

import zstandard

from diagnose.bounded import NotRegular, kind_of, open_regular
from diagnose.ingest.archives import ARCHIVE_SUFFIXES, iter_tar, iter_zip, zip_from_stream
from diagnose.ingest.budget import Budget, SkipFile
from diagnose.ingest.metered import ARCHIVE_ERRORS, Counted, Prefixed, Ratio, SourceFile, source
from diagnose.ingest.names import display as display_name
from diagnose.ingest.nodes import node_from_path
from diagnose.messages import Phrase
from diagnose.model import Skipped, file_type, skip

_STDIN_HEAD = 64 * 1024  # what standard input's kind (zip, tar, gzip, text) is told from

__all__ = ["ARCHIVE_ERRORS", "ARCHIVE_SUFFIXES", "SourceFile", "iter_sources"]


def iter_sources(paths: list[str], budget: Budget | None = None) -> Iterator[SourceFile | Skipped]:
    """Every file under ``paths``; names in their display form (ingest/names.py), files opened by real name."""
    for item in _iter_given(paths, budget or Budget()):
        if isinstance(item, Skipped):
            yield Skipped(display_name(item.path), _displayed(item.reason))
        else:
            item.path, item.rel = display_name(item.path), display_name(item.rel)
            yield item


def _iter_given(paths: list[str], budget: Budget) -> Iterator[SourceFile | Skipped]:
    for given in paths:
        try:
            yield from _one_given(given, budget)
        except Exception as exc:  # noqa: BLE001 - a listing that fails costs only the rest of its own path
            yield Skipped(given, skip("listing_failed", error=f"{type(exc).__name__}: {str(exc)[:200]}"))


def _one_given(given: str, budget: Budget) -> Iterator[SourceFile | Skipped]:
    if given == "-":
        yield from _from_stdin(budget)
        return
    p = Path(given)
    try:
        st = p.stat()
    except FileNotFoundError:
        yield Skipped(given, skip("missing"))
        return
    except OSError as exc:
        yield Skipped(given, skip("cannot_access", error=str(exc.strerror or exc)))
        return
    if stat.S_ISDIR(st.st_mode):
        yield from _walk_dir(p, budget)
    else:
        yield from _from_file(p, p.name, given, budget)


def _walk_dir(root: Path, budget: Budget) -> Iterator[SourceFile | Skipped]:
    # Depth-first with sorted names: a deterministic order; links are reported, never followed.
    stack: list[tuple[Path, int, os.stat_result | None]] = [(root, 0, None)]
    while stack:
        folder, depth, seen = stack.pop()
        if depth > budget.max_depth:
            yield Skipped(str(folder), skip("too_deep", n=budget.max_depth))
            continue
        try:
            entries = _listing(folder, seen)
        except SkipFile as exc:
            yield Skipped(str(folder), exc.reason)
            continue
        except OSError as exc:
            yield Skipped(str(folder), skip("cannot_list", error=str(exc.strerror or exc)))
            continue
        subdirs = []
        for entry in entries:
            budget.used_members += 1
            if budget.used_members > budget.max_members:
                yield Skipped(str(folder), skip("too_many_files", n=budget.max_members))
                return
            path = folder / entry.name
            rel = path.relative_to(root).as_posix()
            if entry.error is not None:
                yield Skipped(str(path), skip("cannot_access", error=str(entry.error.strerror or entry.error)))
                continue
            if entry.link:
                yield Skipped(str(path), skip("symlink"))
                continue
            if entry.folder is not None:
                subdirs.append((path, depth + 1, entry.folder))
                continue
            yield from _from_file(path, rel, str(path), budget)
        stack.extend(reversed(subdirs))


def _listing(folder: Path, seen: os.stat_result | None) -> list[_Entry]:
    """The sorted entries of ``folder``, listed through a descriptor opened without following a link and checked
    to be the folder its parent's listing saw (``seen``): a folder swapped for a link to elsewhere after its
    parent was listed is not walked into (the folder given on the command line, ``seen`` None, may be a link)."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
    if seen is not None:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(folder, flags)
    except OSError as exc:
        if seen is not None and exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise SkipFile(skip("changed", what=file_type("symlink" if os.path.islink(folder) else "other"))) from None
        raise
    try:
        st = os.fstat(fd)
        if seen is not None and (st.st_dev, st.st_ino) != (seen.st_dev, seen.st_ino):
            raise SkipFile(skip("changed", what=file_type("other")))
        out = []
        with os.scandir(fd) as listing:  # what each entry is, asked while the descriptor is open
            for entry in listing:
                try:
                    link = entry.is_symlink()
                    sub = None if link or not entry.is_dir(follow_symlinks=False) else entry.stat(follow_symlinks=False)
                    out.append(_Entry(entry.name, link, sub, None))
                except OSError as exc:
                    out.append(_Entry(entry.name, False, None, exc))
        return sorted(out, key=lambda e: e.name)
    finally:
        os.close(fd)


class _Entry(NamedTuple):
    name: str
    link: bool
    folder: os.stat_result | None  # a folder: its own stat (checked again when it is listed)
    error: OSError | None


def _from_file(path: Path, rel: str, display: str, budget: Budget) -> Iterator[SourceFile | Skipped]:
    try:
        st = path.lstat()
    except OSError as exc:
        yield Skipped(display, skip("cannot_access", error=str(exc.strerror or exc)))
        return
    follow = stat.S_ISLNK(st.st_mode)
    if follow:
        try:
            st = path.stat()  # a link given on the command line is followed once
        except OSError as exc:
            yield Skipped(display, skip("broken_link", error=str(exc.strerror or exc)))
            return
    if not stat.S_ISREG(st.st_mode):
        yield Skipped(display, skip("not_regular", what=file_type(kind_of(st.st_mode))))
        return
    if not os.access(path, os.R_OK):
        yield Skipped(display, skip("denied"))
        return
    name = path.name.lower()
    node = node_from_path(rel) or node_from_path(display)
    opener = _Checked(path, st, follow)
    if name.endswith(ARCHIVE_SUFFIXES):
        yield from _from_archive_path(path, display, node, budget, st.st_size, opener)
    elif name.endswith(".gz"):
        yield source(display, rel[:-3], node, None, st.st_mtime, lambda: _GzipOnDisk(opener), budget,
                     Ratio(st.st_size), standalone=True, disk_bytes=st.st_size)
    elif st.st_size > budget.max_file_bytes:  # refused before a byte is read (the meter would, at the end)
        yield Skipped(display, skip("file_limit", n=budget.max_file_bytes))
    else:
        # Unbuffered: the meter's own buffer reads it, one system call a read, so the bytes read before a
        # failing one (EIO) are kept rather than lost inside a second buffer.
        yield source(display, rel, node, st.st_size, st.st_mtime, opener, budget, limit=st.st_size, standalone=True)


class _Checked:
    """Opens the file the walk listed, and only that: ``open_regular`` (diagnose/bounded.py) opens without
    following a link (unless the path given on the command line was one) and without blocking, then checks that
    what it opened is a regular file with the device and inode the walk saw. A file swapped for a link, a FIFO
    or another file between the listing and the read is skipped with the reason, never read: a link would put
    text from outside the input folder in every report, a FIFO would hang the run. Gives an unbuffered file."""

    def __init__(self, path: Path, seen: os.stat_result, follow: bool):
        self.path, self.seen, self.follow = path, seen, follow

    def __call__(self) -> io.RawIOBase:
        return opened(self.path, self.seen, self.follow)


def opened(path: Path, seen: os.stat_result, follow: bool) -> io.RawIOBase:
    """The unbuffered file ``path`` if it is still the regular file the walk listed (``_Checked``), else SkipFile
    with the reason. (One function: the tests of read faults put a failing file in its place.)"""
    try:
        fd = open_regular(path, seen, follow)
    except NotRegular as exc:
        raise SkipFile(skip("changed", what=file_type(exc.what))) from None
    return io.FileIO(fd, "rb", closefd=True)


class _GzipOnDisk(gzip.GzipFile):
    """A .gz file read through an unbuffered file, as plain files are (the bytes before a failing read are
    kept), and closed with it."""

    def __init__(self, opener: _Checked):
        self._file = opener()
        super().__init__(fileobj=self._file, mode="rb")

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._file.close()


def _from_archive_path(path: Path, display: str, node: str | None, budget: Budget, size: int, opener: _Checked):
    ratio = Ratio(size)
    try:
        fh = io.BufferedReader(opener(), buffer_size=1 << 16)
    except SkipFile as exc:
        yield Skipped(display, exc.reason)
        return
    except OSError as exc:
        yield Skipped(display, skip("cannot_read_archive", error=str(exc.strerror or exc)))
        return
    with fh:
        if path.name.lower().endswith(".zip"):
            try:
                zf = zipfile.ZipFile(fh)
            except ARCHIVE_ERRORS as exc:
                yield Skipped(display, skip("corrupt_zip", error=str(exc)))
                return
            with zf:
                yield from iter_zip(zf, display, node, budget, ratio, nested=0)
            return
        yield from iter_tar(fh, display, node, budget, ratio, nested=0)


def _from_stdin(budget: Budget) -> Iterator[SourceFile | Skipped]:
    """Standard input may be a log, a .gz, a tar (compressed or not) or a zip: told from its first bytes,
    then read on as a stream (never held whole); its ratio counts the bytes taken from it so far."""
    stdin = _interruptible(sys.stdin.buffer)
    try:
        head = stdin.read(_STDIN_HEAD)
    except OSError as exc:
        yield Skipped("<stdin>", skip("stdin", error=str(exc.strerror or exc)))
        return
    whole = Prefixed(head, stdin)
    ratio = Ratio(None)
    if head[:4] == b"PK\x03\x04":
        yield from zip_from_stream(whole, "<stdin>", None, budget, None, nested=0)
    elif _is_tar(head):
        with io.BufferedReader(Counted(whole, ratio), buffer_size=1 << 20) as stream:
            yield from iter_tar(stream, "<stdin>", None, budget, ratio, nested=0)
    elif head[:2] == b"\x1f\x8b":
        yield source("<stdin>", "stdin", None, None, None,
                     lambda: gzip.GzipFile(fileobj=io.BufferedReader(Counted(whole, ratio))), budget, ratio)
    else:
        yield source("<stdin>", "stdin", None, None, None, lambda: whole, budget)


class _WaitingStdin(io.RawIOBase):
    """Standard input read in waits of a quarter second: ``diagnose -`` on a terminal (or a pipe whose writer is
    slow) otherwise sits in one ``read`` that a Ctrl-C does not end when the kernel hands the signal to another
    of the process's threads (polars' workers, the progress line): the main thread would run the handler only
    after the next line or Ctrl-D. Between waits the interpreter runs the handler, and the run stops (exit 130)."""

    def __init__(self, fd: int):
        self._fd = fd

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not select.select([self._fd], [], [], 0.25)[0]:
            pass
        return os.readv(self._fd, [buffer])


def _interruptible(stream):
    """``stream`` (standard input's bytes, not read from before), read through ``_WaitingStdin`` when it has a
    descriptor that ``select`` can wait on; as it is otherwise (a test's in-memory input)."""
    try:
        fd = stream.fileno()
        select.select([fd], [], [], 0)
    except (OSError, ValueError, io.UnsupportedOperation):
        return stream
    return io.BufferedReader(_WaitingStdin(fd), buffer_size=1 << 16)


def _is_tar(data: bytes) -> bool:
    """Whether standard input's head is a tar, plain or compressed (gzip, zstd, xz, bzip2: as iter_tar reads)."""
    try:
        if data[:2] == b"\x1f\x8b":
            data = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data[:65536], 1024)
        elif data[:4] == b"\x28\xb5\x2f\xfd":
            data = zstandard.ZstdDecompressor().decompressobj().decompress(data[:65536])[:1024]
        elif data[:6] == b"\xfd7zXZ\x00":
            data = lzma.LZMADecompressor().decompress(data[:65536], 1024)
        elif data[:3] == b"BZh":
            data = bz2.BZ2Decompressor().decompress(data[:65536])[:1024]
    except Exception:  # noqa: BLE001 - any decoder's error: not a tar this reader can read
        return False
    return data[257:262] == b"ustar"


def _displayed(reason: Phrase) -> Phrase:
    """The reason with every text value in display form (an archive library's message may quote a name)."""
    return Phrase(reason.key, **{k: display_name(v) if isinstance(v, str) else v for k, v in reason.values.items()})
