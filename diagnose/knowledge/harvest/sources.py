"""The pinned inputs of the index (``knowledge/sources.toml``): releases from the package registry, checked by
sha256, and git trees pinned by commit; their files read straight out of the archives or the git objects.

Downloads are cached under ``~/.cache/diagnose-harvest/`` (never in the repository) and verified every time
they are used, so a cached file that changed is refused rather than harvested. A git source is read from a local
clone or mirror the caller names (``--git owner/name=PATH`` or ``--git-root``): the build step only reads the
objects of the pinned commit, with ``git ls-tree`` and ``git cat-file``.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import subprocess
import tarfile
import tomllib
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from diagnose.knowledge.harvest.codejson import CATALOG_NAME

CACHE = Path(os.environ.get("DIAGNOSE_HARVEST_CACHE", Path.home() / ".cache" / "diagnose-harvest"))
REGISTRY_JSON = "https://pypi.org/pypi/{project}/json"  # the registry's JSON API: where a file name is resolved
SOURCE_SUFFIXES = (".py",)
NATIVE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp")
# Folders that ship with a release but are never what a deployment runs.
SKIP_PARTS = frozenset({"tests", "test", "testing", "examples", "example", "benchmarks", "benchmark", "docs",
                        "third_party", "3rdparty", "thirdparty", "ut", "st", "llt", "stub", "stubs", "mock",
                        "mocks", "__pycache__", "tools", "scripts", "samples", "demo"})
MAX_FILE = 4 << 20  # generated tables past this size hold no messages worth a template


@dataclass(frozen=True)
class Release:
    """One pinned release: a registry file (``file`` + ``sha256``) or a git tree (``repository`` + ``commit``)."""

    project: str
    version: str
    origin: str  # python | native
    include: tuple[str, ...]  # globs over paths inside the release, after the distribution's own top folder
    file: str = ""
    sha256: str = ""
    index: str = "pypi"  # pypi: resolved through the registry; local: only from pip's find-links folders
    repository: str = ""
    commit: str = ""

    @property
    def label(self) -> str:
        return f"{self.project}=={self.version}"


@dataclass
class Sources:
    releases: list[Release]
    unavailable: list[str] = field(default_factory=list)  # sources looked for and not found, said as comments


def load(path: Path) -> Sources:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    out = []
    for entry in data.get("release", []):
        out.append(Release(project=entry["project"], version=entry["version"], origin=entry.get("origin", "python"),
                           include=tuple(entry["include"]), file=entry.get("file", ""),
                           sha256=entry.get("sha256", ""), index=entry.get("index", "pypi"),
                           repository=entry.get("repository", ""), commit=entry.get("commit", "")))
    return Sources(out, list(data.get("unavailable", [])))


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def registry_files(project: str, version: str) -> list[tuple[str, str, str]]:
    """(file name, url, sha256) of every file of a release, from the registry's JSON API."""
    url = REGISTRY_JSON.format(project=project)
    with urllib.request.urlopen(url, timeout=120) as resp:
        data = json.load(resp)
    return [(f["filename"], urllib.parse.urljoin(url, f["url"]), f["digests"]["sha256"])
            for f in data["releases"].get(version, [])]


def find_links() -> list[Path]:
    """The folders pip is configured to take files from (``find-links``), where a release not on the registry
    (a CPU build of torch) may lie."""
    try:
        out = subprocess.run(["pip", "config", "list"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    dirs = []
    for line in out.splitlines():
        if "find-links" in line and "=" in line:
            dirs += [Path(p) for p in line.split("=", 1)[1].strip().strip("'\"").split()]
    return [d for d in dirs if d.is_dir()]


def fetch(release: Release, extra_dirs: list[Path] = ()) -> Path:  # type: ignore[assignment]
    """The release's file in the cache, downloaded or copied there first; its sha256 checked."""
    target = CACHE / release.project / release.file
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        local = [d / release.file for d in [*extra_dirs, *find_links()] if (d / release.file).exists()]
        if local:
            _copy(local[0].open("rb"), target)
        elif release.index == "pypi":
            urls = [u for name, u, _ in registry_files(release.project, release.version) if name == release.file]
            if not urls:
                raise FileNotFoundError(f"{release.label}: no file {release.file} on the registry")
            with urllib.request.urlopen(urls[0], timeout=600) as resp:
                _copy(resp, target)
        else:
            raise FileNotFoundError(f"{release.label}: {release.file} is in no find-links folder")
    got = sha256_of(target)
    if got != release.sha256:
        raise ValueError(f"{release.label}: sha256 of {target.name} is {got}, sources.toml pins {release.sha256}")
    return target


def _copy(stream, target: Path) -> None:  # type: ignore[no-untyped-def]
    tmp = target.with_suffix(target.suffix + ".part")
    with tmp.open("wb") as out:
        while block := stream.read(1 << 20):
            out.write(block)
    stream.close()
    tmp.replace(target)


def wanted(path: str, release: Release) -> bool:
    """Whether a path inside a release is harvested: a source file under one of its include globs and in no
    test, example or vendored folder."""
    suffixes = NATIVE_SUFFIXES if release.origin == "native" else SOURCE_SUFFIXES
    if not path.endswith(suffixes) and not (release.origin == "native" and path.endswith("/" + CATALOG_NAME)):
        return False
    for glob in release.include:
        if fnmatch.fnmatchcase(path, glob):
            # A folder the glob names itself (MindIE's production models sit under examples/) is not skipped.
            fixed = glob.split("*", 1)[0]
            rest = path[len(fixed):] if path.startswith(fixed) else path
            return not SKIP_PARTS.intersection(rest.split("/")[:-1])
    return False


def _inner(name: str, release: Release) -> str | None:
    """A member's path with the sdist's top folder (``vllm-0.11.0/``) or a wheel's data prefix removed: the path
    from the first component that an include glob starts with."""
    parts = name.split("/")
    heads = {glob.split("/", 1)[0] for glob in release.include}
    for i, part in enumerate(parts):
        if part in heads:
            return "/".join(parts[i:])
    return None


def files(release: Release, archive: Path) -> Iterator[tuple[str, bytes]]:
    """(path, bytes) of every harvested file of a downloaded release, first occurrence of a path only."""
    seen: set[str] = set()
    if archive.name.endswith((".whl", ".zip")):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                path = _inner(info.filename, release)
                if path and path not in seen and info.file_size < MAX_FILE and wanted(path, release):
                    seen.add(path)
                    yield path, zf.read(info)
        return
    with tarfile.open(archive) as tf:
        for member in tf:
            path = _inner(member.name, release)
            if member.isfile() and path and path not in seen and member.size < MAX_FILE and wanted(path, release):
                seen.add(path)
                fh = tf.extractfile(member)
                if fh is not None:
                    yield path, fh.read()


def git_dir(release: Release, git_dirs: dict[str, Path], roots: list[Path]) -> Path | None:
    """The local git directory holding a git source: named on the command line, or found under a root as
    ``owner+name``, ``owner+name/repo`` or ``owner/name``."""
    if release.repository in git_dirs:
        return git_dirs[release.repository]
    owner, _, name = release.repository.partition("/")
    for root in roots:
        for cand in (root / f"{owner}+{name}" / "repo", root / f"{owner}+{name}", root / owner / name):
            if cand.exists():
                return cand
    return None


def git_files(release: Release, gitdir: Path) -> Iterator[tuple[str, bytes]]:
    """(path, bytes) of the harvested files of the pinned commit, read from the git objects."""
    git = ["git", f"--git-dir={gitdir}"] if (gitdir / "objects").is_dir() else ["git", "-C", str(gitdir)]
    listing = subprocess.run([*git, "ls-tree", "-r", "-l", release.commit], capture_output=True, text=True,
                             check=True).stdout
    wanted_blobs = []
    for line in listing.splitlines():
        meta, _, path = line.partition("\t")
        _mode, kind, sha, size = meta.split()
        if kind == "blob" and size != "-" and int(size) < MAX_FILE and wanted(path, release):
            wanted_blobs.append((path, sha))
    proc = subprocess.Popen([*git, "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    for path, sha in wanted_blobs:
        proc.stdin.write(sha.encode() + b"\n")
        proc.stdin.flush()
        header = proc.stdout.readline().split()
        size = int(header[2])
        data = proc.stdout.read(size)
        proc.stdout.read(1)
        yield path, data
    proc.stdin.close()
    proc.wait()
