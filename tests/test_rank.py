"""Ranking among the informational findings: a problem seen on too little evidence (its rule's severity lowered
on a short excerpt) comes before the findings that are informational by design (a measurement)."""

from __future__ import annotations

import msgspec

from conftest import run_json
from test_chains import _f

from diagnose.analysis.rank import rank_findings


def test_a_demoted_problem_ranks_before_a_measurement_seen_earlier():
    measured = _f("MTP008", "info", 0)
    demoted = msgspec.structs.replace(_f("KV001", "info", 20), demoted=True)
    assert [f.rule_id for f in rank_findings([measured, demoted])] == ["KV001", "MTP008"]
    # and after every finding of a higher severity
    warning = _f("OPS001", "warning", 60)
    assert [f.rule_id for f in rank_findings([measured, demoted, warning])] == ["OPS001", "KV001", "MTP008"]


def test_a_pasted_kv_saturation_leads_the_healthy_acceptance_measured_before_it(tmp_path):
    spec = ("(APIServer pid=5020) INFO 05-19 10:27:{s:02d} [metrics.py:101] SpecDecoding metrics: Mean acceptance "
            "length: 2.51, Accepted throughput: 535.49 tokens/s, Drafted throughput: 708.78 tokens/s, Accepted: 5355 "
            "tokens, Drafted: 7088 tokens, Per-position acceptance rate: 0.843, 0.668, Avg Draft acceptance rate: 75.6%")
    stats = ("(APIServer pid=5020) INFO 05-19 10:27:{s:02d} [loggers.py:271] Engine 000: Avg prompt throughput: "
             "4917.3 tokens/s, Avg generation throughput: 929.6 tokens/s, Running: {r} reqs, Waiting: {w} reqs, GPU KV "
             "cache usage: {kv}%, Prefix cache hit rate: 0.0%")
    log = tmp_path / "serve.log"
    log.write_text("\n".join([spec.format(s=3), stats.format(s=13, r=12, w=0, kv=71.0), spec.format(s=13),
                              stats.format(s=23, r=10, w=31, kv=96.5), stats.format(s=33, r=9, w=56, kv=98.9)]) + "\n",
                   encoding="utf-8")
    _, report = run_json(str(log))
    ids = [f["rule_id"] for f in report["findings"]]
    assert ids[:2] == ["KV001", "MTP008"], ids
    assert all(f["severity"] == "info" for f in report["findings"][:2])
    assert "demoted" not in report["findings"][0]  # internal: not in the JSON report
