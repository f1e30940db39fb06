"""The message index at run time: which released source printed a log line, and what it is about.

``message_index()`` loads the committed index once per process (decoding only; patterns are compiled for the
candidates a lookup meets). ``lookup`` takes distinct lines: a literal prefilter over every template's longest
fixed piece (see ``prefilter``) narrows tens of thousands of templates to a few per line, and each candidate is confirmed by its pattern (see ``matching``). Of several matches the one
covering the most fixed text wins, then the one whose exception class agrees with the line's, then the newest.
"""

from __future__ import annotations

import functools
import threading
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from diagnose.knowledge import categories, matching
from diagnose.knowledge.categories import category_of
from diagnose.knowledge.indexfile import IndexFile, index_path, read, unpack, version_key
from diagnose.knowledge.matching import Mode
from diagnose.knowledge.templates import normalize


@dataclass(frozen=True)
class Site:
    """Where a message comes from: the release(s) that print it, the module, function and line (in the newest
    release that has it), the exception class or log level, the template with ``{}`` holes, the category."""

    project: str
    versions: tuple[str, ...]
    path: str
    function: str
    lineno: int
    kind: str
    template: str
    category: str
    code: str
    origin: str  # python | native

    @property
    def newest(self) -> str:
        return self.versions[-1]

    @property
    def version_range(self) -> str:
        """``0.9.1rc1..0.11.0`` (one version alone when there is one)."""
        return self.versions[0] if len(self.versions) == 1 else f"{self.versions[0]}..{self.versions[-1]}"


@dataclass(frozen=True)
class ProjectStats:
    """What the index holds of one project and origin."""

    project: str
    origin: str
    templates: int
    releases: tuple[str, ...]


class MessageIndex:
    def __init__(self, data: IndexFile) -> None:
        self.data = data
        releases = data.header.releases
        self._labels = [r.version for r in releases]
        self._rank = [version_key(v) for v in self._labels]
        c = data.columns
        self._templates, self._holes, self._literal, self._lead = c.template, c.holes, c.literal, c.lead
        self._kind, self._start, self._lines = unpack("H", c.kind), unpack("I", c.start), unpack("I", c.lines)
        self._key_start, self._key_ids = data.prefilter.arrays()

    def lookup(self, messages: Sequence[str], exc_types: Sequence[str | None] | None = None) -> list[Site | None]:
        """The site of each message (None: no template matches, or the text is one of Python's own)."""
        out: list[Site | None] = [None] * len(messages)
        if not messages:
            return out
        for n, raw in enumerate(messages):
            line = normalize(raw).strip()
            candidates = self.data.prefilter.found(line, self._key_start, self._key_ids)
            if not candidates or matching.is_builtin(line, matching.boundaries(line)):
                continue
            wanted = exc_types[n] if exc_types is not None and n < len(exc_types) else None
            best = self._best(line, candidates, wanted or matching.exception_of(line))
            if best is not None:
                out[n] = self.site(best)
        return out

    def _best(self, line: str, candidates: list[int], exc: str | None) -> int | None:
        starts = matching.boundaries(line)
        best, score = None, None
        for i in candidates:
            literal = self._literal[i]
            mode = matching.compiled(self._templates[i], self._holes[i]).match(line, starts, literal, self._lead[i])
            if mode is None:
                continue
            # A cut line is sure of the leading text only: a hole may have swallowed the rest.
            coverage = literal if mode is not Mode.TRUNCATED else self._lead[i]
            agrees = exc is not None and self.data.kinds[self._kind[i]] == exc
            newest = self.data.columns.releases[self._start[i + 1] - 1]
            candidate = (coverage, int(mode), agrees, self._rank[newest])
            if score is None or candidate > score:
                best, score = i, candidate
        return best

    def __len__(self) -> int:
        return len(self._templates)

    def site(self, i: int) -> Site:
        """The site of entry ``i``."""
        c, d = self.data.columns, self.data
        project, path, template = d.projects[c.project[i]], d.paths[unpack("I", c.path[4 * i:4 * i + 4])[0]], \
            self._templates[i]
        lo, hi = self._start[i], self._start[i + 1]
        return Site(project=project, versions=tuple(self._labels[r] for r in c.releases[lo:hi]), path=path,
                    function=d.functions[unpack("I", c.function[4 * i:4 * i + 4])[0]], lineno=self._lines[hi - 1],
                    kind=d.kinds[self._kind[i]], template=template, category=category_of(project, path, template),
                    code=c.code[i], origin="python" if path.endswith(".py") else "native")

    def stats(self) -> list[ProjectStats]:
        """Templates per project and origin, with the releases harvested."""
        counts: dict[tuple[str, str], int] = defaultdict(int)
        d = self.data
        for project, path in zip(d.columns.project, unpack("I", d.columns.path)):
            counts[(d.projects[project], "python" if d.paths[path].endswith(".py") else "native")] += 1
        releases: dict[tuple[str, str], list[str]] = defaultdict(list)
        for r in self.data.header.releases:
            releases[(r.project, r.origin)].append(r.version)
        return [ProjectStats(p, o, counts[(p, o)], tuple(releases[(p, o)])) for p, o in releases]


@functools.lru_cache(maxsize=4)
def _load(path: Path) -> MessageIndex:
    return MessageIndex(read(path))


_loading = threading.Lock()  # a second caller waits for the first one's load (``warm``) rather than repeating it


def message_index(path: Path | None = None) -> MessageIndex:
    """The shipped index (or the one at ``path``), loaded once per process."""
    with _loading:
        return _load(path or index_path())


_warming: list[threading.Thread] = []
_starting = threading.Lock()  # not ``_loading``: starting the thread never waits for a load under way


def warm() -> threading.Thread:
    """Load the shipped index and the categories table in a thread of their own (once per process), while the
    files are read (pipeline/reading.py, once a file shows an error): the judge looks up the message that ended
    a run in them, and loading them took a tenth to a fifth of a second of the judge's time on a 1 GiB node."""
    def load() -> None:
        try:
            message_index()
            categories.table()
        except Exception:  # noqa: BLE001 - the judge loads them again and says what failed
            pass

    with _starting:
        if not _warming:
            _warming.append(threading.Thread(target=load, name="diagnose-knowledge", daemon=True))
            _warming[0].start()
    return _warming[0]
