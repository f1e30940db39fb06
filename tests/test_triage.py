"""Suppressions (findings and unrecognised-error signatures, each with a reason), stable fingerprints, and the
findings baseline (`--baseline report.json` marks findings new or known; `--fail-on-new` gates on new ones)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import SAMPLES, ids, run_cli, run_json
from test_ci_outputs import validate_sarif

from diagnose.analysis.fingerprint import file_shape, fingerprints
from diagnose.model import Evidence, Finding
from diagnose.analysis.suppression import Suppression, split_signatures
from diagnose.model import Example, Signature, SuppressedSignature

KV = SAMPLES / "kv-exhaustion"  # KV001 (error), KV005 and PRF005 (warnings), MTP004 (info), on node-0
MTP = SAMPLES / "mtp-ineffective"

UNEXPLAINED = (
    "INFO 07-01 09:00:00 [api_server.py:1090] vLLM API server version 0.9.1\n"
    "ERROR 07-01 09:05:00 [worker.py:88] widget overflow in frobnicator stage 7 after 1234 steps\n"
    "ERROR 07-01 09:06:00 [worker.py:88] widget overflow in frobnicator stage 9 after 99 steps\n"
    "WARNING 07-01 09:07:00 [sched.py:12] gizmo queue at 80 percent\n"
)



def finding(rule_id="KV001", file="logs/node-0/vllm.log", text="ERROR 07-01 09:06:02 NPU out of memory", nodes=("node-0",)):
    return Finding(rule_id=rule_id, name="x", category="kv-cache", severity="error", title="t", summary="s", count=1,
                   first_seen=None, last_seen=None, nodes=list(nodes), ranks=[], evidence=[Evidence(file, 3, text)],
                   remediation="", references=[])


# --- suppressions -------------------------------------------------------------------------------------------

def test_a_suppressed_finding_leaves_the_findings_and_the_exit_code_but_is_counted(repo: Path):
    (repo / ".diagnose.toml").write_text(
        '[[suppress]]\nrule = "KV001"\nreason = "the soak test saturates the cache on purpose"\n')
    code, report = run_json(str(KV))
    assert code == 0  # KV001 was the only error
    assert "KV001" not in ids(report)
    (entry,) = report["suppressed"]
    assert entry["kind"] == "finding" and entry["rule_id"] == "KV001"
    assert entry["reason"] == "the soak test saturates the cache on purpose"
    assert entry["suppression"] == ".diagnose.toml: suppress[0]" and len(entry["fingerprint"]) == 32
    assert report["verdict"]["rule_id"] == "KV005"  # the verdict is about what is left
    text = run_cli(str(KV), "--no-color").stdout
    assert "1 suppressed by the configuration (1 finding; reasons in the JSON report)" in text
    assert "KV001 kv-cache-saturated" not in text  # no panel for it


def test_suppression_by_name_node_and_path_narrows_to_where_it_is_known(repo: Path):
    def suppressed(extra: str) -> list[str]:
        (repo / ".diagnose.toml").write_text(
            f'[[suppress]]\nrule = "kv-cache-saturated"\nreason = "known on the soak node"\n{extra}')
        code, report = run_json(str(KV))
        assert code in (0, 1)
        return [s["rule_id"] for s in report["suppressed"]]

    assert suppressed('node = "node-*"\n') == ["KV001"]
    assert suppressed('node = ["node-7", "node-9"]\n') == []  # the finding is on node-0
    assert suppressed('path = "node-0/vllm-serve-*.log"\n') == ["KV001"]  # a tail of the path
    assert suppressed('path = "kv-exhaustion/node-0/*"\n') == ["KV001"]
    assert suppressed('path = "node-1/*"\n') == []


def test_a_node_suppression_does_not_hide_the_same_problem_elsewhere():
    sup = Suppression(reason="r", rule="KV001", nodes=("node-3",))
    assert sup.matches_finding(finding(nodes=("node-3",)))
    assert not sup.matches_finding(finding(nodes=("node-3", "node-5")))
    assert not sup.matches_finding(finding(rule_id="KV005", nodes=("node-3",)))
    by_path = Suppression(reason="r", rule="KV001", paths=("node-0/*.log",))
    assert by_path.matches_finding(finding(file="ci.tgz!job/node-0/vllm.log"))
    assert not by_path.matches_finding(finding(file="ci.tgz!job/node-1/vllm.log"))


def test_signature_suppression_with_wildcards():
    def signature(text: str, count: int, level: str) -> Signature:
        return Signature(signature=text, count=count, first_seen=None, last_seen=None, nodes=[], ranks=[],
                         level=level, code=None, source=None, example=Example("x.log", 1, text, text))

    items = [signature("[WARNING] ASCENDCL(<N>,python): env <PATH> is deprecated", 3, "WARNING"),
             signature("widget overflow in stage <N>", 1, "ERROR")]
    kept, gone = split_signatures(items, (Suppression(reason="harmless", signature="[WARNING] ASCENDCL(<N>,python): *"),))
    assert [k.signature for k in kept] == ["widget overflow in stage <N>"]
    assert gone == [SuppressedSignature(signature=items[0].signature, count=3, level="WARNING", reason="harmless",
                                        suppression="")]
    exact = Suppression(reason="r", signature="widget  overflow in stage <N>")  # whitespace as printed
    assert exact.matches_signature("widget overflow in stage <N>")
    assert not exact.matches_signature("widget overflow in stage <N> again")


def test_suppressed_signatures_no_longer_decide_the_verdict_or_the_exit_code(repo: Path):
    (repo / "node-0").mkdir()
    (repo / "node-0" / "vllm-serve.log").write_text(UNEXPLAINED)
    code, report = run_json(str(repo / "node-0"))  # the run went on: listed, not a failure
    assert code == 0 and report["verdict"]["kind"] == "unexplained-errors"
    code, report = run_json(str(repo / "node-0"), "--fail-on-unrecognised")
    assert code == 1 and report["verdict"]["kind"] == "no-known-cause"
    assert len(report["unrecognised"]) == 2
    (repo / "pyproject.toml").write_text(
        '[tool.diagnose]\n[[tool.diagnose.suppress]]\nsignature = "widget overflow in frobnicator *"\n'
        'reason = "a test harness message"\n')
    code, report = run_json(str(repo / "node-0"), "--fail-on-unrecognised")
    assert code == 0 and report["verdict"]["kind"] != "no-known-cause"
    assert [u["signature"] for u in report["unrecognised"]] == ["gizmo queue at <N> percent"]
    (entry,) = report["suppressed"]
    assert entry == {"kind": "signature", "signature": "widget overflow in frobnicator stage <N> after <N> steps",
                     "count": 2, "level": "ERROR", "reason": "a test harness message",
                     "suppression": "pyproject.toml: tool.diagnose.suppress[0]"}
    out = run_cli(str(repo / "node-0"), "--no-color").stdout
    assert "1 suppressed by the configuration (1 error signature" in out and "widget" not in out


# --- fingerprints and the findings baseline ---------------------------------------------------------------

def test_fingerprints_ignore_times_numbers_lines_folders_and_nodes_but_not_rule_file_kind_or_wording():
    base = ("KV001", "bench-0701.tgz!job/node-1/plog-2873_20250701093000123.log",
            "[ERROR] HCCL(2873,python):2025-07-01-09:30:00.123.456 [x.cc:12] EI0006 socket timeout after 120 s")
    same = ("KV001", "/data/bench-0702/node-7/plog-99_20250702111111000.log",
            "[ERROR] HCCL(99,python):2025-07-02-11:11:11.000.001 [x.cc:97] EI0006 socket timeout after 600 s")
    a, b, other_rule, other_kind, other_code = fingerprints([
        base, same, ("KV002",) + base[1:], (base[0], "node-1/vllm.log", base[2]),
        (base[0], base[1], base[2].replace("EI0006", "EI0004"))])
    assert a == b
    assert len({a, other_rule, other_kind, other_code}) == 4
    assert file_shape("a.tgz!job/node-1/plog-2873_20250701.log") == "plog-#_#.log"
    assert file_shape("-") == "stdin"


def shifted_copy(src: Path, dst: Path) -> Path:
    """The sample as another night's artifact: another folder, every line moved down, other pids."""
    shutil.copytree(src, dst)
    log = next(dst.rglob("vllm-serve-*.log"))
    text = log.read_text(encoding="utf-8")
    header = "".join(f"(APIServer pid=4242) INFO 09-03 13:59:{i:02d} [api_server.py:1] warming up\n" for i in range(7))
    log.write_text(header + text.replace("pid=3280921", "pid=4242"), encoding="utf-8")
    return dst


def test_the_same_findings_in_another_run_are_known(repo: Path):
    base = repo / "night-1.json"
    assert run_cli(str(KV), "--json", str(base), "-q").exit_code == 1
    earlier = json.loads(base.read_text())
    assert all(len(f["fingerprint"]) == 32 for f in earlier["findings"]) and "findings_new" not in earlier
    night2 = shifted_copy(KV, repo / "night-2")
    code, report = run_json(str(night2), "--baseline", str(base))
    assert code == 1  # without --fail-on-new the known error still fails
    assert [f["baseline_state"] for f in report["findings"]] == ["known"] * 4
    assert report["findings_new"] == 0
    assert [f["fingerprint"] for f in report["findings"]] == [f["fingerprint"] for f in earlier["findings"]]
    assert [f["evidence"][0]["line"] for f in report["findings"]] != [f["evidence"][0]["line"] for f in earlier["findings"]]
    result = run_cli(str(night2), "--baseline", str(base), "--fail-on-new", "--no-color")
    assert result.exit_code == 0
    assert "0 new and 4 known findings since the baseline" in result.stdout and "[NEW]" not in result.stdout


def test_new_findings_fail_with_fail_on_new_and_show_in_text_and_sarif(repo: Path):
    base = repo / "kv.json"
    run_cli(str(KV), "--json", str(base), "-q")
    sarif = repo / "out.sarif"
    result = run_cli(str(MTP), "--baseline", str(base), "--fail-on-new", "--no-color", "--sarif", str(sarif))
    assert result.exit_code == 1
    assert "[NEW] Speculative decoding (MTP)" in result.stdout
    _, report = run_json(str(MTP), "--baseline", str(base))
    assert report["findings_new"] == len([f for f in report["findings"] if f["baseline_state"] == "new"]) > 0
    doc = json.loads(sarif.read_text())
    validate_sarif(doc)
    results = doc["runs"][0]["results"]
    by_fp = {f["fingerprint"]: f for f in report["findings"]}
    for res in results:
        fp = res["partialFingerprints"]["diagnoseFinding/v1"]
        assert fp in by_fp and res["ruleId"] == by_fp[fp]["rule_id"]
        assert res["baselineState"] == {"new": "new", "known": "unchanged"}[by_fp[fp]["baseline_state"]]
        assert len(res["partialFingerprints"]["diagnoseEvidence/v1"]) == 32  # the older key stays


def test_fail_on_new_keeps_a_known_failure_quiet_but_not_a_new_one(repo: Path):
    base = repo / "base.json"
    run_cli(str(KV), "--ignore", "KV001", "--json", str(base), "-q")  # KV001 unseen in the baseline
    code, report = run_json(str(KV), "--baseline", str(base), "--fail-on-new")
    assert code == 1
    assert {f["rule_id"]: f["baseline_state"] for f in report["findings"]}["KV001"] == "new"
    code, _ = run_json(str(KV), "--baseline", str(base), "--fail-on-new", "--ignore", "KV001")
    assert code == 0


def test_new_error_signatures_fail_with_fail_on_new(repo: Path):
    logs = repo / "logs" / "node-0"
    logs.mkdir(parents=True)
    (logs / "vllm-serve.log").write_text(UNEXPLAINED)
    base = repo / "base.json"
    strict = "--fail-on-unrecognised"  # errors no rule explains fail even a run that went on
    assert run_cli(str(logs), strict, "--json", str(base), "-q").exit_code == 1
    assert run_cli(str(logs), strict, "--baseline", str(base), "--fail-on-new").exit_code == 0
    (logs / "vllm-serve.log").write_text(UNEXPLAINED + "ERROR 07-01 09:08:00 [worker.py:90] sprocket jammed\n")
    assert run_cli(str(logs), strict, "--baseline", str(base), "--fail-on-new").exit_code == 1


def test_a_baseline_from_before_fingerprints_is_matched_by_its_evidence(repo: Path):
    base = repo / "old.json"
    run_cli(str(KV), "--json", str(base), "-q")
    data = json.loads(base.read_text())
    for f in data["findings"]:
        del f["fingerprint"]
    del data["suppressed"]
    base.write_text(json.dumps(data))
    code, report = run_json(str(KV), "--baseline", str(base), "--fail-on-new")
    assert code == 0 and report["findings_new"] == 0


def test_fail_on_new_needs_a_report_baseline(repo: Path):
    result = run_cli(str(KV), "--fail-on-new")
    assert result.exit_code == 2 and "--fail-on-new needs --baseline REPORT.json" in result.stderr
    (repo / "expected.toml").write_text('[performance]\np99_tpot_ms = 50.0\n')
    result = run_cli(str(KV), "--fail-on-new", "--baseline", str(repo / "expected.toml"))
    assert result.exit_code == 2
    _, report = run_json(str(KV), "--baseline", str(repo / "expected.toml"))  # a numbers baseline marks nothing
    assert "findings_new" not in report and all("baseline_state" not in f for f in report["findings"])
