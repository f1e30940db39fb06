"""Lines that say a run ended abnormally (``knowledge/endings.toml``): an engine or worker died, a process was
killed or exited with a failure, a daemon killed its workers. Each entry says whether the line only echoes an
error logged before it (``echo``) or quotes it (``wraps``). Loaded and checked by the phrase-table loader
(diagnose/knowledge/phrase_tables.py); read by diagnose/analysis/ending.py."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import polars as pl

from diagnose.knowledge import builtin_knowledge_dir
from diagnose.knowledge.phrase_tables import Entry, PhraseTableError, Spec, ids, load_table, mask

SPEC = Spec("ending", bilingual=("says",), optional={"echo": False, "wraps": False, "category": ""})
EndingTableError = PhraseTableError


def builtin_endings_path() -> Path:
    return builtin_knowledge_dir() / "endings.toml"


def load_endings(path: Path | str | None = None, check: bool = True) -> tuple[Entry, ...]:
    return load_table(Path(path) if path is not None else builtin_endings_path(), SPEC, check)


@cache
def builtin_endings() -> tuple[Entry, ...]:
    """The built-in table, loaded once per process without the checks."""
    return load_endings(None, check=False)


def ending_mask(messages: pl.Series) -> pl.Series:
    return mask(messages, builtin_endings())


def ending_ids(messages: pl.Series) -> pl.Series:
    return ids(messages, builtin_endings())


def entry(ident: str) -> Entry | None:
    return next((e for e in builtin_endings() if e.id == ident), None)
