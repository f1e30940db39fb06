"""Files that grow: what ``diagnose watch`` and ``diagnose npd`` read, one poll at a time.

Serving software writes many files and turns them over: one plog per process, vllm-ascend's size-rotated
``vllm_ascend_<time>_<pid>.log`` / ``…_002.log``, Python's ``app.log`` -> ``app.log.1``, logrotate's
``copytruncate``. A file is followed by its identity, not its name:

- **identity** is (device, inode) plus a hash of its first bytes (``head``): a rename keeps both (the rest
  of a rotated file is still read, under its new name), an inode the system reused for a new file does not;
- **truncation** (size below the offset, or a head that changed) starts the file again from its first line;
- **a copy** (``copytruncate``'s ``app.log.1``) has the head of content already read: it is read on from where
  that content was read to, so no line counts twice;
- only **complete lines** are taken; a last line without its newline waits, and is taken once the file has not
  grown for ``PARTIAL_POLLS`` polls (a process that died mid-line);
- links are never followed inside a folder (as in a batch run), a file named on the command line also brings
  its rotated siblings (``app.log.1``), and compressed files (rotated away) are not followed.

The offsets of every file are plain data (``positions()`` / ``restore()``), kept by the caller in its state
folder, so a restart resumes where it stopped. Each poll reads at most ``max_bytes_per_file`` of a file and
``max_bytes`` overall; the rest comes on the next poll, so memory stays bounded however far behind it is.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import asdict, dataclass, field
from pathlib import Path

from diagnose.ingest.names import display
from diagnose.ingest.nodes import node_from_path

HEAD_BYTES = 1024
PARTIAL_POLLS = 2
_SKIP_SUFFIXES = (".gz", ".tgz", ".tar", ".zip", ".bz2", ".xz", ".zst", ".part", ".tmp", ".swp")


@dataclass
class Position:
    """Where one followed file stands: its identity and the bytes and lines taken from it."""

    path: str  # real path (as walked from its root)
    rel: str  # relative to its root: what its node and kind are read from
    dev: int
    ino: int
    offset: int = 0  # bytes taken (whole lines)
    line: int = 0  # lines taken
    head: str = ""  # sha256 of the first head_len bytes
    head_len: int = 0
    size: int = 0  # size at the last poll
    still: int = 0  # polls without growth while a partial line waits


@dataclass
class Chunk:
    """New whole lines of one file: ``data`` holds lines ``first_line`` .. onwards, from byte ``offset``."""

    key: str
    path: str  # display form
    rel: str
    node: str | None
    first_line: int
    offset: int
    data: bytes
    mtime: float
    restarted: bool = False  # the file was truncated or replaced: what was read of it before is gone


@dataclass
class Follower:
    roots: list[str]
    exclude: frozenset[str] = frozenset()  # real paths never read (our outputs; a trailing "/": all inside)
    max_bytes_per_file: int = 8 << 20
    max_bytes: int = 64 << 20
    max_files: int = 100_000
    max_depth: int = 32
    # Files already there at the first poll of a fresh state are read from this many bytes before their end
    # (None: whole); files that appear later are read whole.
    backlog: int | None = None
    started: bool = False  # a poll was done (saved with the positions)
    files: dict[str, Position] = field(default_factory=dict)
    heads: dict[str, tuple[int, int, str]] = field(default_factory=dict)  # "len:hash" -> (offset, line, key)
    dropped: int = 0  # files over max_files, not followed
    copies: list[tuple[str, str]] = field(default_factory=list)  # this poll's (old key, key of its copy)

    # --- state ---------------------------------------------------------------------------------------------

    def positions(self) -> dict:
        return {"files": {k: asdict(p) for k, p in self.files.items()}, "heads": dict(self.heads),
                "started": self.started}

    def restore(self, saved: dict) -> None:
        self.files = {k: Position(**p) for k, p in (saved.get("files") or {}).items()}
        self.heads = {k: (int(v[0]), int(v[1]), str(v[2]) if len(v) > 2 else "")
                      for k, v in (saved.get("heads") or {}).items()}
        self.started = bool(saved.get("started"))

    # --- one poll --------------------------------------------------------------------------------------------

    def poll(self) -> list[Chunk]:
        """New whole lines of every followed file since the last poll."""
        seen: dict[str, Position] = {}
        chunks: list[Chunk] = []
        self.copies = []
        budget = self.max_bytes
        for path, rel, st in self._candidates():
            key = f"{st.st_dev}:{st.st_ino}"
            if key in seen:  # the same file reached twice (a root inside another)
                continue
            pos = self.files.get(key)
            restarted = False
            if pos is None:
                if len(seen) >= self.max_files:
                    self.dropped += 1
                    continue
                pos = self._first_sight(key, path, rel, st)
            else:
                pos.path, pos.rel = path, rel
                if st.st_size < pos.offset or not self._same_head(pos):
                    self._remember(pos, key)
                    pos.offset = pos.line = pos.head_len = pos.still = 0
                    pos.head = ""
                    restarted = True
            seen[key] = pos
            if budget > 0:
                chunk = self._read(key, pos, st, min(budget, self.max_bytes_per_file), restarted)
                if chunk is not None:
                    budget -= len(chunk.data)
                    chunks.append(chunk)
            pos.size = st.st_size
        for key, gone in self.files.items():
            if key not in seen:
                self._remember(gone, key)
        self.files = seen
        self.started = True
        return chunks

    def read_range(self, key: str, start: int, end: int) -> bytes | None:
        """Bytes ``start`` .. ``end`` of a followed file, if it is still the same file (to rebuild a window
        after a restart); None when it is gone or was replaced."""
        pos = self.files.get(key)
        if pos is None or end < start:
            return None
        try:
            with open(pos.path, "rb") as fh:
                if _head_of(fh, pos.head_len) != pos.head:
                    return None
                fh.seek(start)
                return fh.read(end - start)
        except OSError:
            return None

    # --- helpers -------------------------------------------------------------------------------------------

    def _candidates(self):
        for root in self.roots:
            base = Path(root)
            try:
                st = base.stat()
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                yield from self._walk(base)
            else:  # a file named on the command line, and its rotated siblings (app.log.1)
                folder = base.parent
                try:
                    names = sorted(e.name for e in os.scandir(folder) if e.name == base.name
                                   or e.name.startswith(base.name + "."))
                except OSError:
                    names = [base.name]
                for name in names:
                    found = self._regular(folder / name, name, follow=name == base.name)
                    if found is not None:
                        yield found

    def _walk(self, root: Path):
        stack = [(root, 0)]
        while stack:
            folder, depth = stack.pop()
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError:
                continue
            subdirs = []
            for entry in entries:
                try:
                    if entry.is_symlink():
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        if depth < self.max_depth:
                            subdirs.append((Path(entry.path), depth + 1))
                        continue
                except OSError:
                    continue
                found = self._regular(Path(entry.path), Path(entry.path).relative_to(root).as_posix(), follow=False)
                if found is not None:
                    yield found
            stack.extend(reversed(subdirs))

    def _regular(self, path: Path, rel: str, follow: bool):
        if path.name.lower().endswith(_SKIP_SUFFIXES):
            return None
        try:
            st = path.stat() if follow else path.lstat()
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode) or (self.exclude and self._excluded(path)):
            return None
        return str(path), rel, st

    def _excluded(self, path: Path) -> bool:
        real = os.path.realpath(path)
        return real in self.exclude or any(real.startswith(d) for d in self.exclude if d.endswith(os.sep))

    def _first_sight(self, key: str, path: str, rel: str, st: os.stat_result) -> Position:
        pos = Position(path=path, rel=rel, dev=st.st_dev, ino=st.st_ino)
        try:
            with open(path, "rb") as fh:
                for name, (offset, line, old) in sorted(self.heads.items(), key=lambda kv: -int(kv[0].split(":")[0])):
                    length, digest = name.split(":")
                    if int(length) <= st.st_size and _head_of(fh, int(length)) == digest:
                        # A copy (or the old name back) of content already read: read on from there; what was
                        # read of it is now this file's (the caller moves it: ``copies``).
                        pos.offset, pos.line = min(offset, st.st_size), line
                        pos.head, pos.head_len = digest, int(length)
                        if old:
                            self.copies.append((old, key))
                        del self.heads[name]
                        return pos
                if not self.started and self.backlog is not None and st.st_size > self.backlog:
                    pos.offset, pos.line = _line_start_after(fh, st.st_size - self.backlog)
        except OSError:
            pass
        return pos

    def _same_head(self, pos: Position) -> bool:
        if not pos.head_len:
            return True
        try:
            with open(pos.path, "rb") as fh:
                return _head_of(fh, pos.head_len) == pos.head
        except OSError:
            return True  # unreadable now: the read says so

    def _remember(self, pos: Position, key: str) -> None:
        if pos.head_len and pos.offset:
            self.heads[f"{pos.head_len}:{pos.head}"] = (pos.offset, pos.line, key)
            while len(self.heads) > 1000:
                self.heads.pop(next(iter(self.heads)))

    def _read(self, key: str, pos: Position, st: os.stat_result, limit: int, restarted: bool) -> Chunk | None:
        grown = st.st_size != pos.size
        if st.st_size <= pos.offset:
            return None
        try:
            with open(pos.path, "rb") as fh:
                if not pos.head_len:
                    pos.head_len = min(HEAD_BYTES, st.st_size)
                    pos.head = _head_of(fh, pos.head_len)
                fh.seek(pos.offset)
                data = fh.read(min(limit, st.st_size - pos.offset))
        except OSError:
            return None
        cut = data.rfind(b"\n")
        at_end = pos.offset + len(data) >= st.st_size
        if at_end and not data.endswith(b"\n"):
            # A partial last line waits for its newline, unless the file stopped growing around it.
            pos.still = 0 if grown else pos.still + 1
            if pos.still >= PARTIAL_POLLS:
                cut = len(data) - 1
        elif cut < 0:  # one line longer than the read: taken in parts
            cut = len(data) - 1
        if cut < 0:
            return None
        data = data[:cut + 1]
        if not data:
            return None
        chunk = Chunk(key=key, path=display(pos.path), rel=display(pos.rel), node=node_from_path(display(pos.rel))
                      or node_from_path(display(pos.path)), first_line=pos.line + 1, offset=pos.offset, data=data,
                      mtime=st.st_mtime, restarted=restarted)
        pos.offset += len(data)
        pos.line += data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
        pos.still = 0
        return chunk


def _head_of(fh, length: int) -> str:
    fh.seek(0)
    return hashlib.sha256(fh.read(length)).hexdigest()[:32] if length else ""


def _line_start_after(fh, at: int) -> tuple[int, int]:
    """(offset of the first line that starts at or after byte ``at``, lines before it)."""
    lines, done = 0, 0
    fh.seek(0)
    while done < at:
        block = fh.read(min(8 << 20, at - done))
        if not block:
            break
        lines += block.count(b"\n")
        done += len(block)
    fh.seek(max(done - 1, 0))
    if done == 0 or fh.read(1) == b"\n":
        return done, lines
    cut = fh.read(64 << 10).find(b"\n")  # the rest of the line ``at`` falls in
    return (done + cut + 1, lines + 1) if cut >= 0 else (done, lines)
