"""Error-code tables: load and validate ``knowledge/codes/<family>.toml`` (schema and how-to: docs/code-tables.md).

A table is one family of codes (CANN ``EI0006``, ACL ``507035``, HcclResult ``9``, MindIE ``MIE04E13030A``,
torch_npu ``ERR02200``): ``family`` (= file stem), ``title.en/.zh``, ``sources``; ``[[recognise]]`` (``regex``
with a named group ``code``, or ``printed`` for the text a layer above prints in place of the code, an ``example``
line it must find, a ``near_miss`` it must not); ``[[class]]``
(``code_regex``, ``category``, ``severity``, ``meaning.en/.zh``, ``next_step.en/.zh``, ``source``), tried in
order, first match wins, so specific classes come first and a catch-all last; ``[[code]]`` known codes (``code``,
``name``, the class fields but ``code_regex``, ``echo``: true when the code usually echoes a failure elsewhere,
``generic``: true when it names only the layer that saw an error another code beside it explains, ``message``: the
text the software prints with the code as its source gives it, ``printed``: the text a layer above prints in place
of the code (torch_npu's ``[Error]: Invalid device ID.`` for ACL's 107001), unique in the family, and ``handling``:
the level at which MindCluster handles a hardware fault event, one of ``HANDLING``). A family whose codes are
hexadecimal sets ``case_insensitive = true``: its recognisers may find ``0x80c98000`` and the table lists ``80C98000``.

Unknown fields are errors; every error names the file and field (``knowledge/codes/acl.toml: code[3].category:
'foo' is not one of ...``). Regexes compile with polars; recognisers get ASCII word boundaries (``fastregex.dfa_safe``)
so they stay on the DFA fast path on any text. ``classify`` runs ``code_regex`` with Python ``re`` too,
so class patterns stay plain. API: ``load_families(folder)``, ``classify(family, code)``, ``find_codes(family, line)``.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from diagnose.scan.fastregex import dfa_safe
from diagnose.model import CATEGORIES, SEVERITIES
from diagnose.cache import parsed_tomls
from diagnose.knowledge import builtin_knowledge_dir

LANGS = ("en", "zh")
_RECOGNISE = {"regex", "example", "near_miss"}
_CLASS = {"code_regex", "category", "severity", "meaning", "next_step", "source"}
_CODE = {"code", "name", "category", "severity", "meaning", "next_step", "source", "echo", "generic", "message",
         "printed", "handling"}
_CODE_OPTIONAL = {"echo", "generic", "message", "printed", "handling"}
# MindCluster's handling levels of a chip fault (Ascend/mind-cluster component/ascend-device-plugin/build/faultCode.json,
# the keys without "Codes"), from the mildest to the most severe but for the last two, which stand aside.
HANDLING = ("NotHandleFault", "RestartRequest", "RestartBusiness", "FreeRestartNPU", "RestartNPU", "SeparateNPU",
            "PreSeparateNPU", "SubHealthFault")
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


class CodeTableError(ValueError):
    """One or more tables are invalid; ``errors`` lists every problem, each naming the file and field."""

    def __init__(self, errors: list[str]):
        super().__init__("\n".join(errors))
        self.errors = errors


@dataclass(frozen=True)
class Recogniser:
    regex: str
    example: str
    near_miss: str


@dataclass(frozen=True)
class _Entry:
    category: str
    severity: str
    meaning: dict[str, str]
    next_step: dict[str, str]
    source: str


@dataclass(frozen=True)
class CodeClass(_Entry):
    code_regex: str = ""


@dataclass(frozen=True)
class KnownCode(_Entry):
    code: str = ""
    name: str = ""
    echo: bool = False
    generic: bool = False  # names only the layer or family of an error another code beside it explains
    message: str = ""  # what the software prints with the code (its template), as the source gives it
    printed: str = ""  # what a layer above prints in place of the code (a recogniser's ``printed`` group finds it)
    handling: str = ""  # MindCluster's handling level (HANDLING), for hardware fault events


@dataclass(frozen=True)
class CodeFamily:
    family: str
    title: dict[str, str]
    sources: tuple[str, ...]
    recognisers: tuple[Recogniser, ...]
    classes: tuple[CodeClass, ...]
    codes: dict[str, KnownCode] = field(default_factory=dict)
    path: str = ""
    case_insensitive: bool = False  # hexadecimal codes: found in any case, listed and reported in upper case
    printed: dict[str, str] = field(default_factory=dict)  # the entries' ``printed`` texts -> their codes

    def normal(self, code: str) -> str:
        """``code`` as the table lists it."""
        return code.upper() if self.case_insensitive else code


def builtin_codes_dir() -> Path:
    """The code tables shipped in the wheel (``diagnose/_knowledge/codes``), or the repository's
    ``knowledge/codes`` in a checkout."""
    return builtin_knowledge_dir() / "codes"


def _find(regex: str, line: str, printed: dict[str, str] | None = None) -> list[str]:
    """The codes ``regex`` finds on ``line``: its ``code`` group, or its ``printed`` group looked up in ``printed``."""
    matches = pl.Series([line], dtype=pl.String).str.extract_all(regex).explode().drop_nulls()
    if matches.len() == 0:
        return []
    groups = matches.str.extract_groups(regex).struct
    if printed_group(regex):
        return [printed[text] for text in groups.field("printed").drop_nulls().to_list() if text in (printed or {})]
    return groups.field("code").drop_nulls().to_list()


def printed_group(regex: str) -> bool:
    """Whether a recogniser finds its codes by their printed text (group ``printed``), not written out."""
    return "(?P<printed>" in regex


def code_expr(family: CodeFamily, rec: Recogniser, col: str = "message") -> pl.Expr:
    """The code ``rec`` finds in ``col`` (its first match), as the table lists it, or null."""
    if printed_group(rec.regex):
        text = pl.col(col).str.extract_groups(rec.regex).struct.field("printed")
        return text.replace_strict(family.printed, default=None, return_dtype=pl.String)
    code = pl.col(col).str.extract_groups(rec.regex).struct.field("code")
    return code.str.to_uppercase() if family.case_insensitive else code


def find_codes(family: CodeFamily, line: str) -> list[str]:
    """Every code the family's recognisers find on ``line``, in recogniser order, without duplicates."""
    return list(dict.fromkeys(family.normal(code) for rec in family.recognisers
                              for code in _find(rec.regex, line, family.printed)))


def _code_group(pattern: str) -> str | None:
    """The sub-pattern inside ``(?P<code>...)`` (balanced parentheses; escapes and [classes] skipped), or None."""
    start, depth = pattern.find("(?P<code>"), 0
    for tok in re.finditer(r"\\.|\[\^?\]?(?:\\.|[^\]])*\]|[()]|[^\\\[()]+", pattern[max(start, 0):]):
        depth += (tok.group() == "(") - (tok.group() == ")")
        if depth == 0 and start >= 0:
            return pattern[start + len("(?P<code>"):start + tok.start()]
    return None


def classify(family: CodeFamily, code: str) -> tuple[KnownCode | None, CodeClass]:
    """The known entry for ``code`` (or None) and the first class whose ``code_regex`` matches it."""
    code = family.normal(code)
    for cls in family.classes:
        if re.search(cls.code_regex, code):
            return family.codes.get(code), cls
    raise LookupError(f"{family.family}: no class matches code {code!r}")


class _Checker:
    def __init__(self, where: str, compile_patterns: bool = True):
        self.where, self.errors, self.compile_patterns = where, [], compile_patterns

    def err(self, fld: str, msg: str) -> None:
        self.errors.append(f"{self.where}: {fld}: {msg}")

    def fields(self, fld: str, table: Any, allowed: set[str], required: set[str]) -> bool:
        if not isinstance(table, dict):
            return self.err(fld, "must be a table") or False
        for key in sorted(set(table) - allowed):
            self.err(f"{fld}.{key}" if fld else key, "unknown field")
        for key in sorted(required - set(table)):
            self.err(f"{fld}.{key}" if fld else key, "missing")
        return True

    def text(self, fld: str, value: Any) -> str:
        return value if (isinstance(value, str) and value.strip()) or self.err(fld, "must be non-empty text") else ""

    def choice(self, fld: str, value: Any, options: tuple[str, ...]) -> str:
        return value if value in options or self.err(fld, f"{value!r} is not one of {', '.join(options)}") else ""

    def bilingual(self, fld: str, value: Any) -> dict[str, str]:
        if not self.fields(fld, value, set(LANGS), set(LANGS)):
            return {}
        return {lang: self.text(f"{fld}.{lang}", value[lang]) for lang in LANGS if lang in value}

    def regex(self, fld: str, value: Any, recogniser: bool = False) -> str:
        if not (pattern := self.text(fld, value)):
            return ""
        if not self.compile_patterns:
            return dfa_safe(pattern) if recogniser else pattern
        try:
            pl.Series([""], dtype=pl.String).str.contains(pattern)
            if not recogniser:  # classify() matches class patterns with Python re
                re.compile(pattern)
        except Exception as exc:  # polars ComputeError or re.error
            return self.err(fld, f"invalid regex: {(str(exc).splitlines() or [type(exc).__name__])[0]}") or ""
        if recogniser and _code_group(pattern) is None and not printed_group(pattern):
            self.err(fld, "needs a named group (?P<code>...) or (?P<printed>...)")
        if "(?i" in pattern and not pattern.isascii():
            self.err(fld, "case-insensitive pattern with non-ASCII text")
        return dfa_safe(pattern) if recogniser else pattern


def _entry(ck: _Checker, fld: str, raw: dict, kind: type) -> Any:
    data = {"category": ck.choice(f"{fld}.category", raw.get("category"), CATEGORIES),
            "severity": ck.choice(f"{fld}.severity", raw.get("severity"), SEVERITIES),
            "meaning": ck.bilingual(f"{fld}.meaning", raw.get("meaning")),
            "next_step": ck.bilingual(f"{fld}.next_step", raw.get("next_step")),
            "source": ck.text(f"{fld}.source", raw.get("source"))}
    if kind is CodeClass:
        return CodeClass(code_regex=ck.regex(f"{fld}.code_regex", raw.get("code_regex")), **data)
    name = ck.text(f"{fld}.name", raw.get("name"))
    if name and not _NAME.fullmatch(name):
        ck.err(f"{fld}.name", f"{name!r} must be lower-case words joined by '-'")
    if not isinstance(echo := raw.get("echo", False), bool):
        ck.err(f"{fld}.echo", "must be true or false")
    if not isinstance(generic := raw.get("generic", False), bool):
        ck.err(f"{fld}.generic", "must be true or false")
    message = ck.text(f"{fld}.message", raw["message"]) if "message" in raw else ""
    printed = ck.text(f"{fld}.printed", raw["printed"]) if "printed" in raw else ""
    handling = ck.choice(f"{fld}.handling", raw["handling"], HANDLING) if "handling" in raw else ""
    return KnownCode(code=ck.text(f"{fld}.code", raw.get("code")), name=name, echo=echo is True,
                     generic=generic is True, message=message, printed=printed, handling=handling, **data)


def load_family(path: Path, check: bool = True, raw: dict | None = None) -> CodeFamily:
    """Load and validate one table; raises CodeTableError listing every problem. ``check=False`` skips
    compiling the regexes and the cross-checks (the built-in tables, which the test suite checks). ``raw``:
    the file's TOML data when the caller already has it (from diagnose/cache.py)."""
    ck, path = _Checker(str(path), check), Path(path)
    if raw is not None and not check:
        return _trusted(raw, path)
    if raw is None:
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise CodeTableError([f"{path}: cannot read TOML: {exc}"]) from None
    ck.fields("", raw, {"family", "title", "sources", "recognise", "class", "code", "case_insensitive"},
              {"family", "title", "sources"})
    if not isinstance(case_insensitive := raw.get("case_insensitive", False), bool):
        ck.err("case_insensitive", "must be true or false")
    family = ck.text("family", raw.get("family"))
    if family and family != path.stem:
        ck.err("family", f"{family!r} must equal the file stem {path.stem!r}")
    title = ck.bilingual("title", raw.get("title"))
    sources = raw.get("sources")
    if not isinstance(sources, list) or not sources or not all(isinstance(s, str) and s.strip() for s in sources):
        sources = ck.err("sources", "must be a non-empty list of strings") or []
    recs, classes, codes, printed = [], [], {}, {}
    for key in ("recognise", "class", "code"):
        items = raw.get(key, [])
        if not isinstance(items, list) or (key != "code" and not items):
            items = ck.err(key, f"must be a non-empty array of tables ([[{key}]])") or []
        for i, item in enumerate(items):
            fld = f"{key}[{i}]"
            if key == "recognise" and ck.fields(fld, item, _RECOGNISE, _RECOGNISE):
                recs.append(Recogniser(ck.regex(f"{fld}.regex", item.get("regex"), recogniser=True),
                                       ck.text(f"{fld}.example", item.get("example")),
                                       ck.text(f"{fld}.near_miss", item.get("near_miss"))))
            elif key != "recognise" and ck.fields(fld, item, *((_CLASS, _CLASS) if key == "class" else
                                                                (_CODE, _CODE - _CODE_OPTIONAL))):
                entry = _entry(ck, fld, item, CodeClass if key == "class" else KnownCode)
                if key == "class":
                    classes.append(entry)
                elif entry.code in codes:
                    ck.err(f"{fld}.code", f"duplicate code {entry.code!r}")
                else:
                    if entry.printed and (other := printed.get(entry.printed)):
                        ck.err(f"{fld}.printed",
                               f"{entry.printed!r} is also code {other!r}'s: a text must name one code")
                    elif entry.printed:
                        printed[entry.printed] = entry.code
                    codes[entry.code] = entry
    fam = CodeFamily(family, title, tuple(sources), tuple(recs), tuple(classes), codes, str(path),
                     case_insensitive is True, printed)
    if check and not ck.errors:
        _cross_check(ck, fam)  # needs valid regexes
    if ck.errors:
        raise CodeTableError(ck.errors)
    return fam


def _trusted(raw: dict, path: Path) -> CodeFamily:
    """A built-in table from its cached data, without the field checks (the test suite and ``diagnose rules test``
    run them): two thousand entries take a tenth of a second to check, a large share of a small run."""
    def data(item: dict) -> dict:
        return {"category": item["category"], "severity": item["severity"], "meaning": item["meaning"],
                "next_step": item["next_step"], "source": item["source"]}
    codes = {item["code"]: KnownCode(code=item["code"], name=item["name"], echo=item.get("echo", False),
                                     generic=item.get("generic", False), message=item.get("message", ""),
                                     printed=item.get("printed", ""), handling=item.get("handling", ""), **data(item))
             for item in raw.get("code", [])}
    return CodeFamily(raw["family"], raw["title"], tuple(raw["sources"]),
                      tuple(Recogniser(dfa_safe(r["regex"]), r["example"], r["near_miss"]) for r in raw["recognise"]),
                      tuple(CodeClass(code_regex=c["code_regex"], **data(c)) for c in raw["class"]), codes, str(path),
                      raw.get("case_insensitive", False) is True,
                      {known.printed: code for code, known in codes.items() if known.printed})


def _cross_check(ck: _Checker, fam: CodeFamily) -> None:
    """Examples found, near misses not, every found or known code classified and reachable by a recogniser."""
    for i, rec in enumerate(fam.recognisers):
        if not (found := _find(rec.regex, rec.example, fam.printed)):
            ck.err(f"recognise[{i}].example", "not found by its regex" + (
                " (or its printed text is no entry's)" if printed_group(rec.regex) else ""))
        if pl.Series([rec.near_miss]).str.contains(rec.regex).item():
            ck.err(f"recognise[{i}].near_miss", "is found by its regex")
        for code in map(fam.normal, found):
            if not any(re.search(c.code_regex, code) for c in fam.classes):
                ck.err(f"recognise[{i}].example", f"code {code!r} falls into no class")
    groups = [f"{'(?i)' if fam.case_insensitive else ''}^(?:{_code_group(r.regex)})$" for r in fam.recognisers
              if not printed_group(r.regex)]
    for i, code in enumerate(fam.codes):
        if code != fam.normal(code):
            ck.err(f"code[{i}].code", f"{code!r} must be written in upper case (the family is case_insensitive)")
        if not any(re.search(c.code_regex, code) for c in fam.classes):
            ck.err(f"code[{i}].code", f"{code!r} falls into no class")
        if not any(pl.Series([code]).str.contains(g).item() for g in groups):
            ck.err(f"code[{i}].code", f"{code!r} cannot be produced by any recogniser's code group")


def load_families(folder: Path | str, check: bool = True) -> list[CodeFamily]:
    """Every ``*.toml`` table directly in ``folder`` (sorted); raises CodeTableError listing all problems."""
    families, errors = [], []
    paths = sorted(Path(folder).glob("*.toml"))
    # Unchecked tables are the built-in ones: parsed once per content and kept as JSON (the five tables take
    # tomllib about a quarter of a second, a large share of a small run).
    cached = None if check else parsed_tomls(paths, prefix="codes-")
    for path in paths:
        try:
            families.append(load_family(path, check, raw=cached.get(path) if cached else None))
        except CodeTableError as exc:
            errors.extend(exc.errors)
    if errors:
        raise CodeTableError(errors)
    return families


_TABLES: dict[str, dict[str, CodeFamily]] = {}


def builtin_tables(folder: Path | str | None = None) -> dict[str, CodeFamily]:
    """The tables by family (the built-in ones unless ``folder``), loaded once per process; built-in tables are
    validated by the test suite and ``diagnose rules test``, not on every run."""
    key = str(folder or builtin_codes_dir())
    if key not in _TABLES:
        _TABLES[key] = {f.family: f for f in load_families(folder or builtin_codes_dir(), check=folder is not None)}
    return _TABLES[key]
