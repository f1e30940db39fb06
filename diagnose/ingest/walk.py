"""Find the files behind the command-line paths: folders, plain files, .gz, tar and zip archives, stdin.

Nothing is extracted to disk and nothing outside the given paths is followed: archive members are read
as streams, symbolic links inside folders are not followed, special files (FIFOs, sockets, devices) are
skipped without being opened.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import sys
import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from diagnose.ingest.budget import Budget, BudgetExceeded
from diagnose.ingest.nodes import node_from_path
from diagnose.model import Skipped

ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip", ".tar.bz2", ".tar.xz")
_CHUNK = 1 << 20


@dataclass
class SourceFile:
    """One readable file. ``read()`` returns its bytes (decompressed), within the budget."""

    path: str  # display path: a real path, or ``archive.tgz!member/path``
    rel: str  # path relative to the input root given on the command line
    node: str | None
    size: int | None
    mtime: float | None
    read: Callable[[], bytes]


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
    # Breadth of os.scandir with sorted names: deterministic order, no symlink following.
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        if depth > budget.max_depth:
            yield Skipped(str(folder), f"directory nesting deeper than {budget.max_depth}")
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
                yield Skipped(str(folder), f"more than {budget.max_members} entries; the rest was not read")
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
        st = path.lstat() if path.is_symlink() else path.stat()
    except OSError as exc:
        yield Skipped(display, f"cannot access: {exc.strerror or exc}")
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
        yield from _from_archive_path(path, display, node, budget)
    elif name.endswith(".gz"):
        yield SourceFile(display, rel[:-3], node, None, st.st_mtime, lambda: _gunzip_file(path, budget))
    else:
        yield SourceFile(display, rel, node, st.st_size, st.st_mtime, lambda: _read_file(path, budget))


def _file_type(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device file"
    if stat.S_ISLNK(mode):
        return "symbolic link"
    return "special file"


def _read_file(path: Path, budget: Budget) -> bytes:
    with open(path, "rb") as fh:
        return _read_stream(fh, budget)


def _read_stream(fh: io.BufferedIOBase, budget: Budget, compressed_size: int | None = None) -> bytes:
    parts = []
    total = 0
    while True:
        chunk = fh.read(_CHUNK)
        if not chunk:
            break
        total += len(chunk)
        if total > budget.max_file_bytes:
            raise BudgetExceeded(f"larger than the per-file limit of {budget.max_file_bytes} bytes")
        if budget.used_bytes + total > budget.max_total_bytes:
            raise BudgetExceeded(f"total read limit of {budget.max_total_bytes} bytes reached")
        if compressed_size and total > 64 * 1024 * 1024 and total > compressed_size * budget.max_ratio:
            raise BudgetExceeded(
                f"decompression bomb: expands more than {budget.max_ratio}x ({compressed_size} bytes compressed)"
            )
        parts.append(chunk)
    budget.charge(total)
    return b"".join(parts)


def _gunzip_file(path: Path, budget: Budget) -> bytes:
    try:
        with gzip.open(path, "rb") as fh:
            return _read_stream(fh, budget, compressed_size=path.stat().st_size)
    except (OSError, EOFError, zlib.error) as exc:
        raise BudgetExceeded(f"corrupt or truncated gzip: {exc}") from None


def _from_archive_path(path: Path, display: str, node: str | None, budget: Budget) -> Iterator[SourceFile | Skipped]:
    if path.name.lower().endswith(".zip"):
        yield from _iter_zip(path, display, node, budget)
    else:
        try:
            with open(path, "rb") as fh:
                yield from _iter_tar(fh, display, node, budget)
        except OSError as exc:
            yield Skipped(display, f"cannot read archive: {exc.strerror or exc}")


def _member_node(member: str, outer: str | None) -> str | None:
    return node_from_path(member) or outer


def _iter_tar(fh, display: str, node: str | None, budget: Budget, nested: int = 0) -> Iterator[SourceFile | Skipped]:
    try:
        with tarfile.open(fileobj=fh, mode="r|*") as tar:
            for member in tar:
                budget.used_members += 1
                if budget.used_members > budget.max_members:
                    yield Skipped(display, f"more than {budget.max_members} members; the rest was not read")
                    return
                mpath = f"{display}!{member.name}"
                if member.isdir():
                    continue
                if member.issym() or member.islnk():
                    yield Skipped(mpath, "link inside archive (not followed)")
                    continue
                if not member.isfile():
                    yield Skipped(mpath, "special file inside archive")
                    continue
                try:
                    stream = tar.extractfile(member)
                    data = _read_stream(stream, budget, compressed_size=None) if stream else b""
                except BudgetExceeded as exc:
                    yield Skipped(mpath, str(exc))
                    continue
                yield from _from_member_bytes(mpath, member.name, data, member.mtime, node, budget, nested)
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        yield Skipped(display, f"corrupt or truncated archive: {exc}")


def _iter_zip(path: Path, display: str, node: str | None, budget: Budget) -> Iterator[SourceFile | Skipped]:
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        yield Skipped(display, f"corrupt zip archive: {exc}")
        return
    with zf:
        for info in zf.infolist():
            budget.used_members += 1
            if budget.used_members > budget.max_members:
                yield Skipped(display, f"more than {budget.max_members} members; the rest was not read")
                return
            if info.is_dir():
                continue
            mpath = f"{display}!{info.filename}"
            if stat.S_ISLNK(info.external_attr >> 16):
                yield Skipped(mpath, "link inside archive (not followed)")
                continue
            try:
                with zf.open(info) as stream:
                    data = _read_stream(stream, budget, compressed_size=max(info.compress_size, 1))
            except BudgetExceeded as exc:
                yield Skipped(mpath, str(exc))
                continue
            except (zipfile.BadZipFile, OSError, EOFError, zlib.error, NotImplementedError, RuntimeError) as exc:
                yield Skipped(mpath, f"corrupt zip member: {exc}")
                continue
            mtime = _zip_mtime(info)
            yield from _from_member_bytes(mpath, info.filename, data, mtime, node, budget)


def _zip_mtime(info: zipfile.ZipInfo) -> float | None:
    import datetime as dt

    try:
        return dt.datetime(*info.date_time).timestamp()
    except (ValueError, OverflowError):
        return None


def _from_member_bytes(
    mpath: str, name: str, data: bytes, mtime: float | None, node: str | None, budget: Budget, nested: int = 0
) -> Iterator[SourceFile | Skipped]:
    """An archive member: a plain file, a .gz, or (one level deep) a nested archive."""
    lower = name.lower()
    mnode = _member_node(name, node)
    if lower.endswith(ARCHIVE_SUFFIXES) or _looks_like_archive(data) or (nested < 0 and _is_tar(data)):
        if nested >= 1:
            yield Skipped(mpath, "archive nested more than one level (not followed)")
            return
        if lower.endswith(".zip") or data[:4] == b"PK\x03\x04":
            yield from _iter_zip_bytes(data, mpath, mnode, budget, nested + 1)
        else:
            yield from _iter_tar(io.BytesIO(data), mpath, mnode, budget, nested + 1)
        return
    if lower.endswith(".gz") or data[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
                data = _read_stream(fh, budget, compressed_size=len(data))
        except BudgetExceeded as exc:
            yield Skipped(mpath, str(exc))
            return
        except (OSError, EOFError, zlib.error) as exc:
            yield Skipped(mpath, f"corrupt or truncated gzip: {exc}")
            return
        name = name[:-3] if lower.endswith(".gz") else name
    yield SourceFile(mpath, name.lstrip("/"), mnode, len(data), mtime, lambda d=data: d)


def _is_tar(data: bytes) -> bool:
    # A compressed tar on stdin: peek inside the gzip for the ustar magic.
    if data[:2] == b"\x1f\x8b":
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data[:65536], 1024)
        except zlib.error:
            return False
        return head[257:262] == b"ustar"
    return data[257:262] == b"ustar"


def _looks_like_archive(data: bytes) -> bool:
    return data[:4] == b"PK\x03\x04" or data[257:262] == b"ustar"


def _iter_zip_bytes(
    data: bytes, display: str, node: str | None, budget: Budget, nested: int
) -> Iterator[SourceFile | Skipped]:
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        yield Skipped(display, f"corrupt zip archive: {exc}")
        return
    with zf:
        for info in zf.infolist():
            if info.is_dir():
                continue
            mpath = f"{display}!{info.filename}"
            try:
                with zf.open(info) as stream:
                    member = _read_stream(stream, budget, compressed_size=max(info.compress_size, 1))
            except BudgetExceeded as exc:
                yield Skipped(mpath, str(exc))
                continue
            except (zipfile.BadZipFile, OSError, EOFError, zlib.error, NotImplementedError, RuntimeError) as exc:
                yield Skipped(mpath, f"corrupt zip member: {exc}")
                continue
            yield from _from_member_bytes(mpath, info.filename, member, _zip_mtime(info), node, budget, nested)


def _from_stdin(budget: Budget) -> Iterator[SourceFile | Skipped]:
    try:
        data = _read_stream(sys.stdin.buffer, budget)
    except BudgetExceeded as exc:
        yield Skipped("<stdin>", str(exc))
        return
    except OSError as exc:
        yield Skipped("<stdin>", f"cannot read standard input: {exc}")
        return
    # stdin itself may be an archive: its members then count as the first level.
    yield from _from_member_bytes("<stdin>", "stdin", data, None, None, budget, nested=-1)
