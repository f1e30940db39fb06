"""No rule fires on another rule's case unless the catalog says why: every rule runs on every firing fixture of
the catalog (as a bundle would be read, all rules at once), and a finding at warning or above from another rule
must be a declared cause link ([[causes]] / [[caused_by]] in either rule file). Two kinds co-fire by design and are
declared as such: a rule marked ``consequence`` is the echo of whatever failed first, and an error-code rule
(``match.kind = "code"``) adds the code of a line no specific rule explains. A rule keyed on something merely
near the failure (an outer frame, a word on the stack) shows up here as a cross-fire."""

from __future__ import annotations

import pytest

from diagnose.authoring.fixtures import _source, _split_files
from diagnose.engine import builtin_rules_dir, load_rules
from diagnose.engine.run import run_rules
from diagnose.model import SEVERITY_RANK
from diagnose.pipeline import Settings, filters_for, read

pytestmark = pytest.mark.slow  # every rule on every firing fixture of the catalog: about a minute of CPU

RULES, _ = load_rules([builtin_rules_dir()])
BY_ID = {r.id: r for r in RULES}
LINKED = {(link.cause, link.effect) for r in RULES for link in r.links}
FILTERS = filters_for(RULES)
CASES = [(r, t) for r in RULES for t in r.tests if t.fires]


def _declared(owner: str, other: str) -> bool:
    if (owner, other) in LINKED or (other, owner) in LINKED:
        return True
    a, b = BY_ID.get(owner), BY_ID.get(other)
    return any(x is not None and (x.consequence or x.match.kind == "code") for x in (a, b))


@pytest.mark.parametrize("rule, test", CASES, ids=lambda x: getattr(x, "id", None) or getattr(x, "name", "")[:40])
def test_no_rule_fires_on_another_rules_case_unless_declared(rule, test):
    parsed = read([_source(p, text) for p, text in _split_files(test.log, test.path)], Settings(kind=test.kind),
                  FILTERS)
    findings, errors = run_rules(RULES, parsed.records, parsed.signals, "en", parsed.texts, parsed.series)
    loud = {f.rule_id for f in findings if SEVERITY_RANK[f.severity] >= SEVERITY_RANK["warning"]}
    stray = sorted(x for x in loud - {rule.id} if not _declared(rule.id, x))
    assert stray == [], f"{stray} fire on {rule.id}'s case {test.name!r}: declare the link, or key the rule on what failed"


def test_the_healthy_sample_gives_no_warning():
    from diagnose.pipeline import analyze
    from conftest import SAMPLES

    report = analyze([str(SAMPLES / "healthy")], Settings())
    assert [f.rule_id for f in report.findings if SEVERITY_RANK[f.severity] >= SEVERITY_RANK["warning"]] == []
