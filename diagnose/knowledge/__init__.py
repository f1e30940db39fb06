"""What the software under diagnosis prints and what it means: the error-code tables, the message index, the
categories of source locations and the messages known to be harmless. The data lives in the repository's
``knowledge/`` folder and ships inside the wheel as ``diagnose/_knowledge``."""

from __future__ import annotations

from pathlib import Path


def builtin_knowledge_dir() -> Path:
    """``diagnose/_knowledge`` in an installed wheel, else the repository's ``knowledge/`` (a checkout)."""
    package = Path(__file__).resolve().parent.parent
    packaged = package / "_knowledge"
    return packaged if packaged.is_dir() else package.parent / "knowledge"
