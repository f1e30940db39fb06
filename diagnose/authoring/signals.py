"""The signals a rule can read (``diagnose rules signals``): every name a parser emits, the source kind that
emits it, its unit and its meaning, from the parsers' own declarations (``SourceKind.signals`` and the
families several kinds share, diagnose/parsers/registry.py).

The declarations give a meaning; the unit is read from it and from the name, by the conventions the parsers
follow: a meaning that ends in ``, s`` / ``, GiB`` / ``, tokens/s``, a name that ends in ``_pct``, ``_ms``,
``_gib``, a ``(text ...)``, ``(1/0)`` or ``(fraction)`` note, a name that counts ``_tokens`` or ``_reqs``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from diagnose.parsers import registry

SHARED = "any"  # the families every log kind can carry (CANN error blocks, OOM messages, tracebacks)

_UNIT_IN_TEXT = re.compile(r",\s*(tokens/s|req/s|s|ms|us|GiB|GB|MB|W|%|points|degrees C)\s*(?:\(|$)")
_UNIT_NAMES = [  # name suffix -> unit of a measured value
    ("_pct", "%"), ("_pts", "points"), ("_points", "points"), ("_ms", "ms"), ("_us", "us"), ("_s", "s"),
    ("_gib", "GiB"), ("_gb", "GB"), ("_mb", "MB"), ("_bytes", "bytes"), ("_w", "W"), ("_c", "degrees C"),
]
_COUNT_NAMES = [  # name suffix -> what is counted (after the notes in the meaning)
    ("_tokens", "tokens"), ("_reqs", "requests"), ("_seqs", "sequences"), ("_blocks", "blocks"),
    ("_version", "text"), ("_throughput", "tokens/s"),
]
_TEXT_VALUE = re.compile(r"\(text\b|[;,] text\)")  # `(text: ...)`, `(..., text)`: the value is a string
_RATIO = re.compile(r"divided by|\bmax/mean\b|/ median|\bratio\b")


@dataclass(frozen=True)
class SignalDoc:
    name: str
    kind: str  # the source kind that emits it, or "any"
    unit: str  # "%", "s", "GiB", "tokens/s", "text", "1/0", "fraction", ... or "" for a plain number
    meaning: str

    def to_dict(self) -> dict[str, str]:
        return {"signal": self.name, "kind": self.kind, "unit": self.unit, "meaning": self.meaning}


def unit_of(name: str, meaning: str) -> str:
    """The unit of a signal's value, from its meaning and name ("" for a plain number or count)."""
    found = _UNIT_IN_TEXT.search(meaning)
    if found:
        return found.group(1)
    for suffix, unit in _UNIT_NAMES:
        if name.endswith(suffix):
            return unit
    lowered = meaning.lower()
    checks = [("in percent" in lowered, "%"), (bool(_TEXT_VALUE.search(meaning)), "text"),
              ("(1/0)" in meaning or "(1)" in meaning, "1/0"), ("fraction" in lowered, "fraction"),
              (bool(_RATIO.search(lowered)), "ratio"), ("(tokens" in meaning, "tokens"), ("(GB" in meaning, "GB")]
    for hit, unit in checks:
        if hit:
            return unit
    for suffix, unit in _COUNT_NAMES:
        if name.endswith(suffix):
            return unit
    return ""


def signal_docs() -> list[SignalDoc]:
    """Every documented signal, by kind in registry order, then the shared families."""
    shared = dict(registry.SHARED_SIGNALS)
    out = []
    for source in (*registry.KINDS, registry.UNKNOWN):
        out += [SignalDoc(name, source.name, unit_of(name, doc), doc) for name, doc in source.signals.items()
                if shared.get(name) != doc]  # a shared family a kind re-declares is listed once, as `any`
    out += [SignalDoc(name, SHARED, unit_of(name, doc), doc) for name, doc in shared.items()]
    return out


def kinds() -> list[str]:
    """The kinds that document signals (for ``--kind``)."""
    seen: list[str] = []
    for doc in signal_docs():
        if doc.kind not in seen:
            seen.append(doc.kind)
    return seen
