"""Where a fleet dataset lives: a local folder, or an object store named by a URI (``s3://bucket/prefix``,
``gs://``, ``az://``, ...).

A local folder is written with the standard library: each file goes to a temporary name in its own folder and
is renamed into place, so a reader never sees half a file. An object store is written and listed through
fsspec (the ``diagnose[fleet]`` extra: ``s3fs`` for S3 and S3-compatible stores); one PUT of an object is
already atomic there. Parquet is read by polars' own cloud support, which does the predicate and projection
pushdown and reads the same credentials and endpoint from the environment (``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_ENDPOINT_URL``, ``AWS_ALLOW_HTTP`` for a plain-HTTP test server).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from diagnose.bounded import SMALL_FILE, read_capped


class StoreError(Exception):
    """The dataset cannot be reached (no such bucket, no fsspec for a URI, a permission): the command says it."""


def is_uri(location: str) -> bool:
    return "://" in location and not location.startswith("file://")


class Store:
    """The files of one dataset, named by paths relative to its root (``date=.../cluster=.../node=.../x``)."""

    def __init__(self, location: str):
        self.location = location.rstrip("/") or location
        self.remote = is_uri(location)
        if self.remote:
            try:
                import fsspec  # deferred: fsspec is an optional extra (diagnose[fleet]; local datasets need none)
            except ImportError as exc:
                raise StoreError(f"{location}: reading or writing an object store needs fsspec "
                                 f"(pip install 'diagnose[fleet]')") from exc
            try:
                self.fs, self.root = fsspec.core.url_to_fs(self.location)
            except (ImportError, ValueError) as exc:
                raise StoreError(f"{location}: {exc}") from exc
        else:
            self.fs = None
            self.root = self.location.removeprefix("file://")

    # --- writing ---------------------------------------------------------------------------------------------

    def put(self, rel: str, data: bytes) -> None:
        """Write one file whole: a reader sees the old file, the new one, or none, never part of one."""
        if self.remote:
            try:
                self.fs.pipe_file(f"{self.root}/{rel}", data)
            except Exception as exc:  # noqa: BLE001 - any store failure is the same to the user: not written
                raise StoreError(f"{self.uri(rel)}: {exc}") from exc
            return
        path = Path(self.root, rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.parent / f".{path.name}.tmp-{uuid.uuid4().hex[:12]}"
        try:
            with open(tmp, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def delete(self, rel: str) -> None:
        try:
            if self.remote:
                self.fs.rm_file(f"{self.root}/{rel}")
            else:
                Path(self.root, rel).unlink(missing_ok=True)
        except FileNotFoundError:
            pass

    # --- reading ---------------------------------------------------------------------------------------------

    def get(self, rel: str) -> bytes | None:
        """A whole small file (a manifest), or None when there is none."""
        try:
            if self.remote:
                return self.fs.cat_file(f"{self.root}/{rel}")
            return read_capped(Path(self.root, rel), SMALL_FILE)  # a regular file: never a FIFO or a link
        except FileNotFoundError:
            return None
        except Exception as exc:  # noqa: BLE001 - a permission or network failure: say which file
            raise StoreError(f"{self.uri(rel)}: {exc}") from exc

    def exists(self) -> bool:
        if self.remote:
            try:
                return bool(self.fs.exists(self.root))
            except Exception as exc:  # noqa: BLE001
                raise StoreError(f"{self.location}: {exc}") from exc
        return Path(self.root).is_dir()

    def files(self, pattern: str) -> list[str]:
        """Paths relative to the root matching a glob (``date=*/cluster=*/node=*/*``), sorted; temporary files
        of a write in progress (``.name.tmp-...``) are not listed."""
        if self.remote:
            try:
                found = self.fs.glob(f"{self.root}/{pattern}")
            except FileNotFoundError:
                return []
            except Exception as exc:  # noqa: BLE001
                raise StoreError(f"{self.location}: {exc}") from exc
            prefix = self.root.rstrip("/") + "/"
            rels = [f[len(prefix):] for f in found if f.startswith(prefix)]
        else:
            root = Path(self.root)
            rels = [p.relative_to(root).as_posix() for p in root.glob(pattern)] if root.is_dir() else []
        return sorted(r for r in rels if not r.rsplit("/", 1)[-1].startswith("."))

    def uri(self, rel: str) -> str:
        """What polars scans (a local path, or the store's URI)."""
        if self.remote:
            protocol = self.location.split("://", 1)[0]
            return f"{protocol}://{self.root}/{rel}"
        return f"{self.root.rstrip('/')}/{rel}" if self.root else rel
