"""The Prometheus textfile (diagnose/report/prom.py): parsed back by prometheus_client's parser, checked by
``promtool check metrics`` where it is installed (Debian's ``prometheus`` package; .ci/run installs it), no
sample with a timestamp (node_exporter rejects such a file), label cardinality bounded, and served on
/metrics in watch mode."""

from __future__ import annotations

import os
import shutil
import subprocess
import urllib.request
from datetime import datetime

import pytest
from prometheus_client.parser import text_string_to_metric_families

from diagnose.live.sinks import MetricsServer
from diagnose.model import Finding
from diagnose.model.live import RunStatus, Tracked
from diagnose.pipeline import Settings, analyze
from diagnose.report import prom, render
from tests.conftest import SAMPLES, run_cli

MTIME = datetime(2025, 9, 3, 15, 0).timestamp()


def _status(report, **more) -> RunStatus:
    active = [Tracked(fingerprint=f.fingerprint, rule_id=f.rule_id, name=f.name, category=f.category,
                      severity=f.severity, title=f.title, summary=f.summary, nodes=f.nodes, ranks=f.ranks,
                      count=f.count, first_seen=None, last_seen=None, opened_at="2025-09-03T14:32:42", refreshed=0.0)
              for f in report.findings]
    opened = {(f.rule_id, f.category, f.severity): 1 for f in report.findings}
    return RunStatus(node="worker-3", finished=1756909962.5, duration_s=0.42, exit_code=1, unread_inputs=0,
                     active=active, opened_total=opened, **more)


def _families(text: str) -> dict:
    return {f.name: f for f in text_string_to_metric_families(text)}


@pytest.fixture(scope="module")
def kv_report():
    return analyze([str(SAMPLES / "kv-exhaustion")], Settings())


def test_the_textfile_parses_back_with_the_values_of_the_window(kv_report):
    text = render("prom", kv_report, status=_status(kv_report), lang="en")
    families = _families(text)
    assert families["diagnose_up"].samples[0].value == 1
    assert families["diagnose_exit_code"].samples[0].value == 1
    assert families["diagnose_last_run_timestamp_seconds"].samples[0].value == 1756909962.5
    active = {(s.labels["rule"], s.labels["node"]) for s in families["diagnose_findings_active"].samples}
    assert ("KV001", "node-0") in active
    occurrences = {s.labels["rule"]: s.value for s in families["diagnose_finding_occurrences"].samples}
    assert occurrences["KV001"] == 82
    opened = families["diagnose_findings_opened"]  # the parser drops the counter's _total from the family
    assert opened.type == "counter" and {s.name for s in opened.samples} == {"diagnose_findings_opened_total"}
    kv = families["diagnose_kv_cache_usage_ratio"].samples
    assert [(s.labels, s.value) for s in kv] == [({"node": "node-0", "engine": "Engine 000"}, 0.998)]
    assert families["diagnose_requests_waiting"].samples[0].value == 199
    for family in families.values():
        assert family.documentation and all(s.timestamp is None for s in family.samples)
    assert not any(line and not line.startswith("#") and len(line.rsplit(" ", 1)) != 2 for line in text.splitlines())


def test_acceptance_and_expert_load_per_layer():
    mtp = analyze([str(SAMPLES / "mtp-ineffective")], Settings())
    families = _families(render("prom", mtp, lang="en"))
    assert 0 < families["diagnose_spec_acceptance_ratio"].samples[0].value < 1
    dumps = analyze([str(SAMPLES / "expert-load-week" / "dumps" / "2026-11-26")], Settings())
    layers = _families(render("prom", dumps, lang="en"))["diagnose_expert_load_imbalance_ratio"].samples
    assert layers and all(s.value >= 1 for s in layers) and len({s.labels["layer"] for s in layers}) > 1


def test_label_cardinality_is_bounded_whatever_the_logs_hold(kv_report):
    import polars as pl

    series = kv_report.series.cast({"engine": pl.String, "node": pl.String})
    many = pl.concat([series.with_columns(node=pl.lit(f"node-{i}"), engine=pl.lit(f"Engine {j:03d}"))
                      for i in range(80) for j in range(3)])
    findings = [Finding(rule_id="KV001", name="n", category="kv-cache", severity="error", title="t", summary="s",
                        count=1, first_seen=None, last_seen=None, nodes=[f"node-{i}"], ranks=[], evidence=[],
                        remediation="", references=[]) for i in range(500)]
    report = type(kv_report)(findings=findings, inputs=[], skipped=[], series=many, signals=kv_report.signals)
    families = _families(render("prom", report, lang="en"))
    nodes = {s.labels["node"] for s in families["diagnose_kv_cache_usage_ratio"].samples}
    assert len(nodes) == prom.MAX_NODES + 1 and "other" in nodes
    assert len(families["diagnose_finding_occurrences"].samples) == prom.MAX_NODES + 1


def test_help_texts_follow_the_language(kv_report):
    text = render("prom", kv_report, status=_status(kv_report), lang="zh")
    assert "# HELP diagnose_up 最近一次" in text
    _families(text)


@pytest.mark.skipif(shutil.which("promtool") is None,
                    reason="promtool is not installed (Debian's prometheus package; .ci/run installs it)")
def test_promtool_accepts_the_file(kv_report, tmp_path):
    for lang in ("en", "zh"):
        text = render("prom", kv_report, status=_status(kv_report), lang=lang)
        done = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
        assert done.returncode == 0 and not done.stdout.strip() and not done.stderr.strip(), done.stdout + done.stderr


def test_watch_writes_the_file_atomically_and_serves_metrics(tmp_path, kv_report):
    logs = tmp_path / "logs" / "node-0"
    logs.mkdir(parents=True)
    log = logs / "vllm-serve-20250903.log"
    log.write_bytes((SAMPLES / "kv-exhaustion" / "node-0" / log.name).read_bytes())
    os.utime(log, (MTIME, MTIME))
    textfile_dir = tmp_path / "textfile"
    textfile_dir.mkdir()
    result = run_cli("watch", str(tmp_path / "logs"), "--state", str(tmp_path / "st"), "--once", "--backlog", "1G",
                     "--json-lines", str(tmp_path / "e.jsonl"), "--prom", str(textfile_dir / "diagnose.prom"))
    assert result.exit_code == 1
    assert sorted(p.name for p in textfile_dir.iterdir()) == ["diagnose.prom"]  # no temporary file left
    assert _families((textfile_dir / "diagnose.prom").read_text())["diagnose_up"].samples[0].value == 1
    server = MetricsServer(0)
    try:
        server.text = render("prom", kv_report, lang="en")
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=10) as page:
            assert page.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            assert "diagnose_findings_active" in page.read().decode()
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"http://127.0.0.1:{server.port}/other", timeout=10)
    finally:
        server.close()
