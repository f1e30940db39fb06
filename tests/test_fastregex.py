"""Every regex the program hands to polars stays on the regex engine's fast path on non-ASCII text.

These tests time nothing: they assert the compiled form (no Unicode word boundary reaches polars, from the
catalog, the code tables, the parsers or a user's rule) and that the ASCII form still finds what it should.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from polars.expr.string import ExprStringNameSpace

from diagnose.cli import main
from diagnose.knowledge.code_tables import builtin_codes_dir, load_families
from diagnose.engine.rulefile import rule_from_dict
from diagnose.scan.fastregex import dfa_safe, slow_constructs, unicode_boundaries
from diagnose.pipeline import analyze, load_catalog
from diagnose.pipeline.settings import Settings

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
REGEX_METHODS = ("contains", "extract", "extract_groups", "extract_all", "replace", "replace_all",
                 "count_matches", "find")


@pytest.mark.parametrize("written, fast", [
    (r"\b507014\b", r"(?-u:\b)507014(?-u:\b)"),
    (r"EI\d{4}\B", r"EI\d{4}(?-u:\B)"),
    (r"[\b]x", r"[\b]x"),                       # a class: not a boundary
    (r"a\\b", r"a\\b"),                         # an escaped backslash and a letter
    (r"[]\b]\b", r"[]\b](?-u:\b)"),             # ']' first in a class is a literal
    (r"(?-u:\b)x\b", r"(?-u:\b)x(?-u:\b)"),     # already ASCII stays as it is
    (r"[^]a]\bb", r"[^]a](?-u:\b)b"),
])
def test_rewrite(written, fast):
    assert dfa_safe(written) == fast
    assert dfa_safe(fast) == fast
    assert unicode_boundaries(fast) == []


def test_ascii_boundary_still_finds_codes_in_chinese_text():
    lines = pl.Series(["执行失败，错误码 507014。", "错误码507014，aicore 超时", "code 5070149 is not it"])
    assert lines.str.contains(dfa_safe(r"\b507014\b")).to_list() == [True, True, False]


def test_no_built_in_rule_keeps_a_unicode_boundary():
    rules, errors = load_catalog(Settings())
    assert not errors
    assert len(rules) > 100
    for rule in rules:
        for where, sel in rule.match.selectors():
            for name in ("regex", "not_regex", "text_regex"):
                pattern = getattr(sel, name)
                assert pattern is None or not unicode_boundaries(pattern), (rule.id, where, name, pattern)
        for name in ("exception", "message", "not_message", "frames", "not_frames", "engine_regex", "ignore_regex"):
            pattern = getattr(rule.match, name, None)
            assert pattern is None or not unicode_boundaries(pattern), (rule.id, name, pattern)
        for label, pattern in getattr(rule.match, "classify", ()):
            assert not unicode_boundaries(pattern), (rule.id, label, pattern)


def test_no_code_recogniser_keeps_a_unicode_boundary():
    for family in load_families(builtin_codes_dir()):
        for rec in family.recognisers:
            assert not unicode_boundaries(rec.regex), (family.family, rec.regex)


def test_a_user_rule_is_rewritten_too():
    rule = rule_from_dict({
        "id": "USR001", "name": "user-code", "category": "device", "severity": "error",
        "title": {"en": "user"}, "summary": {"en": "s"}, "remediation": {"en": "r"},
        "match": {"kind": "pattern", "regex": r"\bEZ9999\b"},
    }, "user.toml")
    assert rule.match.selector.regex == r"(?-u:\b)EZ9999(?-u:\b)"
    assert rule.match.raw["regex"] == r"\bEZ9999\b"  # the docs quote the rule as written


@pytest.fixture
def polars_patterns(monkeypatch):
    """Every pattern any polars string method receives as a regex while the test runs."""
    seen: list[tuple[str, str]] = []
    for name in REGEX_METHODS:
        original = getattr(ExprStringNameSpace, name)

        def spy(self, *args, _original=original, _name=name, **kwargs):
            pattern = args[0] if args else kwargs.get("pattern")
            if isinstance(pattern, str) and not kwargs.get("literal", False):
                seen.append((_name, pattern))
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(ExprStringNameSpace, name, spy)
    return seen


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.iterdir() if p.is_dir()))
def test_no_unicode_boundary_reaches_polars(sample, polars_patterns):
    analyze([str(SAMPLES / sample)], Settings())
    assert polars_patterns, "the spy saw nothing: polars' string namespace changed"
    slow = sorted({p for _, p in polars_patterns if unicode_boundaries(p)})
    assert slow == []


def test_slow_constructs_names_what_the_rewrite_cannot_keep():
    assert slow_constructs(r"\b507014\b") == []
    assert slow_constructs(r"(?i)\bout of memory\b") == []
    assert slow_constructs(r"内存不足\b") and "non-ASCII" in slow_constructs(r"内存不足\b")[0]
    assert slow_constructs(r"\b\w+Error")


def test_rules_test_warns_about_a_pattern_beside_non_ascii_text(tmp_path):
    rule = tmp_path / "USR001.npu-oom-zh.toml"
    rule.write_text(
        'id = "USR001"\nname = "npu-oom-zh"\ncategory = "memory"\nseverity = "error"\n'
        'title = "NPU 内存不足"\nsummary = "内存不足"\nremediation = "调小 --max-num-seqs"\n'
        '[match]\nkind = "pattern"\nregex = "内存不足\\\\b"\n'
        '[[test]]\nname = "the message"\nfires = true\nlog = "[ERROR] RUNTIME(1,python):2025-07-22-10:00:00.000.000 设备内存不足"\n'
        '[[test]]\nname = "enough"\nfires = false\nlog = "[INFO] RUNTIME(1,python):2025-07-22-10:00:00.000.000 内存充足"\n',
        encoding="utf-8")
    result = CliRunner().invoke(main, ["rules", "test", str(tmp_path)])
    assert "ASCII word boundary" in result.output, result.output


def test_rules_test_warns_about_a_pattern_the_prefilter_cannot_search_for(tmp_path):
    def rule_with(regex: str) -> str:
        return ('id = "USR002"\nname = "so-missing"\ncategory = "engine"\nseverity = "error"\n'
                'title = "A library is missing"\nsummary = "missing"\nremediation = "install it"\n'
                f'[match]\nkind = "pattern"\nregex = \'{regex}\'\n'
                '[[test]]\nname = "the message"\nfires = true\nlog = "ERROR libfoo.so: cannot open shared object file"\n'
                '[[test]]\nname = "fine"\nfires = false\nlog = "INFO loaded libfoo"\n')

    rule = tmp_path / "USR002.so-missing.toml"
    rule.write_text(rule_with(r"\w+\.so\b"), encoding="utf-8")
    result = CliRunner().invoke(main, ["rules", "test", str(tmp_path)])
    assert "no fixed text of 4 characters" in result.output and "match.regex" in result.output, result.output
    rule.write_text(rule_with(r"\S+\.so: cannot open shared object"), encoding="utf-8")
    result = CliRunner().invoke(main, ["rules", "test", str(tmp_path)])
    assert "no fixed text" not in result.output, result.output
