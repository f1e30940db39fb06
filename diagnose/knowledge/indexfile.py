"""The committed message index file: its typed layout, its location, and how it is read and written.

One gzipped msgpack document: a header (format version, the sha256 of ``sources.toml`` and of the harvester's
code, the releases with their counts) and one compact entry per message site. Strings that repeat (paths,
functions, exception classes, levels) are stored once in tables and referred to by number, and an entry's
releases and line numbers are parallel lists, which keeps the file small and decoding fast (typed msgspec
structs, arrays rather than maps).
"""

from __future__ import annotations

import gzip
import hashlib
import re
from pathlib import Path

import msgspec

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


class Entry(msgspec.Struct, array_like=True, frozen=True):
    """One message site: numbers refer to the tables of :class:`IndexFile`; ``releases`` and ``lines`` are
    parallel (the site's line in each release that has it), releases in ascending version order."""

    project: int
    kind: int
    path: int
    function: int
    template: str
    holes: str
    code: str
    releases: list[int]
    lines: list[int]


class IndexFile(msgspec.Struct, frozen=True):
    header: Header
    projects: list[str]
    kinds: list[str]
    paths: list[str]
    functions: list[str]
    entries: list[Entry]


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
    """The code whose output the index is: the build step and the two modules that shape what it writes."""
    here = Path(__file__).resolve().parent
    return sorted((here / "harvest").glob("*.py")) + [here / "templates.py", here / "indexfile.py"]


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
