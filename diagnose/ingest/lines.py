"""Read a stream as text lines in bounded chunks: memory does not grow with the file.

The encoding is chosen once from the first chunk (BOM, UTF-8, GB18030) and applied with an incremental
decoder, so a multi-byte character split between chunks is decoded correctly. A line never spans chunks:
the unfinished tail of one chunk starts the next. Splitting happens in polars (Rust), not in Python. A
single line longer than ``max_line`` characters is cut into pieces (each still a line), so one pathological
line cannot take all memory.
"""

from __future__ import annotations

import codecs
import io
from dataclasses import dataclass
from typing import BinaryIO, Iterator

import polars as pl

from diagnose.ingest.decode import decode, is_binary, split_lines

CHUNK_BYTES = 8 * 1024 * 1024
MAX_LINE = 16 * 1024 * 1024
_ONE_READ_MAX = 256 * 1024 * 1024  # tables up to this size are read in one call (read_table)
_READER_MIN = 1024 * 1024  # blocks this large are split by polars' CSV reader (see _split_utf8)


_tuned = False


def tune_allocator() -> None:
    """Called by the read stage before it reads (not at import: it changes the whole process's allocator).

    Each chunk is a fresh multi-megabyte bytes object. glibc serves those with mmap and unmaps them on
    free, so every chunk pays for the kernel to fault in and zero new pages (a third of the read time).
    Served from the heap instead, with up to 128 MB of freed memory kept for the next chunk, they reuse
    pages. glibc only; elsewhere nothing changes."""
    global _tuned
    if _tuned:
        return
    _tuned = True
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 64 * 1024 * 1024)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 128 * 1024 * 1024)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        pass


@dataclass
class TextInfo:
    encoding: str = "utf-8"
    binary: bool = False
    lines: int = 0
    bytes: int = 0
    cut_lines: int = 0  # lines longer than MAX_LINE, cut into pieces


def _split(text: str, sep: str) -> pl.Series:
    # str.split in Python plus one Series build is faster than polars' split-and-explode here.
    return pl.Series("text", text.split(sep), dtype=pl.String)


def iter_line_chunks(stream: BinaryIO, info: TextInfo, chunk_bytes: int = CHUNK_BYTES,
                     max_line: int = MAX_LINE) -> Iterator[pl.Series]:
    """Yield the file's lines as string Series, chunk by chunk (complete lines only), without line ends."""
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
            if "\r" in block:  # CRLF in a non-UTF-8 file
                lines = lines.str.strip_chars_end("\r")
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
        cut = block.rfind(b"\n")
        if cut < 0:
            carry = block
        else:
            carry = block[cut + 1:]
            lines = _split_utf8(block[:cut + 1])
            info.lines += lines.len()
            yield lines
        while len(carry) > max_line:
            info.cut_lines += 1
            info.lines += 1
            yield pl.Series("text", [carry[:max_line].decode("utf-8", errors="replace")], dtype=pl.String)
            carry = carry[max_line:]
        raw = stream.read(chunk_bytes)
        if not raw:
            break
        info.bytes += len(raw)
    if carry:
        info.lines += 1
        yield pl.Series("text", [carry.decode("utf-8", errors="replace")], dtype=pl.String)


HEAD_BYTES = 256 * 1024  # what the kind is sniffed from: 200 lines of up to 1.3 KB


def peek_head(stream: BinaryIO, size: int = HEAD_BYTES) -> bytes:
    """Up to ``size`` first bytes of ``stream``, left unread: the kind decides how the file is read."""
    peek = getattr(stream, "peek", None)
    if peek is not None:  # a buffered file: its first buffer (the walk's streams buffer 1 MB)
        return peek(size)[:size]
    at = stream.tell()
    head = stream.read(size)
    stream.seek(at)
    return head


def head_lines(head: bytes, limit: int = 200) -> list[str]:
    """The first ``limit`` lines of ``head`` (``peek_head``), decoded as the reader would, to sniff the kind.
    A head as long as HEAD_BYTES may end inside a line: that piece is left out."""
    if len(head) >= HEAD_BYTES and (cut := head.rfind(b"\n")) > 0:
        head = head[:cut]
    text, _ = decode(head)
    return [line.rstrip("\r") for line in split_lines(text)[:limit]]


def read_table(stream: BinaryIO, info: TextInfo, size: int | None = None,
               chunk_bytes: int = CHUNK_BYTES) -> tuple[pl.Series, bytes | None]:
    """A whole file that is parsed whole (tables, JSON): (its lines, its bytes when they are UTF-8 text).

    A UTF-8 file is read as bytes (in one read when its ``size`` is known: no blocks to join) and split
    once, and its bytes are returned for readers that take them directly (polars' CSV reader); any other
    text goes through ``iter_line_chunks`` and returns no bytes."""
    # One read for a file of known size (the reader's budget checks come per read: only up to a bound).
    first = size + 1 if size is not None and size < _ONE_READ_MAX else chunk_bytes
    data = stream.read(first)
    if len(data) == first:  # more to come: unknown or large size, or the file grew
        blocks = [data]
        while raw := stream.read(chunk_bytes):
            blocks.append(raw)
        data = b"".join(blocks)
        del blocks
    label = _utf8_label(data)
    if label is None or is_binary(data) or (b"\n" not in data and b"\r" in data):
        parts = list(iter_line_chunks(io.BytesIO(data), info, chunk_bytes))
        return (pl.concat(parts) if parts else pl.Series("text", [], pl.String)), None
    info.bytes, info.encoding = len(data), label
    if not data:
        return pl.Series("text", [], pl.String), data
    lines = _split_utf8(data if data.endswith(b"\n") else data + b"\n")
    info.lines = lines.len()
    return lines, data


def _utf8_label(data: bytes) -> str | None:
    """The label ``_choose_decoder`` gives UTF-8 text without BOM (it looks at the first chunk); None for
    any other encoding."""
    if data.isascii():
        return "utf-8"
    if data.startswith((codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return None
    first = data[:CHUNK_BYTES]
    _, name = decode(first[:-4] if len(first) > 4 else first)
    if name == "utf-8":
        return name
    return "utf-8 (invalid bytes replaced)" if name.startswith("utf-8 (") else None


def _split_utf8(block: bytes) -> pl.Series:
    """Lines of ``block`` (which ends with LF), one row each, empty lines included."""
    # NUL is the reader's field separator: such a block takes the Python path, and so does a small block
    # (the reader's start-up cost per call would dominate a bundle of many small files).
    if len(block) >= _READER_MIN and b"\x00" not in block:
        try:
            lines = pl.read_csv(block, has_header=False, separator="\x00", quote_char=None, new_columns=["text"],
                                infer_schema=False, encoding="utf8-lossy", eol_char="\n")["text"]
        except Exception:  # noqa: BLE001 - any reader quirk: the Python path below is always right
            lines = None
        if lines is not None:
            lines = lines.fill_null("").alias("text")
            has_cr = b"\r" in block
            if _every_line(lines, block, has_cr):
                # The reader drops one CR before LF; a CR left anywhere is rare, so only then scan every line.
                return lines.str.strip_chars_end("\r") if has_cr else lines
    # CR before LF goes either way (polars' reader drops it), so the line is the same whichever path ran.
    return _split(block[:-1].decode("utf-8", errors="replace"), "\n").str.strip_chars_end("\r")


def _every_line(lines: pl.Series, block: bytes, has_cr: bool) -> bool:
    """Did the reader return each line of ``block``, as written? Without CR (which the reader may drop)
    and invalid bytes (which become 3-byte U+FFFD), the lines and an LF each add up to the block exactly:
    a sum over the rows, much cheaper than counting LFs in the bytes, which is the check otherwise."""
    if not has_cr and lines.str.len_bytes().sum() + lines.len() == len(block):
        return True
    return lines.len() == block.count(b"\n")


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
