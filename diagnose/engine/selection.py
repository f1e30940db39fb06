"""Which rules run: ``--select`` / ``--ignore`` and the ``select`` / ``ignore`` keys of the configuration file.

A selector names rules in one of five ways (the conventions of ruff and semgrep):

    ALL                  every rule
    kv-cache             a category
    KV, COMM0            an id prefix (case does not matter)
    KV001                one rule id (or a former id of it, its ``aliases``)
    kv-cache-saturated   one rule name

Selections come in layers, lowest priority first: the configuration file, then the command line. As in ruff,
the highest layer that has a ``select`` starts the set (without any ``select``, every rule is selected), and
the ``ignore`` of that layer and of every layer above it take rules out. Within one layer the more specific
selector wins (a rule id over a prefix, a longer prefix over a shorter one, a prefix over a category, a
category over ``ALL``) and ``ignore`` wins a tie. So ``--select KV --ignore KV001`` runs the KV rules but
KV001, ``--ignore KV --select KV001`` (one layer) runs only KV001, and ``--select KV001`` on the command line
runs KV001 even when the configuration file ignores it.

A selector that names no rule is an error (``UnknownSelector``): a typo must not silently run everything or
nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from diagnose.model import CATEGORIES

ALL = "ALL"
_EXACT = 1000  # specificity of a rule id, alias or name; prefixes count their length, categories 1, ALL 0


@dataclass(frozen=True)
class RuleSelection:
    """One layer: its ``select`` (None: the layer does not select) and its ``ignore``; ``origin`` says where
    it was written (``--select``/``--ignore``, or the configuration file) for error messages."""

    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    origin: str = "the command line"


@dataclass(frozen=True)
class RuleKey:
    """What a selector can name of a rule: its id, former ids, name and category."""

    id: str
    name: str
    category: str
    aliases: tuple[str, ...] = ()

    @classmethod
    def of(cls, rule) -> RuleKey:
        return cls(rule.id, rule.name, rule.category, tuple(getattr(rule, "aliases", ()) or ()))


class UnknownSelector(ValueError):
    """Selectors that name no rule; ``str()`` names each one and where it was given."""

    def __init__(self, problems: list[tuple[str, str]]):
        self.problems = problems  # (selector, where it was given)
        super().__init__("; ".join(self.lines()))

    def lines(self) -> list[str]:
        return [f"{origin}: unknown rule selector {sel!r} (not a rule id, id prefix, rule name, category or ALL; "
                "see `diagnose rules list`)" for sel, origin in self.problems]


def split_selectors(values: Iterable[str] | str | None) -> tuple[str, ...]:
    """Repeated options and comma lists as one tuple: ``("KV,MEM001", "COMM")`` -> ``("KV", "MEM001", "COMM")``."""
    if values is None:
        return ()
    if isinstance(values, str):
        values = [values]
    return tuple(part.strip() for value in values for part in str(value).split(",") if part.strip())


def specificity(selector: str, key: RuleKey) -> int | None:
    """How specifically ``selector`` names the rule ``key``, or None when it does not name it."""
    if selector == ALL:
        return 0
    if selector == key.name:
        return _EXACT
    upper = selector.upper()
    if upper == key.id.upper() or upper in (a.upper() for a in key.aliases):
        return _EXACT
    if selector in CATEGORIES:  # `mtp` is the category; `MTP` the id prefix (usually the same rules)
        return 1 if selector == key.category else None
    if key.id.upper().startswith(upper):
        return 1 + len(upper)
    return None


def _best(selectors: tuple[str, ...], key: RuleKey) -> int | None:
    found = [s for s in (specificity(sel, key) for sel in selectors) if s is not None]
    return max(found) if found else None


def is_selected(layers: Iterable[RuleSelection], key: RuleKey) -> bool:
    """Whether the layers (lowest priority first) leave the rule ``key`` selected."""
    layers = list(layers)
    start = max((i for i, layer in enumerate(layers) if layer.select is not None), default=None)
    selected = start is None  # no layer selects: every rule, minus the ignores
    for layer in layers[start or 0:]:
        chosen = _best(layer.select or (), key)
        dropped = _best(layer.ignore, key)
        if dropped is not None and (chosen is None or dropped >= chosen):
            selected = False
        elif chosen is not None:
            selected = True
    return selected


def check_selectors(layers: Iterable[RuleSelection], keys: Iterable[RuleKey]) -> None:
    """Raise UnknownSelector for every selector of the layers that names none of ``keys``."""
    keys = list(keys)
    problems = []
    for layer in layers:
        for kind, selectors in (("select", layer.select or ()), ("ignore", layer.ignore)):
            for sel in selectors:
                if sel == ALL or sel in CATEGORIES:  # a category of no loaded rule still names a category
                    continue
                if not any(specificity(sel, k) is not None for k in keys):
                    origin = f"--{kind}" if layer.origin == "the command line" else f"{layer.origin}: {kind}"
                    problems.append((sel, origin))
    if problems:
        raise UnknownSelector(problems)


def select_rules(rules: list, layers: Iterable[RuleSelection], extra: Iterable[RuleKey] = ()) -> list:
    """The rules the layers select, in their order. ``extra`` are ids that are not rule files (the root-cause
    finding's) but may be selected: they count as known selectors. Raises UnknownSelector."""
    layers = list(layers)
    if not layers:
        return list(rules)
    check_selectors(layers, [RuleKey.of(r) for r in rules] + list(extra))
    return [r for r in rules if is_selected(layers, RuleKey.of(r))]
