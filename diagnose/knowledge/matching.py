"""How one template is held against one log line: where a message may start, the three ways it may match, and
Python's own error texts, which belong to no package.

The thresholds were measured on real incident logs (a probe of distinct error lines against the index):
- a template of fewer than ``MIN_LITERAL`` fixed characters matches too much to say where a line came from;
- a line the log cut short matches a template's beginning only when ``MIN_TRUNCATED`` fixed characters lead it;
- a template found inside a longer line (a wrapper's prefix, a code appended after it) needs ``MIN_SEARCH``
  fixed characters; a shorter one must span the message: from a boundary (the start of the line, or after
  ``: ``, ``] ``, ``) ``, ``| ``) to the end of the line.
"""

from __future__ import annotations

import enum
import functools
import re

from diagnose.knowledge.prefilter import MIN_LITERAL, MIN_SEARCH, MIN_TRUNCATED
from diagnose.knowledge.templates import HOLE_REGEX, Hole, Piece, first_line, normalize, parse

__all__ = ["MIN_LITERAL", "MIN_SEARCH", "MIN_TRUNCATED", "Mode", "boundaries", "compiled", "exception_of",
           "is_builtin"]


class Mode(enum.IntEnum):
    """How a template matched, weakest first."""

    TRUNCATED = 1
    SEARCH = 2
    WHOLE = 3


# Where a message may begin: the start, or after a separator a log head or an exception prefix ends with.
_BOUNDARY = re.compile(r"(?:[:\]\)|>]|\s-)\s*")
# ``ValueError: msg``, ``torch.OutOfMemoryError: msg``: the class a traceback's last line names.
_EXC_PREFIX = re.compile(r"(?:^|[\s:\]])(?:[A-Za-z_][\w]*\.)*([A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt|Fault))"
                         r"(?:\([^)]*\))?:\s")

# Python's own messages (the interpreter's and the standard library's): a package template that happens to
# read the same must not claim them.
_BUILTINS = re.compile("|".join([
    r"No module named ", r"cannot import name ", r"(?:list|tuple|string|deque|bytearray) index out of range",
    r"'[^']+' object has no attribute ", r"module '[^']+' has no attribute ", r"type object '[^']+' has no attribute ",
    r"'[^']+' object is not (?:subscriptable|callable|iterable|an iterator)", r"unsupported operand type",
    r"takes (?:from )?\d+ (?:to \d+ )?positional arguments? but \d+ (?:were|was) given",
    r"missing \d+ required (?:positional|keyword-only) arguments?", r"got an unexpected keyword argument",
    r"got multiple values for (?:keyword )?argument", r"(?:float |integer )?division(?: or modulo)? by zero",
    r"name '[^']+' is not defined", r"local variable '[^']+' referenced before assignment",
    r"cannot access local variable", r"invalid literal for int\(\) with base", r"could not convert string to float",
    r"not enough values to unpack", r"too many values to unpack", r"maximum recursion depth exceeded",
    r"\[Errno -?\d+\]", r"CUDA out of memory\. Tried to allocate", r"CUDA error: ", r"dictionary changed size during iteration",
    r"can only concatenate ", r"must be (?:str|int|real number|a tuple), not ", r"unhashable type",
    r"Expecting (?:value|property name enclosed in double quotes): line \d+ column", r"object of type '[^']+' has no len",
    r"argument of type '[^']+' is not iterable", r"'NoneType' object ", r"Connection reset by peer",
    r"Broken pipe", r"Address already in use", r"Too many open files", r"Permission denied",
    r"undefined symbol: ", r"cannot open shared object file",
]))


def boundaries(line: str) -> list[int]:
    """The offsets where a message may start, first the start of the line."""
    out = [0]
    for m in _BOUNDARY.finditer(line):
        if m.end() < len(line) and m.end() != out[-1]:
            out.append(m.end())
        if len(out) > 24:
            break
    return out


def exception_of(line: str) -> str | None:
    """The exception class a line names as its prefix (``ValueError: ...`` -> ``ValueError``)."""
    m = _EXC_PREFIX.search(line)
    return m.group(1) if m else None


def is_builtin(line: str, starts: list[int]) -> bool:
    """Whether the line's message is one of Python's own: it begins with one, at a boundary (a package's
    message that quotes one, ``Failed to import from vllm._C with ModuleNotFoundError(...)``, stays the
    package's)."""
    return any(_BUILTINS.match(line, b) for b in starts)


_HOLE = {kind: re.compile(rx) for kind, rx in HOLE_REGEX.items()}
_TRAILER = " .;,\t"
MAX_TRIES = 8  # occurrences of a piece tried after a text hole before giving up (bounds the backtracking)


class Compiled:
    """A template's first line ready to match: its pieces with blanks normalised. Matching walks the pieces
    (fixed text found with ``str.find``, holes checked by their type's pattern), so nothing is compiled per
    template: a lookup meets hundreds of templates once each, and compiling a regex for each cost more than
    the rest of the lookup."""

    __slots__ = ("head", "continues", "literals", "lead", "builtin")

    def __init__(self, template: str, holes: str) -> None:
        head, self.continues = first_line(parse(template, holes))
        pieces: list[Piece] = [p if isinstance(p, Hole) else normalize(p) for p in head]
        if pieces and not isinstance(pieces[0], Hole):
            pieces[0] = pieces[0].lstrip()
        if pieces and not isinstance(pieces[-1], Hole):
            pieces[-1] = pieces[-1].rstrip()
        self.head = [p for p in pieces if p]
        self.literals = [p for p in self.head if not isinstance(p, Hole)]
        self.lead = self.head[0] if self.head and not isinstance(self.head[0], Hole) else ""
        # A package that re-raises Python's own words (``'{}' object has no attribute '{}'``) does not own them.
        self.builtin = _BUILTINS.match("".join("x" if isinstance(p, Hole) else p for p in self.head)) is not None

    def in_order(self, line: str) -> bool:
        """Whether every fixed piece occurs in the line, in order (a necessary condition of a full match)."""
        pos = 0
        for lit in self.literals:
            i = line.find(lit, pos)
            if i < 0:
                return False
            pos = i + len(lit)
        return True

    def _walk(self, line: str, k: int, pos: int, pending: Hole | None, to_end: bool) -> bool:
        """Whether pieces ``k:`` match ``line`` from ``pos`` (a hole before them still open as ``pending``),
        reaching the end of the line when ``to_end``."""
        head = self.head
        while k < len(head) and isinstance(head[k], Hole):
            pending = head[k] if pending is None or pending == "s" else pending
            k += 1
        if k == len(head):
            rest = line[pos:].rstrip(_TRAILER) if to_end else ""
            if pending is None:
                return not rest
            return bool(_HOLE[pending].fullmatch(rest)) if rest else pending == "s" or not to_end
        piece = head[k]
        if pending is None:
            return line.startswith(piece, pos) and self._walk(line, k + 1, pos + len(piece), None, to_end)
        j = line.find(piece, pos)
        for _ in range(MAX_TRIES):
            if j < 0:
                return False
            if _HOLE[pending].fullmatch(line, pos, j) and self._walk(line, k + 1, j + len(piece), None, to_end):
                return True
            j = line.find(piece, j + 1)
        return False

    def match(self, line: str, starts: list[int], literal: int, lead: int) -> Mode | None:
        """The strongest way this template matches the (normalised) line (None: not at all)."""
        if self.builtin:
            return None
        if self.in_order(line):
            # Whole: from a boundary to the end of the line.
            for b in starts:
                if (not self.lead or line.startswith(self.lead, b)) and self._walk(line, 0, b, None, True):
                    return Mode.WHOLE
            if literal >= MIN_SEARCH:
                # Inside a longer line; the first line of a longer message must still end its log line.
                first = self.literals[0]
                offset = 0 if self.lead else 1  # a leading hole takes whatever comes before the first piece
                i = line.find(first)
                while i >= 0:
                    if self._walk(line, offset, i, None, self.continues):
                        return Mode.SEARCH
                    i = line.find(first, i + 1)
        if lead >= MIN_TRUNCATED and self.lead:
            probe = self.lead[:MIN_TRUNCATED]
            for b in starts:
                tail = line[b:].rstrip()
                if len(tail) >= MIN_TRUNCATED and tail.startswith(probe) and cut_short(self.head, tail):
                    return Mode.TRUNCATED
        return None


def cut_short(head: list[Piece], tail: str) -> bool:
    """Whether ``tail`` is the beginning of a message of this template, cut off anywhere: each fixed piece in
    turn where it belongs, each hole's text of its type, and the text allowed to stop inside a piece or a
    hole. (A hand-written partial match: no pattern to compile for the few lines that need it.)"""
    pos, pending = 0, None
    for piece in head:
        if isinstance(piece, Hole):
            pending = piece
            continue
        if pending is None:
            rest = tail[pos:]
            if len(rest) <= len(piece):
                return piece.startswith(rest)
            if not tail.startswith(piece, pos):
                return False
            pos += len(piece)
            continue
        j = tail.find(piece, pos)
        if j < 0:  # the line stops in this hole or in the piece after it
            return True
        if not _HOLE[pending].fullmatch(tail, pos, j):
            return False
        pos, pending = j + len(piece), None
    return True


@functools.lru_cache(maxsize=8192)
def compiled(template: str, holes: str) -> Compiled:
    return Compiled(template, holes)
