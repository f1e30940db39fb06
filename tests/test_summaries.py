"""Summaries say what is known and nothing else: every rule's summary, rendered from each of its firing
fixtures in both languages, holds no placeholder (`?`, `None`, `nan`, an unfilled `{hole}`) of its own making; a
value that is unknown leaves its optional clause out (`[...]` in a rule's summary, diagnose/messages.py). And
every code block of a remediation that says it is JSON or TOML parses: it is pasted into config files."""

from __future__ import annotations

import json
import re
import tomllib

import pytest
from helpers import said

from diagnose.authoring.fixtures import evaluate
from diagnose.engine import builtin_rules_dir, load_rules
from diagnose.messages import Template, fill, known, unknown_holes

RULES, _ = load_rules([builtin_rules_dir()])
PLACEHOLDER = re.compile(r"(?<![\w=])\?(?![\w=])|\bNone\b|\bnan\b|\{[A-Za-z_][\w|]*(?::[^{}]*)?\}")
CASES = [(r, t) for r in RULES for t in r.tests if t.fires]


def _values_said(words, lang: str) -> list[str]:
    """What the template's values print as (they come from the logs: a log may well say `None`)."""
    values = getattr(words, "values", {}) or {}
    return sorted((said(v, lang) if not isinstance(v, (str, int, float)) else str(v) for v in values.values()),
                  key=len, reverse=True)


@pytest.mark.parametrize("rule, test", CASES, ids=[f"{r.id}-{i}" for i, (r, t) in enumerate(CASES)])
def test_a_summary_from_its_fixture_has_no_placeholder(rule, test):
    for lang in ("en", "zh"):
        findings, errors = evaluate(rule, test.log, test.path, test.kind, lang=lang)
        assert findings and not errors, (errors, test.name)
        for f in findings:
            summary = f.summary
            if isinstance(summary, Template):
                template = summary.texts.get(lang) or summary.texts.get("en", "")
                assert unknown_holes(template, summary.values) == [], (lang, template)
            text = said(summary, lang)
            for value in _values_said(summary, lang):  # a value quoted from the logs is the logs' business
                if value:
                    text = text.replace(value, "")
            assert not PLACEHOLDER.search(text), (lang, test.name, said(summary, lang))


def test_an_unknown_value_leaves_its_clause_out():
    template = "Kernel timeout on {where} ({count} events)[; fault kernel: {kernel}]. Next."
    assert fill(template, {"where": "node-1", "count": 2, "kernel": None}) == "Kernel timeout on node-1 (2 events). Next."
    assert fill(template, {"where": "node-1", "count": 2, "kernel": float("nan")}).endswith("(2 events). Next.")
    assert fill(template, {"where": "node-1", "count": 2, "kernel": "None"}).endswith("(2 events). Next.")
    assert "fault kernel: MoeDistributeDispatchV2" in fill(template, {"where": "n", "count": 1,
                                                                     "kernel": "MoeDistributeDispatchV2"})
    assert fill("at {first_seen}", {}) == "at " and "?" not in fill("{a|b}", {"a": None, "b": None})
    assert [known(v) for v in (0, 0.0, "x", None, float("nan"), "?", "", "None")] == [True] * 3 + [False] * 5
    assert unknown_holes("{a} [{b}]", {"b": None}) == ["a"]


FENCE = re.compile(r"```(\w+)\n(.*?)```", re.S)
LABELLED = re.compile(r"(?:^|\n)\s*(?:-\s*)?(JSON|TOML)[^\n`]*:\s*`([^`\n]+)`", re.I)


def _blocks(text: str):
    for m in FENCE.finditer(text):
        if m.group(1).lower() in ("json", "toml"):
            yield m.group(1).lower(), m.group(2)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_json_and_toml_in_a_remediation_parse(rule):
    for lang, text in rule.remediation.items():
        for kind, block in _blocks(text):
            if kind == "json":
                json.loads(block)
            else:
                tomllib.loads(block)
        # JSON given to a flag in shell quotes (--additional-config '{...}') parses as it is.
        for m in re.finditer(r"'(\{[^'`]*\})'", text):
            json.loads(m.group(1))
        # An inline value written as a JSON object inside a JSON string must escape its quotes.
        for m in re.finditer(r'"(\w+)":\s*"(\{[^`]*?\})"', text):
            json.loads("{" + m.group(0) + "}")
