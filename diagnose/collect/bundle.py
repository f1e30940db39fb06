"""The incident bundle: one ``.tar.gz`` with a folder per node, that ``diagnose bundle.tar.gz`` reads back.

    <node>/manifest.json          what was found, what was not and why, the caps, the window
    <node>/<kind>/<root>/<path>   each file found under a kind's default location
    <node>/npu-smi-info.txt       what the tools printed (a kind's ``command``)
    <node>/launch/launch-<pid>.sh each serving process's launch command and its Ascend/HCCL/vLLM variables
    <node>/model/...              the description files of the model folder a launch command names
    <node>/config/...             configuration files a launch command names

Caps: a file over ``max_file_bytes`` keeps its last bytes from a line start (an incident is at the end of a
log), and once ``max_total_bytes`` are taken the rest is listed, not taken; files come newest first. With
``redact``, every text taken (and the launch commands) goes through the report redactor: secrets, addresses,
host names and home paths masked consistently across the whole bundle. The caller hands the stream (an
atomic file: diagnose/writer.py ``replacing``), so a failed collection leaves no half bundle.
"""

from __future__ import annotations

import io
import json
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from diagnose.collect.gather import Found


@dataclass
class Caps:
    max_file_bytes: int = 64 << 20
    max_total_bytes: int = 1 << 30


@dataclass
class Bundle:
    """Members added one by one to a gzip'd tar stream; the manifest is written last."""

    stream: BinaryIO
    node: str
    caps: Caps
    redactor: object | None = None  # diagnose.report.redact.Redactor when --redact
    manifest: dict = field(default_factory=dict)
    total: int = 0

    def __post_init__(self) -> None:
        self._tar = tarfile.open(fileobj=self.stream, mode="w:gz", format=tarfile.PAX_FORMAT)
        self.manifest = {"node": self.node, "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
                         "redacted": bool(self.redactor),
                         "caps": {"max_file_bytes": self.caps.max_file_bytes,
                                  "max_total_bytes": self.caps.max_total_bytes},
                         "found": [], "not_found": [], "commands": []}

    def add_file(self, item: Found) -> None:
        entry = {"kind": item.kind, "path": item.shown, "in_bundle": f"{self.node}/{item.inside}",
                 "bytes": item.size, "mtime": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(item.mtime))}
        room = self.caps.max_total_bytes - self.total
        if room <= 0:
            self.manifest["not_found"].append({"kind": item.kind, "path": item.shown, "reason": "total-cap"})
            return
        limit = min(self.caps.max_file_bytes, room)
        try:
            data, cut = _tail(item.path, item.size, limit)
        except OSError as exc:
            self.manifest["not_found"].append({"kind": item.kind, "path": item.shown,
                                               "reason": "cannot-read",
                                               "detail": str(exc.strerror or exc)})
            return
        if cut:
            entry["cut"] = f"last {len(data)} of {item.size} bytes"
        self._put(item.inside, data, item.mtime)
        self.manifest["found"].append(entry)

    def add_text(self, inside: str, text: str, what: dict) -> None:
        """Something this run composed or a tool printed (npu-smi's output, a launch command)."""
        data = text.encode("utf-8")
        if len(data) > self.caps.max_total_bytes - self.total:
            self.manifest["not_found"].append({**what, "reason": "total-cap"})
            return
        self._put(inside, data, time.time())
        self.manifest["found"].append({**what, "in_bundle": f"{self.node}/{inside}", "bytes": len(data)})

    def note(self, section: str, entry: dict) -> None:
        self.manifest[section].append(entry)

    def close(self) -> None:
        self._put("manifest.json", (json.dumps(self.manifest, ensure_ascii=False, indent=2) + "\n").encode(),
                  time.time(), redact=False)
        self._tar.close()

    def _put(self, inside: str, data: bytes, mtime: float, redact: bool = True) -> None:
        if redact and self.redactor is not None:
            data = self.redactor.text(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
        info = tarfile.TarInfo(f"{self.node}/{inside}")
        info.size, info.mtime, info.mode = len(data), int(mtime), 0o644
        self._tar.addfile(info, io.BytesIO(data))
        self.total += len(data)


def _tail(path: Path, size: int, limit: int) -> tuple[bytes, bool]:
    """The file, or its last ``limit`` bytes from the first line start in them."""
    with open(path, "rb") as fh:
        if size <= limit:
            data = fh.read(limit + 1)
            if len(data) <= limit:
                return data, False
            size = len(data) + len(fh.read())
        fh.seek(max(0, size - limit))
        data = fh.read(limit)
    start = data.find(b"\n")
    return (data[start + 1:] if 0 <= start < len(data) - 1 else data), True
