"""The literal prefilter of the message index: which templates' fixed pieces a line contains.

Every matchable template is found through one or two keys (its longest fixed piece, and the start of its
leading text for lines cut short), and a key through its first ``GRAM`` characters: a line is cut into all its
``GRAM``-character windows, each looked up in a dictionary of key heads, and only the keys whose head occurs
are tested with a substring search. A line of a few hundred characters costs a few hundred dictionary look-ups,
whatever the number of templates. Keys and lines are compared with blanks normalised. The keys, their entries and the heads are computed when the index is built
and stored in it, so loading decodes them (in C) instead of building them.

Polars' ``str.extract_many`` (Aho-Corasick) was the first choice, but it builds its automaton on every call:
with tens of thousands of keys that alone took about a second per lookup on a two-core machine.
"""

from __future__ import annotations

import sys
from array import array
from collections import defaultdict

import msgspec

from diagnose.knowledge.templates import Piece, first_line, leading_literal, literal_length, longest_literal, normalize

# The thresholds of matching, measured on real incident logs (see ``matching``): fixed characters a template
# needs at all, ahead of its first hole for a line cut short, and to be found inside a longer line.
MIN_LITERAL = 15
MIN_TRUNCATED = 20
MIN_SEARCH = 25
GRAM = 8  # characters of a key head; shorter keys are not searched for
KEY = 24  # characters of a key: a prefix of a necessary piece is necessary too, and shorter keys keep the file small


class Prefilter(msgspec.Struct, array_like=True, frozen=True):
    """``keys`` sorted, so the keys sharing a head are contiguous: ``heads`` maps a head to its first key number
    times 65536 plus the number of its keys. Key ``k`` finds the entries ``ids[start[k]:start[k + 1]]`` (both
    packed arrays). Plain integers and two byte strings decode several times faster than a list per head and
    per key, which is most of the load time."""

    keys: list[str]
    heads: dict[str, int]
    start: bytes  # I, one more than there are keys
    ids: bytes  # I

    def arrays(self) -> tuple[array, array]:
        return _unpack(self.start), _unpack(self.ids)

    def found(self, line: str, start: array, ids: array) -> list[int]:
        """The entries whose keys occur in ``line``, each once (``start`` and ``ids`` from :meth:`arrays`)."""
        heads, keys = self.heads, self.keys
        out: list[int] = []
        seen: set[int] = set()
        for i in range(len(line) - GRAM + 1):
            packed = heads.get(line[i:i + GRAM])
            if packed is None:
                continue
            first = packed >> 16
            for k in range(first, first + (packed & 0xFFFF)):
                if k not in seen and line.startswith(keys[k], i):
                    seen.add(k)
                    out.extend(ids[start[k]:start[k + 1]])
        return list(dict.fromkeys(out))


def _pack(values: list[int]) -> bytes:
    arr = array("I", values)
    if sys.byteorder == "big":
        arr.byteswap()
    return arr.tobytes()


def _unpack(data: bytes) -> array:
    arr = array("I")
    arr.frombytes(data)
    if sys.byteorder == "big":
        arr.byteswap()
    return arr


def keys_of(pieces: list[Piece]) -> list[str]:
    """The keys a template is found by: none when it is too short to match anything."""
    head, _ = first_line(pieces)
    if literal_length(head) < MIN_LITERAL:
        return []
    out = []
    key = normalize(longest_literal(head)).strip()
    if len(key) >= GRAM:
        out.append(key[:KEY])
    lead = normalize(leading_literal(head)).lstrip()
    if literal_length([lead]) >= MIN_TRUNCATED and not lead.startswith(key[:KEY]):
        out.append(lead[:MIN_TRUNCATED])  # a line cut short may end before the longest piece
    return out


def build(templates: list[list[Piece]]) -> Prefilter:
    by_key: dict[str, list[int]] = defaultdict(list)
    for i, pieces in enumerate(templates):
        for key in keys_of(pieces):
            by_key[key].append(i)
    keys = sorted(by_key)
    heads: dict[str, int] = {}
    start, ids = [0], []
    for k, key in enumerate(keys):
        head = key[:GRAM]
        heads[head] = heads[head] + 1 if head in heads else (k << 16) + 1
        ids.extend(by_key[key])
        start.append(len(ids))
    return Prefilter(keys, heads, _pack(start), _pack(ids))
