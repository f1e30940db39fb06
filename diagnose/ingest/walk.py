"""Find the files behind the command-line paths: folders, plain files, .gz, tar and zip archives, stdin.

Nothing is extracted to disk and nothing outside the given paths is followed: archive members are read
as streams, links inside folders and archives are not followed, special files (FIFOs, sockets, devices) are
skipped without being opened. Every byte read goes through a meter that enforces the budget (per-file
size, total size, decompression ratio), so a bomb is stopped and reported instead of filling memory.

A ``SourceFile`` is consumed before the walk moves on (tar members can only be read in stream order).
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import struct
import sys
import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

from diagnose.ingest.budget import Budget, BudgetExceeded, SkipFile
from diagnose.ingest.nodes import node_from_path
from diagnose.model import Skipped

ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip", ".tar.bz2", ".tar.xz", ".tbz2", ".txz")
# What broken archives and compressed streams raise (the stdlib readers differ, and fuzzing found them all).
ARCHIVE_ERRORS = (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError, zlib.error, NotImplementedError,
                  RuntimeError, ValueError, KeyError, IndexError, TypeError, struct.error)


@dataclass
class SourceFile:
    """One readable file. ``open()`` gives a metered stream of its (decompressed) bytes."""

    path: str  # display path: a real path, or ``archive.tgz!member/path``
    rel: str  # path relative to the input root given on the command line
    node: str | None
    size: int | None
    mtime: float | None
    open: Callable[[], BinaryIO]
    note: str | None = None  # set while reading, e.g. a truncated gzip whose head was read
    standalone: bool = False  # a file of its own (not a member of an archive stream): can be read in parallel

    def read(self) -> bytes:
        with self.open() as stream:
            return stream.read()


class _Ratio:
    """Decompressed bytes against compressed bytes for one archive or .gz file."""

    def __init__(self, compressed: int | None):
        self.compressed = compressed
        self.out = 0


class Metered(io.RawIOBase):
    """A read-only stream that charges the budget and stops bombs and truncation cleanly."""

    def __init__(self, raw: BinaryIO, budget: Budget, ratio: _Ratio | None, owner: SourceFile | None = None,
                 limit: int | None = None):
        self._raw, self._budget, self._ratio, self._owner = raw, budget, ratio, owner
        self._count = 0
        self._limit = limit  # a file still being written is read up to its size when the walk saw it
        # A decompressing reader asked for a large block decompresses many pieces into it and, when the data
        # ends early, raises and drops them all: read it piece by piece (``read1``), so everything before
        # the cut of a truncated .gz (or tar member) is kept.
        self._piecewise = isinstance(raw, (gzip.GzipFile, tarfile.ExFileObject, zipfile.ZipExtFile))

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        want = len(buffer)
        if self._limit is not None:
            want = min(want, self._limit - self._count)
            if want <= 0:
                return 0
        try:
            # Straight into the caller's buffer: no intermediate bytes object to allocate and copy.
            readinto = getattr(self._raw, "readinto", None)
            if self._piecewise:
                data = self._raw.read1(want)
                n = len(data)
                buffer[:n] = data
            elif readinto is not None:
                n = readinto(memoryview(buffer)[:want]) or 0
            else:
                data = self._raw.read(want)
                n = len(data)
                buffer[:n] = data
        except ARCHIVE_ERRORS as exc:
            # A truncated or corrupt compressed stream: keep what was read, and say so.
            if self._owner is not None:
                self._owner.note = f"truncated or corrupt compressed data after {self._count} bytes ({exc})"
            return 0
        self._count += n
        self._budget.charge(n)
        if self._count > self._budget.max_file_bytes:
            raise BudgetExceeded(f"larger than the per-file limit of {self._budget.max_file_bytes} bytes")
        if self._budget.used_bytes > self._budget.max_total_bytes:
            raise BudgetExceeded(f"total read limit of {self._budget.max_total_bytes} bytes reached")
        if self._ratio is not None and self._ratio.compressed:
            self._ratio.out += n
            if (self._ratio.out > self._budget.bomb_floor
                    and self._ratio.out > self._ratio.compressed * self._budget.max_ratio):
                raise BudgetExceeded(
                    f"decompression bomb: expands more than {self._budget.max_ratio}x "
                    f"({self._ratio.compressed} bytes compressed)"
                )
        return n

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            super().close()


def _stream(opener: Callable[[], BinaryIO], budget: Budget, ratio: _Ratio | None,
            limit: int | None = None) -> Callable[[SourceFile], BinaryIO]:
    def open_for(owner: SourceFile) -> BinaryIO:
        try:
            raw = opener()
        except ARCHIVE_ERRORS as exc:
            raise SkipFile(f"cannot open: {exc}") from None
        return io.BufferedReader(Metered(raw, budget, ratio, owner, limit), buffer_size=1 << 20)

    return open_for


def _source(path, rel, node, size, mtime, opener, budget, ratio=None, limit=None, standalone=False) -> SourceFile:
    src = SourceFile(path, rel, node, size, mtime, open=lambda: None, standalone=standalone)  # type: ignore[arg-type]
    bound = _stream(opener, budget, ratio, limit)
    src.open = lambda: bound(src)
    return src


def iter_sources(paths: list[str], budget: Budget | None = None) -> Iterator[SourceFile | Skipped]:
    budget = budget or Budget()
    for given in paths:
        if given == "-":
            yield from _from_stdin(budget)
            continue
        p = Path(given)
        try:
            st = p.stat()
        except FileNotFoundError:
            yield Skipped(given, "no such file or directory")
            continue
        except OSError as exc:
            yield Skipped(given, f"cannot access: {exc.strerror or exc}")
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
            yield Skipped(str(folder), f"directory nesting deeper than {budget.max_depth} (not read)")
            continue
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            yield Skipped(str(folder), f"cannot list directory: {exc.strerror or exc}")
            continue
        subdirs = []
        for entry in entries:
            budget.used_members += 1
            if budget.used_members > budget.max_members:
                yield Skipped(str(folder), f"more than {budget.max_members} files and folders; the rest was not read")
                return
            path = Path(entry.path)
            rel = path.relative_to(root).as_posix()
            try:
                if entry.is_symlink():
                    yield Skipped(str(path), "symbolic link (not followed)")
                    continue
                if entry.is_dir(follow_symlinks=False):
                    subdirs.append((path, depth + 1))
                    continue
            except OSError as exc:
                yield Skipped(str(path), f"cannot access: {exc.strerror or exc}")
                continue
            yield from _from_file(path, rel, str(path), budget)
        stack.extend(reversed(subdirs))


def _from_file(path: Path, rel: str, display: str, budget: Budget) -> Iterator[SourceFile | Skipped]:
    try:
        st = path.lstat()
    except OSError as exc:
        yield Skipped(display, f"cannot access: {exc.strerror or exc}")
        return
    if stat.S_ISLNK(st.st_mode):
        try:
            st = path.stat()  # a link given on the command line is followed once
        except OSError as exc:
            yield Skipped(display, f"broken symbolic link: {exc.strerror or exc}")
            return
    if not stat.S_ISREG(st.st_mode):
        yield Skipped(display, f"not a regular file ({_file_type(st.st_mode)})")
        return
    if not os.access(path, os.R_OK):
        yield Skipped(display, "permission denied")
        return
    name = path.name.lower()
    node = node_from_path(rel) or node_from_path(display)
    if name.endswith(ARCHIVE_SUFFIXES):
        yield from _from_archive_path(path, display, node, budget, st.st_size)
    elif name.endswith(".gz"):
        yield _source(display, rel[:-3], node, None, st.st_mtime, lambda: gzip.open(path, "rb"), budget,
                      _Ratio(st.st_size), standalone=True)
    else:
        yield _source(display, rel, node, st.st_size, st.st_mtime, lambda: open(path, "rb"), budget,
                      limit=st.st_size, standalone=True)


def _file_type(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device file"
    return "special file"


def _from_archive_path(path: Path, display: str, node: str | None, budget: Budget, size: int):
    ratio = _Ratio(size)
    if path.name.lower().endswith(".zip"):
        try:
            zf = zipfile.ZipFile(path)
        except ARCHIVE_ERRORS as exc:
            yield Skipped(display, f"corrupt zip archive: {exc}")
            return
        with zf:
            yield from _iter_zip(zf, display, node, budget, ratio, nested=0)
        return
    try:
        fh = open(path, "rb")
    except OSError as exc:
        yield Skipped(display, f"cannot read archive: {exc.strerror or exc}")
        return
    with fh:
        yield from _iter_tar(fh, display, node, budget, ratio, nested=0)


def _safe_member_name(name: str) -> str:
    """Members are never written anywhere; still, show `../` and absolute names as relative, harmless text."""
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    return "/".join(parts) or "unnamed"


def _iter_tar(fh, display: str, node, budget: Budget, ratio: _Ratio, nested: int) -> Iterator[SourceFile | Skipped]:
    try:
        tar = tarfile.open(fileobj=fh, mode="r|*")
    except ARCHIVE_ERRORS as exc:
        yield Skipped(display, f"corrupt or unreadable tar archive: {exc}")
        return
    try:
        while True:
            try:
                member = tar.next()
            except ARCHIVE_ERRORS as exc:
                yield Skipped(display, f"corrupt or truncated archive, members after this point not read: {exc}")
                return
            except BudgetExceeded as exc:
                yield Skipped(display, str(exc))
                return
            if member is None:
                return
            budget.used_members += 1
            if budget.used_members > budget.max_members:
                yield Skipped(display, f"more than {budget.max_members} members; the rest was not read")
                return
            name = _safe_member_name(member.name)
            mpath = f"{display}!{name}"
            if member.isdir():
                continue
            if member.issym() or member.islnk():
                yield Skipped(mpath, "link inside archive (not followed)")
                continue
            if not member.isfile():
                yield Skipped(mpath, "special file inside archive (not read)")
                continue
            yield from _member(mpath, name, lambda m=member: tar.extractfile(m), member.size, member.mtime,
                               node, budget, ratio, nested)
    finally:
        try:
            tar.close()
        except ARCHIVE_ERRORS:
            pass


def _iter_zip(zf: zipfile.ZipFile, display: str, node, budget: Budget, ratio: _Ratio, nested: int):
    for info in zf.infolist():
        budget.used_members += 1
        if budget.used_members > budget.max_members:
            yield Skipped(display, f"more than {budget.max_members} members; the rest was not read")
            return
        if info.is_dir():
            continue
        name = _safe_member_name(info.filename)
        mpath = f"{display}!{name}"
        if stat.S_ISLNK(info.external_attr >> 16):
            yield Skipped(mpath, "link inside archive (not followed)")
            continue
        member_ratio = _Ratio(max(info.compress_size, 1))
        yield from _member(mpath, name, lambda i=info: zf.open(i), info.file_size, _zip_mtime(info), node, budget,
                           member_ratio, nested)


def _zip_mtime(info: zipfile.ZipInfo) -> float | None:
    import datetime as dt

    try:
        return dt.datetime(*info.date_time).timestamp()
    except (ValueError, OverflowError):
        return None


def _member(mpath, name, opener, size, mtime, node, budget, ratio, nested) -> Iterator[SourceFile | Skipped]:
    """An archive member: a plain file, a .gz, or (one level deep) a nested archive."""
    lower = name.lower()
    mnode = node_from_path(name) or node
    if lower.endswith(ARCHIVE_SUFFIXES):
        if nested >= 1:
            yield Skipped(mpath, "archive nested more than one level (not followed)")
            return
        # A nested archive is held in memory (bounded by the budget) so it can be read as a stream again.
        try:
            data = _read_all(opener, budget, ratio)
        except BudgetExceeded as exc:
            yield Skipped(mpath, str(exc))
            return
        except ARCHIVE_ERRORS as exc:
            yield Skipped(mpath, f"cannot read nested archive: {exc}")
            return
        inner_ratio = _Ratio(len(data))
        if lower.endswith(".zip"):
            try:
                zf = zipfile.ZipFile(io.BytesIO(data))
            except ARCHIVE_ERRORS as exc:
                yield Skipped(mpath, f"corrupt zip archive: {exc}")
                return
            with zf:
                yield from _iter_zip(zf, mpath, mnode, budget, inner_ratio, nested + 1)
        else:
            yield from _iter_tar(io.BytesIO(data), mpath, mnode, budget, inner_ratio, nested + 1)
        return
    if lower.endswith(".gz"):
        yield _source(mpath, name[:-3], mnode, None, mtime, lambda: gzip.GzipFile(fileobj=_opened(opener)), budget,
                      _Ratio(size or 1))
        return
    yield _source(mpath, name, mnode, size, mtime, lambda: _opened(opener), budget, ratio)


def _opened(opener) -> BinaryIO:
    stream = opener()
    return stream if stream is not None else io.BytesIO(b"")


def _read_all(opener, budget: Budget, ratio: _Ratio) -> bytes:
    with io.BufferedReader(Metered(_opened(opener), budget, ratio)) as fh:
        return fh.read()


def _from_stdin(budget: Budget) -> Iterator[SourceFile | Skipped]:
    # Standard input may be a log, a .gz, a tar (compressed or not) or a zip: look at its first bytes.
    try:
        data = _read_all(lambda: sys.stdin.buffer, budget, None)
    except BudgetExceeded as exc:
        yield Skipped("<stdin>", str(exc))
        return
    except ARCHIVE_ERRORS as exc:
        yield Skipped("<stdin>", f"cannot read standard input: {exc}")
        return
    ratio = _Ratio(len(data))
    if data[:4] == b"PK\x03\x04":
        try:
            zf = zipfile.ZipFile(io.BytesIO(data))
        except ARCHIVE_ERRORS as exc:
            yield Skipped("<stdin>", f"corrupt zip archive: {exc}")
            return
        with zf:
            yield from _iter_zip(zf, "<stdin>", None, budget, ratio, nested=0)
    elif _is_tar(data):
        yield from _iter_tar(io.BytesIO(data), "<stdin>", None, budget, ratio, nested=0)
    elif data[:2] == b"\x1f\x8b":
        yield _source("<stdin>", "stdin", None, None, None, lambda: gzip.GzipFile(fileobj=io.BytesIO(data)), budget,
                      ratio)
    else:
        yield _source("<stdin>", "stdin", None, len(data), None, lambda: io.BytesIO(data), budget)


def _is_tar(data: bytes) -> bool:
    if data[:2] == b"\x1f\x8b":
        try:
            data = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data[:65536], 1024)
        except zlib.error:
            return False
    return data[257:262] == b"ustar"
