"""docs/rules.md is generated from the rule files and must be current; the page covers every rule."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from click.testing import CliRunner

from diagnose.cli import main
from diagnose.authoring.docs import catalog_markdown, rule_markdown
from diagnose.engine import builtin_rules_dir, load_rules
from diagnose.model import CATEGORIES

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "rules.md"
RULES, ERRORS = load_rules([builtin_rules_dir()])


def test_rules_page_is_current():
    assert not ERRORS, [str(e) for e in ERRORS]
    want = catalog_markdown(RULES, "en")
    have = PAGE.read_text(encoding="utf-8")
    assert have == want, "docs/rules.md is out of date: run `diagnose rules docs -o docs/rules.md`"


def test_a_changed_rule_makes_the_page_stale():
    changed = [dataclasses.replace(RULES[0], title={**RULES[0].title, "en": RULES[0].title["en"] + " (changed)"})]
    assert catalog_markdown(changed + RULES[1:], "en") != PAGE.read_text(encoding="utf-8")


def test_page_lists_every_rule_with_anchor_and_both_titles():
    page = PAGE.read_text(encoding="utf-8")
    assert f"{len(RULES)} rules in " in page
    for rule in RULES:
        assert f'<a id="{rule.id.lower()}"></a>' in page
        assert f"](#{rule.id.lower()})" in page
        assert rule.title["en"] in page and rule.title["zh"] in page
    for category in {r.category for r in RULES}:
        assert f'<a id="category-{category}"></a>' in page
    # sections follow the fixed category order
    positions = [page.index(f'<a id="category-{c}"></a>') for c in CATEGORIES if f'id="category-{c}"' in page]
    assert positions == sorted(positions)


def test_cli_writes_the_same_page(tmp_path):
    out = tmp_path / "rules.md"
    result = CliRunner().invoke(main, ["rules", "docs", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text(encoding="utf-8") == PAGE.read_text(encoding="utf-8")


def test_rule_page_in_chinese_shows_chinese_remediation():
    rule = next(r for r in RULES if r.id == "KV001")
    md = rule_markdown(rule, "zh")
    assert rule.title["zh"] in md and rule.remediation["zh"].strip() in md
    assert "English: " + rule.title["en"] in md
