"""node-problem-detector: the plugin contract of ``diagnose npd`` (exit 0 OK, 1 problem, anything else unknown;
one trimmed line within max_output_length bytes on standard output, details on standard error and in a file)
and the monitor file of ``diagnose npd-config``, checked against the fields NPD documents
(kubernetes/node-problem-detector docs/custom_plugin_monitor.md, pkg/custompluginmonitor/types/config.go)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import jsonschema
import pytest

from diagnose.live.npd_plugin import CHECKS, NPD_OK, NPD_PROBLEM, answer, monitor_config, trim
from tests.conftest import SAMPLES, run_cli

KV = SAMPLES / "kv-exhaustion" / "node-0" / "vllm-serve-20250903.log"
TWO_NODE = SAMPLES / "two-node-aicore"
MTIME = datetime(2025, 9, 3, 15, 0).timestamp()
DURATION = r"^[0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h)$"

# The monitor file as NPD reads it: the documented fields and their checks. A permanent rule names a
# condition declared in conditions[]; a rule's timeout may not exceed the global one (checked below).
MONITOR_SCHEMA = {
    "type": "object",
    "required": ["plugin", "pluginConfig", "source", "conditions", "rules"],
    "additionalProperties": False,
    "properties": {
        "plugin": {"const": "custom"},
        "source": {"type": "string", "minLength": 1},
        "metricsReporting": {"type": "boolean"},
        "pluginConfig": {
            "type": "object", "additionalProperties": False,
            "properties": {
                "invoke_interval": {"type": "string", "pattern": DURATION},
                "timeout": {"type": "string", "pattern": DURATION},
                "max_output_length": {"type": "integer", "minimum": 1},
                "concurrency": {"type": "integer", "minimum": 1},
                "enable_message_change_based_condition_update": {"type": "boolean"},
                "skip_initial_status": {"type": "boolean"},
            },
        },
        "conditions": {"type": "array", "items": {
            "type": "object", "required": ["type", "reason", "message"], "additionalProperties": False,
            "properties": {"type": {"type": "string", "minLength": 1}, "reason": {"type": "string", "minLength": 1},
                           "message": {"type": "string"}}}},
        "rules": {"type": "array", "minItems": 1, "items": {
            "type": "object", "required": ["type", "reason", "path"], "additionalProperties": False,
            "properties": {
                "type": {"enum": ["temporary", "permanent"]},
                "condition": {"type": "string"},
                "reason": {"type": "string", "minLength": 1},
                "path": {"type": "string", "minLength": 1},
                "args": {"type": "array", "items": {"type": "string"}},
                "timeout": {"type": "string", "pattern": DURATION},
                "invoke_interval": {"type": "string", "pattern": DURATION},
            },
            "if": {"properties": {"type": {"const": "permanent"}}},
            "then": {"required": ["condition"]},
            "else": {"not": {"required": ["condition"]}},
        }},
    },
}


def _seconds(text: str) -> float:
    n, unit = re.match(r"^([0-9.]+)([a-zµ]+)$", text).groups()
    return float(n) * {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}[unit]


def test_the_plugin_ranks_severities_as_the_model_does():
    from diagnose.live import npd_plugin
    from diagnose.model import SEVERITY_RANK

    assert npd_plugin.SEVERITY_RANK == SEVERITY_RANK


def test_trim_keeps_one_line_within_the_byte_limit_at_a_character_boundary():
    assert trim("  KV001 saturated\n  while   queueing \t", 80) == "KV001 saturated while queueing"
    long = "DEV010 " + "AI Core 执行超时：算子任务超过时限，设备未响应 " * 6
    for limit in (1, 2, 3, 10, 40, 79, 80, 81):
        cut = trim(long, limit)
        assert len(cut.encode("utf-8")) <= limit and "\n" not in cut
        cut.encode("utf-8").decode("utf-8")  # never half a character
    assert trim(long, 80).endswith("…") and trim("short", 80) == "short"


def test_permanent_checks_follow_open_findings_and_temporary_ones_new_openings():
    opened = {"fingerprint": "a" * 32, "rule_id": "DEV010", "title": "AI Core timeout", "category": "device",
              "severity": "error", "summary": "rank 13 ...", "nodes": ["node-1"], "evidence": []}
    kv = {**opened, "fingerprint": "b" * 32, "rule_id": "KV001", "title": "KV cache saturated", "category": "kv-cache"}
    recent = [{"seq": 1, "event": "open", **{k: opened[k] for k in ("fingerprint", "rule_id", "category", "severity",
                                                                     "title")}},
              {"seq": 2, "event": "open", **{k: kv[k] for k in ("fingerprint", "rule_id", "category", "severity",
                                                                 "title")}}]
    device = answer(CHECKS["device"], [opened, kv], recent, 0, "error", "en")
    assert (device.code, device.line) == (NPD_PROBLEM, "DEV010 AI Core timeout") and "node-1" in device.details
    assert answer(CHECKS["device"], [opened], recent, 2, "critical", "en").code == NPD_OK
    assert answer(CHECKS["hccl"], [opened, kv], recent, 0, "error", "en").code == NPD_OK
    first = answer(CHECKS["kv"], [opened, kv], recent, 0, "error", "en")
    assert (first.code, first.line, first.mark) == (NPD_PROBLEM, "KV001 KV cache saturated", 2)
    again = answer(CHECKS["kv"], [opened, kv], recent, first.mark, "error", "en")
    assert again.code == NPD_OK and again.line == "no KV cache pressure in the logs"  # one event, not one a run
    zh = answer(CHECKS["moe"], [], recent, 0, "error", "zh")
    assert zh.code == NPD_OK and "MoE" in zh.line and len(zh.line.encode()) <= 80


def test_the_monitor_file_has_the_fields_npd_documents(tmp_path):
    result = run_cli("npd-config", str(tmp_path), "--executable", "/usr/local/bin/diagnose", "--state", "/var/lib/d",
                     "--mindcluster-config", str(tmp_path / "publicCustomization.json"))
    assert result.exit_code == 0, result.output
    config = json.loads(result.stdout)
    jsonschema.validate(config, MONITOR_SCHEMA)
    conditions = {c["type"] for c in config["conditions"]}
    by_check = {r["args"][r["args"].index("--check") + 1]: r for r in config["rules"]}
    assert set(by_check) == set(CHECKS)
    assert {n for n, r in by_check.items() if r["type"] == "permanent"} == {"device", "hccl"}
    for rule in config["rules"]:
        assert rule.get("condition") in conditions | {None}
        assert _seconds(rule["timeout"]) <= _seconds(config["pluginConfig"]["timeout"])
        assert rule["path"] == "/usr/local/bin/diagnose" and rule["args"][0] == "npd"
        assert rule["args"][-2:] == ["--", str(tmp_path.resolve())]
        assert rule["args"][rule["args"].index("--max-output-length") + 1] == "80"
    assert config["pluginConfig"]["max_output_length"] == 80 and config["pluginConfig"]["concurrency"] == 1
    custom = json.loads((tmp_path / "publicCustomization.json").read_text())
    assert custom["publicFaultResource"] == ["diagnose"]
    assert "100010004" in custom["publicFaultCode"]["NotHandleFaultCodes"]
    assert {len(c) for codes in custom["publicFaultCode"].values() for c in codes} == {9}
    bad = run_cli("npd-config", str(tmp_path), "--interval", "30s", "--timeout", "60s")
    assert bad.exit_code == 2 and "timeout" in bad.output
    assert monitor_config("/x", [], ["/logs"], checks=["kv"])["conditions"] == []


def _logs(tmp_path: Path, source: Path) -> Path:
    logs = tmp_path / "logs"
    if source.is_dir():
        import shutil

        shutil.copytree(source, logs)
    else:
        (logs / "node-0").mkdir(parents=True)
        (logs / "node-0" / source.name).write_bytes(source.read_bytes())
    for path in logs.rglob("*"):
        if path.is_file():
            os.utime(path, (MTIME, MTIME))
    return logs


def _npd(check: str, logs: Path, state: Path, *more: str):
    return run_cli("npd", "--check", check, "--state", str(state), "--backlog", "1G", "--min-tick", "1h",
                   *more, str(logs))


def test_each_check_answers_by_the_contract(tmp_path):
    logs = _logs(tmp_path, TWO_NODE)
    state = tmp_path / "st"
    codes = {}
    for check in ("device", "hccl", "engine", "kv", "moe"):
        result = _npd(check, logs, state)
        line = result.stdout
        assert line.endswith("\n") and line.count("\n") == 1 and len(line.rstrip("\n").encode()) <= 80, line
        assert (state / f"npd-{check}.txt").read_text() == result.stderr
        codes[check] = (result.exit_code, line.split()[0])
    assert codes == {"device": (1, "DEV010"), "hccl": (1, "COMM003"), "engine": (1, "ENG001"), "kv": (0, "no"),
                     "moe": (0, "no")}
    # The next interval with nothing new written: the conditions hold, the events are not raised again.
    again = {c: _npd(c, logs, state, "--min-tick", "1s").exit_code for c in ("device", "engine")}
    assert again == {"device": 1, "engine": 0}
    details = (state / "npd-device.txt").read_text()
    assert "rank 13" in details and "plog" in details


def test_nothing_new_is_ok_and_a_state_it_cannot_use_is_unknown(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = _npd("engine", empty, tmp_path / "st")
    assert result.exit_code == 0 and result.stdout == "no serving engine problem in the logs\n"
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = _npd("device", empty, blocker / "st", "--max-output-length", "40")
    assert result.exit_code == 3 and len(result.stdout.rstrip("\n").encode()) <= 40
    assert result.stdout.startswith("diagnose could not judge") and "Traceback" not in result.output
    result = run_cli("npd", "--check", "nope", str(empty))
    assert result.exit_code == 2


@pytest.mark.slow
def test_one_invocation_as_npd_runs_it_and_its_time(tmp_path):
    """As NPD runs it: a new process per check, no shell; the first does the tick, the others answer from it."""
    logs = _logs(tmp_path, KV)
    exe = [sys.executable, "-m", "diagnose"]
    times = []
    for check in ("device", "hccl", "engine", "kv", "moe"):
        started = time.monotonic()
        done = subprocess.run([*exe, "npd", "--check", check, "--state", str(tmp_path / "st"), "--backlog", "1G",
                               "--lang", "en", "--fail-on", "error",
                               str(logs)], capture_output=True, text=True, timeout=60)
        times.append(time.monotonic() - started)
        assert done.returncode == (1 if check == "kv" else 0), done.stderr
        assert len(done.stdout.rstrip("\n").encode()) <= 80
    print(f"npd run times: first (tick) {times[0]:.2f} s, from the state {min(times[1:]):.2f}-{max(times[1:]):.2f} s")
    assert max(times) < 30
