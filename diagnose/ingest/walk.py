"""Find the files behind the command-line paths: folders, plain files, .gz, tar and zip archives, stdin.

Nothing outside the given paths is followed: archive members are read as streams (ingest/archives.py), links
inside folders and archives are not followed, special files (FIFOs, sockets, devices) are skipped without
being opened. Every byte read goes through a meter that enforces the budget (per-file size, total size,
decompression ratio; ingest/metered.py), so a bomb is stopped while it is read and reported instead of
filling memory. Every name is given in its display form (ingest/names.py), whatever bytes it was made of.

A ``SourceFile`` is consumed before the walk moves on (tar members can only be read in stream order).
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import sys
import zipfile
import zlib
from pathlib import Path
from typing import Iterator

from diagnose.ingest.archives import ARCHIVE_SUFFIXES, iter_tar, iter_zip, zip_from_stream
from diagnose.ingest.budget import Budget
from diagnose.ingest.metered import ARCHIVE_ERRORS, Counted, Prefixed, Ratio, SourceFile, source
from diagnose.ingest.names import display as display_name
from diagnose.ingest.nodes import node_from_path
from diagnose.messages import Phrase
from diagnose.model import Skipped, skip

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
        if given == "-":
            yield from _from_stdin(budget)
            continue
        p = Path(given)
        try:
            st = p.stat()
        except FileNotFoundError:
            yield Skipped(given, skip("missing"))
            continue
        except OSError as exc:
            yield Skipped(given, skip("cannot_access", error=str(exc.strerror or exc)))
            continue
        if stat.S_ISDIR(st.st_mode):
            yield from _walk_dir(p, budget)
        else:
            yield from _from_file(p, p.name, given, budget)


def _walk_dir(root: Path, budget: Budget) -> Iterator[SourceFile | Skipped]:
    # Depth-first with sorted names: a deterministic order; links are reported, never followed.
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        if depth > budget.max_depth:
            yield Skipped(str(folder), skip("too_deep", n=budget.max_depth))
            continue
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            yield Skipped(str(folder), skip("cannot_list", error=str(exc.strerror or exc)))
            continue
        subdirs = []
        for entry in entries:
            budget.used_members += 1
            if budget.used_members > budget.max_members:
                yield Skipped(str(folder), skip("too_many_files", n=budget.max_members))
                return
            path = Path(entry.path)
            rel = path.relative_to(root).as_posix()
            try:
                if entry.is_symlink():
                    yield Skipped(str(path), skip("symlink"))
                    continue
                if entry.is_dir(follow_symlinks=False):
                    subdirs.append((path, depth + 1))
                    continue
            except OSError as exc:
                yield Skipped(str(path), skip("cannot_access", error=str(exc.strerror or exc)))
                continue
            yield from _from_file(path, rel, str(path), budget)
        stack.extend(reversed(subdirs))


def _from_file(path: Path, rel: str, display: str, budget: Budget) -> Iterator[SourceFile | Skipped]:
    try:
        st = path.lstat()
    except OSError as exc:
        yield Skipped(display, skip("cannot_access", error=str(exc.strerror or exc)))
        return
    if stat.S_ISLNK(st.st_mode):
        try:
            st = path.stat()  # a link given on the command line is followed once
        except OSError as exc:
            yield Skipped(display, skip("broken_link", error=str(exc.strerror or exc)))
            return
    if not stat.S_ISREG(st.st_mode):
        yield Skipped(display, skip("not_regular", what=_file_type(st.st_mode)))
        return
    if not os.access(path, os.R_OK):
        yield Skipped(display, skip("denied"))
        return
    name = path.name.lower()
    node = node_from_path(rel) or node_from_path(display)
    if name.endswith(ARCHIVE_SUFFIXES):
        yield from _from_archive_path(path, display, node, budget, st.st_size)
    elif name.endswith(".gz"):
        yield source(display, rel[:-3], node, None, st.st_mtime, lambda: _GzipOnDisk(path), budget,
                     Ratio(st.st_size), standalone=True, disk_bytes=st.st_size)
    elif st.st_size > budget.max_file_bytes:  # refused before a byte is read (the meter would, at the end)
        yield Skipped(display, skip("file_limit", n=budget.max_file_bytes))
    else:
        # Unbuffered: the meter's own buffer reads it, one system call a read, so the bytes read before a
        # failing one (EIO) are kept rather than lost inside a second buffer.
        yield source(display, rel, node, st.st_size, st.st_mtime, lambda: open(path, "rb", buffering=0), budget,
                     limit=st.st_size, standalone=True)


class _GzipOnDisk(gzip.GzipFile):
    """A .gz file read through an unbuffered file, as plain files are (the bytes before a failing read are
    kept), and closed with it."""

    def __init__(self, path: Path):
        self._file = open(path, "rb", buffering=0)
        super().__init__(fileobj=self._file, mode="rb")

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._file.close()


def _file_type(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device file"
    return "special file"


def _from_archive_path(path: Path, display: str, node: str | None, budget: Budget, size: int):
    ratio = Ratio(size)
    if path.name.lower().endswith(".zip"):
        try:
            zf = zipfile.ZipFile(path)
        except ARCHIVE_ERRORS as exc:
            yield Skipped(display, skip("corrupt_zip", error=str(exc)))
            return
        with zf:
            yield from iter_zip(zf, display, node, budget, ratio, nested=0)
        return
    try:
        fh = open(path, "rb")
    except OSError as exc:
        yield Skipped(display, skip("cannot_read_archive", error=str(exc.strerror or exc)))
        return
    with fh:
        yield from iter_tar(fh, display, node, budget, ratio, nested=0)


def _from_stdin(budget: Budget) -> Iterator[SourceFile | Skipped]:
    """Standard input may be a log, a .gz, a tar (compressed or not) or a zip: told from its first bytes,
    then read on as a stream (never held whole); its ratio counts the bytes taken from it so far."""
    stdin = sys.stdin.buffer
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


def _is_tar(data: bytes) -> bool:
    if data[:2] == b"\x1f\x8b":
        try:
            data = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data[:65536], 1024)
        except zlib.error:
            return False
    return data[257:262] == b"ustar"


def _displayed(reason: Phrase) -> Phrase:
    """The reason with every text value in display form (an archive library's message may quote a name)."""
    return Phrase(reason.key, **{k: display_name(v) if isinstance(v, str) else v for k, v in reason.values.items()})
