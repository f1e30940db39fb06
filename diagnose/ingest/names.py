"""How file and archive-member names are shown: one printable display form for every name.

A name on Linux, in a tar or in a zip is bytes; Python hands the bytes that are not UTF-8 over as lone
surrogates (``os.fsdecode``), which no output can encode (polars, JSON, XML and the terminal all refuse them).
Every name therefore becomes display text here, the same way wherever it came from:

- a UTF-8 name is shown as it is;
- a name that is not UTF-8 but reads as Chinese in GB18030 (a superset of GBK) is shown decoded: archives
  and disks written on Chinese-locale Windows carry such names;
- any other byte that is not UTF-8 is shown as ``\\xNN`` (``\\xff\\xfe.log``), and so are the ASCII control
  characters (newline ``\\x0a``, tab, ESC, DEL); C1 controls and the bidirectional-override and line-separator
  characters, which can make a name read backwards or break a line, are shown as ``\\uNNNN``. Everything
  else (``$(...)``, ``;``, a leading ``-``, ``<b>``) stays as it is: each output format escapes its own
  special characters.

zip members without the UTF-8 flag are named in the archive's own code page, which the zip format leaves
unsaid: as unzip does, the Info-ZIP Unicode path field wins when present, else the name is tried as UTF-8,
then as GB18030 (when it reads as Chinese), then read as CP437, the format's default.

The display form is for people and reports; files are opened by their real names. ``candidates`` turns a
display path back into the real paths it may stand for (to read evidence lines again).
"""

from __future__ import annotations

import binascii
import itertools
import os
import re
import struct

# Characters that must not reach a report as they are: C0 controls and DEL (shown \xNN, as a byte is: they
# are one), lone surrogates (handled before: they are the bytes that were not UTF-8); then C1 controls,
# bidirectional embeddings/overrides/isolates, the line and paragraph separators and the BOM/zero-width no-break
# space (shown \uNNNN): invisible, or able to reorder or split what is printed around them.
_CONTROL = re.compile("[\x00-\x1f\x7f]")
_INVISIBLE = re.compile("[\x80-\x9f\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff]")
_SURROGATE = re.compile("[\udc80-\udcff]")
_ESCAPE = re.compile(r"\\x([0-9a-f]{2})|\\u([0-9a-f]{4})")
_UTF8_FLAG = 0x800
_UNICODE_PATH_FIELD = 0x7075


def _reads_as_chinese(text: str) -> bool:
    """Every non-ASCII character is CJK (ideographs, radicals, kana, CJK and full-width punctuation): a
    GB18030 reading of bytes that are not UTF-8 is then the right one, not an accident of the code page."""
    wide = [ch for ch in text if ord(ch) > 0x7F]
    return bool(wide) and all(
        "\u2e80" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff" or "\uff00" <= ch <= "\uffef" for ch in wide
    )


def _component(part: str) -> str:
    if _SURROGATE.search(part):
        raw = part.encode("utf-8", "surrogateescape")
        try:
            gb = raw.decode("gb18030")
        except UnicodeDecodeError:
            gb = None
        if gb is not None and _reads_as_chinese(gb):
            part = gb
        else:
            part = raw.decode("utf-8", "backslashreplace")  # each byte that is not UTF-8 as \xNN
    part = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", part)
    return _INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", part)


def display(name: str | bytes) -> str:
    """The display form of a path or name (see the module docstring); never raises, always encodable."""
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    if name.isascii() and name.isprintable():
        return name
    # Component by component: a GB18030 trail byte is never "/" or "!" (the archive-member separator), and
    # one component's encoding says nothing about another's.
    return "!".join("/".join(_component(p) for p in outer.split("/")) for outer in name.split("!"))


def zip_member_name(info) -> str:
    """A zip member's name as text, decoded as unzip would (module docstring); before ``display``."""
    if info.flag_bits & _UTF8_FLAG:
        return info.filename
    raw = info.filename.encode("cp437")  # zipfile decoded the header bytes as CP437: this is them again
    unicode_path = _unicode_path(info.extra, raw)
    if unicode_path is not None:
        return unicode_path
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:
        gb = raw.decode("gb18030")
        if _reads_as_chinese(gb):
            return gb
    except UnicodeDecodeError:
        pass
    return info.filename


def _unicode_path(extra: bytes, raw: bytes) -> str | None:
    """The Info-ZIP Unicode Path extra field (0x7075): version 1, CRC-32 of the header name, UTF-8 name.
    Used only when its CRC matches the header's name (else the name was changed by a tool that did not know
    the field, and the header wins), as APPNOTE 4.6.9 says."""
    at = 0
    while at + 4 <= len(extra):
        tag, size = struct.unpack_from("<HH", extra, at)
        body = extra[at + 4:at + 4 + size]
        at += 4 + size
        if tag != _UNICODE_PATH_FIELD or len(body) < 5 or body[0] != 1:
            continue
        if struct.unpack_from("<I", body, 1)[0] != binascii.crc32(raw):
            return None
        try:
            return body[5:].decode("utf-8")
        except UnicodeDecodeError:
            return None
    return None


def candidates(shown: str) -> list[str]:
    """Real paths a display path may stand for, most likely first: itself, its escapes turned back into
    the bytes or characters they stand for, and its Chinese components in GB18030 bytes."""
    def unescape(m: re.Match) -> str:
        if m.group(1):
            byte = int(m.group(1), 16)
            return chr(byte) if byte < 0x80 else chr(0xDC00 + byte)  # as os.fsdecode gives it
        return chr(int(m.group(2), 16))

    plain = _ESCAPE.sub(unescape, shown)
    out = [shown, plain]
    for base in (shown, plain):
        if not base.isascii():  # component by component, split as display() splits them
            out += _gb18030_forms(base)
    return list(dict.fromkeys(out))


def _gb18030_forms(base: str) -> list[str]:
    """``base`` with its Chinese components in GB18030 bytes: all of them, and (for a few) each choice of
    which, since a name's components may have been written in different encodings (``display`` decodes
    each on its own)."""
    outers = [outer.split("/") for outer in base.split("!")]
    spots = [(i, j) for i, parts in enumerate(outers) for j, p in enumerate(parts) if _as_gb18030(p) != p]
    choices = itertools.product((False, True), repeat=len(spots)) if len(spots) <= 4 else [(True,) * len(spots)]
    forms = []
    for choice in choices:
        converted = {spot for spot, yes in zip(spots, choice) if yes}
        forms.append("!".join("/".join(_as_gb18030(p) if (i, j) in converted else p for j, p in enumerate(parts))
                              for i, parts in enumerate(outers)))
    return sorted(forms, key=lambda f: -sum(a != b for a, b in zip(f, base)))  # all converted first


def _as_gb18030(part: str) -> str:
    if not _reads_as_chinese(_SURROGATE.sub("", part)):
        return part
    try:
        return os.fsdecode(part.encode("gb18030", "surrogateescape"))
    except UnicodeEncodeError:
        return part
