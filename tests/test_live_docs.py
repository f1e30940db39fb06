"""docs/live.md ("Running it live") says what the code does: its metric table lists every metric the textfile
holds, its alert rules load in promtool, its code table is the one ClusterD is configured with."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from diagnose.live import faults
from diagnose.model.live import RunStatus
from diagnose.pipeline import Settings, analyze
from diagnose.report import render
from tests.conftest import SAMPLES

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "live.md").read_text(encoding="utf-8")


def _alerts() -> str:
    return re.search(r"```yaml\n(groups:.*?)```", PAGE, re.S).group(1)


def test_the_metric_table_lists_every_metric():
    report = analyze([str(SAMPLES / "kv-exhaustion")], Settings())
    text = render("prom", report, status=RunStatus("n", 0.0, 0.0, 0, 0), lang="en")
    metrics = set(re.findall(r"^# TYPE (\w+) ", text, re.M))
    listed = set(re.findall(r"`(diagnose_\w+)`", PAGE.split("## Prometheus")[1].split("Example alert rules")[0]))
    assert metrics == listed
    used = set(re.findall(r"\b(diagnose_\w+)", _alerts()))
    assert used <= metrics


@pytest.mark.skipif(shutil.which("promtool") is None,
                    reason="promtool is not installed (Debian's prometheus package; .ci/run installs it)")
def test_the_alert_rules_load(tmp_path):
    rules = tmp_path / "diagnose-alerts.yml"
    rules.write_text(_alerts(), encoding="utf-8")
    done = subprocess.run(["promtool", "check", "rules", str(rules)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_code_table_is_the_configured_one():
    section = PAGE.split("## MindCluster")[1]
    for category, code in (("device", "010010001"), ("communication", "210010002"), ("engine", "110010003"),
                           ("kv-cache", "100010004"), ("moe-load", "100010005"), ("other", "100010009")):
        assert f"`{code}`" in section
        assert faults.code_for(category)[1] == code
