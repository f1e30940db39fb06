"""The literal prefilter of the message index: which templates' fixed pieces a line contains.

Every template is found through one key (its longest fixed piece, or the start of its leading text), and a key
through its first ``GRAM`` characters: a line is cut into all its ``GRAM``-character windows, each looked up in a
dictionary of key heads, and only the keys whose head occurs are tested with a substring search. A line of a few
hundred characters costs a few hundred dictionary look-ups, whatever the number of templates.

Polars' ``str.extract_many`` (Aho-Corasick) was the first choice, but it builds its automaton on every call:
with tens of thousands of keys that alone took about a second per lookup on a two-core machine, where this
dictionary is built once when the index loads and answers 500 lines in milliseconds.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable

GRAM = 8  # characters of a key head; keys are at least this long


class GramIndex:
    """Keys by their first ``GRAM`` characters."""

    def __init__(self, keys: Iterable[str]) -> None:
        heads: dict[str, list[str]] = defaultdict(list)
        for key in keys:
            if len(key) >= GRAM:
                heads[key[:GRAM]].append(key)
        self._heads = dict(heads)

    def __len__(self) -> int:
        return sum(map(len, self._heads.values()))

    def found(self, line: str) -> list[str]:
        """The keys that occur in ``line``, each once, in order of first occurrence of their head."""
        heads = self._heads
        out: list[str] = []
        seen: set[str] = set()
        for i in range(len(line) - GRAM + 1):
            bucket = heads.get(line[i:i + GRAM])
            if bucket is None:
                continue
            for key in bucket:
                if key not in seen and line.startswith(key, i):
                    seen.add(key)
                    out.append(key)
        return out
