"""CI artifact mode: SARIF, JUnit, Markdown and GitHub annotations, gating, determinism and --redact.

The end-to-end tests read samples/ci-artifact/nightly-bench-logs.tgz (built by make.py next to it): a remote Ray
worker runs out of NPU memory, the engine dies, and a second node (a nested archive) saturates its KV cache.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import xml.etree.ElementTree as ET
from datetime import datetime
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from conftest import ROOT
from diagnose.cli import main
from diagnose.messages import messages
from diagnose.model import Evidence, Finding, InputFile, Report, RuleInfo, Skipped, builtins, skip
from diagnose.report.redact import Redactor, redact_report
from diagnose.report import FORMATS, render
from diagnose.report import github as gh
from diagnose.report.sarif import fingerprint, relative_path, relative_uri

SAMPLE_DIR = ROOT / "samples" / "ci-artifact"
ARTIFACT = SAMPLE_DIR / "nightly-bench-logs.tgz"
SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
FILES = {"sarif": "out.sarif", "junit": "out.xml", "markdown": "summary.md", "json": "out.json"}


def _make_module():
    spec = importlib.util.spec_from_file_location("ci_artifact_make", SAMPLE_DIR / "make.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAKE = _make_module()
SAMPLE_TEXT = MAKE.NODE1_SERVE + MAKE.NODE2_SERVE + MAKE.JOB_ENV
IPV4_IN_SAMPLE = sorted(set(re.findall(r"\b\d{1,3}(?:\.\d{1,3}){3}\b", SAMPLE_TEXT)))


def invoke(*args: str, env: dict | None = None):
    runner = CliRunner()
    return runner.invoke(main, list(args), env=env or {"GITHUB_ACTIONS": None, "GITHUB_STEP_SUMMARY": None},
                         catch_exceptions=False)


def run_all(outdir: Path, *extra: str, env: dict | None = None):
    outdir.mkdir(parents=True, exist_ok=True)
    args = ["check", str(ARTIFACT), "--format", "text", "--no-color", "-o", str(outdir / "main.txt")]
    for fmt, name in FILES.items():
        args += [f"--{fmt}", str(outdir / name)]
    result = invoke(*args, *extra, env=env)
    return result, {fmt: (outdir / name).read_bytes() for fmt, name in FILES.items()}


@pytest.fixture(scope="module")
def sample_outputs(tmp_path_factory):
    out = tmp_path_factory.mktemp("ci")
    result, files = run_all(out)
    return result, files


def validate_sarif(doc: dict) -> None:
    cls = jsonschema.validators.validator_for(SCHEMA)
    validator = cls(SCHEMA, format_checker=cls.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]


# --- a hand-built report for unit tests -------------------------------------------------------------------------


def finding(rule_id="MEM001", severity="critical", evidence=None, nodes=("node-1",), summary="NPU out of memory",
            **kw) -> Finding:
    return Finding(
        rule_id=rule_id, name=kw.pop("name", "npu-out-of-memory"), category=kw.pop("category", "memory"),
        severity=severity, title=kw.pop("title", "NPU out of memory"), summary=summary, count=1,
        first_seen=datetime(2025, 7, 1, 9, 6, 2), last_seen=datetime(2025, 7, 1, 9, 6, 2), nodes=list(nodes),
        ranks=[0], evidence=list(evidence) if evidence is not None else
        [Evidence("logs/node-1/vllm.log", 15, "ERROR 07-01 09:06:02 NPU out of memory. Tried to allocate 172.00 MiB")],
        remediation=kw.pop("remediation", "Lower `--gpu-memory-utilization` (e.g. 0.92 → 0.88)."),
        references=[], **kw,
    )


def report_of(findings, inputs=None, errors=None, skipped=None, rules=None) -> Report:
    inputs = inputs if inputs is not None else [
        InputFile("logs/node-1/vllm.log", "vllm", 100, 5000, node="node-1"),
        InputFile("logs/node-2/vllm.log", "vllm", 100, 5000, node="node-2"),
    ]
    rules_checked = rules if rules is not None else sorted(
        {f.rule_id: RuleInfo(id=f.rule_id, name=f.name, category=f.category, severity=f.severity,
                             title={"en": f.title}, description={}, remediation={}, references=[], path="")
         for f in findings}.values(), key=lambda b: b.id)
    return Report(findings=list(findings), inputs=inputs, skipped=skipped or [], errors=errors or [],
                  rules_checked=rules_checked)


# --- registry and sample ----------------------------------------------------------------------------------------


def test_every_ci_format_is_registered():
    for fmt in ("sarif", "junit", "markdown", "github"):
        assert fmt in [f.name for f in FORMATS]


def test_sample_archive_is_rebuilt_byte_identically_by_its_script():
    assert MAKE.build() == ARTIFACT.read_bytes()


# --- SARIF ------------------------------------------------------------------------------------------------------


def test_sample_sarif_is_valid_and_every_result_has_a_relative_location(sample_outputs):
    result, files = sample_outputs
    assert result.exit_code == 1  # critical and error findings, default --fail-on error
    doc = json.loads(files["sarif"])
    validate_sarif(doc)
    run = doc["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    ids = [r["id"] for r in rules]
    assert ids == sorted(ids) and {"MEM001", "KV001", "ENG001"} <= set(ids)
    by_id = {r["id"]: r for r in rules}
    assert "--gpu-memory-utilization" in by_id["MEM001"]["help"]["text"]
    assert by_id["MEM001"]["defaultConfiguration"]["level"] == "error"
    results = run["results"]
    order = [r["ruleId"] for r in results]
    assert order[0] == "MEM001" and {"KV001", "ENG001"} <= set(order)  # the root cause first
    by_rule = {r["ruleId"]: r for r in results}
    for res in results:
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
        assert res["level"] in ("error", "warning", "note") and res["message"]["text"]
        loc = res["locations"][0]["physicalLocation"]
        uri = loc["artifactLocation"]["uri"]
        assert uri and "!" not in uri and not uri.startswith("/") and str(ROOT) not in uri
        assert loc["region"]["startLine"] >= 1
        assert len(res["partialFingerprints"]["diagnoseEvidence/v1"]) == 32
    mem = by_rule["MEM001"]["locations"][0]["physicalLocation"]
    assert mem["artifactLocation"]["uri"] == "nightly-bench/node-1/vllm-serve.log"
    assert mem["region"]["startLine"] == 15
    kv = by_rule["KV001"]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert kv == "nightly-bench/node-2.tar.gz/node-2/vllm-serve.log"  # nested archive kept as a folder
    assert by_rule["KV001"]["relatedLocations"][0]["physicalLocation"]["region"]["startLine"] == 8


def test_sarif_result_without_evidence_still_has_a_location():
    absent = finding("MTP002", "warning", evidence=[], nodes=["node-2"], name="mtp-configured-no-metrics",
                     category="mtp", title="MTP configured but no metrics")
    doc = json.loads(render("sarif", report_of([absent]), paths=["logs"]))
    validate_sarif(doc)
    loc = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "node-2/vllm.log"
    assert loc["region"]["startLine"] == 1


def test_sarif_lists_clean_rules_reports_skipped_and_incomplete_runs():
    rules = [RuleInfo(id="KV001", name="kv-cache-saturated", category="kv-cache", severity="error",
                      title={"en": "KV cache saturated"}, description={}, remediation={}, references=[], path="")]
    report = report_of([finding()], rules=rules, errors=["parser plog failed on x.log: ValueError"],
                       skipped=[Skipped("logs/core.bin", skip("binary"))])
    doc = json.loads(render("sarif", report, paths=["logs"]))
    validate_sarif(doc)
    run = doc["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == ["KV001", "MEM001"]
    inv = run["invocations"][0]
    assert inv["executionSuccessful"] is False
    texts = [n["message"]["text"] for n in inv["toolExecutionNotifications"]]
    assert any("core.bin" in t for t in texts) and any("ValueError" in t for t in texts)


def test_fingerprints_ignore_times_numbers_and_line_numbers_but_not_rule_or_file():
    a = fingerprint("MEM001", "node-1/vllm.log",
                    "(Worker_TP0 pid=1012) ERROR 07-01 09:06:02 [x.py:585] NPU out of memory. Tried 172.00 MiB")
    b = fingerprint("MEM001", "node-1/vllm.log",
                    "(Worker_TP0 pid=2999) ERROR 07-02 23:10:59 [x.py:585] NPU out of memory. Tried 30.00 MiB")
    assert a == b
    assert a != fingerprint("MEM002", "node-1/vllm.log", "NPU out of memory")
    assert a != fingerprint("MEM001", "node-2/vllm.log",
                            "(Worker_TP0 pid=1012) ERROR 07-01 09:06:02 [x.py:585] NPU out of memory. Tried 172.00 MiB")
    # the same finding moved to another line keeps its fingerprint
    one = json.loads(render("sarif", report_of([finding()]), paths=["logs"]))
    moved = finding(evidence=[Evidence("logs/node-1/vllm.log", 999,
                                       "ERROR 07-02 10:00:00 NPU out of memory. Tried to allocate 172.00 MiB")])
    two = json.loads(render("sarif", report_of([moved]), paths=["logs"]))
    fp = lambda d: d["runs"][0]["results"][0]["partialFingerprints"]  # noqa: E731
    assert fp(one) == fp(two)


@pytest.mark.parametrize(
    "display, roots, expected",
    [
        ("/ci/a.tgz!job/node-1/x.log", ["/ci/a.tgz"], "job/node-1/x.log"),
        ("ci/a.tgz!job/n.tar.gz!node-2/x.log", ["ci/a.tgz"], "job/n.tar.gz/node-2/x.log"),
        ("logs/node-1/x.log", ["logs/"], "node-1/x.log"),
        ("logs/node-1/x.log", ["./logs"], "node-1/x.log"),
        ("/var/log/vllm.log", ["/var/log/vllm.log"], "vllm.log"),
        ("/ci/a.tgz!x.log", ["/ci/a.tgz", "/ci/b.tgz"], "a.tgz/x.log"),
        ("/ci/b.tgz!x.log", ["/ci/a.tgz", "/ci/b.tgz"], "b.tgz/x.log"),
        ("<stdin>", ["-"], "stdin"),
        ("/abs/path/x.log", None, "abs/path/x.log"),
        ("../up/x.log", None, "up/x.log"),
        ("a.zip!/abs/member.log", None, "abs/member.log"),
    ],
)
def test_relative_paths_from_the_input_root(display, roots, expected):
    assert relative_path(display, roots) == expected


def test_relative_uri_percent_encodes_spaces_and_keeps_slashes():
    assert relative_uri("logs/node 1/a#b.log", ["logs"]) == "node%201/a%23b.log"


# --- JUnit ------------------------------------------------------------------------------------------------------


def test_sample_junit_has_one_unique_testcase_per_rule_and_node(sample_outputs):
    _, files = sample_outputs
    root = ET.fromstring(files["junit"])
    assert root.tag == "testsuites"
    cases = root.findall("./testsuite/testcase")
    keys = [(c.get("classname"), c.get("name")) for c in cases]
    assert len(keys) == len(set(keys))  # GitLab and Jenkins collapse duplicates
    for suite in root.findall("testsuite"):
        assert int(suite.get("tests")) == len(suite.findall("testcase"))
        assert int(suite.get("failures")) == len(suite.findall("testcase/failure"))
    assert int(root.get("tests")) == len(cases)
    assert int(root.get("failures")) >= 3
    by_name = {c.get("name"): c for c in cases}
    mem = by_name["MEM001 npu-out-of-memory [10.20.30.43]"]  # the remote Ray worker is its own node
    failure = mem.find("failure")
    assert failure.get("type") == "critical"
    assert "nightly-bench/node-1/vllm-serve.log:15:" in failure.text and "NPU out of memory" in failure.text
    assert "--gpu-memory-utilization" in failure.text
    assert mem.get("file") == "nightly-bench/node-1/vllm-serve.log"
    # checked and clean: the same rule on the other nodes, and rules that never fired, pass
    clean = by_name["MEM001 npu-out-of-memory [node-2]"]
    assert list(clean) == []
    assert list(by_name["KV001 kv-cache-saturated [node-1]"]) == []
    assert by_name["KV001 kv-cache-saturated [node-2]"].find("failure") is not None
    assert any(n.startswith("KV003 ") for n in by_name)  # a rule that did not fire is still listed


def test_junit_fail_on_moves_lower_findings_to_system_out():
    report = report_of([finding(), finding("KV001", "error", name="kv-cache-saturated", category="kv-cache",
                                           title="KV cache saturated", nodes=["node-2"],
                                           evidence=[Evidence("logs/node-2/vllm.log", 5, "usage 99%")])])
    root = ET.fromstring(render("junit", report, fail_on="critical", paths=["logs"]))
    by_name = {c.get("name"): c for c in root.iter("testcase")}
    assert by_name["MEM001 npu-out-of-memory [node-1]"].find("failure") is not None
    kv = by_name["KV001 kv-cache-saturated [node-2]"]
    assert kv.find("failure") is None and "below --fail-on critical" in kv.find("system-out").text
    assert root.get("failures") == "1"


def test_junit_survives_control_characters_and_reports_internal_errors():
    nasty = finding(evidence=[Evidence("logs/node-1/vllm.log", 3, "bad \x00\x1b[31m <tag> & \"q\" \ud800 end")],
                    summary="summary with ]]> and <b>")
    report = report_of([nasty], errors=["rule KV009 failed: ZeroDivisionError"])
    text = render("junit", report, paths=["logs"])
    root = ET.fromstring(text.encode("utf-8"))  # parses: nothing illegal in XML 1.0
    failure = next(root.iter("failure"))
    assert "<tag> & \"q\"" in failure.text and "]]>" in failure.get("message")
    errors = list(root.iter("error"))
    assert len(errors) == 1 and "ZeroDivisionError" in errors[0].text
    assert root.get("errors") == "1"


def test_junit_without_node_names_uses_plain_rule_names():
    report = report_of([finding(nodes=[])], inputs=[InputFile("vllm.log", "vllm", 10, 100)])
    root = ET.fromstring(render("junit", report, paths=["vllm.log"]))
    names = [c.get("name") for c in root.iter("testcase") if c.get("classname") != "diagnose.input"]
    assert names == ["MEM001 npu-out-of-memory"]


# --- Markdown ---------------------------------------------------------------------------------------------------


def test_sample_markdown_has_table_evidence_and_remediation(sample_outputs):
    _, files = sample_outputs
    text = files["markdown"].decode("utf-8")
    assert re.match(r"## diagnose: \d+ findings \(1 critical, \d+ error", text)
    assert "| # | Severity | Rule | Title | Count | Where | First seen |" in text
    assert "| 1 | 🛑 critical | MEM001 |" in text
    assert "nightly-bench/node-1/vllm-serve.log:15:" in text
    assert "`--gpu-memory-utilization`" in text


def test_markdown_escapes_log_text_in_tables_and_fences_evidence():
    evil = "a | b `code` <script>alert(1)</script> [link](http://x) **bold** ```` fence"
    report = report_of([finding(summary=evil, title="T | x", evidence=[Evidence("logs/node-1/vllm.log", 1, evil)])])
    text = render("markdown", report, paths=["logs"])
    row = next(line for line in text.splitlines() if line.startswith("| 1 |"))
    assert row.count(" | ") == 6  # 7 cells: the pipe in the title is escaped
    assert "T \\| x" in row
    assert "<script>" not in text.split("**Evidence**")[0]  # prose: HTML escaped
    assert "&lt;script&gt;" in text and "\\[link\\]" in text and "\\*\\*bold\\*\\*" in text
    # the evidence keeps its text verbatim inside a fence longer than any backtick run in it
    assert "\n`````text\n" in text and evil in text


def test_markdown_stays_under_one_mebibyte_for_any_input():
    big = "x|`<" * 25_000  # 100 kB of text that needs escaping, in every summary
    findings = [
        finding(f"R{i:04d}", "error", summary=big, name=f"rule-{i}", remediation=big[:5000],
                evidence=[Evidence(f"logs/node-1/f{i}.log", j, big) for j in range(1, 12)])
        for i in range(300)
    ]
    report = report_of(findings, skipped=[Skipped(f"logs/bin{i}", skip("cannot_read", error=big[:2000])) for i in range(300)])
    text = render("markdown", report, paths=["logs"])
    assert len(text.encode("utf-8")) < 1024 * 1024
    assert re.search(r"\d+ more findings in the JSON report", text)
    assert "more in the JSON report" in text  # the table was capped too
    small = render("markdown", report, paths=["logs"], max_bytes=20_000)
    assert len(small.encode("utf-8")) <= 20_000 and "more findings in the JSON report" in small


# --- GitHub annotations -----------------------------------------------------------------------------------------


def test_workflow_command_escaping():
    line = gh.command("error", "50% used\r\nnext::line", file="a,b:c.log", line="3", title="T: x, y%")
    assert line == "::error file=a%2Cb%3Ac.log,line=3,title=T%3A x%2C y%25::50%25 used%0D%0Anext::line"
    assert "\n" not in line


def test_annotations_are_capped_per_kind_and_most_severe_first():
    findings = ([finding(f"W{i:02d}", "warning") for i in range(12)]
                + [finding(f"E{i:02d}", "error") for i in range(14)]
                + [finding("C00", "critical"), finding("I00", "info")])
    lines = gh.annotations(report_of(findings), paths=["logs"])
    kinds = [line.split(" ", 1)[0].split("::")[1] for line in lines]
    assert kinds.count("error") == 10 and kinds.count("warning") == 10 and kinds.count("notice") == 2
    assert "title=C00 " in lines[0]  # critical first
    assert kinds.index("warning") > max(i for i, k in enumerate(kinds) if k == "error")
    assert "7 more findings were not annotated" in lines[-1]  # 5 errors + 2 warnings
    assert all("file=node-1/vllm.log,line=15" in line for line in lines[:3])


# --- CLI: several outputs, determinism, gating, GitHub mode -----------------------------------------------------


def test_all_outputs_twice_give_identical_bytes(tmp_path):
    _, first = run_all(tmp_path / "once")
    result, second = run_all(tmp_path / "again")
    assert result.exit_code == 1
    for fmt in FILES:
        assert hashlib.sha256(first[fmt]).hexdigest() == hashlib.sha256(second[fmt]).hexdigest(), fmt
    assert json.loads(first["json"])["findings"][0]["rule_id"] == "MEM001"


@pytest.mark.parametrize("fmt", ["sarif", "junit", "markdown", "github"])
def test_format_option_accepts_each_ci_format_as_main_output(fmt):
    result = invoke("check", str(ARTIFACT), "--format", fmt)
    assert result.exit_code == 1
    if fmt == "sarif":
        validate_sarif(json.loads(result.stdout))
    elif fmt == "junit":
        assert ET.fromstring(result.stdout.encode()).tag == "testsuites"
    elif fmt == "github":
        assert result.stdout.splitlines()[0].startswith("::error file=nightly-bench/node-1/vllm-serve.log,line=15,")
    else:
        assert result.stdout.startswith("## diagnose:")


def test_gating_fail_on_and_exit_zero():
    assert invoke("check", str(ARTIFACT), "--format", "json", "--fail-on", "critical").exit_code == 1
    assert invoke("check", str(ARTIFACT), "--format", "json", "--exit-zero").exit_code == 0


def test_unreadable_input_never_exits_zero(tmp_path):
    missing = tmp_path / "no-such-artifact.tgz"
    corrupt = tmp_path / "broken.tgz"
    corrupt.write_bytes(b"\x1f\x8b\x08\x00not really gzip")
    result = invoke("check", str(missing), "--exit-zero", "--sarif", str(tmp_path / "x.sarif"),
                    env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": None})
    assert result.exit_code == 2  # a path that does not exist: a usage error, no report
    assert "::error title=diagnose::no input could be read" in result.stdout
    assert not (tmp_path / "x.sarif").exists()
    # A corrupt artifact: the run analysed nothing (exit 4), and every report says so.
    result = invoke("check", str(corrupt), "--exit-zero", "--sarif", str(tmp_path / "x.sarif"),
                    env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": None})
    assert result.exit_code == 4
    assert "::error title=diagnose%3A nothing analysed::Nothing was analysed" in result.stdout
    sarif = json.loads((tmp_path / "x.sarif").read_text(encoding="utf-8"))
    assert sarif["runs"][0]["invocations"][0]["executionSuccessful"] is False


def test_github_mode_keeps_json_stdout_clean_and_writes_the_step_summary(tmp_path):
    summary = tmp_path / "step-summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    result = invoke("check", str(ARTIFACT), "--format", "json", env=env)
    assert result.exit_code == 1
    report = json.loads(result.stdout)  # annotations did not corrupt the JSON on stdout
    n_errors = sum(f["severity"] in ("critical", "error") for f in report["findings"])
    assert n_errors >= 3
    assert result.stderr.count("::error ") == min(n_errors, 10)
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n## diagnose: ")  # appended, not overwritten

    out = tmp_path / "report.json"
    result = invoke("check", str(ARTIFACT), "--format", "json", "-o", str(out), env=env)
    assert result.stdout.count("::error ") == min(n_errors, 10) and "::error" not in result.stderr
    result = invoke("check", str(ARTIFACT), "--no-color", env=env)
    assert result.stdout.rstrip().splitlines()[-1].startswith(("::error ", "::warning ", "::notice "))
    assert "::error " in result.stdout
    assert summary.read_text(encoding="utf-8").count("## diagnose:") == 3
    result = invoke("check", str(ARTIFACT), "-q", env=env)
    assert result.stdout == "" and result.exit_code == 1


def test_no_annotations_outside_github_actions():
    result = invoke("check", str(ARTIFACT), "--no-color")
    assert "::error" not in result.stdout and "::error" not in result.stderr


# --- --redact ---------------------------------------------------------------------------------------------------


def test_redact_leaves_no_ip_host_home_or_token_in_any_output(tmp_path):
    assert {"10.20.30.41", "10.20.30.42", "10.20.30.43", "10.20.30.99"} <= set(IPV4_IN_SAMPLE)
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}
    result, files = run_all(tmp_path / "red", "--redact", env=env)
    outputs = {fmt: data.decode("utf-8") for fmt, data in files.items()}
    outputs["text"] = (tmp_path / "red" / "main.txt").read_text(encoding="utf-8")
    outputs["annotations"] = result.stdout
    outputs["step-summary"] = (tmp_path / "summary.md").read_text(encoding="utf-8")
    for name in ("text", "github"):
        outputs[f"main-{name}"] = invoke("check", str(ARTIFACT), "--redact", "--no-color", "--format", name).stdout
    secrets = IPV4_IN_SAMPLE + ["fe80::1c2d:3eff:fe4f:5a6b", "alice", "/root/", "dsr1-node-1", "node-1", "node-2",
                                "hf_QxZ7", "sk-proj", "eyJhbGci"]
    for name, text in outputs.items():
        assert text.strip(), name
        for secret in secrets:
            assert secret not in text, (name, secret)
    # consistent: the remote worker's address is one placeholder everywhere
    doc = json.loads(outputs["json"])
    mem = next(f for f in doc["findings"] if f["rule_id"] == "MEM001")
    placeholder = mem["nodes"][0]
    assert re.fullmatch(r"host-\d+", placeholder)
    assert f"ip={placeholder}" in mem["evidence"][0]["text"]
    sarif = json.loads(outputs["sarif"])
    sarif_mem = next(r for r in sarif["runs"][0]["results"] if r["ruleId"] == "MEM001")
    assert sarif_mem["properties"]["nodes"] == [placeholder]
    assert f"[{placeholder}]" in outputs["junit"]
    validate_sarif(sarif)
    # still deterministic with --redact
    _, again = run_all(tmp_path / "red2", "--redact", env=env)
    assert again == files


def test_redactor_masks_consistently_and_spares_times_versions_and_loopback():
    r = Redactor()
    r.add_hosts(["node-7"])
    text = r.text("ERROR 07-01 09:06:02 node-7 10.0.0.12:29500 ip=10.0.0.12 127.0.0.1 ::1 c10::Error "
                  "CANN version 8.0.0.1 HF_TOKEN=hf_abcdefghijklmnopqrstu max_num_batched_tokens=8192 "
                  "Authorization: Bearer abc.def-ghi_123 /home/bob/models /root/x gpu3.corp.example.com "
                  "https://github.com/vllm-project/vllm-ascend/issues/1127 fe80::1")
    assert "09:06:02" in text and "07-01" in text
    assert "host-1 ip-1:29500 ip=ip-1" in text
    assert "127.0.0.1 ::1 c10::Error" in text
    assert "version 8.0.0.1" in text
    assert "HF_TOKEN=<secret-1>" in text and "max_num_batched_tokens=8192" in text
    assert "Bearer <secret-" in text and "abc.def" not in text
    assert "~user-1/models" in text and "~user-2/x" in text
    assert "gpu3.corp" not in text and "github.com/vllm-project" in text
    assert text.endswith(" ip-2")
    assert r.text("again 10.0.0.12") == "again ip-1"


def test_redact_report_covers_inputs_skipped_errors_and_keeps_the_original():
    f = finding(evidence=[Evidence("/home/carol/ci/node-1/vllm.log", 4, "peer 192.168.3.4 timed out")],
                summary="on node-1 peer 192.168.3.4")
    report = report_of(
        [f],
        inputs=[InputFile("/home/carol/ci/node-1/vllm.log", "vllm", 10, 100, node="node-1")],
        skipped=[Skipped("/home/carol/ci/node-1/core.192.168.3.4.bin", skip("binary"))],
        errors=["parser failed on /home/carol/ci/node-1/x.log"],
    )
    red = redact_report(report)
    blob = json.dumps(builtins(red.document(), messages("en").say))
    for secret in ("carol", "192.168.3.4", "node-1"):
        assert secret not in blob, secret
    assert red.findings[0].evidence[0].text == "peer ip-1 timed out"
    assert red.inputs[0].node == "host-1" and red.findings[0].nodes == ["host-1"]
    assert report.findings[0].summary == "on node-1 peer 192.168.3.4"  # the original is untouched


def test_skipped_inputs_are_annotated_as_warning_when_reading_was_cut_short():
    bomb = Skipped("/ci/a.tgz!job/huge.log.gz", skip("bomb", ratio=100, n=1000, out=200000))
    lines = gh.annotations(report_of([], skipped=[bomb, Skipped("/ci/a.tgz!job/core", skip("binary"))]),
                           paths=["/ci/a.tgz"])
    assert len(lines) == 1 and lines[0].startswith("::warning title=diagnose%3A inputs skipped::2 inputs")
    assert "job/huge.log.gz: decompression bomb" in lines[0]
    benign = gh.annotations(report_of([], skipped=[Skipped("x/core", skip("binary"))]), paths=["x"])
    assert benign[0].startswith("::notice ")


def test_redactor_leaves_prose_and_configuration_alone():
    r = Redactor()
    prose = ("Basic information: Token budget exceeded at 12:30:45.123, std::vector, mac fe:4f:5a:6b:7c:8d, "
             "max_num_batched_tokens=8192, /rootfs/etc, /data/home/x is not a home, CANN 8.0.RC3")
    assert r.text(prose) == prose
    assert r.text("Authorization: Basic dXNlcjpwYXNz") == "Authorization: Basic <secret-1>"
    assert r.text("see file:///home/eve/x") == "see file://~user-1/x"
    assert r.text("core.192.168.3.4.bin ip_10.1.2.3 1.2.3.4.5") == "core.ip-1.bin ip_ip-2 1.2.3.4.5"
