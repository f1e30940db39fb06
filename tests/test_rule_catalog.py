"""Every rule in the catalog proves itself on its own fixtures, and the catalog is well-formed."""

from __future__ import annotations

import pytest

from diagnose.engine import builtin_rules_dir, load_rules
from diagnose.engine.fixtures import run_rule_tests
from diagnose.model import CATEGORIES

RULES, ERRORS = load_rules([builtin_rules_dir()])


def test_catalog_loads_without_errors():
    assert not ERRORS, [str(e) for e in ERRORS]


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_rule_has_firing_and_quiet_fixtures(rule):
    assert any(t.fires for t in rule.tests), f"{rule.id} has no fixture that must fire"
    assert any(not t.fires for t in rule.tests), f"{rule.id} has no near-miss fixture"


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_rule_fixtures_pass(rule):
    failures = [r for r in run_rule_tests([rule]) if not r.ok]
    assert not failures, "\n".join(f"{r.name}: {r.detail}" for r in failures)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_rule_is_bilingual_and_filed_by_category(rule):
    assert rule.title.get("en") and rule.title.get("zh")
    assert rule.remediation.get("en") and rule.remediation.get("zh")
    assert rule.category in CATEGORIES
    assert f"/{rule.category}/" in rule.path.replace("\\", "/")
    assert rule.path.endswith(f"{rule.id}.{rule.name}.toml")
