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
  miss, and raises ``BenignTableError`` listing every problem with the file and field (diagnose/knowledge/phrase_tables.py).

Nothing here decides a verdict: the passes that read these masks decide what a benign line may not do.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import polars as pl

from diagnose.knowledge import builtin_knowledge_dir
from diagnose.knowledge.phrase_tables import Entry, PhraseTableError, Spec, combined_pattern, ids, load_table, mask

SPEC = Spec("benign", texts=("component",), bilingual=("why",))
BenignTableError = PhraseTableError


class BenignEntry(Entry):
    """An entry of the benign table: ``component`` and ``why`` (en/zh) besides the common fields."""

    @property
    def component(self) -> str:
        return self.fields["component"]

    @property
    def why(self) -> dict[str, str]:
        return self.fields["why"]


def builtin_benign_path() -> Path:
    return builtin_knowledge_dir() / "benign.toml"


def load_benign(path: Path | str | None = None, check: bool = True) -> tuple[BenignEntry, ...]:
    """The entries of ``path`` (default: the built-in table); ``check``: see phrase_tables.load_table."""
    entries = load_table(Path(path) if path is not None else builtin_benign_path(), SPEC, check)
    return tuple(BenignEntry(**e.__dict__) for e in entries)


@cache
def builtin_entries() -> tuple[BenignEntry, ...]:
    """The built-in table, loaded once per process without the checks."""
    return load_benign(None, check=False)


def benign_mask(messages: pl.Series, entries: tuple[BenignEntry, ...] | None = None) -> pl.Series:
    """True where a message matches a benign entry (null messages are not benign)."""
    return mask(messages, builtin_entries() if entries is None else entries)


def benign_ids(messages: pl.Series, entries: tuple[BenignEntry, ...] | None = None) -> pl.Series:
    """The id of the first benign entry each message matches, null where none does."""
    return ids(messages, builtin_entries() if entries is None else entries)


__all__ = ["BenignEntry", "BenignTableError", "benign_ids", "benign_mask", "builtin_benign_path", "builtin_entries",
           "combined_pattern", "load_benign"]
