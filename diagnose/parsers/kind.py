"""The descriptor of a source kind (``SourceKind``), which each parser module declares once; the registry
(``diagnose.parsers.registry``) collects them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Mapping

import polars as pl

from diagnose.parsers.lineframe import FileContext

Parser = Callable[[pl.DataFrame, FileContext], tuple[pl.DataFrame, pl.DataFrame]]
BundlePass = Callable[[pl.DataFrame, "pl.DataFrame | None"], pl.DataFrame]


@dataclass(frozen=True)
class Panel:
    """A curve panel of the incident page: its title, the y-axis unit and the signals drawn on it."""

    title: str
    unit: str
    signals: tuple[str, ...]


@dataclass(frozen=True)
class Location:
    """Where the software writes files of a kind by default: what ``diagnose collect`` gathers from a node.

    ``roots`` are tried in order and the first that is set and exists is used (an override such as
    ``$ASCEND_PROCESS_LOG_PATH`` replaces the default rather than adding to it); a root may name environment
    variables (``$VAR``), the home folder (``~``) or an absolute path (read under ``--sysroot``). ``patterns``
    are globs under the root. A location with a ``command`` is what a tool prints (``npu-smi info``), saved as
    ``save_as``. ``source`` says where the default is documented."""

    roots: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ("**/*.log",)
    command: tuple[str, ...] = ()
    save_as: str = ""
    source: str = ""


@dataclass(frozen=True)
class SourceKind:
    """What the program knows about one kind of input, in one place.

    ``line_heads`` are the kind's well-formed line heads, anchored, with named groups: the parser matches
    them, the prefilter treats a line that matches none as a raw record (always kept), and sniffing counts
    the lines that hold one. They must compile both in polars (Rust ``regex``) and in Python's ``re``.
    """

    name: str
    parse: Parser
    summary: str  # one line: what files of this kind are
    file_name: str | None = None  # regex over a file's last path component that suggests the kind
    name_decides: bool = False  # the name alone decides (profiler output has the profiler's own names)
    name_trust: int = 0  # when no line of a file shows any kind, names of kinds with trust > 0 decide, highest first
    line_heads: tuple[str, ...] = ()
    sniff: str | None = None  # further lines that show the kind (content markers) when sniffing
    hints: str | None = None  # lines the parser needs beyond levels, error codes and rule matches (prefilter)
    # Lines the parser reads only for context that holds for the whole file (a plog's rank and device, which
    # an HCCL or runtime process repeats on most of its INFO lines): the first CONTEXT_LINES of them per chunk
    # pass the prefilter, not all of them.
    context_hints: str | None = None
    line_oriented: bool = False  # parsed chunk by chunk as lines; otherwise the file is parsed whole
    batchable: bool = False  # small files of the kind may be parsed together (the parser uses no file name)
    periodic: frozenset[str] = frozenset()  # signals printed every interval: kept in the compact series
    # Lines that say a process of the kind ended on purpose or died: periodic lines that stop after one are no
    # hang (diagnose/analysis/silence.py). Part of the kind's hints, so the prefilter keeps them.
    stops: str | None = None
    signals: Mapping[str, str] = field(default_factory=dict)  # signal name -> meaning
    bundle_pass: BundlePass | None = None  # (signals, series) -> signals, once over the whole bundle
    panels: tuple[Panel, ...] = ()
    sniff_rank: int = 100  # order among kinds: on a tie in sniffing, the lower rank wins
    # Files of the kind that are read from their stream in bounded memory, never whole (a multi-GB trace):
    # ``streams(name)`` says which; ``parse_stream(binary stream, ctx, text info)`` parses one.
    streams: Callable[[str], bool] | None = None
    parse_stream: Callable[..., tuple[pl.DataFrame, pl.DataFrame]] | None = None
    locations: tuple[Location, ...] = ()  # where the software writes this kind by default (diagnose collect)


def head_only(pattern: str) -> str:
    """A pattern with its named groups made anonymous (for an alternation, or a test of form only)."""
    return re.sub(r"\(\?P<[A-Za-z_][A-Za-z0-9_]*>", "(?:", pattern)
