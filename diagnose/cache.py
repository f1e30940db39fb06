"""TOML files that ship with the program (the built-in rule catalog, the message catalog), parsed once per
content and kept as JSON in the user's cache folder.

Parsing some ninety rule files with their fixtures takes tomllib about 35 ms, a third of a small run's fixed
cost, and the message catalog 15 ms; loading the same data as JSON takes 2 ms. The cache is keyed by a hash of every file's path and bytes,
so an edited rule is parsed again; it is best effort: a cache that cannot be read or written is ignored.
``DIAGNOSE_CACHE_DIR`` moves it (default ``$XDG_CACHE_HOME/diagnose``, else ``~/.cache/diagnose``); set it
to an empty value to turn it off. Only files of the program are cached: a user's rule files are read every run.
Each kind of file has its own name prefix (``rules-``, ``messages-``), and storing one drops only the older
files of its own prefix.

The folder is not trusted (CI restores it from elsewhere; anyone who can write there can put anything there): an
entry is read only when it is a regular file (never through a link, never a FIFO: ``read_capped``) of at most
``MAX_ENTRY`` bytes, and used only when it decodes and has the shape this module wrote. Anything else (a link to
``/dev/zero``, JSON nested 100,000 deep, a list where a table belongs) counts as no entry: it is built again and
replaced, so one bad file never fails a run or every later one.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tomllib
from pathlib import Path

from diagnose.bounded import SMALL_FILE, read_capped
from diagnose.writer import WriteFailed, write_file

MAX_ENTRY = 4 * SMALL_FILE  # the catalog's entry is about 1 MB


def cache_dir() -> Path | None:
    given = os.environ.get("DIAGNOSE_CACHE_DIR")
    if given is not None:
        return Path(given) if given else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "diagnose"


def parsed_tomls(files: list[Path], prefix: str = "rules-") -> dict[Path, dict] | None:
    """Each file's TOML data, from the cache when its contents are unchanged; None when a file cannot be
    read or parsed (the caller then loads file by file and reports the error) or the cache is off."""
    folder = cache_dir()
    if folder is None:
        return None
    try:
        blobs = [path.read_bytes() for path in files]
    except OSError:
        return None
    digest = hashlib.sha256(f"{sys.version_info[:2]}".encode())
    for path, blob in zip(files, blobs):
        digest.update(f"\0{path}\0{len(blob)}\0".encode())
        digest.update(blob)
    target = folder / f"{prefix}{digest.hexdigest()[:32]}.json"
    data = _entry(target)
    if isinstance(data, list) and len(data) == len(files) and all(isinstance(d, dict) for d in data):
        return dict(zip(files, data))
    try:
        data = [tomllib.loads(blob.decode("utf-8")) for blob in blobs]
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError):
        return None
    _store(folder, target, data, prefix)
    return dict(zip(files, data))


def _entry(target: Path):
    """The decoded JSON of one cache entry, or None when it is missing or not what this module writes (see the
    module docstring): never a link followed, a FIFO waited on or more than ``MAX_ENTRY`` bytes read."""
    try:
        return json.loads(read_capped(target, MAX_ENTRY))
    except (OSError, ValueError, RecursionError):  # gone, a link, a FIFO, too large, not JSON, nested too deep
        return None


def _store(folder: Path, target: Path, data: list[dict], prefix: str) -> None:
    """Write atomically (a concurrent run reads the old file or the new one) and drop older catalogs."""
    try:
        text = json.dumps(data, ensure_ascii=False)
        folder.mkdir(parents=True, exist_ok=True)
        # Whatever is in the entry's place (a link, a FIFO, a device) is replaced by the rename, never written
        # through: the folder is not trusted (a folder in its place stays, and the entry is not used).
        write_file(target, text, "cache", through_special=False)
        for old in folder.glob(f"{prefix}*.json"):
            if old != target:
                old.unlink(missing_ok=True)
    except (OSError, TypeError, ValueError, RecursionError, WriteFailed):  # read-only home, full disk, bad value
        pass


class JsonStore:
    """Values the program computes from its own data (the prefilter's scan plans of the built-in catalog),
    kept as one JSON object per ``version`` in the cache folder: a new version (a changed catalog or a
    changed program) drops the older files of ``prefix``. Best effort, like the TOML cache; concurrent runs
    may each write their own additions, and then a later run computes what was lost again."""

    def __init__(self, prefix: str, version: str):
        self.folder = cache_dir()
        self.prefix = prefix
        digest = hashlib.sha256(f"{sys.version_info[:2]}\0{version}".encode()).hexdigest()[:32]
        self.target = self.folder / f"{prefix}{digest}.json" if self.folder is not None else None
        self.values: dict = {}
        if self.target is not None:
            data = _entry(self.target)
            self.values = data if isinstance(data, dict) else {}

    def get(self, name: str):
        return self.values.get(name)

    def put(self, name: str, value) -> None:
        self.values[name] = value
        if self.target is not None:
            _store(self.folder, self.target, self.values, self.prefix)  # type: ignore[arg-type]
