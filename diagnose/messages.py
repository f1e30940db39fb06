"""The message catalog: every user-facing string of the reports and pages, in English and Chinese.

The strings live in ``diagnose/messages.toml`` (shipped inside the package), one table per part of the
output, each message as ``key.en`` / ``key.zh`` like the rule files' texts. A message is a ``str.format``
template over named placeholders (``"{n} files"``; a literal brace is doubled); the English side may be a list ``[one, other]`` that is
picked by the ``n`` placeholder. ``term = true`` marks a message whose Chinese text is deliberately the same
technical term (``rank``); every other Chinese text holds Chinese characters (tests/test_messages.py).

Only the texts authored here and in the rule files are translated; what comes from the logs (evidence lines,
paths, node names, signatures) and identifiers (rule ids and names, source kinds, signal names, flags) are
printed as they are.

Words are chosen at the edge: the rooms that find things (ingest, engine, analysis) say them as ``Phrase``
(a catalog key with its values) or ``Template`` (a rule's or a code table's text in every language, with the
values that fill it), and a renderer says them in its output's language with ``Messages.say``. So one run can
write an English SARIF and a Chinese page, and no decision ever reads a sentence.
"""

from __future__ import annotations

import html
import os
import re
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

from diagnose.cache import parsed_tomls

LANGS = ("en", "zh")
CATALOG_FILE = Path(__file__).with_name("messages.toml")


@cache
def catalog() -> dict[str, dict[str, Any]]:
    """``"table.key"`` -> ``{"en": ..., "zh": ..., "term": bool}`` (tables may nest: ``page.timeline.title``)."""
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


    def say(self, text: "Words | str | None") -> str:
        """A phrase, a template or a plain string (log text, an identifier) in this language."""
        if text is None:
            return ""
        if isinstance(text, str):
            return text
        return text.said(self)


class Words:
    """Something said in the reader's language, at the edge (``Messages.say``)."""

    __slots__ = ()

    def said(self, msg: "Messages") -> str:
        raise NotImplementedError


class Phrase(Words):
    """A sentence of the catalog by its key, with its values (which may be phrases themselves)."""

    __slots__ = ("key", "values")

    def __init__(self, key: str, /, **values: Any) -> None:
        self.key, self.values = key, values

    def said(self, msg: Messages) -> str:
        return msg(self.key, **{k: msg.say(v) if isinstance(v, Words) else v
                                for k, v in self.values.items()})

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Phrase) and (self.key, self.values) == (other.key, other.values)

    def __repr__(self) -> str:
        return f"Phrase({self.key!r}, {self.values!r})"


class Joined(Words):
    """Texts said one after the other, with the catalog's separator ``sep`` between them (none without)."""

    __slots__ = ("parts", "sep", "distinct")

    def __init__(self, parts: "list[Words | str]", sep: str | None = None, distinct: bool = False) -> None:
        self.parts, self.sep, self.distinct = list(parts), sep, distinct

    def said(self, msg: Messages) -> str:
        said = [msg.say(p) for p in self.parts]
        if self.distinct:  # each different text once, in the order of the language's own sort
            said = sorted(set(said))
        return (msg(self.sep) if self.sep else "").join(said)


class Localized(Words):
    """A text authored in every language, said as it is (no holes to fill): a rule's title or remediation, a
    code table's meaning."""

    __slots__ = ("texts",)

    def __init__(self, texts: dict[str, str]) -> None:
        self.texts = texts

    def said(self, msg: Messages) -> str:
        return self.texts.get(msg.lang) or self.texts.get("en") or ""

    def __repr__(self) -> str:
        return f"Localized({self.texts.get('en', '')[:40]!r})"


class Template(Words):
    """A text authored in every language (a rule's title, summary or remediation; a code table's meaning),
    filled with ``values`` where it says ``{name}``; ``lead`` is said before it and ``tail`` after it (the
    root cause's sentence, a note on how many samples a finding rests on)."""

    __slots__ = ("texts", "values", "lead", "tail")

    def __init__(self, texts: dict[str, str], values: dict[str, Any] | None = None, lead: "tuple[Words, ...]" = (),
                 tail: "tuple[Words, ...]" = ()) -> None:
        self.texts, self.values, self.lead, self.tail = texts, values or {}, tuple(lead), tuple(tail)

    def led_by(self, text: Words) -> "Template":
        return Template(self.texts, self.values, (text, *self.lead), self.tail)

    def said(self, msg: Messages) -> str:
        template = self.texts.get(msg.lang) or self.texts.get("en") or ""
        values = {k: msg.say(v) if isinstance(v, Words) else v for k, v in self.values.items()}
        body = fill(template, values)
        if msg.lang == "en":
            body = counted_nouns(body)
        body += "".join(msg.say(t) for t in self.tail)
        return " ".join([*(msg.say(t) for t in self.lead), body]) if self.lead else body

    def __repr__(self) -> str:
        return f"Template({self.texts.get('en', '')[:40]!r}, {self.values!r})"


# `{name}`, `{name:.1f}`, and `{a|b}`: the first of the names that has a value (alternatives of one regex).
FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*(?:\|[A-Za-z_][A-Za-z0-9_]*)*)(?::([^{}]*))?\}")
# `[...]` holding a hole: an optional clause, said only when every hole in it has a value.
OPTIONAL = re.compile(r"\[([^\[\]]*\{[^\[\]]*)\]")
_UNKNOWN_TEXT = ("", "?", "None", "nan", "NaN", "null")
TEMPLATE_HOLE = FIELD
_SPEC = re.compile(r"(?P<align>(?:.?[<>=^])?)(?P<sign>[+\- ]?)(?P<alt>#?)(?P<zero>0?)(?P<width>\d*)"
                   r"(?P<group>[,_]?)(?:\.(?P<precision>\d+))?(?P<type>[bcdeEfFgGnosxX%]?)")
MAX_WIDTH = 40  # of a hole's format spec: a column, never a page
MAX_PRECISION = 6


def known(value: Any) -> bool:
    """A value worth saying: not None, not NaN, not a placeholder a parser or a ``str()`` left behind."""
    if value is None:
        return False
    if isinstance(value, float):
        return value == value
    if isinstance(value, str):
        return value.strip() not in _UNKNOWN_TEXT
    return True


def _value(names: str, values: dict[str, Any]) -> Any:
    return next((values[n] for n in names.split("|") if known(values.get(n))), None)


def fill(template: str, values: dict[str, Any]) -> str:
    """A rule's template (its summary, a user's or the catalog's) filled from ``values``, safely.

    Only holes are filled: a plain name (or ``a|b``), with an optional format spec. No attribute or index access
    (``{count.__class__}``, ``{count[0]}`` are left as they are), no conversion, no nested spec; a width above
    ``MAX_WIDTH`` and a precision above ``MAX_PRECISION`` are capped, so ``{count:>1000000}`` gives a column, not
    a megabyte that every format then carries (the HTML page ran for minutes on one). A value that the spec does
    not fit is shown as it is. Braces inside the values stay as they are.

    A value that is unknown (``known``) is never printed as ``?``, ``None`` or ``nan``: the optional clause
    ``[...]`` around it is left out (``"fault kernel[: {kernel}]"``); outside one, the hole is left empty."""

    def one(m: re.Match) -> str:
        value = _value(m.group(1), values)
        if value is None:
            return ""
        spec = m.group(2)
        if spec:
            try:
                return format(value, _capped(spec))
            except (ValueError, TypeError, OverflowError):
                return str(value)
        if isinstance(value, float):
            return f"{value:g}"
        return str(value)

    def optional(m: re.Match) -> str:
        inner = m.group(1)
        if all(_value(h.group(1), values) is not None for h in FIELD.finditer(inner)):
            return inner
        return ""

    for _ in range(4):  # nested clauses, the innermost first
        done = OPTIONAL.sub(optional, template)
        if done == template:
            break
        template = done
    return FIELD.sub(one, template)


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


def unknown_holes(template: str, values: dict[str, Any]) -> list[str]:
    """The holes outside optional clauses that have no value (a template that would print an empty hole)."""
    outside = template
    for _ in range(4):
        outside = OPTIONAL.sub("", outside)
    return [m.group(1) for m in FIELD.finditer(outside) if _value(m.group(1), values) is None]


# Counted nouns of English texts: templates say "{count} events" and "{n} interval(s)"; a count of one reads
# "1 event", and "(s)" becomes what the number asks.
_SINGULAR = {"events": "event", "times": "time", "tracebacks": "traceback", "messages": "message",
             "intervals": "interval", "reports": "report", "errors": "error", "runs": "run", "ranks": "rank",
             "launches": "launch", "entries": "entry", "lines": "line", "requests": "request", "files": "file",
             "preemptions": "preemption", "sequences": "sequence", "nodes": "node", "tokens": "token",
             "points": "point", "signatures": "signature", "warnings": "warning", "restarts": "restart"}
_ONE_PLURAL = re.compile(r"(?<![^\s(])1 (" + "|".join(_SINGULAR) + r")\b")
_MAYBE_PLURAL = re.compile(r"(?<![^\s(])(\d[\d,]*(?:\.\d+)?) ((?:[a-z]+ )?)([a-z]+)\(s\)")


def counted_nouns(text: str) -> str:
    text = _ONE_PLURAL.sub(lambda m: "1 " + _SINGULAR[m.group(1)], text)
    return _MAYBE_PLURAL.sub(lambda m: f"{m.group(1)} {m.group(2)}{m.group(3)}{'' if m.group(1) == '1' else 's'}", text)


def messages(lang: str | None = "en") -> Messages:
    return Messages(lang)


def locale_lang() -> str:
    """The language of the environment: ``DIAGNOSE_LANG``, else the locale (``LC_ALL``, ``LC_MESSAGES``,
    ``LANG``); Chinese for any ``zh*`` or ``cn*``, else English."""
    for var in ("DIAGNOSE_LANG", "LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(var, "")
        if value:
            return "zh" if value.lower().startswith(("zh", "cn")) else "en"  # cn: as Ascend's tools spell it
    return "en"


def words_data(words: "Words | str | None"):
    """Words as plain JSON values (for storage: a fleet dataset keeps a skip reason as its phrase, not as a
    sentence in one language); ``words_from_data`` turns them back."""
    if words is None or isinstance(words, (str, int, float, bool)):
        return words
    if isinstance(words, Phrase):
        return {"phrase": words.key, "values": {k: words_data(v) for k, v in words.values.items()}}
    if isinstance(words, Joined):
        return {"joined": [words_data(p) for p in words.parts], "sep": words.sep, "distinct": words.distinct}
    if isinstance(words, Localized):
        return {"localized": dict(words.texts)}
    if isinstance(words, Template):
        return {"template": dict(words.texts), "values": {k: words_data(v) for k, v in words.values.items()},
                "lead": [words_data(x) for x in words.lead], "tail": [words_data(x) for x in words.tail]}
    return str(words)


def words_from_data(data):
    if not isinstance(data, dict):
        return data
    if "phrase" in data:
        return Phrase(str(data["phrase"]), **{k: words_from_data(v) for k, v in (data.get("values") or {}).items()})
    if "joined" in data:
        return Joined([words_from_data(p) for p in data["joined"]], data.get("sep"), bool(data.get("distinct")))
    if "localized" in data:
        return Localized(dict(data["localized"]))
    if "template" in data:
        return Template(dict(data["template"]), {k: words_from_data(v) for k, v in (data.get("values") or {}).items()},
                        tuple(words_from_data(x) for x in data.get("lead") or ()),
                        tuple(words_from_data(x) for x in data.get("tail") or ()))
    return data
