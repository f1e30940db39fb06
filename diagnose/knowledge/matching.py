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

from diagnose.knowledge.templates import HOLE_REGEX, Hole, Piece, first_line, parse, to_regex

MIN_LITERAL = 15
MIN_TRUNCATED = 20
MIN_SEARCH = 25


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
    r"argument of type '[^']+' is not iterable", r"'NoneType' object ", r"^\s*KeyError: '", r"Connection reset by peer",
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


def is_builtin(line: str) -> bool:
    """Whether the line carries one of Python's own messages."""
    return _BUILTINS.search(line) is not None


class Compiled:
    """A template's first line as patterns, each compiled when first needed (only the candidates the prefilter
    keeps get this far), with its fixed pieces in order for a cheap check before any regex runs."""

    __slots__ = ("head", "body", "continues", "literals", "lead", "_whole", "_search")

    def __init__(self, template: str, holes: str) -> None:
        head, self.continues = first_line(parse(template, holes))
        self.head = head
        self.body = to_regex(head)
        self.literals = [p.strip() for p in head if type(p) is str and p.strip()]  # Hole is a str subclass
        self.lead = head[0] if head and type(head[0]) is str else ""
        self._whole: re.Pattern[str] | None = None
        self._search: re.Pattern[str] | None = None

    def in_order(self, line: str) -> bool:
        """Whether every fixed piece occurs in the line, in order (a necessary condition of a full match)."""
        pos = 0
        for lit in self.literals:
            i = line.find(lit.split()[0] if " " in lit else lit, pos)
            if i < 0:
                return False
            pos = i + 1
        return True

    def match(self, line: str, starts: list[int], literal: int, lead: int) -> Mode | None:
        """The strongest way this template matches the line (None: not at all)."""
        if self.in_order(line):
            if self._whole is None:
                self._whole = re.compile(rf"(?:{self.body})[\s.;,]*")
            first = self.lead.lstrip().split(" ", 1)[0]
            ends = self.literals[-1].rstrip(" .;,") if type(self.head[-1]) is str else ""
            if not ends or line.rstrip(" .;,\t").endswith(ends):
                # Cheap guards first: the message must start with the first piece and end with the last one.
                if any(self._whole.fullmatch(line, b) for b in starts if line.startswith(first, b)):
                    return Mode.WHOLE
            if literal >= MIN_SEARCH:
                if self._search is None:
                    # The first line of a longer message ends its log line: inside a line it must end there too.
                    self._search = re.compile(rf"{self.body}\s*$" if self.continues else self.body)
                if self._search.search(line):
                    return Mode.SEARCH
        if lead >= MIN_TRUNCATED and self.lead:
            probe = self.lead.strip()[:MIN_TRUNCATED]
            for b in starts:
                tail = line[b:].rstrip()
                if len(tail) >= MIN_TRUNCATED and tail.startswith(probe) and cut_short(self.head, tail):
                    return Mode.TRUNCATED
        return None


_HOLE = {kind: re.compile(rx) for kind, rx in HOLE_REGEX.items()}


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
