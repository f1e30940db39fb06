"""Load and validate rule files. The rule format is documented in docs/writing-rules.md.

A rule file is TOML: metadata (id, name, category, severity, sources, title, description, summary,
remediation, references), one ``[match]`` table and ``[[test]]`` fixtures. Unknown fields are errors (a
typo must not silently disable a check); every error names the file and the field.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from diagnose.engine.catalog_cache import parsed_tomls
from diagnose.model import CATEGORIES, SEVERITIES

LANGS = ("en", "zh")
CODES_DIR = "codes"
MATCH_KINDS = ("pattern", "threshold", "absence", "mismatch")

_TOP_FIELDS = {
    "id", "name", "category", "severity", "sources", "title", "description", "summary", "remediation",
    "references", "match", "test", "consequence", "aliases", "tags",
}
_SELECTOR_FIELDS = {"regex", "not_regex", "field", "level", "signal", "above", "below", "text_regex", "sources"}
_MATCH_FIELDS = {
    "pattern": _SELECTOR_FIELDS | {"kind", "min_count", "window", "classify", "classify_default"},
    "threshold": {"kind", "signal", "above", "below", "samples", "sustained", "also", "rising", "sources", "engine_regex"},
    "absence": {"kind", "when", "missing", "require", "scope"},
    "mismatch": {"kind", "signal", "across", "within", "sources", "ignore_regex"},
}
_TEST_FIELDS = {"name", "log", "file", "kind", "path", "fires", "lines", "summary_contains"}
_ID = re.compile(r"^[A-Z][A-Z0-9]*-?\d{3}$")
_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)$")


class RuleError(Exception):
    """A rule file that cannot be used. ``str()`` names the file and field."""

    def __init__(self, path: str, field_name: str, message: str):
        self.path, self.field, self.message = path, field_name, message
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
    match: dict[str, Any]
    tests: list[RuleTest] = field(default_factory=list)
    consequence: bool = False
    aliases: list[str] = field(default_factory=list)
    path: str = ""

    def text(self, what: str, lang: str) -> str:
        table = getattr(self, what)
        return table.get(lang) or table.get("en", "")

    def brief(self, lang: str = "en") -> dict[str, str]:
        return {
            "id": self.id,
            "name": self.name,
            "category": self.category,
            "severity": self.severity,
            "title": self.text("title", lang),
        }


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


def _lang_table(data: dict, key: str, path: str, required: bool) -> dict[str, str]:
    value = data.get(key)
    if value is None:
        if required:
            raise RuleError(path, key, "missing (a table with `en` and `zh`, e.g. title.en = \"...\")")
        return {}
    if isinstance(value, str):
        return {"en": value}
    if not isinstance(value, dict):
        raise RuleError(path, key, "must be a table of languages (en, zh)")
    for lang, text in value.items():
        if lang not in LANGS:
            raise RuleError(path, f"{key}.{lang}", f"unknown language; use one of {', '.join(LANGS)}")
        if not isinstance(text, str):
            raise RuleError(path, f"{key}.{lang}", "must be a string")
    if required and "en" not in value:
        raise RuleError(path, f"{key}.en", "missing")
    return dict(value)


def load_rule(path: Path, check_patterns: bool = True) -> Rule:
    sp = str(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise RuleError(sp, "", f"invalid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RuleError(sp, "", f"cannot read: {exc}") from None
    return rule_from_dict(data, sp, path.parent, check_patterns)


def rule_from_dict(data: dict, sp: str, folder: Path | None = None, check_patterns: bool = True) -> Rule:
    """A validated rule. ``check_patterns=False`` skips compiling its regular expressions (the built-in
    catalog, whose patterns the test suite compiles; a user's rule is always checked)."""
    unknown = set(data) - _TOP_FIELDS
    if unknown:
        raise RuleError(sp, sorted(unknown)[0], f"unknown field (allowed: {', '.join(sorted(_TOP_FIELDS))})")
    for key in ("id", "name", "category", "severity", "match"):
        if key not in data:
            raise RuleError(sp, key, "missing")
    rid = data["id"]
    if not isinstance(rid, str) or not _ID.match(rid):
        raise RuleError(sp, "id", f"{rid!r} must look like KV001 or MTP-001 (capitals, then three digits)")
    if not isinstance(data["name"], str) or not _NAME.match(data["name"]):
        raise RuleError(sp, "name", "must be lower-case words joined by '-', e.g. kv-cache-saturated")
    if data["category"] not in CATEGORIES:
        raise RuleError(sp, "category", f"{data['category']!r} is not one of {', '.join(CATEGORIES)}")
    if data["severity"] not in SEVERITIES:
        raise RuleError(sp, "severity", f"{data['severity']!r} is not one of {', '.join(SEVERITIES)}")
    sources = data.get("sources", [])
    if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
        raise RuleError(sp, "sources", "must be a list of source kinds, e.g. [\"vllm\", \"mindie\"]")
    refs = data.get("references", [])
    if not isinstance(refs, list) or not all(isinstance(s, str) for s in refs):
        raise RuleError(sp, "references", "must be a list of strings")
    match = _check_match(data["match"], sp, check_patterns)
    rule = Rule(
        id=rid,
        name=data["name"],
        category=data["category"],
        severity=data["severity"],
        sources=sources,
        title=_lang_table(data, "title", sp, True),
        description=_lang_table(data, "description", sp, False),
        summary=_lang_table(data, "summary", sp, False),
        remediation=_lang_table(data, "remediation", sp, True),
        references=refs,
        match=match,
        consequence=bool(data.get("consequence", False)),
        aliases=list(data.get("aliases", [])),
        path=sp,
    )
    rule.tests = [_check_test(t, i, sp, folder, rule) for i, t in enumerate(data.get("test", []))]
    return rule


def _check_selector(sel: Any, sp: str, where: str, check_patterns: bool = True) -> dict:
    if not isinstance(sel, dict):
        raise RuleError(sp, where, "must be a table")
    unknown = set(sel) - _SELECTOR_FIELDS
    if unknown:
        raise RuleError(sp, f"{where}.{sorted(unknown)[0]}", "unknown field")
    if "regex" not in sel and "signal" not in sel:
        raise RuleError(sp, where, "needs `regex` (over log lines) or `signal` (a parsed value)")
    for key in ("regex", "not_regex", "text_regex"):
        if key in sel:
            check_regex(sel[key], sp, f"{where}.{key}", check_patterns)
    if sel.get("field", "message") not in ("message", "text"):
        raise RuleError(sp, f"{where}.field", "must be `message` (header stripped) or `text` (whole line)")
    for key in ("above", "below"):
        if key in sel and not isinstance(sel[key], (int, float)):
            raise RuleError(sp, f"{where}.{key}", "must be a number")
    level = sel.get("level")
    if level is not None:
        levels = [level] if isinstance(level, str) else level
        bad = [x for x in levels if x not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")]
        if bad:
            raise RuleError(sp, f"{where}.level", f"{bad[0]!r} is not DEBUG, INFO, WARNING, ERROR or CRITICAL")
    return sel


def _check_match(match: Any, sp: str, check_patterns: bool = True) -> dict:
    if not isinstance(match, dict):
        raise RuleError(sp, "match", "must be a table")
    kind = match.get("kind")
    if kind not in MATCH_KINDS:
        raise RuleError(sp, "match.kind", f"{kind!r} is not one of {', '.join(MATCH_KINDS)}")
    unknown = set(match) - _MATCH_FIELDS[kind]
    if unknown:
        raise RuleError(sp, f"match.{sorted(unknown)[0]}", f"unknown field for kind {kind!r}")
    if kind == "pattern":
        _check_selector({k: v for k, v in match.items() if k in _SELECTOR_FIELDS}, sp, "match", check_patterns)
        if "window" in match:
            duration_seconds(match["window"], sp, "match.window")
        for label, pattern in (match.get("classify") or {}).items():
            check_regex(pattern, sp, f"match.classify.{label}", check_patterns)
    elif kind == "threshold":
        if "signal" not in match:
            raise RuleError(sp, "match.signal", "missing")
        if ("above" in match) == ("below" in match):
            raise RuleError(sp, "match", "give exactly one of `above` or `below`")
        if "sustained" in match:
            duration_seconds(match["sustained"], sp, "match.sustained")
        for i, cond in enumerate(match.get("also", [])):
            _check_selector(cond, sp, f"match.also[{i}]", check_patterns)
        if "engine_regex" in match:
            check_regex(match["engine_regex"], sp, "match.engine_regex", check_patterns)
    elif kind == "absence":
        for key in ("when", "missing"):
            if key not in match:
                raise RuleError(sp, f"match.{key}", "missing")
            _check_selector(match[key], sp, f"match.{key}", check_patterns)
        if "require" in match:
            _check_selector(match["require"], sp, "match.require", check_patterns)
        if match.get("scope", "bundle") not in ("bundle", "node", "file"):
            raise RuleError(sp, "match.scope", "must be bundle, node or file")
    elif kind == "mismatch":
        if "signal" not in match:
            raise RuleError(sp, "match.signal", "missing")
        if match.get("across", "node") not in ("node", "device", "engine", "file"):
            raise RuleError(sp, "match.across", "must be node, device, engine or file")
        if "ignore_regex" in match:
            check_regex(match["ignore_regex"], sp, "match.ignore_regex", check_patterns)
        if match.get("within", "node") not in ("node", "file"):
            raise RuleError(sp, "match.within", "must be node or file (compare only inside one node or file)")
    return match


def _check_test(t: Any, i: int, sp: str, folder: Path | None, rule: Rule) -> RuleTest:
    where = f"test[{i}]"
    if not isinstance(t, dict):
        raise RuleError(sp, where, "must be a table")
    unknown = set(t) - _TEST_FIELDS
    if unknown:
        raise RuleError(sp, f"{where}.{sorted(unknown)[0]}", "unknown field")
    if "fires" not in t or not isinstance(t["fires"], bool):
        raise RuleError(sp, f"{where}.fires", "missing (true: the rule must fire; false: it must not)")
    if ("log" in t) == ("file" in t):
        raise RuleError(sp, where, "give exactly one of `log` (inline text) or `file` (path beside the rule)")
    if "log" in t:
        log = t["log"]
    else:
        target = (folder or Path(".")) / t["file"]
        try:
            log = target.read_text(encoding="utf-8")
        except OSError as exc:
            raise RuleError(sp, f"{where}.file", f"cannot read {target}: {exc.strerror or exc}") from None
    lines = t.get("lines", [])
    if not isinstance(lines, list) or not all(isinstance(n, int) and n > 0 for n in lines):
        raise RuleError(sp, f"{where}.lines", "must be a list of 1-based line numbers")
    kind = t.get("kind") or (rule.sources[0] if rule.sources else None)
    default_path = f"fixture/{rule.id}-{i}.log"
    return RuleTest(
        name=t.get("name", f"{'fires' if t['fires'] else 'quiet'} #{i + 1}"),
        log=log,
        path=t.get("path", default_path),
        kind=kind,
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
    for folder in dirs:
        if folder.is_file():
            files = [folder]
        elif folder.is_dir():
            # `codes/` holds the error-code family tables (diagnose/codes.py), not rules.
            files = sorted(p for p in folder.rglob("*.toml") if CODES_DIR not in p.relative_to(folder).parts[:-1])
        else:
            errors.append(RuleError(str(folder), "", "no such rule file or folder"))
            continue
        builtin = trusted is not None and folder.is_dir() and folder == trusted
        cached = parsed_tomls(files) if builtin else None  # see catalog_cache.py
        for path in files:
            try:
                if cached is not None:
                    rule = rule_from_dict(cached[path], str(path), path.parent, check_patterns=False)
                else:
                    rule = load_rule(path, check_patterns=trusted is None or not path.is_relative_to(trusted))
            except RuleError as exc:
                errors.append(exc)
                continue
            if rule.id in seen:
                errors.append(RuleError(str(path), "id", f"{rule.id} is already defined in {seen[rule.id]}"))
                continue
            seen[rule.id] = str(path)
            rules.append(rule)
    return rules, errors
