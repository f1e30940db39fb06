"""The fleet dataset on disk: hive partitions by date, cluster and node, one atomic partition per node.

    DATASET/_dataset.json                                   {"format": "diagnose-fleet", "schema_version": 1}
    DATASET/date=2025-07-23/cluster=prod/node=node-0/_manifest.json
    DATASET/date=2025-07-23/cluster=prod/node=node-0/records-<run>.parquet   (and one file per table)

Why a manifest: a partition is several files, and neither an object store nor a folder can replace several
files at once. An extraction writes its tables under names that carry its own run id (so they never overwrite
what a reader may be reading), then the manifest that lists them, in one atomic write: that is the moment the
partition changes. Only then are the previous run's files removed. A reader reads only what a manifest lists.
A node folder without a readable manifest, or whose manifest lists a file that is not there, is half-written:
it is listed as unread coverage, never silently skipped. Each node writes only its own folder, so concurrent
extractions of different nodes into one dataset never touch the same file.

The partition's date is the day of the node's last dated record (the day of the extraction when nothing is
dated), so ``fleet --since`` prunes whole partitions by their folder names before reading any Parquet.
"""

from __future__ import annotations

import io
import json
import re
import uuid
from dataclasses import dataclass, field
from datetime import date, datetime, timezone

import polars as pl

from diagnose import __version__
from diagnose.bounded import json_loads
from diagnose.fleet.schema import FORMAT, SCHEMA_VERSION, TABLES, conform, empty
from diagnose.fleet.store import Store, StoreError

DATASET_FILE = "_dataset.json"
MANIFEST = "_manifest.json"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_RUN = re.compile(r"-(\d{8}T\d{12}-[0-9a-f]{8})\.parquet$")
_PARTITION = re.compile(r"^date=(\d{4}-\d{2}-\d{2})/cluster=([^/]+)/node=([^/]+)$")


class SchemaMismatch(Exception):
    """A dataset (or a partition) written by another schema version: refused, with both versions named."""

    def __init__(self, where: str, found: object):
        self.where, self.found, self.expected = where, found, SCHEMA_VERSION
        super().__init__(f"{where} has schema version {found}; this diagnose reads and writes version {SCHEMA_VERSION}")


class NotADataset(Exception):
    """The location holds something other than a fleet dataset."""

    def __init__(self, where: str, reason: str):
        self.where, self.reason = where, reason
        super().__init__(f"{where}: not a fleet dataset ({reason})")


def check_name(value: str, what: str) -> str:
    """A cluster or node name is a folder name of the dataset: letters, digits, dot, dash, underscore."""
    if not _NAME.match(value or ""):
        raise ValueError(f"{what} {value!r}: use letters, digits, '.', '-' and '_' (at most 128, not starting "
                         f"with '.', '-' or '_')")
    return value


@dataclass(frozen=True)
class Partition:
    day: date
    cluster: str
    node: str

    @property
    def rel(self) -> str:
        return f"date={self.day.isoformat()}/cluster={self.cluster}/node={self.node}"


@dataclass
class Part:
    """One partition as read: its manifest and its tables' files (scanned together by ``collect``)."""

    partition: Partition
    manifest: dict
    tables: dict[str, str] = field(default_factory=dict)  # table -> the file to scan


# --- writing -------------------------------------------------------------------------------------------------

def ensure_dataset(store: Store) -> None:
    """Mark a new dataset with its schema version; refuse one written by another version."""
    raw = store.get(DATASET_FILE)
    if raw is None:
        store.put(DATASET_FILE, _json({"format": FORMAT, "schema_version": SCHEMA_VERSION}))
        return
    check_dataset(store, raw)


def check_dataset(store: Store, raw: bytes | None = None) -> None:
    raw = store.get(DATASET_FILE) if raw is None else raw
    if raw is None:
        return
    try:
        meta = json_loads(raw)
    except ValueError as exc:
        raise NotADataset(store.uri(DATASET_FILE), str(exc)) from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise NotADataset(store.uri(DATASET_FILE), f"its format is not {FORMAT}")
    if meta.get("schema_version") != SCHEMA_VERSION:
        raise SchemaMismatch(store.location, meta.get("schema_version"))


def encode_tables(tables: dict[str, pl.DataFrame]) -> dict[str, tuple[bytes, int]]:
    """Each of ``tables`` (dataset tables by name) as its Parquet file's bytes, with its row count."""
    out = {}
    for name, frame in tables.items():
        frame = conform(name, frame)
        buf = io.BytesIO()
        frame.write_parquet(buf, compression="zstd", statistics=True)
        out[name] = (buf.getvalue(), frame.height)
    return out


def write_partition(store: Store, partition: Partition, tables: dict[str, pl.DataFrame], meta: dict,
                    encoded: dict[str, tuple[bytes, int]] | None = None) -> dict:
    """Write one node's tables (those in ``encoded`` as ``encode_tables`` gave them), then its manifest (the
    commit), then remove older runs' files. Runs are ordered by their start: an extraction that finds a newer
    run's manifest already committed leaves it in place and removes its own files (the newer one holds the
    later logs)."""
    ensure_dataset(store)
    run = f"{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%S%f')}-{uuid.uuid4().hex[:8]}"
    listed: dict[str, dict] = {}
    encoded = dict(encoded or {})
    encoded.update(encode_tables({name: tables.get(name, empty(name)) for name in TABLES if name not in encoded}))
    for name in TABLES:
        data, rows = encoded[name]
        file = f"{name}-{run}.parquet"
        store.put(f"{partition.rel}/{file}", data)
        listed[name] = {"file": file, "rows": rows}
    manifest = {"format": FORMAT, "schema_version": SCHEMA_VERSION, "diagnose_version": __version__, "run": run,
                "date": partition.day.isoformat(), "cluster": partition.cluster, "node": partition.node,
                "written": datetime.now().astimezone().isoformat(timespec="seconds"), "tables": listed, **meta}
    current = _current_run(store, partition)
    if current is not None and current > run:
        _remove_runs(store, partition, lambda other: other == run)
        return json_loads(store.get(f"{partition.rel}/{MANIFEST}") or b"{}") or manifest
    store.put(f"{partition.rel}/{MANIFEST}", _json(manifest))
    # Older runs' files go, but only while this run is still the committed one, and never a newer run's
    # (an extraction of the same node still writing).
    if _current_run(store, partition) == run:
        _remove_runs(store, partition, lambda other: other < run)
    return manifest


def _current_run(store: Store, partition: Partition) -> str | None:
    try:
        return json_loads(store.get(f"{partition.rel}/{MANIFEST}") or b"null")["run"]
    except (ValueError, TypeError, KeyError):
        return None


def _remove_runs(store: Store, partition: Partition, which) -> None:
    for rel in store.files(f"{partition.rel}/*.parquet"):
        m = _RUN.search(rel)
        if m and which(m.group(1)):
            store.delete(rel)


def _json(value: dict) -> bytes:
    return (json.dumps(value, indent=1, ensure_ascii=False, default=str) + "\n").encode()


# --- reading -------------------------------------------------------------------------------------------------

def partitions(store: Store) -> list[Partition]:
    """Every node folder of the dataset, with or without a manifest."""
    out = set()
    for rel in store.files("date=*/cluster=*/node=*/*"):
        m = _PARTITION.match(rel.rsplit("/", 1)[0])
        if m:
            try:
                out.add(Partition(date.fromisoformat(m.group(1)), m.group(2), m.group(3)))
            except ValueError:
                continue
    return sorted(out, key=lambda p: (p.day, p.cluster, p.node))


def open_parts(store: Store, wanted: list[Partition]) -> tuple[list[Part], list[tuple[Partition, str]]]:
    """(the partitions that can be read, each with its tables as lazy scans; the half-written ones and why).
    A partition of another schema version raises SchemaMismatch."""
    listing = set(store.files("date=*/cluster=*/node=*/*"))
    parts, broken = [], []
    for p in wanted:
        raw = store.get(f"{p.rel}/{MANIFEST}") if f"{p.rel}/{MANIFEST}" in listing else None
        if raw is None:
            broken.append((p, "no manifest"))
            continue
        try:
            manifest = json_loads(raw)
            tables = manifest["tables"]
        except (ValueError, KeyError, TypeError) as exc:
            broken.append((p, f"unreadable manifest ({exc})"))
            continue
        if manifest.get("schema_version") != SCHEMA_VERSION:
            raise SchemaMismatch(store.uri(p.rel), manifest.get("schema_version"))
        missing = [entry.get("file") for entry in tables.values()
                   if f"{p.rel}/{entry.get('file')}" not in listing]
        if missing or set(tables) != set(TABLES):
            broken.append((p, "missing " + ", ".join(sorted(str(m) for m in missing) or sorted(set(TABLES) - set(tables)))))
            continue
        parts.append(Part(p, manifest, {name: store.uri(f"{p.rel}/{entry['file']}") for name, entry in tables.items()}))
    return parts, broken


def collect(parts: list[Part], name: str) -> pl.DataFrame:
    """One table of many partitions, in their order, as one frame of the table's types: one scan over every
    partition's file (polars reads them in parallel and keeps their order)."""
    if not parts:
        return empty(name)
    try:
        out = pl.scan_parquet([p.tables[name] for p in parts]).collect()
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise StoreError(f"{name}: {exc}") from exc
    return conform(name, out)
