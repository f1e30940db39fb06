"""Necessary literals: for a regex, a few plain strings one of which every match contains.

A prefilter may keep more lines than it needs (the rules' own regexes decide later), so it can scan for a
pattern's necessary literals instead of the pattern. That matters for speed: the regex engine runs a search
for a pattern's leading literals first (memchr, Teddy, Aho-Corasick: gigabytes a second) and the automaton
only where one is found, but an alternation with one member that does not begin with a literal
(``[\\w./-]+\\.so: undefined symbol``, ``\\S*graph ... infer shape``, ``\\|\\s*[0-9a-f.:]+\\(\\d+\\)``) loses that
search for all of its members and runs the automaton over every byte: on request logs with long prompts the
vLLM prefilter's scans ran at 450 MB/s each with such members and at 2 GB/s and more without them
(docs/benchmarks.md). Written as its literals, ``[\\w./-]+\\.so: undefined symbol: \\w+`` is ``undefined symbol: ``.

The analysis is the classic one of indexed code search (a match of ``AB`` contains a necessary literal of ``A``
and one of ``B``; of ``A|B`` one of ``A``'s or one of ``B``'s): the pattern is parsed with Python's own regex
parser (the syntax the rules use is common to it and to Rust's ``regex``); a pattern it cannot parse, or whose
literals are too short to search for, has no cover and is scanned as written.
"""

from __future__ import annotations

import contextvars
import functools
import re
import warnings
from typing import Mapping

with warnings.catch_warnings():  # the parser module's public alias warns on 3.11+; the private one is the same
    warnings.simplefilter("ignore", DeprecationWarning)
    try:
        from re import _constants as C, _parser as sre_parse  # type: ignore[attr-defined]
    except ImportError:  # Python < 3.11
        import sre_constants as C  # type: ignore[no-redef]
        import sre_parse  # type: ignore[no-redef]

MIN_LITERAL = 4  # shorter literals are found everywhere: the automaton would run as often as without them
MAX_STRINGS = 32  # strings of one literal set (``[Aa]scend [Vv]ersion`` is four)
MAX_CLASS = 10  # a class of at most this many characters is a choice of literals (`[ _]`, `[Aa]`, `[0-9]`)

# Rust-only spellings the Python parser refuses, mapped to ones that mean the same for this analysis. A flag
# group inside a group (``(?:(?i)Ascend ?950|Ascend950)``, how a rule's leading ``(?i)`` reads once its
# regex is wrapped) holds to the end of that group in Rust; Python refuses flags after the start, so it is
# read as the scoped group ``(?i:...)``, which means the same. (Such members had no cover and ran on every
# line: 8 ms of each 8 MB plog chunk for two members.)
_RUST_ONLY = [(re.compile(r"\(\?-u:\\([bB])\)"), r"\\\1"), (re.compile(r"\(\?-u\)"), ""),
              (re.compile(r"(?<!\\)\(\?:\(\?([imsx]+)\)"), r"(?\1:")]


class _Set:
    """Literal strings, all matched with the same case sensitivity."""

    __slots__ = ("strings", "icase")

    def __init__(self, strings: frozenset[str], icase: bool):
        self.strings, self.icase = strings, icase

    @property
    def score(self) -> int:
        return min(map(len, self.strings)) if self.strings else 0


class _Info:
    """What a node matches: ``exact`` all its strings (None: too many or unbounded), ``cover`` a set one of
    which every match contains (None: none known)."""

    __slots__ = ("exact", "cover")

    def __init__(self, exact: _Set | None, cover: list[_Set] | None):
        self.exact, self.cover = exact, cover


_NOTHING = _Info(_Set(frozenset({""}), False), None)  # an anchor, a boundary: matches the empty string
_UNKNOWN = _Info(None, None)


def _score(cover: list[_Set] | None) -> int:
    return min((s.score for s in cover), default=0) if cover else 0


# While a cover is chosen: how often each literal was seen in a sample of the lines to scan (``plan``'s
# ``hits``; None: the longest is taken as the rarest), and the literals considered (``candidate_literals``).
_HITS: contextvars.ContextVar[Mapping[str, int] | None] = contextvars.ContextVar("hits", default=None)
_SEEN: contextvars.ContextVar[set | None] = contextvars.ContextVar("seen", default=None)


def _cost(cover: list[_Set], hits: Mapping[str, int]) -> int:
    return sum(hits.get(s.lower() if one.icase else s, 0) for one in cover for s in one.strings)


def _better(a: list[_Set] | None, b: list[_Set] | None) -> list[_Set] | None:
    seen = _SEEN.get()
    if seen is not None:
        for cover in (a, b):
            if cover is not None and _score(cover) >= MIN_LITERAL:
                seen.update((s, one.icase) for one in cover for s in one.strings)
    if a is None:
        return b
    if b is None:
        return a
    hits = _HITS.get()
    if hits is None or min(_score(a), _score(b)) < MIN_LITERAL:
        return b if _score(b) > _score(a) else a
    # Measured: the literals found on fewer lines (``] HCCL(`` begins most lines of an HCCL plog, ``ret[`` none).
    cost_a, cost_b = _cost(a, hits), _cost(b, hits)
    return b if cost_b < cost_a or (cost_b == cost_a and _score(b) > _score(a)) else a


def _concat(a: _Set, b: _Set) -> _Set | None:
    """The strings of ``a`` followed by those of ``b``; None when they differ in case sensitivity or are too
    many."""
    if a.strings == {""}:
        return b
    if b.strings == {""}:
        return a
    if a.icase != b.icase or len(a.strings) * len(b.strings) > MAX_STRINGS:
        return None
    return _Set(frozenset(x + y for x in a.strings for y in b.strings), a.icase)


def _sequence(items: list[_Info]) -> _Info:
    best: list[_Set] | None = None
    run: _Set | None = _Set(frozenset({""}), False)
    for item in items:
        best = _better(best, item.cover)
        joined = _concat(run, item.exact) if run is not None and item.exact is not None else None
        if joined is None:
            if run is not None and run.score:
                best = _better(best, [run])
            run = item.exact  # a new run starts with this item's strings (or after it)
            if run is None:
                run = _Set(frozenset({""}), False)
        else:
            run = joined
    if run is not None and run.score:
        best = _better(best, [run])
    exact = None
    if all(i.exact is not None for i in items):
        exact = run
    return _Info(exact, best)


def _branch(options: list[_Info]) -> _Info:
    exact = None
    if all(o.exact is not None for o in options) and len({o.exact.icase for o in options}) == 1:
        strings = frozenset().union(*(o.exact.strings for o in options))
        if len(strings) <= MAX_STRINGS:
            exact = _Set(strings, options[0].exact.icase)
    cover: list[_Set] | None = []
    for o in options:
        own = o.cover if o.cover is not None else ([o.exact] if o.exact is not None and o.exact.score else None)
        if own is None:
            cover = None
            break
        cover.extend(own)
    if cover is not None and sum(len(s.strings) for s in cover) > MAX_STRINGS:
        cover = None
    return _Info(exact, cover)


def _node(op, av, icase: bool) -> _Info:
    if op is C.LITERAL:
        return _Info(_Set(frozenset({chr(av)}), icase), None)
    if op is C.IN:
        chars: list[str] = []
        for o, a in av:
            if o is C.LITERAL:
                chars.append(chr(a))
            elif o is C.RANGE and a[1] - a[0] < MAX_CLASS:
                chars += [chr(c) for c in range(a[0], a[1] + 1)]
            else:  # a negated class, a category (\d, \w), a wide range
                return _UNKNOWN
        if len(chars) <= MAX_CLASS:
            return _Info(_Set(frozenset(chars), icase), None)
        return _UNKNOWN
    if op is C.SUBPATTERN:
        _, add, remove, sub = av
        inner = (icase or bool(add & C.SRE_FLAG_IGNORECASE)) and not (remove & C.SRE_FLAG_IGNORECASE)
        return _pattern(sub, inner)
    if op is C.BRANCH:
        return _branch([_pattern(b, icase) for b in av[1]])
    if op in (C.MAX_REPEAT, C.MIN_REPEAT) or op is getattr(C, "POSSESSIVE_REPEAT", None):
        low, high, sub = av
        inner = _pattern(sub, icase)
        if low == 0:
            if high == 1 and inner.exact is not None:
                return _Info(_Set(inner.exact.strings | {""}, inner.exact.icase), None)
            return _NOTHING if high == 0 else _Info(None, None)
        if low == high == 1:
            return inner
        # At least once: its cover holds, and its strings start a match of the whole repetition.
        return _Info(None, inner.cover or ([inner.exact] if inner.exact is not None and inner.exact.score else None))
    if op is C.AT:
        return _NOTHING
    if op is getattr(C, "ATOMIC_GROUP", None):
        return _pattern(av, icase)
    return _UNKNOWN


def _pattern(parsed, icase: bool) -> _Info:
    return _sequence([_node(op, av, icase) for op, av in parsed])


@functools.lru_cache(maxsize=4096)
def _parsed(pattern: str):
    text = pattern
    for rust, python in _RUST_ONLY:
        text = rust.sub(python, text)
    try:
        with warnings.catch_warnings():
            # Python warns where Rust's syntax means something else (``[[:alpha:]]``, ``[a-z&&[^x]]``): no cover.
            warnings.simplefilter("error")
            return sre_parse.parse(text)
    except (re.error, ValueError, TypeError, OverflowError, RecursionError, IndexError, Warning):
        return None


@functools.lru_cache(maxsize=4096)
def cover(pattern: str) -> list[tuple[str, bool]] | None:
    """Strings (with their case-insensitivity), one of which every match of ``pattern`` contains; None when
    the pattern cannot be parsed here or has no literal of at least MIN_LITERAL characters in every branch.
    Of several, the longest (``measured_cover`` takes the one seen least often in a sample of lines)."""
    return _cover(pattern)


def measured_cover(pattern: str, hits: Mapping[str, int]) -> list[tuple[str, bool]] | None:
    """``cover(pattern)``, choosing among the pattern's literals those with the fewest ``hits`` (how often
    each of ``candidate_literals`` was seen in a sample of the lines to scan; case-insensitive ones lower-case)."""
    token = _HITS.set(hits)
    try:
        return _cover(pattern)
    finally:
        _HITS.reset(token)


def candidate_literals(pattern: str) -> set[tuple[str, bool]]:
    """Every literal a cover of ``pattern`` could be made of (for measuring how often each is seen)."""
    seen: set = set()
    token = _SEEN.set(seen)
    try:
        found = _cover(pattern)
    finally:
        _SEEN.reset(token)
    return seen | set(found or ())


def _cover(pattern: str) -> list[tuple[str, bool]] | None:
    parsed = _parsed(pattern)
    if parsed is None:
        return None
    icase = bool(parsed.state.flags & C.SRE_FLAG_IGNORECASE)
    try:
        info = _pattern(parsed, icase)
    except RecursionError:
        return None
    found = info.cover
    if found is None and info.exact is not None and info.exact.score:
        found = [info.exact]
    if found is None or _score(found) < MIN_LITERAL:
        return None
    return sorted({(s, one.icase) for one in found for s in one.strings})


@functools.lru_cache(maxsize=4096)
def literal_only(pattern: str) -> bool:
    """Whether a line matches ``pattern`` exactly when it holds one of ``cover(pattern)``: the pattern is a
    set of case-sensitive strings, with no anchor, boundary or repetition."""
    parsed = _parsed(pattern)
    if parsed is None or parsed.state.flags & C.SRE_FLAG_IGNORECASE:
        return False
    info = _pattern(parsed, False)
    found = cover(pattern)
    return (info.exact is not None and found is not None and not _asserts(parsed)
            and not info.exact.icase and {s for s, _ in found} == set(info.exact.strings))


def _asserts(parsed) -> bool:
    for op, av in parsed:
        if op in (C.AT, C.ASSERT, C.ASSERT_NOT):
            return True
        if op is C.SUBPATTERN and (av[1] & C.SRE_FLAG_IGNORECASE or _asserts(av[3])):
            return True
        if op is C.BRANCH and any(_asserts(b) for b in av[1]):
            return True
        if op in (C.MAX_REPEAT, C.MIN_REPEAT) and _asserts(av[2]):
            return True
    return False


def cover_pattern(pattern: str) -> str | None:
    """``cover(pattern)`` as a regex (an alternation of escaped literals), or None."""
    found = cover(pattern)
    if found is None:
        return None
    plain = [escape(s) for s, icase in found if not icase]
    folded = [escape(s) for s, icase in found if icase]
    parts = plain + ([f"(?i:{'|'.join(folded)})"] if folded else [])
    return "|".join(parts)


_META = frozenset("\\.+*?()|[]{}^$#&-~")


def escape(literal: str) -> str:
    """``literal`` as a regex that both Python and Rust read as that literal (Rust refuses some of the escapes
    ``re.escape`` writes, such as an escaped space)."""
    return "".join("\\" + c if c in _META else c for c in literal)


_GLOBAL_FLAGS = re.compile(r"^\(\?[a-zA-Z]+\)")


def members(pattern: str) -> list[str]:
    """The top-level alternatives of ``pattern`` (``a|(?:b|c)|d`` gives ``a``, ``(?:b|c)``, ``d``), each
    carrying the pattern's leading global flags (``(?i)``)."""
    flags = _GLOBAL_FLAGS.match(pattern)
    prefix = flags.group() if flags else ""
    body = pattern[len(prefix):]
    out, start, depth, in_class, i = [], 0, 0, 0, 0
    while i < len(body):
        c = body[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            if c == "[":
                in_class += 1  # a nested class (Rust) or a literal (Python): either way it closes later
            elif c == "]":
                in_class -= 1
        elif c == "[":
            in_class = 1
            if body.startswith("^]", i + 1) or body.startswith("]", i + 1):
                i += 2 if body[i + 1] == "]" else 3  # a leading ']' is a member of the class
                continue
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            out.append(body[start:i])
            start = i + 1
        i += 1
    out.append(body[start:])
    return [prefix + m for m in out]


_FLAGS_OR_GROUP = re.compile(r"^(?:\(\?:|\(\?[a-zA-Z-]+\)|\(\?[a-zA-Z-]+:|\()")
_LITERAL_START = re.compile(r"(?:[A-Za-z0-9_ <'\"=:,\]-]|\\[\[\]().|])(?:[A-Za-z0-9_ ]|\\[\[\]().])")


def literal_led(pattern: str) -> bool:
    """Whether ``pattern`` begins with two literal characters (after opening groups and flags), so the engine
    can search for them before it runs the automaton. A heuristic for grouping, never for correctness."""
    while (m := _FLAGS_OR_GROUP.match(pattern)):
        pattern = pattern[m.end():]
    return _LITERAL_START.match(pattern) is not None
