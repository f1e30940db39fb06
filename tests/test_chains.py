"""Cause chains as data: rules declare what they can cause and be caused by, and ranking follows the links.

The incident is bench/gen_bundle.py's two-node bundle, which plants three chains (gen_bundle.CHAINS): node-1's
older driver -> rank 13 slow -> its MoE kernel's AI Core timeout; EPLB reporting a hot rank -> MTP acceptance
collapsing; node-0 restarted as float (BF16) -> out of memory while loading.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from conftest import ROOT, run_cli
from diagnose.analysis.chains import follow, holds
from diagnose.analysis.rank import rank_findings
from diagnose.engine.rulefile import RuleError, rule_from_dict
from diagnose.messages import Phrase
from diagnose.model import CauseLink, Finding

sys.path.insert(0, str(ROOT / "bench"))
import gen_bundle  # noqa: E402


def _bundle(root: Path, size: str) -> dict:
    gen_bundle.generate(root, gen_bundle.parse_size(size))
    out = root / "report.json"
    result = run_cli(str(root / "bundle"), "--format", "json", "-o", str(out))
    assert result.exit_code == 1, result.output
    return json.loads(out.read_text())


def _assert_chains(report: dict) -> None:
    order = [f["rule_id"] for f in report["findings"]]
    caused = {f["rule_id"]: f["caused_by"] for f in report["findings"]}
    for chain in gen_bundle.CHAINS:
        assert all(rule in order for rule in chain), (chain, order)
        # linked: each consequence names the link before it; the start has no cause
        assert caused[chain[0]] is None, (chain, caused)
        assert [caused[rule] for rule in chain[1:]] == chain[:-1], (chain, caused)
        # ranked: the chain's start first among its chain, each cause before its consequence
        assert [order.index(rule) for rule in chain] == sorted(order.index(rule) for rule in chain), (chain, order)
    assert order[0] == gen_bundle.CHAINS[0][0] == gen_bundle.ROOT_CAUSE["rule"]
    assert report["verdict"]["rule_id"] == "VER001"
    for echo in gen_bundle.ROOT_CAUSE["echoes"]:  # the timeouts and the engine's death still point at the failure
        assert caused[echo] == gen_bundle.ROOT_CAUSE["failure"]


@pytest.fixture(scope="module")
def incident(tmp_path_factory) -> dict:
    return _bundle(tmp_path_factory.mktemp("chains"), "6M")


def test_three_chains_of_a_two_node_incident_are_linked_and_start_first(incident):
    _assert_chains(incident)


def test_the_first_failing_rank_sentence_stays_with_the_failure(incident):
    dev = next(f for f in incident["findings"] if f["rule_id"] == "DEV010")
    assert " on node-1 failed first at " in dev["summary"] and "15 ranks timed out waiting for it" in dev["summary"]
    assert dev["nodes"] == ["node-1"]


@pytest.mark.slow
def test_a_30_mb_bundle_links_the_three_chains_and_keeps_its_unrecognised_errors_few(tmp_path):
    report = _bundle(tmp_path, "30M")
    _assert_chains(report)
    assert len(report["unrecognised"]) + (report["unrecognised_more"] or 0) <= 40


# --- the rule file ---------------------------------------------------------------------------------------------------

BASE = {"id": "XX001", "name": "x-thing", "category": "engine", "severity": "error", "title": {"en": "t"},
        "remediation": {"en": "r"}, "match": {"kind": "pattern", "regex": "boom"}}


def test_links_are_read_in_both_directions():
    rule = rule_from_dict(dict(BASE, causes=[{"rule": ["DEV010", "ENG001"], "place": "node", "within": "5m"}],
                               caused_by=[{"rule": "VER001"}]), "x.toml")
    assert rule.links == [CauseLink("XX001", "DEV010", "node", 300.0), CauseLink("XX001", "ENG001", "node", 300.0),
                          CauseLink("VER001", "XX001", "any", None)]


@pytest.mark.parametrize("links, field", [
    ({"causes": {"rule": "DEV010"}}, "causes"),
    ({"causes": [{"rule": "dev10"}]}, "causes[0].rule"),
    ({"causes": [{}]}, "causes[0].rule"),
    ({"caused_by": [{"rule": "DEV010", "place": "host"}]}, "caused_by[0].place"),
    ({"caused_by": [{"rule": "DEV010", "within": "soon"}]}, "caused_by[0].within"),
    ({"caused_by": [{"rule": "DEV010", "when": "before"}]}, "caused_by[0].when"),
])
def test_a_bad_link_names_its_field(links, field):
    with pytest.raises(RuleError) as err:
        rule_from_dict(dict(BASE, **links), "x.toml")
    assert any(e.field == field for e in err.value.errors), [str(e) for e in err.value.errors]


def test_every_link_of_the_catalog_names_a_rule_of_the_catalog(catalog):
    for rule in catalog.values():
        for link in rule.links:
            assert link.cause in catalog and link.effect in catalog, (rule.path, link)


# --- the ranking -----------------------------------------------------------------------------------------------------

T0 = datetime(2026, 3, 15, 3, 0, 0)


def _f(rule_id: str, severity: str, at: int | None, nodes=("node-1",), ranks=(), consequence=False) -> Finding:
    when = None if at is None else T0 + timedelta(seconds=at)
    return Finding(rule_id=rule_id, name=rule_id.lower(), category="engine", severity=severity, title=Phrase("x"),
                   summary=Phrase("x"), count=1, first_seen=when, last_seen=when, nodes=list(nodes), ranks=list(ranks),
                   evidence=[], remediation=Phrase("x"), references=[], consequence=consequence)


def test_conditions_of_time_and_place():
    link = CauseLink("A001", "B001", "node", 60.0)
    assert holds(link, _f("A001", "error", 0), _f("B001", "error", 30))
    assert not holds(link, _f("A001", "error", 0), _f("B001", "error", 120))  # more than a minute after
    assert not holds(link, _f("A001", "error", 30), _f("B001", "error", 0))  # the consequence came first
    assert not holds(link, _f("A001", "error", 0, nodes=("node-0",)), _f("B001", "error", 30))
    assert holds(link, _f("A001", "error", None), _f("B001", "error", 30))  # a state without time holds throughout
    rank = CauseLink("A001", "B001", "rank")
    assert not holds(rank, _f("A001", "error", 0, ranks=(3,)), _f("B001", "error", 1, ranks=(5,)))
    assert holds(rank, _f("A001", "error", 0, ranks=(5,)), _f("B001", "error", 1, ranks=(5, 6)))
    assert holds(CauseLink("A001", "B001"), _f("A001", "error", 0, nodes=("node-0",)), _f("B001", "error", 1))


def test_a_chain_leads_with_its_start_and_keeps_the_place_of_its_best_member():
    other = _f("KV001", "error", 10)
    chain = [_f("VER001", "error", None), _f("PRF001", "warning", None), _f("DEV010", "critical", 50)]
    links = [CauseLink("VER001", "PRF001", "node"), CauseLink("VER001", "DEV010", "node"),
             CauseLink("PRF001", "DEV010", "node")]
    ranked = rank_findings([other, *reversed(chain)], links)
    assert [f.rule_id for f in ranked] == ["VER001", "PRF001", "DEV010", "KV001"]
    # the nearest cause: the driver led to the timeout through the slow rank
    assert [f.caused_by for f in ranked] == [None, "VER001", "PRF001", None]


def test_a_loop_of_links_is_not_followed_and_unlinked_findings_keep_their_order():
    a, b, c = _f("A001", "critical", 0), _f("B001", "error", 0), _f("C001", "warning", 5)
    ranked = follow([a, b, c], [CauseLink("A001", "B001"), CauseLink("B001", "A001")])
    assert [f.rule_id for f in ranked] == ["A001", "B001", "C001"]
    assert (a.caused_by, b.caused_by) == (None, "A001")


def test_echoes_without_a_declared_cause_still_point_at_the_failure():
    echo = _f("COMM003", "error", 60, consequence=True)
    ranked = rank_findings([echo, _f("DEV010", "critical", 50), _f("VER001", "error", None)],
                           [CauseLink("VER001", "DEV010", "node")])
    assert [f.rule_id for f in ranked] == ["VER001", "DEV010", "COMM003"]
    assert echo.caused_by == "DEV010"
