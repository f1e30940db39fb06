"""Read a stream as text lines in bounded chunks: memory does not grow with the file.

The encoding is chosen once from the first chunk (BOM, UTF-8, GB18030) and applied with an incremental
decoder, so a multi-byte character split between chunks is decoded correctly. A line never spans chunks:
the unfinished tail of one chunk starts the next. Splitting happens in polars (Rust), not in Python. A
single line longer than ``max_line`` characters is cut into pieces (each still a line), so one pathological
line cannot take all memory.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass, field
from typing import BinaryIO, Iterator

import polars as pl

from diagnose.ingest.decode import decode, is_binary

CHUNK_BYTES = 8 * 1024 * 1024
MAX_LINE = 16 * 1024 * 1024
_READER_MIN = 1024 * 1024  # blocks this large are split by polars' CSV reader (see _split_utf8)


def _reuse_freed_chunks() -> None:
    """Each chunk is a fresh multi-megabyte bytes object. glibc serves those with mmap and unmaps them on
    free, so every chunk pays for the kernel to fault in and zero new pages (a third of the read time).
    Served from the heap instead, with up to 128 MB of freed memory kept for the next chunk, they reuse
    pages. glibc only; elsewhere nothing changes."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 64 * 1024 * 1024)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 128 * 1024 * 1024)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        pass


_reuse_freed_chunks()


@dataclass
class TextInfo:
    encoding: str = "utf-8"
    binary: bool = False
    lines: int = 0
    bytes: int = 0
    cut_lines: int = 0  # lines longer than MAX_LINE, cut into pieces
    # Set by the reader while ``keep_bytes``: the UTF-8 blocks the lines came from (tables are parsed whole).
    keep_bytes: bool = True
    blocks: list[bytes] = field(default_factory=list)
    # Set by the caller after the first chunk of a table: the rest is only collected in ``blocks``, to be
    # split once (``whole_lines``), as the table is parsed whole anyway.
    bytes_only: bool = False


def _split(text: str, sep: str) -> pl.Series:
    # str.split in Python plus one Series build is faster than polars' split-and-explode here.
    return pl.Series("text", text.split(sep), dtype=pl.String)


def iter_line_chunks(stream: BinaryIO, info: TextInfo, chunk_bytes: int = CHUNK_BYTES,
                     max_line: int = MAX_LINE) -> Iterator[pl.Series]:
    """Yield the file's lines as string Series, chunk by chunk (complete lines only)."""
    first = stream.read(chunk_bytes)
    info.bytes = len(first)
    if not first:
        return
    if is_binary(first):
        info.binary = True
        return
    decoder, text, info.encoding = _choose_decoder(first)
    sep = "\r" if ("\n" not in text and "\r" in text) else "\n"
    if sep == "\n" and info.encoding in ("utf-8", "utf-8 (invalid bytes replaced)"):
        yield from _utf8_line_chunks(stream, first, info, chunk_bytes, max_line)
        return
    carry = ""
    while True:
        block = carry + text if carry else text
        cut = block.rfind(sep)
        if cut < 0:
            carry = block
        else:
            carry = block[cut + 1:]
            lines = _split(block[:cut], sep)
            info.lines += lines.len()
            yield lines
        while len(carry) > max_line:
            # One enormous line: emit it in pieces, keep the tail piece open.
            info.cut_lines += 1
            info.lines += 1
            yield pl.Series("text", [carry[:max_line]], dtype=pl.String)
            carry = carry[max_line:]
        raw = stream.read(chunk_bytes)
        if not raw:
            break
        info.bytes += len(raw)
        text = decoder.decode(raw)
    carry += decoder.decode(b"", final=True)
    if carry:
        info.lines += 1
        yield pl.Series("text", [carry], dtype=pl.String)


def _utf8_line_chunks(stream: BinaryIO, first: bytes, info: TextInfo, chunk_bytes: int,
                      max_line: int) -> Iterator[pl.Series]:
    """The common case (UTF-8, LF): lines are cut from the bytes by polars' CSV reader (Rust, all cores),
    with no Python decode or split; invalid bytes become U+FFFD as in the incremental decoder."""
    carry = b""
    raw = first
    while True:
        block = carry + raw if carry else raw
        if info.bytes_only and info.keep_bytes:
            info.blocks.append(block)
            carry = b""
            raw = stream.read(chunk_bytes)
            if not raw:
                break
            info.bytes += len(raw)
            continue
        cut = block.rfind(b"\n")
        if cut < 0:
            carry = block
        else:
            carry = block[cut + 1:]
            body = block[:cut + 1]
            if info.keep_bytes:
                info.blocks.append(body)
            lines = _split_utf8(body)
            info.lines += lines.len()
            yield lines
        while len(carry) > max_line:
            info.cut_lines += 1
            info.lines += 1
            info.keep_bytes = False  # the lines no longer match the bytes
            info.blocks.clear()
            yield pl.Series("text", [carry[:max_line].decode("utf-8", errors="replace")], dtype=pl.String)
            carry = carry[max_line:]
        raw = stream.read(chunk_bytes)
        if not raw:
            break
        info.bytes += len(raw)
    if carry:
        info.lines += 1
        if info.keep_bytes:
            info.blocks.append(carry)
        yield pl.Series("text", [carry.decode("utf-8", errors="replace")], dtype=pl.String)


def whole_lines(info: TextInfo, data: bytes) -> pl.Series:
    """All lines of a file read with ``bytes_only`` (``data``: its blocks joined), split in one pass; sets
    ``info.lines``."""
    lines = _split_utf8(data if data.endswith(b"\n") else data + b"\n") if data else pl.Series("text", [], pl.String)
    info.lines = lines.len()
    return lines


def _split_utf8(block: bytes) -> pl.Series:
    """Lines of ``block`` (which ends with LF), one row each, empty lines included."""
    expected = block.count(b"\n")
    # NUL is the reader's field separator: such a block takes the Python path, and so does a small block
    # (the reader's start-up cost per call would dominate a bundle of many small files).
    if len(block) >= _READER_MIN and b"\x00" not in block:
        try:
            lines = pl.read_csv(block, has_header=False, separator="\x00", quote_char=None, new_columns=["text"],
                                infer_schema=False, encoding="utf8-lossy", eol_char="\n")["text"]
        except Exception:  # noqa: BLE001 - any reader quirk: the Python path below is always right
            lines = None
        if lines is not None and lines.len() == expected:
            return lines.fill_null("").str.strip_chars_end("\r").alias("text")
    # CR before LF goes either way (polars' reader drops it), so the line is the same whichever path ran.
    return _split(block[:-1].decode("utf-8", errors="replace"), "\n").str.strip_chars_end("\r")


def _choose_decoder(first: bytes):
    """Pick the encoding from the first chunk; return (incremental decoder primed past it, its text, name)."""
    if first.startswith(codecs.BOM_UTF8):
        dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
        return dec, dec.decode(first[3:]), "utf-8-sig"
    if first.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        dec = codecs.getincrementaldecoder("utf-16")(errors="replace")
        return dec, dec.decode(first), "utf-16"
    # Decide on the whole first chunk but for a possibly cut multi-byte character at its end.
    _, name = decode(first[:-4] if len(first) > 4 else first)
    codec = "gb18030" if name == "gb18030" else "utf-8"
    dec = codecs.getincrementaldecoder(codec)(errors="replace")
    label = name if codec == "gb18030" else ("utf-8" if name == "utf-8" else "utf-8 (invalid bytes replaced)")
    return dec, dec.decode(first), label
