"""Outputs of `diagnose check`: the format from -o's suffix, --html beside the machine formats, the GitLab Code
Quality and concise formats, and atomic writes that leave nothing half-written (diagnose/commands/outputs.py)."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET

import pytest

from conftest import SAMPLES, run_cli
from diagnose import writer
from diagnose.commands import outputs

KV = SAMPLES / "kv-exhaustion"
ARTIFACT = SAMPLES / "ci-artifact" / "nightly-bench-logs.tgz"


# --- the format from the suffix ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name, check", [
    ("report.html", lambda t: t.startswith("<!DOCTYPE html>")),
    ("report.json", lambda t: "findings" in json.loads(t)),
    ("report.sarif", lambda t: json.loads(t)["version"] == "2.1.0"),
    ("report.xml", lambda t: ET.fromstring(t.encode()).tag == "testsuites"),
    ("report.md", lambda t: t.startswith("## diagnose:")),
    ("report.txt", lambda t: t.startswith("Root cause: ") and "\nRead 2 files (" in t),
])
def test_o_picks_the_format_from_the_suffix(tmp_path, name, check):
    out = tmp_path / name
    result = run_cli(str(KV), "-o", str(out))
    assert result.exit_code == 1 and result.stdout == ""
    assert check(out.read_text(encoding="utf-8"))


def test_format_wins_over_the_suffix(tmp_path):
    out = tmp_path / "report.html"
    assert run_cli(str(KV), "--format", "json", "-o", str(out)).exit_code == 1
    assert "findings" in json.loads(out.read_text(encoding="utf-8"))


def test_one_run_gives_the_text_log_the_page_and_the_machine_formats(tmp_path):
    names = {"--json": "r.json", "--sarif": "r.sarif", "--junit": "r.xml", "--markdown": "r.md",
             "--html": "incident.html", "--gitlab": "codequality.json"}
    args = [x for opt, name in names.items() for x in (opt, str(tmp_path / name))]
    result = run_cli(str(KV), "--no-color", *args)
    assert result.exit_code == 1
    assert result.stdout.startswith("Root cause: ") and "\nRead 2 files (" in result.stdout  # the text log
    page = (tmp_path / "incident.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "plot-timeline" in page  # the html timeline was built
    assert json.loads((tmp_path / "codequality.json").read_text(encoding="utf-8"))[0]["check_name"] == "KV001"
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left


# --- GitLab Code Quality and concise ----------------------------------------------------------------------------

def test_gitlab_code_quality_report():
    result = run_cli(str(ARTIFACT), "--format", "gitlab")
    assert result.exit_code == 1
    issues = json.loads(result.stdout)
    assert isinstance(issues, list) and len(issues) == 4
    for issue in issues:
        assert set(issue) == {"description", "check_name", "fingerprint", "severity", "location"}
        assert issue["severity"] in ("info", "minor", "major", "critical", "blocker")
        assert set(issue["location"]) == {"path", "lines"} and issue["location"]["lines"]["begin"] >= 1
        assert not issue["location"]["path"].startswith("/")
    assert len({i["fingerprint"] for i in issues}) == len(issues)
    first = issues[0]
    assert first["check_name"] == "MEM001" and first["severity"] == "critical"
    assert first["location"] == {"path": "nightly-bench/node-1/vllm-serve.log", "lines": {"begin": 15}}
    assert {i["check_name"]: i["severity"] for i in issues}["MTP004"] == "info"
    assert run_cli(str(ARTIFACT), "--format", "gitlab").stdout == result.stdout  # deterministic


def test_gitlab_fingerprints_stay_unique_for_identical_findings():
    from diagnose.model import Evidence, Finding, Report
    from diagnose.report.gitlab import render

    def finding():
        return Finding("KV001", "kv", "kv-cache", "error", "t", "s", 1, None, None, [], [],
                       [Evidence("x.log", 3, "same text")], "fix", [])

    issues = json.loads(render(Report(findings=[finding(), finding()], inputs=[], skipped=[])))
    assert len({i["fingerprint"] for i in issues}) == 2


def test_concise_one_line_per_finding():
    result = run_cli(str(ARTIFACT), "--format", "concise")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0] == ("samples/ci-artifact/nightly-bench-logs.tgz!nightly-bench/node-1/vllm-serve.log:15: "
                        "critical MEM001 Accelerator out of memory (NPU or GPU)").replace(
        "samples/", str(SAMPLES) + "/")
    assert len(lines) == 5 and lines[-1] == "Found 4 findings (1 critical, 2 error, 1 info)."
    assert lines[2].endswith("ENG001 The inference engine died (← MEM001)")


def test_github_annotations_stay_off_a_gitlab_report_on_stdout():
    from click.testing import CliRunner

    from diagnose.cli import main

    result = CliRunner().invoke(main, [str(KV), "--format", "gitlab"], catch_exceptions=False,
                                env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": None})
    json.loads(result.stdout)  # still one JSON document
    assert "::error" in result.stderr


# --- atomic writes ----------------------------------------------------------------------------------------------

def test_a_failed_write_leaves_no_partial_file_and_exits_6(tmp_path, monkeypatch):
    target = tmp_path / "r.json"
    target.write_text("last night's report\n", encoding="utf-8")
    sarif = tmp_path / "r.sarif"
    real = os.fdopen

    class DiskFull:
        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def write(self, text):
            self.fh.write(text[: len(text) // 2])
            raise OSError(28, "No space left on device")

    def fdopen(fd, *args, **kwargs):
        fh = real(fd, *args, **kwargs)
        return DiskFull(fh) if ".r.json." in os.readlink(f"/proc/self/fd/{fd}") else fh

    monkeypatch.setattr(writer.os, "fdopen", fdopen)
    result = run_cli(str(KV), "--json", str(target), "--sarif", str(sarif), "-q")
    assert result.exit_code == 6
    assert result.stderr.strip() == f"diagnose: error: cannot write --json {target}: No space left on device"
    assert target.read_text(encoding="utf-8") == "last night's report\n"  # the old report is untouched
    assert json.loads(sarif.read_text(encoding="utf-8"))["version"] == "2.1.0"  # the other output was written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "r.sarif"]  # no temporary file left


def test_an_unwritable_folder_is_named_and_exits_6(tmp_path):
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x", encoding="utf-8")
    result = run_cli(str(KV), "-o", str(not_a_folder / "report.html"), "--markdown", str(tmp_path / "s.md"))
    assert result.exit_code == 6
    assert f"cannot write -o {not_a_folder / 'report.html'}: Not a directory" in result.stderr
    assert (tmp_path / "s.md").read_text(encoding="utf-8").startswith("## diagnose:")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_exits_6(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        result = run_cli(str(KV), "--junit", str(folder / "r.xml"))
        assert result.exit_code == 6 and "cannot write --junit" in result.stderr
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(0o755)


def test_atomic_write_keeps_the_permissions_of_the_file_it_replaces(tmp_path):
    target = tmp_path / "r.txt"
    target.write_text("old\n", encoding="utf-8")
    target.chmod(0o640)
    writer.write_file(str(target), "new\n")
    assert target.read_text(encoding="utf-8") == "new\n" and (target.stat().st_mode & 0o777) == 0o640
    fresh = tmp_path / "fresh.txt"
    writer.write_file(str(fresh), "x\n")
    mask = os.umask(0)
    os.umask(mask)
    assert (fresh.stat().st_mode & 0o777) == 0o666 & ~mask


def test_an_interrupt_while_writing_removes_the_temporary_file(tmp_path, monkeypatch):
    def stop(*_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(writer.os, "replace", stop)
    with pytest.raises(KeyboardInterrupt):
        writer.write_file(str(tmp_path / "r.json"), "{}")
    assert list(tmp_path.iterdir()) == []


def test_preflight_outputs_are_atomic_too(tmp_path):
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x", encoding="utf-8")
    result = run_cli("preflight", str(SAMPLES / "models" / "deepseek-r1-w8a8"), "-o", str(not_a_folder / "r.json"))
    assert result.exit_code == 6 and "cannot write -o" in result.stderr


def test_suffix_table():
    assert outputs.main_format(None, "x.HTML") == "html"
    assert outputs.main_format(None, "x.log") == "text"
    assert outputs.main_format(None, None) == "text"
    assert outputs.main_format("gitlab", "gl-code-quality.json") == "gitlab"


def test_an_output_not_written_is_said_in_the_language_of_the_run(tmp_path):
    from click.testing import CliRunner

    from diagnose.cli import main

    res = CliRunner().invoke(main, [str(SAMPLES / "healthy"), "--lang", "zh", "--json",
                                    str(tmp_path / "no-such-folder" / "r.json")])
    assert res.exit_code == 6
    assert "diagnose：错误：无法写入 --json " in res.stderr


def test_a_compound_suffix_picks_its_format_and_an_unknown_one_is_refused(tmp_path):
    assert outputs.main_format(None, "x.sarif.json") == "sarif"
    assert outputs.main_format(None, "gl.gitlab.json") == "gitlab"
    assert outputs.main_format(None, "results.junit.xml") == "junit"
    assert outputs.main_format(None, "report") == "text"
    result = run_cli(str(KV), "-o", str(tmp_path / "x.csv"))
    assert result.exit_code == 2 and "x.csv" in result.stderr and ".sarif.json" in result.stderr
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
@pytest.mark.parametrize("command", [
    [str(KV)],
    ["preflight", str(SAMPLES / "models" / "deepseek-r1-w8a8")],
    ["expert-load", str(SAMPLES / "expert-load-week" / "dumps")],
])
def test_a_full_disk_is_one_line_and_exit_6_for_every_command(command):
    import subprocess
    import sys

    for extra in (["-o", "/dev/full"], []):
        with open("/dev/full", "w") as full:
            done = subprocess.run([sys.executable, "-m", "diagnose", *command, *extra], stdout=full,
                                  stderr=subprocess.PIPE, text=True, timeout=300)
        assert done.returncode == 6, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "No space left on device" in lines[0] and "Traceback" not in done.stderr
