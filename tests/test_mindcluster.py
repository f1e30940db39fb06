"""MindCluster public faults (diagnose/live/faults.py, diagnose/report/mindcluster.py): the message validated
against ClusterD's documented fields and limits (Ascend/mind-cluster docs/en/scheduling/api/clusterd/
03_public_fault_apis.md; component/clusterd/pkg/application/publicfault/checker.go), the codes and levels, and
hardware fault event ids mapped to MindCluster's handling levels."""

from __future__ import annotations

import json

import jsonschema
import pytest

from diagnose.live import faults
from diagnose.model.live import LiveEvent, PublicFault, Tracked
from diagnose.report import render
from diagnose.report.mindcluster import MAX_FAULTS
from tests.conftest import run_cli

ID = {"type": "string", "pattern": r"^[A-Za-z0-9._-]{8,128}$"}
MILLIS = {"type": "integer", "minimum": 1735689600000, "maximum": 9999999999999}  # 13 digits, from 2025
MESSAGE_SCHEMA = {
    "type": "object",
    "required": ["id", "timestamp", "version", "resource", "faults"],
    "additionalProperties": False,
    "properties": {
        "id": ID, "timestamp": MILLIS, "version": {"const": "1.0"}, "resource": {"const": "diagnose"},
        "faults": {"type": "array", "minItems": 1, "maxItems": 100, "items": {
            "type": "object",
            "required": ["faultId", "faultType", "faultCode", "faultTime", "assertion", "influence"],
            "additionalProperties": False,
            "properties": {
                "faultId": ID,
                "faultType": {"enum": ["NPU", "Node", "Network", "Storage"]},
                "faultCode": {"type": "string", "pattern": r"^[0-3][0-2]001[0-9]{4}$"},
                "faultTime": MILLIS,
                "assertion": {"enum": ["occur", "recover", "once"]},
                "faultLocation": {"type": "object", "maxProperties": 10,
                                  "propertyNames": {"maxLength": 16},
                                  "additionalProperties": {"type": "string", "maxLength": 128}},
                "influence": {"type": "array", "minItems": 1, "maxItems": 1000, "items": {
                    "type": "object", "required": ["nodeName", "deviceIds"], "additionalProperties": False,
                    "properties": {
                        "nodeName": {"type": "string", "minLength": 1, "maxLength": 253,
                                     "pattern": r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$"},
                        "deviceIds": {"type": "array", "minItems": 1, "maxItems": 32, "uniqueItems": True,
                                      "items": {"type": "integer", "minimum": 0, "maximum": 31}},
                    }}},
                "description": {"type": "string", "maxLength": 512, "pattern": r"^[^\t\n\r\f\v]*$"},
            }}},
    },
}


def _tracked(**over) -> Tracked:
    base = dict(fingerprint="f3bfc1570b462ba9686e91c1dda9e7b9", rule_id="KV001", name="kv-cache-saturated",
                category="kv-cache", severity="error", title="KV cache saturated while requests queue",
                summary="...", nodes=["node-0"], ranks=[], count=82, first_seen="2025-09-03T14:19:12",
                last_seen="2025-09-03T14:32:42", opened_at="2025-09-03T14:20:12", refreshed=0.0,
                evidence=[{"file": "node-0/vllm-serve.log", "line": 340, "text": "..."}])
    return Tracked(**{**base, **over})


def _message(events, node="Worker_3.Example", devices=range(16), form="json") -> dict:
    found = [faults.to_fault(e, node, list(devices)) for e in events]
    return json.loads(render("mindcluster", None, faults=found, message_id="diagnose-worker-3-7",
                             timestamp_ms=1756909962000, form=form))


def test_an_open_and_a_resolve_are_an_occur_and_a_recover_of_one_fault():
    held = _tracked()
    message = _message([LiveEvent(1, "open", "2025-09-03T14:20:12", held),
                        LiveEvent(2, "resolve", "2025-09-03T14:40:00", held)])
    jsonschema.validate(message, MESSAGE_SCHEMA)
    occur, recover = message["faults"]
    assert (occur["assertion"], recover["assertion"]) == ("occur", "recover")
    assert occur["faultId"] == recover["faultId"] == "diagnose.f3bfc1570b462ba9686e91c1dda9e7b9"
    assert occur["faultTime"] == recover["faultTime"]  # always the time the fault began
    assert occur["faultCode"] == "100010004" and occur["faultType"] == "Node"
    assert occur["influence"] == [{"nodeName": "worker-3.example", "deviceIds": list(range(16))}]
    assert occur["faultLocation"] == {"rule": "KV001", "category": "kv-cache", "severity": "error",
                                      "evidence": "node-0/vllm-serve.log:340"}


def test_limits_hold_on_hostile_values():
    long = _tracked(title="x\ty\n" * 400, fingerprint="../../etc/passwd", first_seen="2019-01-01T00:00:00",
                    category="device", facts={"device": 5},
                    evidence=[{"file": "/" + "deep/" * 60 + "plog.log", "line": 1, "text": ""}])
    events = [LiveEvent(i, "open", "2025-09-03T14:20:12", long) for i in range(150)]
    message = _message(events, node="-" * 300, devices=[40, -1, 3, 3])
    jsonschema.validate(message, MESSAGE_SCHEMA)
    assert len(message["faults"]) == MAX_FAULTS
    fault = message["faults"][0]
    assert fault["faultType"] == "NPU" and fault["influence"][0]["deviceIds"] == [5]
    assert len(fault["description"]) <= 512 and fault["faultTime"] == 1735689600000
    assert message["faults"][0]["influence"][0]["nodeName"] == "localhost"


def test_the_configmap_form_is_what_clusterd_watches():
    manifest = _message([LiveEvent(1, "open", "2025-09-03T14:20:12", _tracked())], form="configmap")
    assert manifest["kind"] == "ConfigMap"
    assert manifest["metadata"]["labels"] == {"mc-consumer-publicfault": "true"}
    jsonschema.validate(json.loads(manifest["data"]["PublicFault"]), MESSAGE_SCHEMA)
    assert len(json.dumps(manifest).encode()) < 1 << 20  # one ConfigMap update stays under 1 MB


@pytest.mark.parametrize("category, code", [("device", "010010001"), ("memory", "010010001"),
                                            ("communication", "210010002"), ("engine", "110010003"),
                                            ("kv-cache", "100010004"), ("moe-load", "100010005"),
                                            ("config", "100010009")])
def test_codes_follow_mindclusters_scheme_and_are_configured(category, code):
    assert faults.code_for(category)[1] == code
    configured = faults.configuration()["publicFaultCode"]
    assert any(code in codes for codes in configured.values())
    level = faults.LEVELS[int(code[1])]
    assert code in configured[f"{level}Codes"]


def test_a_hardware_fault_code_takes_its_handling_level():
    """A finding carrying a hardware fault event id takes MindCluster's level for it from the real table
    (knowledge/codes/fault_event.toml ``handling``: 80E18008 is RestartNPU, an isolating level); a finding
    without one keeps its category's level."""
    held = _tracked(category="device", rule_id="CODE006", facts={"family": "fault_event", "code": "80E18008"})
    fault = faults.to_fault(LiveEvent(1, "open", "2025-09-03T14:20:12", held), "node-1", [0, 1])
    assert fault.fault_code == "020010001" and fault.location["handling"] == "RestartNPU"
    sub = _tracked(category="device", facts={"family": "fault_event", "code": "80818c06"})  # as a line writes it
    assert faults.handling_of(sub) == "SubHealthFault"
    assert faults.handling_of(_tracked(facts={"handling": "NotHandleFault"})) == "NotHandleFault"
    assert faults.handling_of(_tracked(facts={"handling": "-", "family": "fault_event", "code": "80E18008"})) is None
    assert faults.handling_of(_tracked(facts={"family": "cann", "code": "EI0006"})) is None  # no such field
    assert faults.handling_of(_tracked(facts={"family": "fault_event", "code": "80C9FFF1"})) is None  # not listed
    no = faults.to_fault(LiveEvent(1, "open", "x", _tracked(category="device")), "node-1", [0])
    assert no.fault_code == "010010001" and "handling" not in no.location
    assert isinstance(no, PublicFault)


def test_a_fault_event_in_a_log_reaches_clusterd_at_its_handling_level(tmp_path):
    """The device OS log of a node reports an HBM multi-bit ECC event (RestartNPU) and a low-risk computing
    anomaly (SubHealthFault): one watch tick sends ClusterD an NPU fault of each at its level."""
    log = tmp_path / "logs" / "node-1" / "device-os" / "device-os_20260302112041.log"
    log.parent.mkdir(parents=True)
    log.write_text(
        "[INFO] DRV(3051,dmp_daemon):2026-03-02-11:20:40.902.114 [fault_manager] chip 5 health check ok\n"
        "[ERROR] DRV(3051,dmp_daemon):2026-03-02-11:20:41.118.902 [fault_manager] event_id: [0x80e18008], "
        "device_id: 5, severity: 3, assertion: 1\n"
        "[WARNING] DRV(3051,dmp_daemon):2026-03-02-11:21:07.440.013 [fault_manager] event_id: [0x80818c06], "
        "device_id: 2, severity: 1, assertion: 1\n")
    result = run_cli("watch", str(tmp_path / "logs"), "--state", str(tmp_path / "st"), "--once", "--backlog", "1G",
                     "--json-lines", str(tmp_path / "events.jsonl"), "--mindcluster", str(tmp_path / "fault.json"),
                     "--node-name", "node-1", "--npus", "0-7")
    assert result.exit_code == 1, result.output
    message = json.loads((tmp_path / "fault.json").read_text())
    jsonschema.validate(message, MESSAGE_SCHEMA)
    got = {f["faultLocation"]["handling"]: (f["faultCode"], f["faultType"], f["faultLocation"]["rule"])
           for f in message["faults"]}
    assert got == {"RestartNPU": ("020010001", "NPU", "CODE006"), "SubHealthFault": ("010010001", "NPU", "CODE006")}
    assert all(f["description"].startswith("CODE006 Ascend hardware fault event 80") for f in message["faults"])
