"""Read a stream as text lines in bounded chunks: memory does not grow with the file.

The encoding is chosen once from the first chunk (BOM, UTF-8, GB18030) and applied with an incremental
decoder, so a multi-byte character split between chunks is decoded correctly. A line never spans chunks:
the unfinished tail of one chunk starts the next. Splitting happens in polars (Rust), not in Python. A
single line longer than ``max_line`` keeps its first ``max_line`` bytes and the rest of it is passed over
(counted, not held), so one pathological line cannot take all memory.
"""

from __future__ import annotations

import codecs
import ctypes
import io
from dataclasses import dataclass
from typing import AnyStr, BinaryIO, Iterable, Iterator

import polars as pl

from diagnose.ingest.decode import decode, is_binary, split_lines

CHUNK_BYTES = 16 * 1024 * 1024
MAX_LINE = 4 * 1024 * 1024  # Budget.max_line_bytes
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
    cut_lines: int = 0  # lines longer than the line limit: their head is read, the rest passed over
    cut_bytes: int = 0  # bytes of those lines passed over (characters in text that is not UTF-8)


def _split(text: str, sep: str) -> pl.Series:
    # str.split in Python plus one Series build is faster than polars' split-and-explode here.
    return pl.Series("text", text.split(sep), dtype=pl.String)


def iter_line_chunks(stream: BinaryIO, info: TextInfo, chunk_bytes: int = CHUNK_BYTES,
                     max_line: int = MAX_LINE) -> Iterator[pl.Series]:
    """Yield the file's lines as string Series, chunk by chunk (complete lines only), without line ends.

    A line longer than ``max_line`` bytes (characters in text that is not UTF-8) keeps its first ``max_line``
    and the rest of it is read past, not kept (``info.cut_lines``, ``info.cut_bytes``): memory holds a chunk
    and one open line whatever the file, and line numbers still agree with ``grep -n``."""
    first = stream.read(chunk_bytes)
    info.bytes = len(first)
    if not first:
        return
    if is_binary(first):
        info.binary = True
        return
    # UTF-8 split on LF (nearly every log) is read as bytes: the first chunk is not decoded to text here
    # (twice, as ``_choose_decoder`` does: 10 ms for 8 MB, per file), only checked (at once when ASCII).
    label = _utf8_label(first, len(first))
    if label is not None and (b"\n" in first or b"\r" not in first):
        info.encoding = label
        for block in _complete_lines(_raw_blocks(stream, first, info, chunk_bytes), b"\n", max_line, info):
            if block.endswith(b"\n"):
                lines = _split_utf8(block)
            else:  # the last line, without its LF
                lines = _one_line(block.decode("utf-8", "replace").removesuffix("\r"))
            lines = _cap(lines, len(block), max_line, info)
            info.lines += lines.len()
            yield lines
        return
    decoder, text, info.encoding = _choose_decoder(first)
    sep = "\r" if ("\n" not in text and "\r" in text) else "\n"

    def texts() -> Iterator[str]:
        yield text
        for raw in _raw_blocks(stream, b"", info, chunk_bytes):
            yield decoder.decode(raw)
        yield decoder.decode(b"", final=True)

    for block in _complete_lines(texts(), sep, max_line, info):
        if not block.endswith(sep):  # the last line, without its line end
            lines = _one_line(block.removesuffix("\r"))
        else:
            lines = _split(block[:-1], sep)
            if "\r" in block:  # CRLF in a non-UTF-8 file
                lines = lines.str.strip_chars_end("\r")
        lines = _cap(lines, len(block), max_line, info)
        info.lines += lines.len()
        yield lines


def _cap(lines: pl.Series, block_len: int, max_line: int, info: TextInfo) -> pl.Series:
    """A line that ends inside its chunk and is longer than ``max_line`` characters (a chunk may be larger
    than the limit) keeps its first ``max_line``, as the open line does in ``_complete_lines``."""
    if block_len <= max_line or (lines.str.len_bytes().max() or 0) <= max_line:  # bytes: O(1) a line
        return lines
    chars = lines.str.len_chars()
    long = chars > max_line
    cut = int(long.sum())
    if not cut:
        return lines
    info.cut_lines += cut
    info.cut_bytes += int((chars.filter(long) - max_line).sum())
    return pl.select(text=pl.when(long).then(lines.str.slice(0, max_line)).otherwise(lines)).to_series()


def _one_line(text: str) -> pl.Series:
    return pl.Series("text", [text], dtype=pl.String)


def _raw_blocks(stream: BinaryIO, first: bytes, info: TextInfo, chunk_bytes: int) -> Iterator[bytes]:
    if first:
        yield first
    while raw := stream.read(chunk_bytes):
        info.bytes += len(raw)
        yield raw


def _complete_lines(pieces: Iterable[AnyStr], sep: AnyStr, max_line: int, info: TextInfo) -> Iterator[AnyStr]:
    """Blocks of complete lines (each ends with ``sep``) out of ``pieces`` (bytes or text), then what follows
    the last ``sep``. The open line is carried into the next piece until it ends; once longer than
    ``max_line`` its first ``max_line`` are given as a line and the rest is passed over up to its end, so
    what is held never exceeds a piece and ``max_line``. (Lines that end inside a block: ``_cap``.)"""
    carry = sep[:0]
    skipping = False  # inside an over-long line whose head was given
    for raw in pieces:
        if skipping:
            end = raw.find(sep)
            if end < 0:
                info.cut_bytes += len(raw)
                continue
            info.cut_bytes += end
            raw, skipping = raw[end + 1:], False
        # carry holds no sep: the block's last sep is raw's. Bytes are cut through a memoryview, so that a
        # chunk is copied once (carry + its complete lines), or not at all when it ends with its last line.
        cut = raw.rfind(sep)
        if cut < 0:
            carry = carry + raw
        else:
            if cut == len(raw) - 1:
                piece = raw
            elif carry and isinstance(raw, bytes):
                piece = memoryview(raw)[:cut + 1]
            else:
                piece = raw[:cut + 1]
            yield carry + piece if carry else piece
            carry = raw[cut + 1:]
        if len(carry) > max_line:
            info.cut_lines += 1
            info.cut_bytes += len(carry) - max_line
            yield carry[:max_line] + sep
            carry, skipping = sep[:0], True
    if carry:
        yield carry


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
               chunk_bytes: int = CHUNK_BYTES, max_line: int = MAX_LINE) -> tuple[pl.Series, bytes | None]:
    """A whole file that is parsed whole (tables, JSON): (its lines, its bytes when they are UTF-8 text).

    A UTF-8 file is read as bytes (in one read when its ``size`` is known: no blocks to join) and split
    once, and its bytes are returned for readers that take them directly (polars' CSV reader); any other
    text goes through ``iter_line_chunks`` and returns no bytes. Read in blocks (a large file, or one of
    unknown size), a line longer than ``max_line`` is cut as ``iter_line_chunks`` cuts it."""
    # One read for a file of known size (the reader's budget checks come per read: only up to a bound).
    first = size + 1 if size is not None and size < _ONE_READ_MAX else chunk_bytes
    data = stream.read(first)
    info.bytes = len(data)
    if len(data) == first:  # more to come: unknown or large size, or the file grew
        blocks = list(_complete_lines(_raw_blocks(stream, data, info, chunk_bytes), b"\n", max_line, info))
        data = b"".join(blocks)
        del blocks
    read_bytes = info.bytes
    label = _utf8_label(data)
    if label is None or is_binary(data) or (b"\n" not in data and b"\r" in data):
        parts = list(iter_line_chunks(io.BytesIO(data), info, chunk_bytes, max_line))
        info.bytes = read_bytes
        return (pl.concat(parts) if parts else pl.Series("text", [], pl.String)), None
    info.encoding = label
    if not data:
        return pl.Series("text", [], pl.String), data
    lines = _split_utf8(data if data.endswith(b"\n") else data + b"\n")
    info.lines = lines.len()
    return lines, data


def _utf8_label(data: bytes, chunk_bytes: int = CHUNK_BYTES) -> str | None:
    """The label ``_choose_decoder`` gives UTF-8 text without BOM (it looks at the first ``chunk_bytes``);
    None for any other encoding."""
    if data.isascii():
        return "utf-8"
    if data.startswith((codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return None
    first = data[:chunk_bytes]
    first = first[:-4] if len(first) > 4 else first
    if _valid_utf8(first):  # checked in place: decoding 16 MB of text to a str only to check it took 24 ms
        return "utf-8"
    _, name = decode(first)
    if name == "utf-8":
        return name
    return "utf-8 (invalid bytes replaced)" if name.startswith("utf-8 (") else None


def _valid_utf8(data: bytes) -> bool:
    """Whether ``data`` is strict UTF-8 (polars checks it without building a Python str)."""
    try:
        pl.Series([data], dtype=pl.Binary).cast(pl.String)
    except Exception:  # noqa: BLE001 - any refusal: not strict UTF-8 (``decode`` says what it is)
        return False
    return True


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
