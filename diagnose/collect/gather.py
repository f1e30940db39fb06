"""What to take from each root: the files its patterns match, inside the time window, without leaving it.

- **links**: a link whose target lies inside the same root is taken as that target (once); one that leads
  out of the root, or a folder reached through a link, is not followed, and the manifest says so;
- **the window** (``--since``): a file last written before it is left out and listed;
- **order**: the newest files first, so that the total cap (see bundle.py) keeps what the incident needs.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from diagnose.collect.places import Root


@dataclass
class Found:
    kind: str
    path: Path  # the file read (a link's target inside the root)
    shown: str  # the path as found (the link's own name for a link)
    inside: str  # where it goes in the bundle, under the node's folder
    size: int
    mtime: float


def gather(roots: list[Root], since: float | None) -> tuple[list[Found], list[dict]]:
    """The files to take and the manifest entries of what was passed over."""
    taken: dict[Path, Found] = {}
    passed: list[dict] = []
    for root in roots:
        matched = False
        for pattern in root.patterns:
            for path in sorted(_glob(root.path, pattern)):
                matched = True
                item = _take(root, path, since, passed)
                if item is not None and item.path not in taken:
                    taken[item.path] = item
        if not matched:
            passed.append({"kind": root.kind, "where": f"{root.path}/{{{','.join(root.patterns)}}}",
                           "reason": "no-match"})
    return sorted(taken.values(), key=lambda f: (-f.mtime, f.inside)), passed


def _glob(root: Path, pattern: str):
    """Matches of ``pattern`` under ``root`` without walking through a linked folder."""
    for path in root.glob(pattern):
        rel = path.relative_to(root)
        if any((root / Path(*rel.parts[:i])).is_symlink() for i in range(1, len(rel.parts))):
            continue
        yield path


def _take(root: Root, path: Path, since: float | None, passed: list[dict]) -> Found | None:
    shown = str(path)
    try:
        st = path.lstat()
        real = path.parent.resolve() / path.name
        if stat.S_ISLNK(st.st_mode):
            real = path.resolve()
            if not _inside(real, root.path):
                passed.append({"kind": root.kind, "path": shown, "reason": "link-out-of-root"})
                return None
            st = real.stat()
        if not stat.S_ISREG(st.st_mode):
            return None
    except OSError as exc:
        passed.append({"kind": root.kind, "path": shown, "reason": "cannot-access",
                       "detail": str(exc.strerror or exc)})
        return None
    if since is not None and st.st_mtime < since:
        passed.append({"kind": root.kind, "path": shown, "reason": "older-than-window"})
        return None
    if not os.access(real, os.R_OK):
        passed.append({"kind": root.kind, "path": shown, "reason": "permission-denied"})
        return None
    # A link inside the root is taken as its target, under the target's own name: once, however many links.
    inside = f"{root.kind}/{_safe(root.named)}/{real.relative_to(root.path).as_posix()}"
    return Found(root.kind, real, str(real), inside, st.st_size, st.st_mtime)


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
        return True
    except ValueError:
        return False


def _safe(named: str) -> str:
    """A declared root as one folder name (``~/ascend/log`` -> ``home-ascend-log``)."""
    text = named.replace("~", "home").replace("$", "")
    return "-".join(p for p in text.replace("\\", "/").split("/") if p and p != ".") or "root"
