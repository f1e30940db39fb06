"""The build step: every pinned release read, its message sites extracted, sites merged across releases, and
the index written as one file with a header that says what it was built from.

A site is one message at one place: the same template raised from the same function of the same module with
the same class is one entry whatever release it appears in, carrying the line it sits at in each release. The
entries are sorted, the tables built in a fixed order and the gzip stamp zeroed, so the same inputs give the
same bytes.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from diagnose.knowledge.harvest import cextract, codejson, pyextract, sources as src
from diagnose.knowledge import prefilter
from diagnose.knowledge.templates import first_line, leading_literal, literal_length, parse
from diagnose.knowledge.indexfile import (
    FORMAT, Entry, Header, IndexFile, ReleaseInfo, columns, file_sha256, harvester_sha256, version_key, write,
)

Key = tuple[str, str, str, str, str, str, str]  # project, path, function, kind, template, holes, code


@dataclass
class _Harvest:
    """Sites by key, each with its line per release (the release's position in ``labels``)."""

    labels: list[tuple[str, str]] = field(default_factory=list)
    sites: dict[Key, dict[int, int]] = field(default_factory=dict)


def _ordered(releases: list[src.Release]) -> list[src.Release]:
    """Projects in the order sources.toml first names them; a project's releases by version."""
    first: dict[str, int] = {}
    for r in releases:
        first.setdefault(r.project, len(first))
    return sorted(releases, key=lambda r: (first[r.project], r.origin, version_key(r.version)))


def _release_files(release: src.Release, git_dirs: dict[str, Path], git_roots: list[Path],
                   find_links: list[Path]) -> Iterator[tuple[str, bytes]]:
    if release.repository:
        gitdir = src.git_dir(release, git_dirs, git_roots)
        if gitdir is None:
            raise FileNotFoundError(f"{release.label}: no local clone of {release.repository}; pass "
                                    f"--git {release.repository}=PATH or --git-root")
        return src.git_files(release, gitdir)
    return src.files(release, src.fetch(release, find_links))


def harvest_release(path_bytes: Iterator[tuple[str, bytes]], origin: str) -> tuple[list[tuple[str, pyextract.Found]],
                                                                                    int, int]:
    """The sites of one release's files, with the number of files read and of files that did not parse."""
    out: list[tuple[str, pyextract.Found]] = []
    read = unparsed = 0
    for path, data in path_bytes:
        read += 1
        text = data.decode("utf-8", errors="replace")
        try:
            if path.endswith(codejson.CATALOG_NAME):
                found = list(codejson.extract(text))
            elif origin == "native" or not path.endswith(".py"):
                found = list(cextract.extract(text))
            else:
                found = list(pyextract.extract(text, path))
        except (SyntaxError, ValueError, RecursionError):
            unparsed += 1
            continue
        out.extend((path, f) for f in found)
    return out, read, unparsed


def build(sources_path: Path, out: Path, git_dirs: dict[str, Path], git_roots: list[Path],
          find_links: list[Path], only: set[str]) -> int:
    sources = src.load(sources_path)
    releases = _ordered([r for r in sources.releases if not only or r.project in only])
    acc = _Harvest()
    infos: list[ReleaseInfo] = []
    for release in releases:
        started = time.monotonic()
        try:
            found, read, unparsed = harvest_release(_release_files(release, git_dirs, git_roots, find_links),
                                                    release.origin)
        except (FileNotFoundError, ValueError, OSError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        number = len(acc.labels)
        acc.labels.append((release.project, release.version))
        keys = set()
        for path, f in found:
            key = (release.project, path, f.function, f.kind, f.template, f.holes, f.code)
            keys.add(key)
            acc.sites.setdefault(key, {}).setdefault(number, f.lineno)
        infos.append(ReleaseInfo(release.project, release.version, release.origin, read, unparsed, len(keys)))
        print(f"{release.label:<32} {release.origin:<6} {read:>5} files {unparsed:>3} unparsed {len(keys):>6} "
              f"sites  {time.monotonic() - started:5.1f}s", file=sys.stderr)
    header = Header(FORMAT, file_sha256(sources_path), harvester_sha256(), infos, sources.unavailable)
    index = assemble(header, acc)
    write(index, out)
    print(f"{len(index.columns.template)} entries, {out.stat().st_size / 1e6:.2f} MB -> {out}", file=sys.stderr)
    return 0


def assemble(header: Header, acc: _Harvest) -> IndexFile:
    """The index file of merged sites: tables of repeated strings in sorted order, entries sorted by place."""
    projects = sorted({k[0] for k in acc.sites})
    kinds = sorted({k[3] for k in acc.sites})
    paths = sorted({k[1] for k in acc.sites})
    functions = sorted({k[2] for k in acc.sites})
    pi, ki = {p: i for i, p in enumerate(projects)}, {k: i for i, k in enumerate(kinds)}
    pa, fu = {p: i for i, p in enumerate(paths)}, {f: i for i, f in enumerate(functions)}
    entries, parsed = [], []
    for key in sorted(acc.sites, key=lambda k: (k[0], k[1], min(acc.sites[k].values()), k[4], k[3], k[2], k[6])):
        project, path, function, kind, template, holes, code = key
        lines = acc.sites[key]
        numbers = sorted(lines)
        pieces = parse(template, holes)
        head, _ = first_line(pieces)
        parsed.append(pieces)
        entries.append(Entry(pi[project], ki[kind], pa[path], fu[function], template, holes, code, numbers,
                             [lines[n] for n in numbers], literal_length(head),
                             literal_length([leading_literal(head)])))
    return IndexFile(header, projects, kinds, paths, functions, columns(entries), prefilter.build(parsed))
