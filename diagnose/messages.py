"""The message catalog: every user-facing string of the reports and pages, in English and Chinese.

The strings live in ``diagnose/messages.toml`` (shipped inside the package), one table per part of the
output, each message as ``key.en`` / ``key.zh`` like the rule files' texts. A message is a ``str.format``
template over named placeholders (``"{n} files"``; a literal brace is doubled); the English side may be a list ``[one, other]`` that is
picked by the ``n`` placeholder. ``term = true`` marks a message whose Chinese text is deliberately the same
technical term (``rank``); every other Chinese text holds Chinese characters (tests/test_messages.py).

Only the texts authored here and in the rule files are translated; what comes from the logs (evidence lines,
paths, node names, signatures) and identifiers (rule ids and names, source kinds, signal names, flags) are
printed as they are.
"""

from __future__ import annotations

import html
import re
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

LANGS = ("en", "zh")
CATALOG_FILE = Path(__file__).with_name("messages.toml")


@cache
def catalog() -> dict[str, dict[str, Any]]:
    """``"table.key"`` -> ``{"en": ..., "zh": ..., "term": bool}`` (tables may nest: ``page.timeline.title``)."""
    from diagnose.cache import parsed_tomls

    cached = parsed_tomls([CATALOG_FILE], prefix="messages-")  # JSON in the cache folder: 1 ms, not 15
    if cached is not None:
        try:
            return _entries(cached[CATALOG_FILE])
        except ValueError:  # a cache entry of another shape (diagnose/cache.py): the file itself
            pass
    with CATALOG_FILE.open("rb") as fh:
        return _entries(tomllib.load(fh))


def _entries(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}

    def walk(prefix: str, table: dict[str, Any]) -> None:
        for key, value in table.items():
            name = f"{prefix}.{key}" if prefix else key
            if isinstance(value, dict) and "en" in value:
                if not all(isinstance(v, (str, list, bool)) for v in value.values()):
                    raise ValueError(f"{CATALOG_FILE.name}: {name} is not a message")
                out[name] = value
            elif isinstance(value, dict):
                walk(name, value)
            else:
                raise ValueError(f"{CATALOG_FILE.name}: {name} is neither a message nor a table")

    walk("", data)
    return out


class Messages:
    """The messages of one language: ``msg("page.title")``, ``msg("text.files", n=3)``."""

    def __init__(self, lang: str | None = "en") -> None:
        self.lang = lang if lang in LANGS else "en"

    def template(self, key: str, n: int | None = None) -> str:
        entry = catalog()[key]
        value = entry.get(self.lang) or entry["en"]
        if isinstance(value, list):  # [one, other]
            value = value[0] if n == 1 else value[-1]
        return value

    def __call__(self, key: str, /, **params: Any) -> str:
        return self.template(key, params.get("n")).format(**params)

    def html(self, key: str, /, **params: Any) -> str:
        """The message for an HTML page: the template may hold markup (``<b>``, ``<code>``); every value put
        into it is escaped."""
        text = self.template(key, params.get("n"))
        safe = {k: html.escape("" if v is None else str(v), quote=True) for k, v in params.items()}
        return text.format(**safe)

    def get(self, key: str, default: str, /, **params: Any) -> str:
        """The message when the catalog has ``key``, else ``default`` (a name taken from the data)."""
        return self(key, **params) if key in catalog() else default

    def severity(self, severity: str) -> str:
        return self.get(f"severity.{severity}", severity)

    def category(self, category: str) -> str:
        return self.get(f"category.{category}", category)

    def category_id(self, category: str) -> str:
        """For a table cell: English prints the category's id (``kv-cache``, as the rule files and docs name
        it); another language prints the category's name, since the id is English."""
        return category if self.lang == "en" else self.category(category)


def messages(lang: str | None = "en") -> Messages:
    return Messages(lang)


def locale_lang() -> str:
    """The language of the environment: ``DIAGNOSE_LANG``, else the locale (``LC_ALL``, ``LC_MESSAGES``,
    ``LANG``); Chinese for any ``zh*``, else English."""
    import os

    for var in ("DIAGNOSE_LANG", "LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(var, "")
        if value:
            return "zh" if value.lower().startswith(("zh", "cn")) else "en"  # cn: as Ascend's tools spell it
    return "en"


# --- the safe formatter of rule templates -------------------------------------------------------------------

# ``{name}``, ``{name:.1f}``, and ``{a|b}`` (the first of the names that has a value: alternatives of one regex).
TEMPLATE_HOLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*(?:\|[A-Za-z_][A-Za-z0-9_]*)*)(?::([^{}]*))?\}")
_SPEC = re.compile(r"(?P<align>(?:.?[<>=^])?)(?P<sign>[+\- ]?)(?P<alt>#?)(?P<zero>0?)(?P<width>\d*)"
                   r"(?P<group>[,_]?)(?:\.(?P<precision>\d+))?(?P<type>[bcdeEfFgGnosxX%]?)")
MAX_WIDTH = 40  # of a hole's format spec: a column, never a page
MAX_PRECISION = 6


def fill(template: str, values: dict[str, Any]) -> str:
    """A rule's template (its summary, a user's or the catalog's) filled from ``values``, safely.

    Only holes are filled: a plain name (or ``a|b``), with an optional format spec. No attribute or index access
    (``{count.__class__}``, ``{count[0]}`` are left as they are), no conversion, no nested spec; a width above
    ``MAX_WIDTH`` and a precision above ``MAX_PRECISION`` are capped, so ``{count:>1000000}`` gives a column, not
    a megabyte that every format then carries (the HTML page ran for minutes on one). A value that the spec does
    not fit is shown as it is; a missing value as ``?``. Braces inside the values stay as they are. The engine
    fills summaries with it and a renderer may fill the templates it is handed with it.
    """

    def one(m: re.Match) -> str:
        value = next((values[n] for n in m.group(1).split("|") if values.get(n) is not None), None)
        if value is None:
            return "?"
        spec = m.group(2)
        if spec:
            try:
                return format(value, _capped(spec))
            except (ValueError, TypeError, OverflowError):
                return str(value)
        if isinstance(value, float):
            return f"{value:g}"
        return str(value)

    return TEMPLATE_HOLE.sub(one, template)


def _capped(spec: str) -> str:
    m = _SPEC.fullmatch(spec)
    if m is None:
        raise ValueError(spec)
    width, precision = m.group("width"), m.group("precision")
    if width and int(width) > MAX_WIDTH:
        width = str(MAX_WIDTH)
    if precision is not None and int(precision) > MAX_PRECISION:
        precision = str(MAX_PRECISION)
    return (m.group("align") + m.group("sign") + m.group("alt") + m.group("zero") + width + m.group("group")
            + (f".{precision}" if precision is not None else "") + m.group("type"))
