"""Message templates with typed holes: the one representation the harvester writes and the matcher reads.

A template is the fixed text a program prints with holes where values go. It is stored as readable text with
``{}`` for each hole (literal braces doubled, as in ``str.format``) and a string of hole types, one letter per
hole, so a reader sees ``No available memory for the cache blocks ({} GiB)`` rather than a regex, and the
pattern is compiled only for the few templates a line might match.

Hole types say what a value looks like, which keeps a match honest (``block {}`` with an integer hole does not
match ``block size``): ``d`` an integer, ``f`` a number, ``x`` a hexadecimal value or address, ``r`` a quoted
value (a Python ``repr``), ``s`` any text.
"""

from __future__ import annotations

import re
from typing import Iterable, Union

HOLE_TYPES = "dfxrs"

# What each hole may match. ``r`` is any text because the repr of a number or a list is not quoted; ``s`` may be
# empty (an empty string formats to nothing) and is lazy so that literal text after it anchors the match.
HOLE_REGEX = {
    "d": r"[-+]?\d[\d,_]*",
    "f": r"[-+]?(?:\d[\d,_]*\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|inf|NaN|Inf)%?",
    "x": r"(?:0[xX])?[0-9a-fA-F]+|\(nil\)",
    "r": r".+?",
    "s": r".*?",
}


class Hole(str):
    """A hole in a template, by type letter (a ``str`` subclass so pieces stay cheap to build and compare)."""

    __slots__ = ()


Piece = Union[str, Hole]


def merge(pieces: Iterable[Piece]) -> list[Piece]:
    """Adjacent literals joined, empty literals dropped, and runs of text holes collapsed: ``{}{}`` matches
    what ``{}`` matches, and joined literals give the prefilter its longest fixed string."""
    out: list[Piece] = []
    for piece in pieces:
        if isinstance(piece, Hole):
            if out and isinstance(out[-1], Hole) and piece == "s" and out[-1] == "s":
                continue
            out.append(piece)
        elif piece:
            if out and not isinstance(out[-1], Hole):
                out[-1] = out[-1] + piece
            else:
                out.append(piece)
    return out


def render(pieces: Iterable[Piece]) -> tuple[str, str]:
    """The readable text (``{}`` holes, braces doubled) and the hole-type string of ``pieces``."""
    text, holes = [], []
    for piece in pieces:
        if isinstance(piece, Hole):
            text.append("{}")
            holes.append(str(piece))
        else:
            text.append(piece.replace("{", "{{").replace("}", "}}"))
    return "".join(text), "".join(holes)


_BRACES = re.compile(r"\{\{|\}\}|\{\}")


def parse(text: str, holes: str) -> list[Piece]:
    """The pieces of a rendered template (the inverse of :func:`render`)."""
    out: list[Piece] = []
    kinds = iter(holes)
    last = 0
    for m in _BRACES.finditer(text):
        out.append(text[last:m.start()])
        token = m.group()
        out.append(Hole(next(kinds, "s")) if token == "{}" else token[0])
        last = m.end()
    out.append(text[last:])
    return merge(out)


_BLANKS = re.compile(r"\s+")


def normalize(text: str) -> str:
    """Runs of blanks as one space: logs re-space and re-indent what programs print, so lines and templates are
    compared in this form."""
    return _BLANKS.sub(" ", text)


def literal_length(pieces: Iterable[Piece]) -> int:
    """Characters of fixed text, spaces excepted (a template of holes and blanks says nothing)."""
    return sum(len(p.replace(" ", "")) for p in pieces if not isinstance(p, Hole))


def leading_literal(pieces: list[Piece]) -> str:
    """The fixed text before the first hole ('' when the template starts with one)."""
    return pieces[0] if pieces and not isinstance(pieces[0], Hole) else ""


def longest_literal(pieces: Iterable[Piece]) -> str:
    """The longest fixed piece: what the prefilter searches for (every match contains it)."""
    return max((p for p in pieces if not isinstance(p, Hole)), key=len, default="")


def first_line(pieces: list[Piece]) -> tuple[list[Piece], bool]:
    """The pieces up to the first line break, and whether the template went on past it. A log prints one line
    at a time, so a line holds at most the first line of a multi-line message."""
    out: list[Piece] = []
    for piece in pieces:
        if not isinstance(piece, Hole) and "\n" in piece:
            head = piece.split("\n", 1)[0].rstrip()
            if head:
                out.append(head)
            return merge(out), True
        out.append(piece)
    return out, False


def to_regex(pieces: Iterable[Piece]) -> str:
    """The regex source of ``pieces``: literal text escaped (runs of blanks match any run of blanks, since logs
    re-space and strip), holes by type."""
    parts = []
    for piece in pieces:
        if isinstance(piece, Hole):
            parts.append(f"(?:{HOLE_REGEX.get(piece, HOLE_REGEX['s'])})")
        else:
            # Blanks at a piece's edge may be stripped (the end of a line) or eaten by an empty value: optional.
            inner = r"\s+".join(re.escape(chunk) for chunk in piece.split())
            parts.append((r"\s*" if piece[:1].isspace() else "") + inner + (r"\s*" if piece[-1:].isspace() else ""))
    return "".join(parts)
