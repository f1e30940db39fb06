"""What the trace reader hands on: the decoded events (only the fields the analyses read), the blocks they come
in, what the read found (``TraceScan``), and the helpers both decoders share. The events are msgspec structs when
a block decodes at once, or plain objects with the same fields when the standard library reads it event by event
(their values then as text, as a JSON path match gives them)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import msgspec

from diagnose.bounded import Malformed, clean_text, json_raw_decode

MAX_TEXT = 4000  # characters of an event's text kept for a record (evidence), not the whole line of a one-line trace


class _Args(msgspec.Struct, gc=False):
    task: str | None = msgspec.field(default=None, name="Task Type")
    name: str | None = None


class _Event(msgspec.Struct, gc=False):
    ph: str | None = None
    name: str | None = None
    pid: int | str | None = None
    ts: str | float | None = None
    dur: float | None = None
    args: _Args | None = msgspec.field(default_factory=_Args)  # an event without args has empty args


EVENTS = msgspec.json.Decoder(list[_Event])  # a block of events, only these fields
RAW = msgspec.json.Decoder(list[msgspec.Raw])  # a block's events as their source bytes


@dataclass
class TraceScan:
    """What the read found, besides the events: sizes as the reader counts them, the JSON form, problems."""

    bytes: int = 0
    lines: int = 0
    events: int = 0  # top-level objects read (any ph)
    bad: int = 0  # events that are not valid JSON (skipped)
    first_bad: int | None = None  # line of the first of them
    first_line: int = 1  # line of the first non-blank byte
    form: str = "empty"  # array | object | empty | other (not an array of events, or no traceEvents key)
    closed: bool = False  # the events array was closed (False with events: truncated)
    encoding: str = "utf-8"
    lines_of_events: set = field(default_factory=set)  # up to two distinct event lines: one line or several

    @property
    def truncated(self) -> bool:
        return self.form in ("array", "object") and not self.closed

    @property
    def multi_line(self) -> bool:
        return len(self.lines_of_events) > 1


@dataclass
class EventBlock:
    """Decoded events of one block, in file order (each with ``ph``, ``name``, ``pid``, ``ts``, ``dur`` and
    ``args.task``/``args.name``); for the few that need them, their line, start time and text."""

    events: list
    first: int  # line of the first event
    _lines: list[int] | None  # each event's line; None: all on ``first``
    _texts: object  # callable: indices -> texts
    one_line: bool = False  # all its events start on one line

    def line(self, i: int) -> int:
        return self.first if self._lines is None else self._lines[i]

    def ts(self, idx: list[int]) -> list[float | None]:
        return [number(self.events[i].ts) for i in idx]

    def texts(self, idx: list[int]) -> list[str]:
        return self._texts(idx) if idx else []


def find_event(data: bytes, event) -> str | None:
    """The source text of ``event`` (decoded from ``data``), located by its ``ts`` string; None if not found."""
    if not isinstance(event.ts, str):
        return None
    needle = msgspec.json.encode(event.ts)
    at = 0
    for _ in range(8):  # the same start time in several events: try a few
        p = data.find(needle, at)
        if p < 0:
            return None
        s = p
        for _ in range(16):  # nested objects before the ts key: step back to the event's own brace
            s = data.rfind(b"{", 0, s)
            if s < 0:
                break
            window = data[s:s + (1 << 16)].decode("utf-8", errors="replace")
            try:
                obj, end = json_raw_decode(window)
            except Malformed:
                continue
            if isinstance(obj, dict) and obj.get("ts") == event.ts and as_text(obj.get("name")) == event.name:
                return clip(window[:end])
            if len(window[:end].encode("utf-8")) > p - s:  # an object around the ts that is not the event
                break
        at = p + 1
    return None


def make_block(events: list, lines: list[int] | None, first: int, texts, scan: TraceScan) -> EventBlock:
    if lines is None or not lines:
        scan.lines_of_events.add(first)
    elif len(scan.lines_of_events) < 2:
        scan.lines_of_events.update((lines[0], lines[-1]))
    one = lines is None or len(lines) < 2 or lines[0] == lines[-1]
    return EventBlock(events, first, lines, texts, one_line=one)


class _Loose:
    """An event read by the standard library, with the fields of ``_Event`` as text (as a JSON path match
    gives them: strings as they are, numbers and other values as their JSON text)."""

    __slots__ = ("ph", "name", "pid", "ts", "dur", "args")


def from_dict(e: dict) -> _Loose:
    out = _Loose()
    out.ph, out.name, out.pid = as_text(e.get("ph")), as_text(e.get("name")), as_text(e.get("pid"))
    ts = e.get("ts")
    out.ts = clean_text(ts) if isinstance(ts, str) else ts if isinstance(ts, (int, float)) else None
    out.dur = number(e.get("dur"))
    args = e.get("args")
    out.args = _LooseArgs(as_text(args.get("Task Type")), as_text(args.get("name"))) if isinstance(args, dict) else _NO_ARGS
    return out


class _LooseArgs:
    __slots__ = ("task", "name")

    def __init__(self, task, name):
        self.task, self.name = task, name


_NO_ARGS = _LooseArgs(None, None)


def as_text(v) -> str | None:
    """A JSON value as text, as a JSON path match gives it: strings as they are (lone surrogates as U+FFFD),
    anything else as its JSON (clipped: an event's nested values can be large)."""
    if v is None:
        return v
    if isinstance(v, str):
        return clean_text(v)
    if type(v) is int:
        return str(v)
    return clip(clean_text(json.dumps(v, ensure_ascii=False)))


def number(v) -> float | None:
    """A finite float, or None (a 400-digit integer, ``1e400``, ``NaN`` or text that is no number)."""
    if v is None or isinstance(v, bool):
        return None
    try:
        out = float(v) if isinstance(v, (int, float)) else float(str(v)[:64].strip())
    except (ValueError, OverflowError):
        return None
    return out if math.isfinite(out) else None


def clip(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 1] + "…"
