"""Bounded reads and decodes of the small structured files every room reads: JSON and TOML of rules, configuration,
baselines, the cache folder, and the JSON inside logs (benchmark results, configs, trace events).

Why one place: each of these once trusted its input. A JSON or TOML text nested 100,000 deep made the standard
library's recursive decoders raise ``RecursionError``, a 5,000-digit integer raised ``ValueError`` (CPython's
limit on integer text) and a 400-digit one ``OverflowError`` where it became a float; a lone surrogate escape
(``"\\ud800"``) gave a string that polars and every UTF-8 writer refuse; a cache file turned into a link to
``/dev/zero`` was read until memory ran out. Here every such case is one ``Malformed`` error (a ``ValueError``)
with a sentence that says what was wrong, and every read stops at a size:

- ``open_regular``: opens without following a link and without blocking (a FIFO never hangs the run), then checks
  that what was opened is a regular file, and the one that was listed (a file swapped after a folder was listed
  is not read); ``read_capped`` also reads at most a cap.
- ``json_loads`` / ``json_raw_decode``: the standard decoder with integers of more than ``MAX_DIGITS`` digits,
  non-finite numbers and ``NaN``/``Infinity`` read as ``None`` (no usable number), lone surrogates as U+FFFD,
  nesting deeper than ``MAX_DEPTH`` refused.
- ``toml_loads``: ``tomllib`` with the same depth limit and the same clean error.

This module is part of the ground (beside ``messages``, ``cache`` and ``model``): every layer may use it.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
import tomllib
from typing import Any

MAX_DEPTH = 64  # nesting of arrays and objects/tables: real files use fewer than ten levels
MAX_DIGITS = 40  # digits of an integer kept as a number (a 128-bit value has 39)
SMALL_FILE = 4 * 1024 * 1024  # rule files, configuration files, cache entries: the largest real one is ~40 KB
REPORT_BYTES = 512 * 1024 * 1024  # an earlier JSON report (a baseline): one of a 100,000-file run is ~50 MB


class Malformed(ValueError):
    """A structured text that cannot be used as it is; the message says why (no traceback text): ``what`` the
    text is, then ``detail``."""

    def __init__(self, what: str, detail: str):
        super().__init__(f"{what}: {detail}")
        self.detail = detail


# What ``NotRegular.what`` and ``kind_of`` say, as codes (a report says them in its language: the catalog's
# ``skip.what.<code>``); the English words are for the messages of configuration errors, which are English.
KIND_WORDS = {"symlink": "symbolic link", "other": "another file", "directory": "directory", "device": "device file",
              "fifo": "FIFO", "socket": "socket", "special": "special file", "too_large": "too large"}


class NotRegular(OSError):
    """What was opened is not the regular file expected (a link, a FIFO, a device, a folder, another file than
    the one listed) or is larger than allowed. ``what`` is a code of ``KIND_WORDS`` (``fifo``, ``symlink``,
    ``other``, ``too_large``); the message is an English sentence for configuration errors."""

    def __init__(self, what: str, message: str | None = None):
        super().__init__(message or f"not a regular file ({KIND_WORDS.get(what, what)})")
        self.what = what


def open_regular(path: str | os.PathLike, seen: os.stat_result | None = None, follow: bool = False) -> int:
    """A descriptor of the regular file ``path``, opened without blocking (``O_NONBLOCK``: a FIFO put in its
    place does not wait for a writer) and, unless ``follow``, without following a link (``O_NOFOLLOW``), then
    checked with ``fstat`` after opening: a regular file, and when ``seen`` is given the same file (device and
    inode) that was listed. Anything else raises ``NotRegular`` with the reason, and nothing is read from it.
    The descriptor is left blocking for the reads that follow."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (0 if follow else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:
            raise NotRegular("symlink", "a symbolic link (not followed)") from None
        if exc.errno == errno.ENXIO:  # a socket
            raise NotRegular("socket") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(kind_of(st.st_mode))
        if seen is not None and (st.st_dev, st.st_ino) != (seen.st_dev, seen.st_ino):
            raise NotRegular("other", "another file than the one listed")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_capped(path: str | os.PathLike, limit: int = SMALL_FILE, follow: bool = False) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them (``open_regular``: no link followed
    unless ``follow``, no FIFO waited on). A file larger than ``limit``, or growing past it while read, raises
    ``NotRegular`` (an ``OSError``) before more than ``limit`` bytes are held: ``/dev/zero`` costs nothing."""
    fd = open_regular(path, follow=follow)
    try:
        if os.fstat(fd).st_size > limit:
            raise NotRegular("too_large", f"larger than {limit} bytes")
        chunks, have = [], 0
        while True:
            piece = os.read(fd, min(1 << 20, limit + 1 - have))
            if not piece:
                break
            chunks.append(piece)
            have += len(piece)
            if have > limit:
                raise NotRegular("too_large", f"larger than {limit} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)


def kind_of(mode: int) -> str:
    """A file type that is no regular file, as a code of ``KIND_WORDS`` (for a reason)."""
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "special"


# --- JSON ---------------------------------------------------------------------------------------------------

def _int(text: str):
    return int(text) if len(text) <= MAX_DIGITS else None


def _float(text: str):
    value = float(text)
    return value if math.isfinite(value) else None


def _constant(_name: str):
    return None  # NaN, Infinity, -Infinity: no usable number


_DECODER = json.JSONDecoder(parse_int=_int, parse_float=_float, parse_constant=_constant)
# A surrogate escape not part of a pair (a high one not followed by a low one, a low one not after a high one).
_LONE = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
                   r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def unpaired_surrogates(text: str) -> str:
    """JSON text with each lone surrogate escape written as ``\\ufffd`` (six characters for six: offsets agree)."""
    return _LONE.sub(r"\\ufffd", text) if _SURROGATE.search(text) else text


def json_loads(data: str | bytes | bytearray, what: str = "JSON") -> Any:
    """``json.loads`` within the limits of this module; ``Malformed`` on anything else than a usable value."""
    text = data.decode("utf-8", errors="replace") if isinstance(data, (bytes, bytearray)) else data
    text = unpaired_surrogates(text.lstrip(" \t\r\n\ufeff"))
    obj, end = json_raw_decode(text, 0, what)
    rest = text[end:]
    if rest.strip(" \t\r\n"):
        raise Malformed(what, f"extra data after the value (at character {end})")
    return obj


def json_raw_decode(text: str, at: int = 0, what: str = "JSON") -> tuple[Any, int]:
    """``JSONDecoder.raw_decode(text, at)`` within the limits: (value, end). Lone surrogates are left to the
    caller (``unpaired_surrogates`` once on the whole text, or ``clean_text`` on the strings it keeps)."""
    try:
        obj, end = _DECODER.raw_decode(text, at)
    except json.JSONDecodeError as exc:
        raise Malformed(what, f"{exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise Malformed(what, f"nested too deeply (more than {MAX_DEPTH} levels)") from None
    except (ValueError, OverflowError) as exc:  # noqa: B014 - whatever the number hooks refuse
        raise Malformed(what, _short(exc)) from None
    if _too_deep(obj):
        raise Malformed(what, f"nested too deeply (more than {MAX_DEPTH} levels)")
    return obj, end


def _too_deep(obj: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``obj`` nests lists and dicts more than ``limit`` levels (iterative: any depth is safe here)."""
    if not isinstance(obj, (list, dict)):
        return False
    stack = [(obj, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        values = item.values() if isinstance(item, dict) else item
        stack.extend((v, depth + 1) for v in values if isinstance(v, (list, dict)))
    return False


# --- TOML ---------------------------------------------------------------------------------------------------

def toml_loads(text: str, what: str = "TOML") -> dict[str, Any]:
    """``tomllib.loads`` within the depth limit; ``Malformed`` (with tomllib's own words) on any error."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise Malformed(what, str(exc)) from None
    except RecursionError:
        raise Malformed(what, f"nested too deeply (more than {MAX_DEPTH} levels)") from None
    except (ValueError, OverflowError, MemoryError) as exc:
        raise Malformed(what, _short(exc)) from None
    if _too_deep(data):
        raise Malformed(what, f"nested too deeply (more than {MAX_DEPTH} levels)")
    return data


def clean_text(value: str) -> str:
    """``value`` with lone surrogates (from a decoder that allows them) as U+FFFD: writable as UTF-8."""
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _short(exc: BaseException, limit: int = 200) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= limit else text[:limit - 1] + "…"


__all__ = ["KIND_WORDS", "MAX_DEPTH", "MAX_DIGITS", "REPORT_BYTES", "SMALL_FILE", "Malformed", "NotRegular",
           "clean_text", "json_loads", "json_raw_decode", "kind_of", "open_regular", "read_capped", "toml_loads",
           "unpaired_surrogates"]
