"""Paths in their display form, archive members included: ``logs.tgz!node-1/plog/plog-1.log`` is the member
``node-1/plog/plog-1.log`` of ``logs.tgz`` (members of members chain: ``a.zip!b.tgz!c.log``). A backslash is a
Windows separator. Every room that needs a part of such a path asks here, so the form is parsed in one place."""

from __future__ import annotations

MEMBER = "!"  # between an archive and the path of a member inside it


def segments(path: str) -> list[str]:
    """Every folder and file name of ``path``, across archive boundaries, in order (empty names dropped)."""
    return [p for p in path.replace("\\", "/").replace(MEMBER, "/").split("/") if p]


def base_name(path: str) -> str:
    """The file name: the last segment (of the innermost member for an archive member)."""
    parts = segments(path)
    return parts[-1] if parts else ""


def folder(path: str) -> str:
    """Everything before the file name, the archive kept: ``a.zip!day/decode/d_0.csv`` -> ``a.zip!day/decode``."""
    path = path.replace("\\", "/")
    cut = max(path.rfind("/"), path.rfind(MEMBER))
    return path[:cut] if cut >= 0 else ""


def in_archive(path: str) -> bool:
    """Whether ``path`` names a member inside an archive (it cannot be opened as a plain file)."""
    return MEMBER in path


def archive_and_members(path: str) -> tuple[str, list[str]]:
    """(the outermost file, the member paths inside it, outermost first)."""
    outer, *members = path.split(MEMBER)
    return outer, members
