"""One decision, stated everywhere: whatever fails the run (the report's gate, diagnose/analysis/gate.py) is a
failing result in JUnit, SARIF, GitLab, GitHub and Markdown, and nothing is when the run passes; selection applies
to everything the gate counts (the errors no rule explains are the selectable UNR001)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from conftest import SAMPLES, run_cli

CASES = [
    ("kv-exhaustion", ()),
    ("healthy", ()),
    ("two-node-aicore", ()),
    ("two-node-aicore", ("--select", "kv-cache-saturated")),
    ("two-node-aicore", ("--select", "kv-cache-saturated", "--select", "UNR001", "--fail-on-unrecognised")),
    ("mindie-deepseek", ("--ignore", "ALL")),
    ("kv-exhaustion", ("--fail-on", "critical")),
]


def _failing(fmt: str, text: str) -> bool:
    if fmt == "junit":
        root = ET.fromstring(text)
        return any(c.find("failure") is not None or c.find("error") is not None for c in root.iter("testcase"))
    if fmt == "sarif":
        return any(r["level"] == "error" for r in json.loads(text)["runs"][0]["results"])
    if fmt == "gitlab":
        return any(i["severity"] in ("major", "critical", "blocker") for i in json.loads(text))
    if fmt == "github":
        return any(line.startswith("::error") for line in text.splitlines())
    raise AssertionError(fmt)


@pytest.mark.parametrize("sample, options", CASES, ids=lambda x: x if isinstance(x, str) else " ".join(x) or "-")
def test_every_format_states_the_gate(sample, options):
    path = str(SAMPLES / sample)
    result = run_cli(path, "--format", "json", *options)
    gate = json.loads(result.stdout)["gate"]
    assert result.exit_code == gate["exit_code"]
    fails = result.exit_code == 1
    for fmt in ("junit", "sarif", "gitlab", "github"):
        said = run_cli(path, "--format", fmt, *options)
        assert said.exit_code == result.exit_code, fmt
        if "--fail-on" in options:  # a finding below --fail-on stays a finding of its level where formats show levels
            continue
        assert _failing(fmt, said.stdout) == fails, (fmt, gate)
    if gate["unrecognised"]:
        text = run_cli(path, "--format", "markdown", *options).stdout
        assert "No known cause" in text


def test_a_selection_that_leaves_out_unrecognised_errors_does_not_fail_on_them():
    path = str(SAMPLES / "two-node-aicore")
    result = run_cli(path, "--select", "kv-cache-saturated", "--fail-on-unrecognised", "--format", "json")
    report = json.loads(result.stdout)
    assert result.exit_code == 0 and report["gate"]["unrecognised"] is False and report["unrecognised"]
