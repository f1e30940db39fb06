"""The category of a message site, from where it comes from (``knowledge/categories.toml``).

The module that raises a message says what it is about far more reliably than its words: ``No available memory
for the cache blocks`` comes from the KV cache's sizing, whatever the word memory suggests. The table is data:
overrides by message text first (for the few messages whose module says too little), then globs over
``project:path``, first match wins, then the default.
"""

from __future__ import annotations

import fnmatch
import functools
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from diagnose.knowledge.indexfile import knowledge_dir

CATEGORIES_FILE = "categories.toml"


@dataclass(frozen=True)
class CategoryRule:
    """One entry of the table: a template regex (an override) or a location glob, and its category."""

    category: str
    why: str
    pattern: re.Pattern[str] | None = None
    glob: re.Pattern[str] | None = None
    source: str = ""  # the pattern or glob as written


@dataclass(frozen=True)
class CategoryTable:
    overrides: tuple[CategoryRule, ...]
    rules: tuple[CategoryRule, ...]
    default: str

    def category_of(self, project: str, path: str, template: str) -> str:
        for rule in self.overrides:
            if rule.pattern is not None and rule.pattern.search(template):
                return rule.category
        site = f"{project}:{path}"
        for rule in self.rules:
            if rule.glob is not None and rule.glob.match(site):
                return rule.category
        return self.default


def load_table(path: Path) -> CategoryTable:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    overrides = tuple(CategoryRule(e["category"], e.get("why", ""), pattern=re.compile(e["pattern"]),
                                   source=e["pattern"]) for e in data.get("override", []))
    rules = tuple(CategoryRule(e["category"], e.get("why", ""), glob=re.compile(fnmatch.translate(e["glob"])),
                               source=e["glob"]) for e in data.get("rule", []))
    return CategoryTable(overrides, rules, data.get("default", "engine"))


@functools.lru_cache(maxsize=1)
def table() -> CategoryTable:
    """The shipped table, read once per process."""
    return load_table(knowledge_dir() / CATEGORIES_FILE)


@functools.lru_cache(maxsize=65536)
def category_of(project: str, path: str, template: str) -> str:
    """The category of a message site (one of ``diagnose.model.CATEGORIES``)."""
    return table().category_of(project, path, template)
