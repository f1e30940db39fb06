"""Messages known to be harmless (``knowledge/benign.toml``): the data half of "benign by knowledge".

Start-up probes, capability checks that fall back, deprecation and exit noise: lines the software prints, some at
ERROR level, on healthy runs. Each entry has a regex, the project and component that print it, why it is harmless
(en/zh), the public source that shows so, an example it must match and a near miss (a real failure with similar
words) it must not. Schema and how to add an entry: docs/code-tables.md ("Benign messages").

API, vectorised over a polars Series of messages:

- ``benign_mask(messages)``: Boolean Series, true where some entry matches. One combined alternation on the Rust
  regex engine's DFA (``fastregex.dfa_safe`` makes every ``\\b`` an ASCII boundary), so it costs one scan per line.
- ``benign_ids(messages)``: String Series, the id of the first entry (in file order) that matches, null elsewhere.
  Only the lines the combined regex matched are looked at again, entry by entry.
- ``load_benign(path, check)``: the entries; ``check=True`` compiles every regex and tests its example and near
  miss, and raises ``BenignTableError`` listing every problem with the file and field.

Nothing here decides a verdict: the passes that read these masks decide what a benign line may not do.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import polars as pl

from diagnose.cache import parsed_tomls
from diagnose.knowledge import builtin_knowledge_dir
from diagnose.scan.fastregex import dfa_safe

LANGS = ("en", "zh")
_FIELDS = {"id", "project", "component", "regex", "why", "source", "example", "near_miss"}
_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


class BenignTableError(ValueError):
    """The benign table is invalid; ``errors`` lists every problem, each naming the file and field."""

    def __init__(self, errors: list[str]):
        super().__init__("\n".join(errors))
        self.errors = errors


@dataclass(frozen=True)
class BenignEntry:
    id: str
    project: str
    component: str
    regex: str  # as loaded: ASCII word boundaries (dfa_safe)
    why: dict[str, str]
    source: str
    example: str
    near_miss: str


def builtin_benign_path() -> Path:
    return builtin_knowledge_dir() / "benign.toml"


def _matches(pattern: str, text: str) -> bool:
    return bool(pl.Series([text], dtype=pl.String).str.contains(pattern).item())


def load_benign(path: Path | str | None = None, check: bool = True) -> tuple[BenignEntry, ...]:
    """The entries of ``path`` (default: the built-in table). ``check`` validates fields and regexes and runs every
    example and near miss; the built-in table is loaded unchecked at run time (the test suite checks it)."""
    path = Path(path) if path is not None else builtin_benign_path()
    raw = None
    if not check:
        cached = parsed_tomls([path], prefix="benign-")
        raw = cached.get(path) if cached else None
    if raw is None:
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise BenignTableError([f"{path}: cannot read TOML: {exc}"]) from None
    errors: list[str] = []

    def err(fld: str, msg: str) -> None:
        errors.append(f"{path}: {fld}: {msg}")

    if set(raw) - {"benign"}:
        for key in sorted(set(raw) - {"benign"}):
            err(key, "unknown field")
    items = raw.get("benign", [])
    if not isinstance(items, list) or not items:
        err("benign", "must be a non-empty array of tables ([[benign]])")
        items = []
    entries, seen = [], set()
    for i, item in enumerate(items):
        fld, before = f"benign[{i}]", len(errors)
        if not isinstance(item, dict):
            err(fld, "must be a table")
            continue
        if check:
            for key in sorted(set(item) - _FIELDS):
                err(f"{fld}.{key}", "unknown field")
            for key in sorted(_FIELDS - set(item)):
                err(f"{fld}.{key}", "missing")
            for key in sorted((_FIELDS - {"why"}) & set(item)):
                if not isinstance(item[key], str) or not item[key].strip():
                    err(f"{fld}.{key}", "must be non-empty text")
            why = item.get("why")
            if not isinstance(why, dict) or set(why) != set(LANGS) or not all(
                    isinstance(why[lang], str) and why[lang].strip() for lang in LANGS):
                err(f"{fld}.why", "must have non-empty en and zh texts")
            ident = item.get("id", "")
            if isinstance(ident, str) and ident:
                if not _ID.fullmatch(ident):
                    err(f"{fld}.id", f"{ident!r} must be lower-case words joined by '-'")
                if ident in seen:
                    err(f"{fld}.id", f"duplicate id {ident!r}")
                seen.add(ident)
            if len(errors) > before:
                continue
            pattern = dfa_safe(item["regex"])
            try:
                pl.Series([""], dtype=pl.String).str.contains(pattern)
            except Exception as exc:  # polars ComputeError: look-around, backreference, syntax
                err(f"{fld}.regex", f"invalid regex: {(str(exc).splitlines() or [type(exc).__name__])[0]}")
                continue
            if "(?i" in pattern and not pattern.isascii():
                err(f"{fld}.regex", "case-insensitive pattern with non-ASCII text")
            if "(?P<" in pattern:
                err(f"{fld}.regex", "named groups are not allowed (the entries are joined into one pattern)")
            if not _matches(pattern, item["example"]):
                err(f"{fld}.example", "not matched by its regex")
            if _matches(pattern, item["near_miss"]):
                err(f"{fld}.near_miss", "is matched by its regex")
        if len(errors) == before:
            entries.append(BenignEntry(item["id"], item["project"], item["component"], dfa_safe(item["regex"]),
                                       dict(item["why"]), item["source"], item["example"], item["near_miss"]))
    if check and not errors:
        try:
            pl.Series([""], dtype=pl.String).str.contains(combined_pattern(tuple(entries)))
        except Exception as exc:  # noqa: BLE001
            err("benign", f"the entries do not combine into one regex: {exc}")
    if errors:
        raise BenignTableError(errors)
    return tuple(entries)


def combined_pattern(entries: tuple[BenignEntry, ...]) -> str:
    """One alternation of every entry's regex (each in a non-capturing group)."""
    return "|".join(f"(?:{e.regex})" for e in entries)


@cache
def builtin_entries() -> tuple[BenignEntry, ...]:
    """The built-in table, loaded once per process without the checks."""
    return load_benign(None, check=False)


def benign_mask(messages: pl.Series, entries: tuple[BenignEntry, ...] | None = None) -> pl.Series:
    """True where a message matches a benign entry (null messages are not benign)."""
    entries = builtin_entries() if entries is None else entries
    if not entries:
        return pl.Series(messages.name, [False] * len(messages), dtype=pl.Boolean)
    return messages.cast(pl.String).str.contains(combined_pattern(entries)).fill_null(False)


def benign_ids(messages: pl.Series, entries: tuple[BenignEntry, ...] | None = None) -> pl.Series:
    """The id of the first benign entry each message matches, null where none does."""
    entries = builtin_entries() if entries is None else entries
    frame = pl.DataFrame({"m": messages.cast(pl.String)}).with_row_index("_i")
    if not entries or frame.height == 0:
        return pl.Series(messages.name, [None] * len(messages), dtype=pl.String)
    hit = frame.filter(pl.col("m").str.contains(combined_pattern(entries)))
    which: Any = pl.lit(None, dtype=pl.String)
    for entry in reversed(entries):  # first entry wins: build the chain from the last one
        which = pl.when(pl.col("m").str.contains(entry.regex)).then(pl.lit(entry.id)).otherwise(which)
    hit = hit.select("_i", id=which)
    out = frame.select("_i").join(hit, on="_i", how="left").sort("_i")["id"]
    return out.alias(messages.name)
