"""The state folder: what a restart needs to resume, kept between ticks (``watch``) and invocations (``npd``).

``state.json`` holds the followed files' positions, where each file's window starts (a restart reads those
lines again rather than keeping a copy), the clock, the open and recently resolved findings with the opened
counters and the event sequence, and per NPD category what the last invocation already said. It is written
atomically after every tick that changed something, so a process killed at any moment finds the last whole
state; ``lock`` serialises the processes that share a folder (NPD may start several plugins at once).
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from diagnose.bounded import REPORT_BYTES, json_loads, read_capped
from diagnose.writer import write_file

VERSION = 1
STATE_FILE = "state.json"
LOCK_FILE = "lock"


class StateError(Exception):
    """The state folder cannot be used: the message says which path and why."""


def default_folder() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "diagnose" / "watch"


def load(folder: Path) -> dict:
    """The saved state, or an empty one (a missing, unreadable or older-version file starts afresh). Read within
    the bounds of diagnose/bounded.py: a FIFO, a link or a device in the state file's place, or JSON nested past
    the depth limit, is no state (never waited on, followed or read without end)."""
    path = folder / STATE_FILE
    try:
        data = json_loads(read_capped(path, REPORT_BYTES), str(path))
    except (OSError, ValueError):  # missing, not a regular file, too large, not JSON
        return {}
    return data if isinstance(data, dict) and data.get("version") == VERSION else {}


def save(folder: Path, state: dict) -> None:
    # The state file is ours: whatever stands in its place (a FIFO, a link) is replaced, never written through.
    write_file(folder / STATE_FILE, json.dumps({**state, "version": VERSION}, separators=(",", ":")), "--state",
               through_special=False)


def prepare(folder: Path) -> Path:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StateError(f"{folder}: {exc.strerror or exc}") from None
    if not os.access(folder, os.W_OK):
        raise StateError(f"{folder}: not writable")
    return folder


@contextmanager
def locked(folder: Path, timeout_s: float | None = None) -> Iterator[None]:
    """Hold the folder's lock; wait at most ``timeout_s`` (None: as long as it takes). Raises StateError on a
    timeout."""
    try:
        fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise StateError(f"{folder / LOCK_FILE}: {exc.strerror or exc}") from None
    try:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (fcntl.LOCK_NB if deadline is not None else 0))
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise StateError(f"{folder}: another diagnose holds this state folder") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)
