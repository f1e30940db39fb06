"""Format strings to template pieces: Python's ``%`` and ``str.format`` mini-languages and C's printf.

Each conversion becomes a typed hole (see ``diagnose.knowledge.templates``) and the literal parts are kept
exactly, so the template matches what the program printed. A string the parser cannot read (a stray ``{`` in a
format call would raise at run time too) is kept as literal text: the program prints it that way when it is not
formatted, and a wrong hole costs less than a lost message.
"""

from __future__ import annotations

import re
import string

from diagnose.knowledge.templates import Hole, Piece, merge

# %[(name)][flags][width][.precision][length]type, with %% as a literal percent sign.
_PERCENT = re.compile(r"%(?:\((?P<name>[^)]*)\))?[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlL]?(?P<type>[diouxXeEfFgGcrsa%])")
_PERCENT_TYPES = {"d": "d", "i": "d", "u": "d", "o": "d", "x": "x", "X": "x", "e": "f", "E": "f", "f": "f",
                  "F": "f", "g": "f", "G": "f", "c": "s", "r": "r", "a": "r", "s": "s"}


def percent(fmt: str) -> list[Piece]:
    """A ``%``-style format (``logger.error("x %d", n)``, ``"x %(n)s" % d``) as pieces."""
    out: list[Piece] = []
    last = 0
    for m in _PERCENT.finditer(fmt):
        out.append(fmt[last:m.start()])
        kind = m.group("type")
        out.append("%" if kind == "%" else Hole(_PERCENT_TYPES[kind]))
        last = m.end()
    out.append(fmt[last:])
    return merge(out)


_SPEC_TYPE = {"d": "d", "n": "d", "b": "d", "o": "d", "c": "s", "x": "x", "X": "x", "e": "f", "E": "f",
              "f": "f", "F": "f", "g": "f", "G": "f", "%": "f", "s": "s"}


def spec_hole(spec: str, conversion: str | None) -> Hole:
    """The hole a replacement field makes: ``!r``/``!a`` a quoted value, else by the spec's presentation type
    (the last character of the spec: ``{x:>8.2f}`` is a number, ``{x:>8}`` text, ``{x:,d}`` an integer)."""
    if conversion in ("r", "a"):
        return Hole("r")
    kind = spec[-1:] if spec else ""
    return Hole(_SPEC_TYPE.get(kind, "s"))


def brace(fmt: str) -> list[Piece]:
    """A ``str.format`` string as pieces (``{{``/``}}`` are literal braces; nested specs like ``{x:{w}.2f}``
    keep the outer field's type)."""
    out: list[Piece] = []
    try:
        for literal, field, spec, conversion in string.Formatter().parse(fmt):
            out.append(literal)
            if field is not None:
                out.append(spec_hole(_strip_nested(spec or ""), conversion))
    except (ValueError, IndexError):
        return [fmt] if fmt else []
    return merge(out)


def _strip_nested(spec: str) -> str:
    """A spec with its nested fields removed (``{w}.{p}f`` -> ``.f``): only the presentation type matters."""
    return re.sub(r"\{[^{}]*\}", "", spec)


# %[flags][width][.precision][length]conversion; length modifiers (hh, h, l, ll, z, j, t, L) do not change kind.
_PRINTF = re.compile(r"%[-+ #0']*(?:\*|\d+)?(?:\.(?:\*|\d+))?(?:hh|h|ll|l|z|j|t|L|q|I64|I32)?(?P<type>[diouxXeEfFgGaAcspn%])")
_PRINTF_TYPES = {"d": "d", "i": "d", "u": "d", "o": "d", "x": "x", "X": "x", "p": "x", "e": "f", "E": "f",
                 "f": "f", "F": "f", "g": "f", "G": "f", "a": "f", "A": "f", "c": "s", "s": "s", "n": ""}


def printf(fmt: str) -> list[Piece]:
    """A C printf format (``"device %d: %s"``, ``"%lu"``, ``"%zu"``, ``"%p"``) as pieces."""
    out: list[Piece] = []
    last = 0
    for m in _PRINTF.finditer(fmt):
        out.append(fmt[last:m.start()])
        kind = m.group("type")
        if kind == "%":
            out.append("%")
        elif _PRINTF_TYPES[kind]:
            out.append(Hole(_PRINTF_TYPES[kind]))
        last = m.end()
    out.append(fmt[last:])
    return merge(out)


def has_printf(fmt: str) -> bool:
    """Whether ``fmt`` holds a printf conversion other than ``%%``."""
    return any(m.group("type") != "%" for m in _PRINTF.finditer(fmt))


def has_percent(fmt: str) -> bool:
    """Whether ``fmt`` holds a Python ``%`` conversion other than ``%%``."""
    return any(m.group("type") != "%" for m in _PERCENT.finditer(fmt))
