"""Archive members as streams: tar (plain or compressed) and zip, one level of nesting, nothing extracted.

Members are yielded in archive order and each must be consumed before the next (a tar stream cannot go
back). Links and special files inside archives are listed as skipped, never followed; ``../`` and absolute
member names are shown as harmless relative names, in the display form of every name (ingest/names.py).

A nested tar is read as a stream straight out of its member, so it costs no memory whatever its size. A
nested zip needs random access (its directory is at its end): it is copied into a spooled buffer that moves
to an unnamed temporary file past ``SPOOL_BYTES`` (``O_TMPFILE`` on Linux: it has no name and is gone when
closed or when the process dies), so memory stays bounded there too.
"""

from __future__ import annotations

import bz2
import datetime as dt
import gzip
import io
import lzma
import shutil
import stat
import tarfile
import tempfile
import zipfile
from typing import BinaryIO, Iterator

import zstandard

from diagnose.ingest.budget import Budget, BudgetExceeded
from diagnose.ingest.metered import ARCHIVE_ERRORS, Metered, Ratio, SourceFile, opened, source
from diagnose.ingest.names import display as display_name
from diagnose.ingest.names import zip_member_name
from diagnose.ingest.nodes import node_from_path
from diagnose.model import Skipped, skip

ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip", ".tar.bz2", ".tar.xz", ".tbz2", ".txz", ".tar.zst", ".tzst")
SPOOL_BYTES = 32 * 1024 * 1024


def safe_member_name(name: str) -> str:
    """Members are never written anywhere; still, show `../` and absolute names as relative, harmless text,
    in the display form of every name (ingest/names.py)."""
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    return display_name("/".join(parts)) or "unnamed"


def iter_tar(fh, display: str, node, budget: Budget, ratio: Ratio, nested: int) -> Iterator[SourceFile | Skipped]:
    """The members of the tar stream ``fh`` (plain, gzip, bzip2, xz or zstd). The stream is decompressed here,
    not inside tarfile, and every decompressed byte, headers included, is charged to ``ratio`` as it is read: a
    200 MB member name or pax header that expands from a few hundred kilobytes is a bomb like any other, refused
    after ``bomb_floor`` bytes, instead of being read whole into memory (it ran for minutes). The members are
    then read without a ratio of their own (their bytes are already counted)."""
    try:
        stream = _decompressed(fh)
        charged = io.BufferedReader(Metered(stream, budget, ratio, tally=False), buffer_size=1 << 16)
        tar = tarfile.open(fileobj=charged, mode="r|")
        ratio = None  # the members' bytes were charged as the stream was read
    except BudgetExceeded as exc:
        yield Skipped(display, exc.reason)
        return
    except ARCHIVE_ERRORS as exc:
        yield Skipped(display, skip("corrupt_tar", error=str(exc)))
        return
    try:
        while True:
            try:
                member = tar.next()
            except ARCHIVE_ERRORS as exc:
                yield Skipped(display, skip("truncated_archive", error=str(exc)))
                return
            except BudgetExceeded as exc:
                yield Skipped(display, exc.reason)
                return
            if member is None:
                return
            tar.members.clear()  # a stream is read once: the list of every member read so far is never used
            budget.used_members += 1
            if budget.used_members > budget.max_members:
                yield Skipped(display, skip("too_many_members", n=budget.max_members))
                return
            if len(member.name) > MAX_NAME:
                yield Skipped(display, skip("name_too_long", n=MAX_NAME))
                continue
            name = safe_member_name(member.name)
            mpath = f"{display}!{name}"
            if member.isdir():
                continue
            if member.issym() or member.islnk():
                yield Skipped(mpath, skip("archive_link"))
                continue
            if not member.isfile():
                yield Skipped(mpath, skip("archive_special"))
                continue
            yield from _member(mpath, name, lambda m=member: tar.extractfile(m), member.size, member.mtime,
                               node, budget, ratio, nested)
    finally:
        try:
            tar.close()
        except ARCHIVE_ERRORS:
            pass


MAX_NAME = 4096  # characters of a member's name: Linux allows 4096 bytes in a path


def _decompressed(fh) -> BinaryIO:
    """``fh`` decompressed by its magic bytes (gzip, bzip2, xz, zstd), or as it is (a plain tar)."""
    peek = getattr(fh, "peek", None)
    if peek is None:
        fh = io.BufferedReader(fh if isinstance(fh, io.RawIOBase) else _Buffered(fh))
    head = fh.peek(6)[:6]
    if head[:2] == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=fh, mode="rb")
    if head[:3] == b"BZh":
        return bz2.BZ2File(fh)
    if head[:6] == b"\xfd7zXZ\x00":
        return lzma.LZMAFile(fh)
    if head[:4] == b"\x28\xb5\x2f\xfd":
        return zstandard.ZstdDecompressor().stream_reader(fh, read_across_frames=True, closefd=False)
    return fh


class _Buffered(io.RawIOBase):
    """A stream without ``peek`` (an in-memory file) as a raw stream, for a BufferedReader."""

    def __init__(self, raw):
        self._raw = raw

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self._raw.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


def iter_zip(zf: zipfile.ZipFile, display: str, node, budget: Budget, ratio: Ratio, nested: int):
    if overlapping(zf):
        yield Skipped(display, skip("zip_overlap"))
        return
    for info in zf.infolist():
        budget.used_members += 1
        if budget.used_members > budget.max_members:
            yield Skipped(display, skip("too_many_members", n=budget.max_members))
            return
        if info.is_dir():
            continue
        name = safe_member_name(zip_member_name(info))
        mpath = f"{display}!{name}"
        if stat.S_ISLNK(info.external_attr >> 16):
            yield Skipped(mpath, skip("archive_link"))
            continue
        member_ratio = Ratio(max(info.compress_size, 1), parent=ratio)
        yield from _member(mpath, name, lambda i=info: zf.open(i), info.file_size, _zip_mtime(info), node, budget,
                           member_ratio, nested)


def overlapping(zf: zipfile.ZipFile) -> bool:
    """Whether two entries of ``zf`` share bytes, or an entry runs into the central directory: the shape of a
    zip bomb whose many entries all decompress one compressed kernel (each member alone stays under the ratio,
    together they expand a 225 KB file to gigabytes). An entry takes at least its 30-byte local header and its
    compressed data, so entries sorted by offset must each begin after the end of the one before."""
    infos = sorted(zf.infolist(), key=lambda i: i.header_offset)
    end = 0
    for info in infos:
        if info.header_offset < end:
            return True
        end = info.header_offset + 30 + info.compress_size
    return bool(infos) and end > getattr(zf, "start_dir", end)


def zip_from_stream(stream: BinaryIO, display: str, node, budget: Budget, ratio: Ratio | None,
                    nested: int) -> Iterator[SourceFile | Skipped]:
    """A zip that arrives as a stream (a member, standard input): spooled (module docstring), then read."""
    try:
        with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as spool:
            with io.BufferedReader(Metered(stream, budget, ratio)) as metered:
                shutil.copyfileobj(metered, spool, 1 << 20)
            size = spool.tell()
            spool.seek(0)
            try:
                zf = zipfile.ZipFile(spool)
            except ARCHIVE_ERRORS as exc:
                yield Skipped(display, skip("corrupt_zip", error=str(exc)))
                return
            with zf:
                yield from iter_zip(zf, display, node, budget, Ratio(size), nested)
    except BudgetExceeded as exc:
        yield Skipped(display, exc.reason)
    except ARCHIVE_ERRORS as exc:
        yield Skipped(display, skip("cannot_read_zip", error=str(exc)))


def _zip_mtime(info: zipfile.ZipInfo) -> float | None:
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
            yield Skipped(mpath, skip("nested"))
            return
        try:
            stream = opened(opener)
        except ARCHIVE_ERRORS as exc:
            yield Skipped(mpath, skip("nested_unreadable", error=str(exc)))
            return
        # The outer archive's bytes are metered as the nested one is read; its members have their own ratio.
        if lower.endswith(".zip"):
            yield from zip_from_stream(stream, mpath, mnode, budget, ratio, nested + 1)
            return
        with io.BufferedReader(Metered(stream, budget, ratio), buffer_size=1 << 20) as inner:
            yield from iter_tar(inner, mpath, mnode, budget, Ratio(size or 1), nested + 1)
        return
    if lower.endswith(".gz"):
        yield source(mpath, name[:-3], mnode, None, mtime, lambda: gzip.GzipFile(fileobj=opened(opener)), budget,
                     Ratio(size or 1))
        return
    yield source(mpath, name, mnode, size, mtime, lambda: opened(opener), budget, ratio)
