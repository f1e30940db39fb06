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
import threading
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
class ExceptionClass:
    """What the class of an exception says when nothing else does (``[[exception]]``)."""

    category: str
    data_only: bool  # the message is only data: place it by the innermost frame


@dataclass(frozen=True)
class CategoryTable:
    overrides: tuple[CategoryRule, ...]
    rules: tuple[CategoryRule, ...]
    default: str
    exceptions: dict[str, ExceptionClass] = None  # type: ignore[assignment]
    packages: tuple[tuple[str, str], ...] = ()  # (folder, project), most specific first
    builtins: tuple[tuple[re.Pattern[str], str], ...] = ()  # Python's own messages: (pattern, category)

    def builtin_category(self, message: str) -> str | None:
        """The category of one of Python's own messages (``[[builtin]]``): the index never attributes those."""
        for pattern, category in self.builtins:
            if pattern.search(message):
                return category
        return None

    def exception_class(self, name: str) -> ExceptionClass | None:
        """By the last dotted part of the class name (``torch.OutOfMemoryError`` is ``OutOfMemoryError``)."""
        return (self.exceptions or {}).get(name.rsplit(".", 1)[-1])

    def site_of_path(self, path: str) -> tuple[str, str] | None:
        """(project, path inside its release) of a file path of the machine that ran it, by the last folder
        named like a known package; None when no package folder is in it."""
        parts = path.replace("\\", "/").split("/")
        for i in range(len(parts) - 2, -1, -1):
            for folder, project in self.packages:
                if parts[i] == folder:
                    return project, "/".join(parts[i:])
        return None

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
    exceptions = {e["name"]: ExceptionClass(e["category"], bool(e.get("data_only", False)))
                  for e in data.get("exception", [])}
    packages = tuple((e["folder"], e["project"]) for e in data.get("package", []))
    builtins = tuple((re.compile(e["pattern"]), e["category"]) for e in data.get("builtin", []))
    return CategoryTable(overrides, rules, data.get("default", "engine"), exceptions, packages, builtins)


@functools.lru_cache(maxsize=1)
def _table() -> CategoryTable:
    return load_table(knowledge_dir() / CATEGORIES_FILE)


_loading = threading.Lock()  # a second caller waits for the first one's load (index.warm) rather than repeating it


def table() -> CategoryTable:
    """The shipped table, read once per process."""
    with _loading:
        return _table()


@functools.lru_cache(maxsize=65536)
def category_of(project: str, path: str, template: str) -> str:
    """The category of a message site (one of ``diagnose.model.CATEGORIES``)."""
    return table().category_of(project, path, template)


@functools.lru_cache(maxsize=1)
def _repositories() -> dict[str, dict[str, str]]:
    path = knowledge_dir() / "repositories.toml"
    return tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def link(project: str, version: str, path: str, line: int) -> str:
    """The address of ``path:line`` in ``project``'s release ``version`` (``knowledge/repositories.toml``), or
    ``""`` when its repository is not listed or the release is not one it tags."""
    repo = _repositories().get(project)
    if not repo or "@" in version or not version[:1].isdigit():
        return ""
    ref = repo["ref"].format(version=version)
    return f"https://github.com/{repo['repository']}/blob/{ref}/{repo.get('prefix', '')}{path}#L{line}"
