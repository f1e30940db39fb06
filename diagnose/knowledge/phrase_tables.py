"""Tables of messages known by their wording (``knowledge/benign.toml``, ``knowledge/endings.toml``): each entry a
regex with an id, the project that prints the message, texts in both languages, the public source, an example it
must match and a near miss it must not. One loader checks them all the same way, and matches a Series of
messages in one combined scan on the regex engine's fast path.

A table names its array (``[[benign]]``), its text fields, its bilingual fields and any other fields with their
types; unknown fields are errors, and every error names the file and field.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from diagnose.cache import parsed_tomls
from diagnose.scan.fastregex import dfa_safe

LANGS = ("en", "zh")
_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
BASE_FIELDS = ("id", "project", "regex", "source", "example", "near_miss")


class PhraseTableError(ValueError):
    """A table is invalid; ``errors`` lists every problem, each naming the file and field."""

    def __init__(self, errors: list[str]):
        super().__init__("\n".join(errors))
        self.errors = errors


@dataclass(frozen=True)
class Spec:
    """What a table holds: the array's name, its text fields (beyond ``BASE_FIELDS``), its bilingual fields, and
    optional fields with a default (their type is the default's)."""

    array: str
    texts: tuple[str, ...] = ()
    bilingual: tuple[str, ...] = ()
    optional: dict[str, Any] = field(default_factory=dict)

    @property
    def required(self) -> set[str]:
        return set(BASE_FIELDS) | set(self.texts) | set(self.bilingual)


@dataclass(frozen=True)
class Entry:
    id: str
    project: str
    regex: str  # as loaded: ASCII word boundaries (dfa_safe)
    source: str
    example: str
    near_miss: str
    fields: dict[str, Any]  # the table's own fields: texts, bilingual texts ({"en", "zh"}), optional ones


def _matches(pattern: str, text: str) -> bool:
    return bool(pl.Series([text], dtype=pl.String).str.contains(pattern).item())


def load_table(path: Path, spec: Spec, check: bool = True) -> tuple[Entry, ...]:
    """The entries of ``path``. ``check`` validates fields and regexes and runs every example and near miss; a
    built-in table is loaded unchecked at run time (the test suite checks it)."""
    raw = None
    if not check:
        cached = parsed_tomls([path], prefix=f"{spec.array}-")
        raw = cached.get(path) if cached else None
    if raw is None:
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise PhraseTableError([f"{path}: cannot read TOML: {exc}"]) from None
    errors: list[str] = []

    def err(fld: str, msg: str) -> None:
        errors.append(f"{path}: {fld}: {msg}")

    for key in sorted(set(raw) - {spec.array}):
        err(key, "unknown field")
    items = raw.get(spec.array, [])
    if not isinstance(items, list) or not items:
        err(spec.array, f"must be a non-empty array of tables ([[{spec.array}]])")
        items = []
    entries, seen = [], set()
    allowed = spec.required | set(spec.optional)
    for i, item in enumerate(items):
        fld, before = f"{spec.array}[{i}]", len(errors)
        if not isinstance(item, dict):
            err(fld, "must be a table")
            continue
        if check:
            _check_item(item, spec, allowed, seen, lambda k, m, f=fld: err(f"{f}.{k}" if k else f, m))
            if len(errors) > before:
                continue
            _check_regex(item, lambda k, m, f=fld: err(f"{f}.{k}", m))
        if len(errors) == before:
            own = {k: item.get(k, spec.optional.get(k)) for k in (*spec.texts, *spec.bilingual, *spec.optional)}
            entries.append(Entry(item["id"], item["project"], dfa_safe(item["regex"]), item["source"],
                                 item["example"], item["near_miss"], own))
    if check and not errors:
        try:
            pl.Series([""], dtype=pl.String).str.contains(combined_pattern(tuple(entries)))
        except Exception as exc:  # noqa: BLE001
            err(spec.array, f"the entries do not combine into one regex: {exc}")
    if errors:
        raise PhraseTableError(errors)
    return tuple(entries)


def _check_item(item: dict, spec: Spec, allowed: set[str], seen: set[str], err) -> None:
    for key in sorted(set(item) - allowed):
        err(key, "unknown field")
    for key in sorted(spec.required - set(item)):
        err(key, "missing")
    for key in sorted((set(BASE_FIELDS) | set(spec.texts)) & set(item)):
        if not isinstance(item[key], str) or not item[key].strip():
            err(key, "must be non-empty text")
    for key in spec.bilingual:
        value = item.get(key)
        if key in item and (not isinstance(value, dict) or set(value) != set(LANGS) or not all(
                isinstance(value[lang], str) and value[lang].strip() for lang in LANGS)):
            err(key, "must have non-empty en and zh texts")
    for key, default in spec.optional.items():
        if key in item and not isinstance(item[key], type(default)):
            err(key, f"must be {type(default).__name__}")
    ident = item.get("id", "")
    if isinstance(ident, str) and ident:
        if not _ID.fullmatch(ident):
            err("id", f"{ident!r} must be lower-case words joined by '-'")
        if ident in seen:
            err("id", f"duplicate id {ident!r}")
        seen.add(ident)


def _check_regex(item: dict, err) -> None:
    pattern = dfa_safe(item["regex"])
    try:
        pl.Series([""], dtype=pl.String).str.contains(pattern)
    except Exception as exc:  # polars ComputeError: look-around, backreference, syntax
        err("regex", f"invalid regex: {(str(exc).splitlines() or [type(exc).__name__])[0]}")
        return
    if "(?i" in pattern and not pattern.isascii():
        err("regex", "case-insensitive pattern with non-ASCII text")
    if "(?P<" in pattern:
        err("regex", "named groups are not allowed (the entries are joined into one pattern)")
    if not _matches(pattern, item["example"]):
        err("example", "not matched by its regex")
    if _matches(pattern, item["near_miss"]):
        err("near_miss", "is matched by its regex")


def combined_pattern(entries: tuple[Entry, ...]) -> str:
    """One alternation of every entry's regex (each in a non-capturing group)."""
    return "|".join(f"(?:{e.regex})" for e in entries)


def mask(messages: pl.Series, entries: tuple[Entry, ...]) -> pl.Series:
    """True where a message matches an entry (null messages match none)."""
    if not entries:
        return pl.Series(messages.name, [False] * len(messages), dtype=pl.Boolean)
    return messages.cast(pl.String).str.contains(combined_pattern(entries)).fill_null(False)


def ids(messages: pl.Series, entries: tuple[Entry, ...]) -> pl.Series:
    """The id of the first entry (in file order) each message matches, null where none does. Only the lines the
    combined regex matched are looked at again, entry by entry."""
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
