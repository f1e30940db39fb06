"""The committed message index file: its typed layout, its location, and how it is read and written.

One gzipped msgpack document: a header (format version, the sha256 of ``sources.toml`` and of the harvester's
code, the releases with their counts) and the message sites by column. Strings that repeat (paths, functions,
exception classes, levels) are stored once in tables and referred to by number; numbers are packed arrays and
text is lists, which keeps the file small and decoding fast: loading makes a Python object per template and
key, not per field of every site.
"""

from __future__ import annotations

import gzip
import hashlib
import re
import sys
from array import array
from pathlib import Path

import msgspec

from diagnose.knowledge.prefilter import Prefilter

FORMAT = 1
INDEX_NAME = "messages.msgpack.gz"


class ReleaseInfo(msgspec.Struct, array_like=True, frozen=True):
    """One harvested release and what it gave: files read, files this Python could not parse, templates."""

    project: str
    version: str
    origin: str
    files: int
    unparsed: int
    templates: int


class Header(msgspec.Struct, frozen=True):
    format: int
    sources_sha256: str
    harvester_sha256: str
    releases: list[ReleaseInfo]
    unavailable: list[str]


class Entry(msgspec.Struct, frozen=True):
    """One message site as the build step sees it: numbers refer to the tables of :class:`IndexFile`;
    ``releases`` and ``lines`` are parallel (the site's line in each release that has it), in ascending
    version order. ``literal`` (fixed characters of the first line, blanks excepted) and ``lead`` (of those,
    the ones before the first hole) are derived from the template at build time, so loading computes nothing."""

    project: int
    kind: int
    path: int
    function: int
    template: str
    holes: str
    code: str
    releases: list[int]
    lines: list[int]
    literal: int
    lead: int


class Columns(msgspec.Struct, array_like=True, frozen=True):
    """The entries stored by column: numbers as packed little-endian arrays (one ``bytes`` each, decoded
    without a Python object per value), text as lists; an entry's releases and lines are
    ``releases[start[i]:start[i + 1]]``."""

    project: bytes  # B
    kind: bytes  # H
    path: bytes  # I
    function: bytes  # I
    template: list[str]
    holes: list[str]
    code: list[str]
    literal: bytes  # B, capped at 255
    lead: bytes  # B, capped at 255
    start: bytes  # I, one more than there are entries
    releases: bytes  # B
    lines: bytes  # I


class IndexFile(msgspec.Struct, frozen=True):
    header: Header
    projects: list[str]
    kinds: list[str]
    paths: list[str]
    functions: list[str]
    columns: Columns
    prefilter: Prefilter


def pack(kind: str, values: list[int]) -> bytes:
    """Values as a little-endian array of ``kind`` (``B``, ``H``, ``I``, ``i``)."""
    arr = array(kind, values)
    if sys.byteorder == "big":
        arr.byteswap()
    return arr.tobytes()


def unpack(kind: str, data: bytes) -> array:
    arr = array(kind)
    arr.frombytes(data)
    if sys.byteorder == "big":
        arr.byteswap()
    return arr


def columns(entries: list[Entry]) -> Columns:
    """The column layout of ``entries``."""
    start: list[int] = [0]
    releases: list[int] = []
    lines: list[int] = []
    for e in entries:
        releases.extend(e.releases)
        lines.extend(e.lines)
        start.append(len(releases))
    return Columns(
        pack("B", [e.project for e in entries]), pack("H", [e.kind for e in entries]),
        pack("I", [e.path for e in entries]), pack("I", [e.function for e in entries]),
        [e.template for e in entries], [e.holes for e in entries], [e.code for e in entries],
        pack("B", [min(e.literal, 255) for e in entries]), pack("B", [min(e.lead, 255) for e in entries]),
        pack("I", start), pack("B", releases), pack("I", lines))


def knowledge_dir() -> Path:
    """The knowledge data shipped in the wheel (diagnose/_knowledge), or the repository's knowledge/ in a
    checkout: found the way the rule catalog is."""
    here = Path(__file__).resolve().parent.parent
    packaged = here / "_knowledge"
    if packaged.is_dir():
        return packaged
    return here.parent / "knowledge"


def index_path() -> Path:
    return knowledge_dir() / "index" / INDEX_NAME


def read(path: Path | None = None) -> IndexFile:
    with gzip.open(path or index_path(), "rb") as fh:
        return msgspec.msgpack.decode(fh.read(), type=IndexFile)


def write(index: IndexFile, path: Path) -> None:
    """Deterministic bytes (no time stamp in the gzip header), so a rebuild from the same inputs is identical."""
    data = msgspec.msgpack.encode(index)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with tmp.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
        gz.write(data)
    tmp.replace(path)


def harvester_files() -> list[Path]:
    """The code whose output the index is: the build step and the modules that shape what it writes (the
    template form, the file layout, the prefilter and the thresholds it applies)."""
    here = Path(__file__).resolve().parent
    return sorted((here / "harvest").glob("*.py")) + [here / name for name in (
        "templates.py", "indexfile.py", "prefilter.py")]


def harvester_sha256() -> str:
    digest = hashlib.sha256()
    for path in harvester_files():
        digest.update(path.name.encode() + b"\0" + path.read_bytes().replace(b"\r\n", b"\n") + b"\0")
    return digest.hexdigest()


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes().replace(b"\r\n", b"\n")).hexdigest()


_VERSION = re.compile(r"(\d+(?:\.\d+)*)(?:\.?(a|b|rc)(\d+))?(?:\.?post(\d+))?")


def version_key(version: str) -> tuple:
    """A sort key for release labels: ``0.9.1rc1 < 0.9.1 < 0.9.1.post1 < 0.10.0rc0``; labels that are not
    version numbers (a git commit) sort after the numbered ones, by text."""
    m = _VERSION.match(version)
    if not m:
        return (1, (), 0, 0, 0, version)
    release = tuple(int(p) for p in m.group(1).split("."))
    pre = {"a": 0, "b": 1, "rc": 2}.get(m.group(2) or "", 3)
    return (0, release, pre, int(m.group(3) or 0), int(m.group(4) or 0), version)
