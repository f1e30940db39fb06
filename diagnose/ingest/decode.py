"""Bytes to text lines: encodings (UTF-8, UTF-16 with BOM, GBK/GB18030), line endings, binary detection."""

from __future__ import annotations

import codecs

_SAMPLE = 8192
# C0 controls that text logs do not contain (TAB, LF, CR, FF, VT and ESC are left out).
_CONTROL_BYTES = [b for b in range(1, 32) if b not in (9, 10, 11, 12, 13, 27)]


def is_binary(data: bytes) -> bool:
    """NUL-heavy or control-heavy content that is not UTF-16 text."""
    head = data[:_SAMPLE]
    if not head or head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return False
    nul = head.count(0)
    if nul == 0:
        return False
    # A few NULs inside text happen (a crashed writer); binary formats have many NUL and control bytes.
    control = sum(head.count(b) for b in _CONTROL_BYTES)
    return nul + control > len(head) * 0.05


def decode(data: bytes) -> tuple[str, str]:
    """Return (text, encoding name). Never raises: undecodable bytes become U+FFFD."""
    if data.startswith(codecs.BOM_UTF8):
        return data[3:].decode("utf-8", errors="replace"), "utf-8-sig"
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", errors="replace"), "utf-16"
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    # Chinese Windows and some MindIE deployments write GBK; gb18030 is its superset.
    try:
        text = data.decode("gb18030")
        if any("\u4e00" <= ch <= "\u9fff" for ch in text[:200_000]):
            return text, "gb18030"
    except UnicodeDecodeError:
        pass
    return data.decode("utf-8", errors="replace"), "utf-8 (invalid bytes replaced)"


def split_lines(text: str) -> list[str]:
    """Split on LF (CRLF too); a file that uses lone CR only is split on CR.

    Line numbers then agree with ``grep -n`` and editors. A trailing newline does not make an empty line.
    """
    if "\n" not in text and "\r" in text:
        lines = text.split("\r")
    else:
        lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines
