"""The events of a Chrome trace (``trace_view.json``), read incrementally from a binary stream in bounded memory.

A trace is a JSON array of event objects (or an object whose ``traceEvents`` key holds that array), often in one
single line of gigabytes. It is read in blocks of about ``BLOCK_BYTES``: a block ends at the last place in the
buffer that looks like a boundary between two top-level events (``}`` ``,`` ``{`` with only blanks between) and is
decoded by msgspec into only the fields the analyses read (``ph``, ``name``, ``pid``, ``ts``, ``dur`` and
``args["Task Type"]``/``args["name"]``); the other fields are skipped by the decoder, never built. The decode
checks the cut: JSON is read left to right, so ``[`` + block + ``]`` is valid only when the block ends exactly at
the end of a top-level event. A cut inside a nested value or a string makes the decode fail; the block is then
cut at an earlier boundary, or read event by event by the standard library (``raw_decode``), which also finds and
skips an event that is not valid JSON (counted in ``TraceScan.bad``). The end of the file (closing bracket, the
rest of a ``{"traceEvents": ...}`` object, a truncated last event) is always read that way.

Line numbers are those of the reader (LF-separated lines, 1-based): the line on which an event starts. A block
in one line gives all its events that line; a block of one event per line numbers them in order; any other
layout (pretty-printed) locates every event in the block.
"""

from __future__ import annotations

import re
from typing import BinaryIO, Iterator

import msgspec

from diagnose.bounded import Malformed, json_raw_decode
from diagnose.parsers.kinds.profiling.traceevents import (
    EVENTS, RAW, EventBlock, TraceScan, clip, find_event, from_dict, make_block,
)

BLOCK_BYTES = 8 * 1024 * 1024  # peak memory grows with it (about 15x: the decoded events); 4-16 MB read as fast
_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_BOUNDARY_TEXT = re.compile(r"\}\s*,\s*\{")
_NEXT_LINE_EVENT = re.compile(r"\n[ \t]*\{")
_WS = b" \t\r\n"
_RETRIES = 3  # earlier cuts tried when a block does not decode, before reading it event by event
# One event, or one member of the object before ``traceEvents``, longer than this is passed over unread (counted
# as an event that could not be read) instead of growing the buffer to hold it: real events are under a kilobyte.
MAX_EVENT_BYTES = 16 * 1024 * 1024
_FAIL = object()


def iter_event_blocks(source: BinaryIO | bytes, scan: TraceScan,
                      block_bytes: int = BLOCK_BYTES) -> Iterator[EventBlock]:
    """Decoded events of ``source`` (a binary stream, or the file's bytes when a reader already holds them) block by
    block; ``scan`` is filled in as the read goes (complete at the end)."""
    reader = _Reader(source, scan, block_bytes)
    yield from reader.run()


class _Reader:
    def __init__(self, source: BinaryIO | bytes, scan: TraceScan, block_bytes: int):
        self.scan, self.block = scan, max(block_bytes, 1024)
        self.buf = b""
        self.pos = 0  # next byte of buf to read
        self.line = 1  # line of buf[pos]
        self.eof = False
        self.ends_lf = False  # the file so far ends with LF
        self.whole = isinstance(source, (bytes, bytearray, memoryview))  # all in memory: nothing read or dropped
        if self.whole:
            self.buf, self.eof = bytes(source), True
            scan.bytes, self.ends_lf = len(self.buf), self.buf.endswith(b"\n")
            if self.buf.startswith(b"\xef\xbb\xbf"):
                scan.encoding, self.pos = "utf-8-sig", 3
        else:
            self.stream = source

    # --- buffer ---------------------------------------------------------------------------------------

    def fill(self, want: int) -> None:
        """Read until ``want`` bytes are buffered past ``pos`` (or the file ends); drop what was read."""
        if self.whole:
            return
        if self.pos:
            self.buf, self.pos = self.buf[self.pos:], 0
        parts = [self.buf]
        have = len(self.buf)
        while have < want and not self.eof:
            raw = self.stream.read(max(want - have, self.block))
            if not raw:
                self.eof = True
                break
            if not self.scan.bytes and raw.startswith(b"\xef\xbb\xbf"):
                self.scan.encoding = "utf-8-sig"
                self.scan.bytes, raw = 3, raw[3:]
            self.scan.bytes += len(raw)
            self.ends_lf = raw.endswith(b"\n")
            parts.append(raw)
            have += len(raw)
        self.buf = b"".join(parts) if len(parts) > 1 else parts[0]

    def advance(self, to: int, newlines: int | None = None) -> None:
        """Move ``pos`` to ``to``, counting lines (``newlines``: already counted from ``pos`` to ``to``)."""
        self.line += self.buf.count(b"\n", self.pos, to) if newlines is None else newlines
        self.pos = to

    def skip_ws(self) -> None:
        while True:
            n = len(self.buf)
            i = self.pos
            while i < n and self.buf[i] in _WS:
                i += 1
            self.advance(i)
            if i < n or self.eof:
                return
            self.fill(self.block)

    # --- the read -------------------------------------------------------------------------------------

    def run(self) -> Iterator[EventBlock]:
        scan = self.scan
        self.fill(self.block)
        self.skip_ws()
        scan.first_line = self.line
        if self.pos >= len(self.buf):
            self.finish()
            return
        head = self.buf[self.pos:self.pos + 1]
        if head == b"[":
            scan.form = "array"
            self.advance(self.pos + 1)
        elif head == b"{" and self.enter_object():
            scan.form = "object"
        else:
            scan.form = "other"
            self.drain()
            return
        yield from self.events()
        self.drain()

    def enter_object(self) -> bool:
        """Position after the ``[`` of the ``traceEvents`` member; the members before it are decoded and dropped."""
        self.advance(self.pos + 1)
        while True:
            self.skip_ws()
            key = self.value()
            if not isinstance(key, str):
                return False
            self.skip_ws()
            if self.buf[self.pos:self.pos + 1] != b":":
                return False
            self.advance(self.pos + 1)
            self.skip_ws()
            if key == "traceEvents" and self.buf[self.pos:self.pos + 1] == b"[":
                self.advance(self.pos + 1)
                return True
            if self.value(allow_big=True) is _FAIL:
                return False
            self.skip_ws()
            if self.buf[self.pos:self.pos + 1] != b",":
                return False
            self.advance(self.pos + 1)

    def value(self, allow_big: bool = False):
        """One JSON value at ``pos`` (read in a growing window, the buffer growing with it); _FAIL if none."""
        window = 1 << 16
        while True:
            if len(self.buf) - self.pos < window and not self.eof:
                self.fill(window)
            have = len(self.buf) - self.pos
            raw = self.buf[self.pos:self.pos + window]
            text = raw.decode("utf-8", errors="replace")
            whole = window >= have and self.eof
            try:
                obj, end = json_raw_decode(text)
            except Malformed:
                obj, end = _FAIL, -1
            if obj is not _FAIL and (end < len(text) or whole):  # a number cut by the window end is not whole
                self.advance(self.pos + len(text[:end].encode("utf-8")))
                return obj
            if whole or window > (MAX_EVENT_BYTES if allow_big else min(64 * self.block, MAX_EVENT_BYTES)):
                return _FAIL
            window *= 4

    def events(self) -> Iterator[EventBlock]:
        """The array's events, from ``pos`` (just after ``[``)."""
        while True:
            self.fill(self.block)
            self.skip_ws()
            if self.pos >= len(self.buf):
                return
            if self.buf[self.pos:self.pos + 1] == b"]":
                self.scan.closed = True
                self.advance(self.pos + 1)
                return
            cuts = self.cuts()
            if not cuts:
                if not self.eof and len(self.buf) - self.pos > MAX_EVENT_BYTES:
                    self.pass_over()  # one event longer than any real one: not held
                    continue
                if not self.eof:  # one event longer than the buffer: read on
                    self.fill(2 * (len(self.buf) - self.pos) + self.block)
                    continue
                block = self.slow(len(self.buf), final=True)
                if block is not None:
                    yield block
                return
            block = None
            for cut, nxt in cuts:
                block = self.fast(cut)
                if block is not None:
                    self.advance(nxt, self.newlines + self.buf.count(b"\n", cut, nxt))
                    break
            if block is None:  # not valid JSON somewhere in the block, or an unusual cut: read event by event
                cut, nxt = cuts[0]
                block = self.slow(cut, final=False)
                self.advance(max(self.pos, nxt))
            if block is not None:
                yield block

    def cuts(self) -> list[tuple[int, int]]:
        """Up to ``_RETRIES`` last boundaries in the buffer (latest first): (end of the event, start of the next)."""
        span = self.block if self.whole else len(self.buf) - self.pos  # a whole file: blocks of ``block`` bytes
        while True:
            end = min(len(self.buf), self.pos + span)
            window = 1 << 16
            while True:
                start = max(self.pos, end - window)
                found = [(m.start() + 1, m.end() - 1) for m in _BOUNDARY.finditer(self.buf, start, end)]
                if found or start == self.pos:
                    break
                window *= 16
            if found or end == len(self.buf):
                return found[::-1][:_RETRIES]
            span *= 2

    # --- decoding -------------------------------------------------------------------------------------

    def pass_over(self) -> None:
        """Skip the event at ``pos`` (longer than ``MAX_EVENT_BYTES``) up to the next boundary between events,
        reading on block by block and holding only a block; counted as an event that could not be read."""
        self.scan.bad += 1
        self.scan.first_bad = self.scan.first_bad or self.line
        while True:
            m = _BOUNDARY.search(self.buf, self.pos)
            if m is not None:
                self.advance(m.end() - 1)
                return
            if self.eof:
                self.advance(len(self.buf))
                return
            self.advance(max(self.pos, len(self.buf) - 64))  # a boundary may straddle two blocks
            self.fill(self.block)

    def fast(self, cut: int) -> EventBlock | None:
        body = memoryview(self.buf)[self.pos:cut]
        data = b"".join((b"[", body, b"]"))
        try:
            events = EVENTS.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):  # then read event by event
            return None
        n = len(events)
        first = self.line
        self.newlines = newlines = self.buf.count(b"\n", self.pos, cut)
        if newlines == 0:
            lines = None  # all on the first line
            texts = self._one_line_texts(data, events)
        elif newlines == n - 1 and self.buf.count(b"},\n{", self.pos, cut) == n - 1:
            lines = list(range(first, first + n))
            block_lines = None

            def texts(idx, _start=self.pos, _buf=self.buf):
                nonlocal block_lines
                if block_lines is None:
                    block_lines = _buf[_start:cut].split(b"\n")
                return [clip(block_lines[i].rstrip(b"\r").decode("utf-8", errors="replace")) for i in idx]
        else:  # pretty-printed or mixed: locate every event
            raws = RAW.decode(data)
            lines, at, line = [], self.pos, first
            for raw in raws:
                src = bytes(raw)
                found = self.buf.find(src[:64], at, cut)
                found = at if found < 0 else found
                line += self.buf.count(b"\n", at, found)
                lines.append(line)
                line += src.count(b"\n")
                at = found + len(src)
            texts = self._raw_texts(data, raws)
        self.scan.events += n
        return make_block(events, lines, first, texts, self.scan)

    @staticmethod
    def _raw_texts(data: bytes, raws):
        def texts(idx):
            nonlocal raws
            if raws is None:
                raws = RAW.decode(data)
            return [clip(bytes(raws[i]).decode("utf-8", errors="replace")) for i in idx]
        return texts

    @classmethod
    def _one_line_texts(cls, data: bytes, events: list):
        """Texts of a few events of a one-line block: each found from its start time (an event starts at one of
        the ``{`` before its ``ts``; decoding from there gives it back), else from the whole block's elements."""
        fallback = cls._raw_texts(data, None)

        def texts(idx):
            out = []
            for i in idx:
                found = find_event(data, events[i])
                out.append(found if found is not None else fallback([i])[0])
            return out
        return texts

    def slow(self, end: int, final: bool) -> EventBlock | None:
        """Events in ``buf[pos:end]`` one by one (standard library): exact, skips what is not JSON. ``final``: the
        rest of the file, with the closing bracket (or a truncated last event)."""
        raw = self.buf[self.pos:end]
        text = raw.decode("utf-8", errors="replace")
        events, lines, texts = [], [], []
        i, n, line = 0, len(text), self.line
        scan = self.scan
        while i < n:
            while i < n and text[i] in " \t\r\n,":
                if text[i] == "\n":
                    line += 1
                i += 1
            if i >= n:
                break
            if final and text[i] == "]":
                scan.closed = True
                i += 1
                break
            try:
                obj, j = json_raw_decode(text, i)
            except Malformed:
                nxt = self._resync(text, i)
                if nxt is None:
                    closed = final and text.rstrip(" \t\r\n").endswith("]")
                    if not final or closed:  # garbage up to the cut, or a last event that no decoder reads
                        scan.bad += 1
                        scan.first_bad = scan.first_bad or line
                        scan.closed = scan.closed or closed
                    break  # final: a truncated last event (or garbage to the end)
                scan.bad += 1
                scan.first_bad = scan.first_bad or line
                line += text.count("\n", i, nxt)
                i = nxt
                continue
            if isinstance(obj, dict):
                events.append(obj)
                lines.append(line)
                texts.append(clip(text[i:j]))
            line += text.count("\n", i, j)
            i = j
        consumed = len(text[:i].encode("utf-8")) if i < n else len(raw)
        self.advance(self.pos + consumed)
        scan.events += len(events)
        if not events:
            return None
        return make_block([from_dict(e) for e in events], lines, self.line, lambda idx: [texts[k] for k in idx], scan)

    @staticmethod
    def _resync(text: str, i: int) -> int | None:
        """Where the next event starts after the bad one at ``i``: the next line that starts with ``{`` (events one
        per line, or pretty-printed), else (one line) the next boundary."""
        m = _NEXT_LINE_EVENT.search(text, i) or _BOUNDARY_TEXT.search(text, i)
        return m.end() - 1 if m else None

    def drain(self) -> None:
        """Read the rest of the file (counted, not decoded) and finish the scan."""
        while True:
            self.advance(len(self.buf))
            if self.eof:
                break
            self.fill(self.block)
        self.finish()

    def finish(self) -> None:
        """Lines as the reader counts them (LF-terminated; a last line without LF is a line)."""
        if self.scan.bytes:
            self.scan.lines = self.line - (1 if self.ends_lf else 0)

