"""The source kinds: every parser declares its kind once (a ``SourceKind`` in its module) and this registry
collects them. Everything that depends on a kind reads it from here: sniffing a file's kind, the prefilter
that drops lines no rule or signal can use, which kinds are read line by line and which in batches, the
periodic series, the bundle-wide passes, the documented signals and the curves of the incident page.

Adding a kind: write its module in ``diagnose/parsers/kinds/`` (a ``parse`` function and a ``SOURCE = SourceKind(...)``, or
``SOURCES`` for several) and give it tests and a sample; the registry finds it. Adding a line variant to a kind
touches only its module. See docs/architecture.md.
"""

from __future__ import annotations

import re
from typing import Mapping

import importlib
import pkgutil

import diagnose.parsers.kinds as _package
from diagnose.parsers.families import cann, oom, tracebacks as traceback
from diagnose.parsers.kinds import generic
from diagnose.parsers.lineframe import ANSI, BARE_SGR
from diagnose.parsers.kind import BundlePass, Location, Panel, Parser, SourceKind, head_only
from diagnose.model.memberpath import base_name

def _collect() -> tuple[SourceKind, ...]:
    """Every ``SOURCE``/``SOURCES`` declared by a module of this package (the generic text kind aside)."""
    kinds: list[SourceKind] = []
    for info in sorted(pkgutil.iter_modules(_package.__path__), key=lambda m: m.name):
        if info.name == "generic":
            continue
        module = importlib.import_module(f"{_package.__name__}.{info.name}")
        declared = getattr(module, "SOURCES", None) or ((module.SOURCE,) if hasattr(module, "SOURCE") else ())
        kinds.extend(k for k in declared if isinstance(k, SourceKind))
    return tuple(sorted(kinds, key=lambda k: (k.sniff_rank, k.name)))


# In sniffing order: on a tie between kinds whose lines a file shows, the earlier one wins.
KINDS: tuple[SourceKind, ...] = _collect()
UNKNOWN = generic.SOURCE
_BY_NAME: dict[str, SourceKind] = {k.name: k for k in (*KINDS, UNKNOWN)}

# Signal families that several kinds emit (error blocks, out-of-memory numbers).
SHARED_SIGNALS: Mapping[str, str] = {**cann.SIGNALS, **oom.SIGNALS, **traceback.SIGNALS}


def get(name: str) -> SourceKind:
    """The kind of that name; any other name is read as text of no known kind."""
    return _BY_NAME.get(name, UNKNOWN)


def names() -> list[str]:
    return list(_BY_NAME)


def parser_for(name: str) -> Parser:
    return get(name).parse


def line_oriented(name: str) -> bool:
    return get(name).line_oriented


def well_formed(name: str) -> str | None:
    """One anchored pattern that every well-formed line of the kind matches (None for kinds without heads)."""
    heads = get(name).line_heads
    if not heads:
        return None
    return "|".join(f"(?:{head_only(h)})" for h in heads)


def periodic_signals() -> dict[str, frozenset[str]]:
    """Source kind -> its periodic signals, for the kinds that have some."""
    return {k.name: k.periodic for k in KINDS if k.periodic}


def stops() -> dict[str, str]:
    """Source kind -> the pattern of its lines that say a process ended, for the kinds that declare one."""
    return {k.name: k.stops for k in KINDS if k.stops}


def locations() -> list[tuple[str, Location]]:
    """(kind, location) of every kind's default places, in the registry's order (diagnose collect)."""
    return [(k.name, loc) for k in KINDS for loc in k.locations]


def bundle_passes() -> list[tuple[str, BundlePass]]:
    return [(k.name, k.bundle_pass) for k in KINDS if k.bundle_pass is not None]


def panels() -> list[Panel]:
    return [p for k in KINDS for p in k.panels]


def signal_docs() -> dict[str, str]:
    """Every signal a built-in parser emits, with its meaning (later kinds do not override earlier ones)."""
    out: dict[str, str] = {}
    for source in (*KINDS, UNKNOWN):
        for name, doc in source.signals.items():
            out.setdefault(name, doc)
    for name, doc in SHARED_SIGNALS.items():
        out.setdefault(name, doc)
    return out


# --- sniffing ---------------------------------------------------------------------------------------------

_SAMPLE_LINES = 200
_SNIFF_CHARS = 4096
_ANSI = re.compile(f"{ANSI}|{BARE_SGR}")
_QUOTED = re.compile(r"^\s{0,3}(?:>[ \t]?)+")


def _sniffers() -> dict[str, re.Pattern]:
    out = {}
    for k in KINDS:
        parts = [head_only(h) for h in k.line_heads] + ([k.sniff] if k.sniff else [])
        if parts:
            out[k.name] = re.compile("|".join(f"(?:{p})" for p in parts))
    return out


_NAMES = {k.name: re.compile(k.file_name) for k in KINDS if k.file_name}
_CONTENT = _sniffers()
_DECIDING = [k.name for k in KINDS if k.name_decides]
_TRUSTED = [k.name for k in sorted(KINDS, key=lambda k: -k.name_trust) if k.name_trust > 0]


# Python source: a ``.py`` file with a statement no log line starts with. Its string literals may quote log
# lines (a script that writes sample logs), so no log kind may claim it; a result kind may (AISBench configs).
SOURCE_CODE = "python-source"
_PY_SUFFIXES = (".py", ".pyw")
_PY_STATEMENT = re.compile(r"^(?:from\s+[\w.]+\s+import\s|import\s+[\w.]+\s*(?:$|,|\s+as\s)|def\s+\w+\s*\("
                           r"|class\s+\w+\s*[(:]|if\s+__name__\s*==|\"\"\"|\'\'\'|#!.*python)")
_LOG_KINDS = frozenset(k.name for k in KINDS if k.line_oriented)


def sniff(name: str, lines: list[str]) -> str:
    """The kind of a file from its name and its first lines: the kind whose lines most of them show wins,
    a name breaks ties; with no line of any kind, a specific name decides, else ``unknown``. A mixed stream
    is classified by what most of it is; its parser keeps the other lines as raw records. Python source
    that no result kind claims is ``SOURCE_CODE`` (not read: see pipeline/reading.py)."""
    base = base_name(name)
    if base.lower().endswith(".gz"):
        base = base[:-3]
    for kind in _DECIDING:
        if _NAMES[kind].search(base):
            return kind
    # A head is at the start of a line: long lines are sniffed by their first characters only.
    sample = [ln[:_SNIFF_CHARS] for ln in lines[:_SAMPLE_LINES]]
    sample = [_ANSI.sub("", ln) if "\x1b" in ln or "m" in ln[:40] else ln for ln in sample]
    sample = [_QUOTED.sub("", ln) if ln[:4].lstrip().startswith(">") else ln for ln in sample]  # a quoted paste
    source_code = base.lower().endswith(_PY_SUFFIXES) and any(_PY_STATEMENT.match(ln) for ln in sample)
    scores = {kind: sum(1 for ln in sample if pat.search(ln)) for kind, pat in _CONTENT.items()
              if not (source_code and kind in _LOG_KINDS)}
    best = max(scores.values(), default=0)
    if source_code and best == 0:
        return SOURCE_CODE
    named = [k for k, pat in _NAMES.items() if pat.search(base)]
    if best == 0:
        for kind in _TRUSTED:
            if kind in named:
                return kind
        return UNKNOWN.name
    top = [k for k, s in scores.items() if s == best]
    for kind in named:
        if kind in top:
            return kind
    return top[0]
