"""Load and validate rule files (docs/writing-rules.md): metadata, texts, one ``[match]`` table, cause links
(engine/links.py) and ``[[test]]`` fixtures. Unknown fields are errors (a typo must not silently disable a
check); every error names the file and the field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from diagnose.bounded import SMALL_FILE, Malformed, NotRegular, read_capped, toml_loads
from diagnose.cache import parsed_tomls
from diagnose.engine.links import LINK_KEYS, check_links, links_of
from diagnose.engine.match import ACROSS, LEVELS, SCOPES, SELECTOR_FIELDS, WITHIN, Match
from diagnose.engine.match_kinds import KINDS, SCHEMA, match_from
from diagnose.model import CATEGORIES, SEVERITIES, CauseLink, RuleInfo, Threshold
from diagnose.scan.fastregex import large_repetitions

LANGS = ("en", "zh")
CODES_DIR = "codes"
MATCH_KINDS = tuple(SCHEMA)

_TOP_FIELDS = {
    "id", "name", "category", "severity", "sources", "title", "description", "summary", "remediation",
    "references", "match", "test", "consequence", "aliases", "tags", *LINK_KEYS,
}
_TEST_FIELDS = {"name", "log", "file", "kind", "path", "fires", "lines", "summary_contains"}
_ID = re.compile(r"^[A-Z][A-Z0-9]*-?\d{3}$")
_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)$")


class RuleError(Exception):
    """A rule file that cannot be used. ``str()`` names the file and field of the first problem; ``errors``
    lists every problem found in the file (each a RuleError)."""

    def __init__(self, path: str, field_name: str, message: str, more: list["RuleError"] | None = None):
        self.path, self.field, self.message = path, field_name, message
        self.errors: list[RuleError] = [self] + list(more or [])
        super().__init__(f"{path}: {field_name}: {message}" if field_name else f"{path}: {message}")


@dataclass
class RuleTest:
    name: str
    log: str
    path: str  # virtual path the fixture is read as (decides kind sniffing and node)
    kind: str | None
    fires: bool
    lines: list[int]
    summary_contains: list[str]


@dataclass
class Rule:
    id: str
    name: str
    category: str
    severity: str
    sources: list[str]
    title: dict[str, str]
    description: dict[str, str]
    summary: dict[str, str]
    remediation: dict[str, str]
    references: list[str]
    match: Match
    tests: list[RuleTest] = field(default_factory=list)
    consequence: bool = False
    aliases: list[str] = field(default_factory=list)
    path: str = ""
    links: list[CauseLink] = field(default_factory=list)  # [[causes]] and [[caused_by]] (engine/links.py)
    slow_patterns: list[tuple[str, str]] = field(default_factory=list)  # (field, `{1,5000}`): see scan/fastregex.py

    def text(self, what: str, lang: str) -> str:
        table = getattr(self, what)
        return table.get(lang) or table.get("en", "")

    def info(self) -> RuleInfo:
        """What renderers need of this rule (diagnose/model/findings.py): texts in every language, thresholds."""
        m = self.match
        thresholds = [Threshold(self.id, m.signal, float(getattr(m, op)), op, not m.also and m.engine_regex is None)
                      for op in ("above", "below") if m.kind == "threshold" and getattr(m, op) is not None]
        return RuleInfo(id=self.id, name=self.name, category=self.category, severity=self.severity,
                        title=dict(self.title), description=dict(self.description),
                        remediation=dict(self.remediation), references=list(self.references), path=str(self.path),
                        thresholds=thresholds)


def duration_seconds(value: str, path: str, field_name: str) -> float:
    m = _DURATION.match(str(value).strip())
    if not m:
        raise RuleError(path, field_name, f"duration {value!r} must look like 30s, 5m, 1h or 500ms")
    n, unit = float(m.group(1)), m.group(2)
    return n * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]


def check_regex(pattern: Any, path: str, field_name: str, compile_it: bool = True) -> str:
    """Compile with polars' engine (Rust regex: linear time, no look-around, no backreferences)."""
    if not isinstance(pattern, str) or not pattern:
        raise RuleError(path, field_name, "must be a non-empty string (a regular expression)")
    if len(pattern) > 10_000:
        raise RuleError(path, field_name, "regular expression longer than 10000 characters")
    if not compile_it:
        return pattern
    try:
        pl.Series([""], dtype=pl.String).str.contains(pattern)
    except Exception as exc:  # polars raises ComputeError with the regex crate's message
        first = str(exc).strip().splitlines()
        detail = " ".join(x.strip() for x in first[:6] if x.strip())
        hint = ""
        if re.search(r"\(\?<?[=!]|\\[1-9]", pattern):
            hint = " (look-around and backreferences are not supported: rules run on a linear-time engine)"
        raise RuleError(path, field_name, f"invalid regular expression{hint}: {detail}") from None
    return pattern


class _Check:
    """Collects every problem of one rule file (a typo must not hide the next one)."""

    def __init__(self, path: str, compile_patterns: bool):
        self.path, self.compile_patterns = path, compile_patterns
        self.errors: list[RuleError] = []
        self.notes: list[tuple[str, str]] = []  # (field, counted repetition) of patterns slow on long lines

    def fail(self, field_name: str, message: str) -> None:
        self.errors.append(RuleError(self.path, field_name, message))

    def attempt(self, fn, *args):
        try:
            return fn(*args)
        except RuleError as exc:
            self.errors.append(exc)
            return None

    def regex(self, value: Any, where: str) -> None:
        if self.attempt(check_regex, value, self.path, where, self.compile_patterns) and self.compile_patterns:
            for found in large_repetitions(value):  # a user's pattern: said once, where the rule is loaded
                self.notes.append((where, found))

    def raise_if_any(self) -> None:
        if self.errors:
            first = self.errors[0]
            raise RuleError(first.path, first.field, first.message, self.errors[1:])

    def lang_table(self, data: dict, key: str, required: bool) -> dict[str, str]:
        value = data.get(key)
        if value is None:
            if required:
                self.fail(key, "missing (a table with `en` and `zh`, e.g. title.en = \"...\")")
            return {}
        if isinstance(value, str):
            return {"en": value}
        if not isinstance(value, dict):
            self.fail(key, "must be a table of languages (en, zh)")
            return {}
        for lang, text in value.items():
            if lang not in LANGS:
                self.fail(f"{key}.{lang}", f"unknown language; use one of {', '.join(LANGS)}")
            elif not isinstance(text, str):
                self.fail(f"{key}.{lang}", "must be a string")
        if required and "en" not in value:
            self.fail(f"{key}.en", "missing")
        return {k: v for k, v in value.items() if k in LANGS and isinstance(v, str)}

    def value(self, kind: str, value: Any, where: str) -> None:
        """One field of a [match] table against its type in its kind's FIELDS (engine/match_kinds/)."""
        if kind == "regex":
            self.regex(value, where)
        elif kind == "number":
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                self.fail(where, "must be a number")
        elif kind == "int":
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                self.fail(where, "must be a whole number of at least 1")
        elif kind == "str":
            if not isinstance(value, str) or not value:
                self.fail(where, "must be a non-empty string")
        elif kind == "duration":
            self.attempt(duration_seconds, value, self.path, where)
        elif kind == "sources":
            if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
                self.fail(where, "must be a list of source kinds, e.g. [\"vllm\", \"mindie\"]")
        elif kind == "field":
            if value not in ("message", "text"):
                self.fail(where, "must be `message` (header stripped) or `text` (whole line)")
        elif kind == "levels":
            levels = [value] if isinstance(value, str) else value
            bad = [x for x in levels if x not in LEVELS] if isinstance(levels, list) else [value]
            if bad:
                self.fail(where, f"{bad[0]!r} is not DEBUG, INFO, WARNING, ERROR or CRITICAL")
        elif kind == "classify":
            if not isinstance(value, dict):
                self.fail(where, "must be a table of label = regex")
            else:
                for label, pattern in value.items():
                    self.regex(pattern, f"{where}.{label}")
        elif kind == "scope":
            if value not in SCOPES:
                self.fail(where, "must be bundle, node or file")
        elif kind == "across":
            if value not in ACROSS:
                self.fail(where, "must be node, device, engine or file")
        elif kind == "within":
            if value not in WITHIN:
                self.fail(where, "must be node or file (compare only inside one node or file)")
        elif kind == "selector":
            self.selector(value, where)
        elif kind == "selectors":
            if not isinstance(value, list):
                self.fail(where, "must be a list of tables")
            else:
                for i, item in enumerate(value):
                    self.selector(item, f"{where}[{i}]")

    def selector(self, sel: Any, where: str) -> None:
        if not isinstance(sel, dict):
            self.fail(where, "must be a table")
            return
        for key in sorted(set(sel) - set(SELECTOR_FIELDS)):
            self.fail(f"{where}.{key}", "unknown field")
        if "regex" not in sel and "signal" not in sel:
            self.fail(where, "needs `regex` (over log lines) or `signal` (a parsed value)")
        for key, value in sel.items():
            if key in SELECTOR_FIELDS:
                self.value(SELECTOR_FIELDS[key][0], value, f"{where}.{key}")

    def match(self, match: Any) -> None:
        if not isinstance(match, dict):
            self.fail("match", "must be a table")
            return
        kind = match.get("kind")
        if kind not in SCHEMA:
            self.fail("match.kind", f"{kind!r} is not one of {', '.join(SCHEMA)}")
            return
        fields = SCHEMA[kind]
        for key in sorted(set(match) - set(fields) - {"kind"}):
            self.fail(f"match.{key}", f"unknown field for kind {kind!r}")
        for key, value in match.items():
            if key in fields:
                self.value(fields[key][0], value, f"match.{key}")
        for where, problem in KINDS[kind].check(match):
            self.fail(where, problem)


def load_rule(path: Path, check_patterns: bool = True) -> Rule:
    """One rule file, read within the bounds of diagnose/bounded.py: a regular file (a link to one is followed;
    a FIFO or a device is refused, never waited on or read) of at most ``SMALL_FILE`` bytes, TOML nested at most
    ``MAX_DEPTH`` deep; anything else is a RuleError naming the file (exit 2), not a traceback."""
    sp = str(path)
    try:
        data = toml_loads(read_capped(path, SMALL_FILE, follow=True).decode("utf-8"), "invalid TOML")
    except Malformed as exc:
        raise RuleError(sp, "", str(exc)) from None
    except NotRegular as exc:
        raise RuleError(sp, "", f"cannot read: {exc} (a rule file is a regular file of at most {SMALL_FILE} bytes)") \
            from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RuleError(sp, "", f"cannot read: {exc}") from None
    return rule_from_dict(data, sp, path.parent, check_patterns)


def rule_from_dict(data: dict, sp: str, folder: Path | None = None, check_patterns: bool = True) -> Rule:
    """A validated rule, or a RuleError listing every problem of the file. ``check_patterns=False`` skips
    compiling its regular expressions (the built-in catalog, whose patterns the test suite compiles; a
    user's rule is always checked)."""
    ck = _Check(sp, check_patterns)
    for key in sorted(set(data) - _TOP_FIELDS):
        ck.fail(key, f"unknown field (allowed: {', '.join(sorted(_TOP_FIELDS))})")
    for key in ("id", "name", "category", "severity", "match"):
        if key not in data:
            ck.fail(key, "missing")
    rid = data.get("id")
    if "id" in data and (not isinstance(rid, str) or not _ID.match(rid)):
        ck.fail("id", f"{rid!r} must look like KV001 or MTP-001 (capitals, then three digits)")
    if "name" in data and (not isinstance(data["name"], str) or not _NAME.match(data["name"])):
        ck.fail("name", "must be lower-case words joined by '-', e.g. kv-cache-saturated")
    if "category" in data and data["category"] not in CATEGORIES:
        ck.fail("category", f"{data['category']!r} is not one of {', '.join(CATEGORIES)}")
    if "severity" in data and data["severity"] not in SEVERITIES:
        ck.fail("severity", f"{data['severity']!r} is not one of {', '.join(SEVERITIES)}")
    sources = data.get("sources", [])
    if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
        ck.fail("sources", "must be a list of source kinds, e.g. [\"vllm\", \"mindie\"]")
    refs = data.get("references", [])
    if not isinstance(refs, list) or not all(isinstance(s, str) for s in refs):
        ck.fail("references", "must be a list of strings")
    if "match" in data:
        ck.match(data["match"])
    check_links(data, ck.fail, lambda v, where: duration_seconds(v, sp, where))
    texts = {key: ck.lang_table(data, key, key in ("title", "remediation"))
             for key in ("title", "description", "summary", "remediation")}
    # The fixtures are checked with the rest, so a broken file lists its test problems too.
    raw_tests = data.get("test", [])
    if not isinstance(raw_tests, list):
        ck.fail("test", "must be an array of tables: [[test]]")
        raw_tests = []
    first_source = sources[0] if isinstance(sources, list) and sources and isinstance(sources[0], str) else None
    tests = [_check_test(t, i, sp, folder, rid if isinstance(rid, str) else "RULE", first_source, ck)
             for i, t in enumerate(raw_tests)]
    ck.raise_if_any()
    rule = Rule(
        id=rid,
        name=data["name"],
        category=data["category"],
        severity=data["severity"],
        sources=sources,
        **texts,
        references=refs,
        match=match_from(data["match"], lambda v, where: duration_seconds(v, sp, where)),
        consequence=bool(data.get("consequence", False)),
        aliases=list(data.get("aliases", [])),
        path=sp,
        links=links_of(rid, data, lambda v, where: duration_seconds(v, sp, where)),
    )
    rule.tests = tests
    rule.slow_patterns = ck.notes
    return rule


def _check_test(t: Any, i: int, sp: str, folder: Path | None, rule_id: str, first_source: str | None,
                ck: _Check) -> RuleTest | None:
    """One [[test]] table; every problem of it goes to ``ck`` (None when there is one)."""
    where = f"test[{i}]"
    if not isinstance(t, dict):
        ck.fail(where, "must be a table")
        return None
    before = len(ck.errors)
    for key in sorted(set(t) - _TEST_FIELDS):
        ck.fail(f"{where}.{key}", f"unknown field (allowed: {', '.join(sorted(_TEST_FIELDS))})")
    if "fires" not in t or not isinstance(t["fires"], bool):
        ck.fail(f"{where}.fires", "missing (true: the rule must fire; false: it must not)")
    log = None
    if ("log" in t) == ("file" in t):
        ck.fail(where, "give exactly one of `log` (inline text) or `file` (path beside the rule)")
    elif "log" in t:
        log = t["log"]
        if not isinstance(log, str):
            ck.fail(f"{where}.log", "must be a string (the log text)")
    else:
        target = (folder or Path(".")) / str(t["file"])
        try:
            log = target.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            ck.fail(f"{where}.file", f"cannot read {target}: {getattr(exc, 'strerror', None) or exc}")
    lines = t.get("lines", [])
    if not isinstance(lines, list) or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in lines):
        ck.fail(f"{where}.lines", "must be a list of 1-based line numbers")
    if len(ck.errors) > before:
        return None
    return RuleTest(
        name=t.get("name", f"{'fires' if t['fires'] else 'quiet'} #{i + 1}"),
        log=log,
        path=t.get("path", f"fixture/{rule_id}-{i}.log"),
        kind=t.get("kind") or first_source,
        fires=t["fires"],
        lines=lines,
        summary_contains=list(t.get("summary_contains", [])),
    )


def builtin_rules_dir() -> Path:
    """The catalog shipped in the wheel (diagnose/_rules), or the repository's rules/ in a checkout."""
    here = Path(__file__).resolve().parent.parent
    packaged = here / "_rules"
    if packaged.is_dir():
        return packaged
    return here.parent / "rules"


def load_rules(dirs: list[Path], trusted: Path | None = None) -> tuple[list[Rule], list[RuleError]]:
    """All ``*.toml`` rule files under ``dirs``; bad files are returned as errors, not raised. The patterns
    of rules under ``trusted`` (the built-in catalog) are not compiled here: that costs a polars query per
    pattern at every start, and the test suite compiles them (tests/test_rule_catalog.py)."""
    rules: list[Rule] = []
    errors: list[RuleError] = []
    seen: dict[str, str] = {}
    named: dict[str, str] = {}
    for folder in dirs:
        if folder.is_file():
            files = [folder]
        elif folder.is_dir():
            # `codes/` holds the error-code family tables (diagnose/knowledge/code_tables.py), not rules.
            files = sorted(p for p in folder.rglob("*.toml") if CODES_DIR not in p.relative_to(folder).parts[:-1])
        else:
            errors.append(RuleError(str(folder), "", "no such rule file or folder"))
            continue
        builtin = trusted is not None and folder.is_dir() and folder == trusted
        cached = parsed_tomls(files) if builtin else None  # see diagnose/cache.py
        for path in files:
            try:
                if cached is not None:
                    rule = _from_cache(cached[path], path)
                else:
                    rule = load_rule(path, check_patterns=trusted is None or not path.is_relative_to(trusted))
            except RuleError as exc:
                errors.extend(exc.errors)
                continue
            if rule.id in seen:
                errors.append(RuleError(str(path), "id", f"{rule.id} is already defined in {seen[rule.id]}"))
                continue
            if rule.name in named:  # `rules show NAME` and --select NAME must name one rule
                errors.append(RuleError(str(path), "name", f"{rule.name!r} is already the name of {named[rule.name]}"))
                continue
            seen[rule.id] = str(path)
            named[rule.name] = rule.id
            rules.append(rule)
    return rules, errors


def _from_cache(data, path: Path) -> Rule:
    """A built-in rule from its cache entry, or from its file when the entry is not a valid rule (the cache
    folder is not trusted: diagnose/cache.py)."""
    try:
        return rule_from_dict(data, str(path), path.parent, check_patterns=False)
    except (RuleError, TypeError, ValueError, AttributeError, KeyError):
        return load_rule(path, check_patterns=False)
