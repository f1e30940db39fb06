"""Never a false clean run: a run that analysed nothing exits 4, a clean run that could not read every input
exits 5, and every format says so (diagnose/analysis/coverage.py, diagnose/commands/exitcodes.py)."""

from __future__ import annotations

import gzip
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import SAMPLES, run_cli

HEALTHY = SAMPLES / "healthy"
HEALTHY_LOG = HEALTHY / "node-0" / "vllm-serve-20250903.log"
KV = SAMPLES / "kv-exhaustion"
NO_ENV = {"GITHUB_ACTIONS": None, "GITHUB_STEP_SUMMARY": None}


def _cut_gz(tmp_path: Path, source: Path = HEALTHY_LOG, name: str = "vllm-serve.log.gz") -> Path:
    """``head -c HALF good.log.gz > x.log.gz``: a compressed log cut in the middle."""
    packed = gzip.compress(source.read_bytes(), mtime=0)
    out = tmp_path / name
    out.write_bytes(packed[: len(packed) // 2])
    return out


def _json(*args: str):
    result = run_cli("--format", "json", *args)
    return result.exit_code, json.loads(result.stdout), result


# --- read up to the cut -----------------------------------------------------------------------------------------

def test_truncated_gz_is_read_up_to_the_cut_and_counted_as_incomplete(tmp_path):
    cut = _cut_gz(tmp_path)
    code, report, _ = _json(str(cut))
    assert code == 5  # clean on what was read, but not everything was read
    (inp,) = report["inputs"]
    assert inp["kind"] == "vllm"  # the head was readable, so the kind was sniffed
    whole = len(HEALTHY_LOG.read_text(encoding="utf-8").splitlines())
    assert whole // 4 < inp["lines"] < whole  # the lines before the cut are kept, the rest is missing
    assert inp["incomplete"].startswith("truncated or corrupt compressed data after ")
    cov = report["coverage"]
    assert cov["status"] == "partial" and cov["incomplete"] == [{"path": str(cut), "reason": inp["incomplete"]}]
    text = run_cli(str(cut), "--no-color")
    assert text.exit_code == 5
    assert "Partial coverage: 1 file read only in part" in text.stdout
    flat = " ".join(text.stdout.split())  # the terminal width wraps long paths under their indent
    assert f"Read in part (1): {cut}: truncated or corrupt compressed data after" in flat


def test_truncated_gz_findings_before_the_cut_still_count(tmp_path):
    log = tmp_path / "vllm.log"
    # the failure comes first, so it is before the cut
    oom = ("(Worker_TP0 pid=9) ERROR 09-03 14:00:11 [worker.py:1] RuntimeError: NPU out of memory. Tried to allocate "
           "30.00 MiB (NPU 5; 60.96 GiB total capacity; 60.34 GiB already allocated; 60.34 GiB current active; "
           "15.87 MiB free; 60.60 GiB reserved in total by PyTorch)\n")
    log.write_text(oom + HEALTHY_LOG.read_text(encoding="utf-8"), encoding="utf-8")
    cut = _cut_gz(tmp_path, log, "cut.log.gz")
    code, report, _ = _json(str(cut))
    assert code == 1 and "MEM001" in [f["rule_id"] for f in report["findings"]]  # findings win over partial
    assert report["coverage"]["status"] == "partial"
    assert run_cli(str(cut), "--exit-zero").exit_code == 5  # --exit-zero never hides partial coverage


# --- nothing analysed -------------------------------------------------------------------------------------------

def test_a_window_that_excludes_every_record_analysed_nothing():
    code, report, result = _json(str(KV), "--since", "2030-01-01")
    assert code == 4
    assert report["coverage"]["status"] == "nothing-analysed"
    assert report["verdict"]["kind"] == "nothing-analysed"
    assert "no record falls within --since 2030-01-01 00:00:00" in report["coverage"]["reason"]
    assert "2025-09-03 14:00:00 to 2025-09-03 14:32:42" in report["coverage"]["reason"]  # where the logs are
    assert "Nothing was analysed" in result.stderr
    code, _, _ = _json(str(KV), "--until", "2020-01-01")
    assert code == 4
    assert run_cli(str(KV), "--since", "2030-01-01", "--allow-empty").exit_code == 0


def test_a_budget_that_skips_the_only_log_analysed_nothing():
    result = run_cli(str(KV), "--budget", "max_file_bytes=10K", "--no-color")
    assert result.exit_code == 4
    flat = " ".join(result.stdout.split())
    assert "Nothing was analysed: no file of a known kind" in flat and "1 input not read" in flat
    assert "larger than the per-file limit of 10240 bytes" in flat
    assert "No findings." not in flat


def test_empty_standard_input_analysed_nothing():
    result = run_cli("-", input=b"")
    assert result.exit_code == 4
    assert "Nothing was analysed: standard input was empty." in result.stdout
    assert run_cli("-", "--allow-empty", input=b"").exit_code == 0


def test_a_folder_of_no_known_kind_analysed_nothing(tmp_path):
    (tmp_path / "README.md").write_text("# notes\nnothing to see here\n", encoding="utf-8")
    (tmp_path / "table.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    (tmp_path / "picture.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8)
    code, report, _ = _json(str(tmp_path))
    assert code == 4 and report["findings"] == []
    assert report["coverage"]["reason"].startswith("no file of a known kind (2 files of no known kind")
    assert report["coverage"]["not_read"] == []  # the binary is not a log: leaving it out loses nothing
    # A file named on the command line is searched by the generic rules: that is an analysis.
    assert run_cli(str(tmp_path / "README.md")).exit_code == 0


def test_an_empty_folder_and_only_binaries_analysed_nothing(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    code, report, _ = _json(str(empty))
    assert code == 4 and report["coverage"]["reason"] == "no input files found"
    (tmp_path / "core.bin").write_bytes(bytes(range(256)) * 64)
    code, report, _ = _json(str(tmp_path / "core.bin"))
    assert code == 4 and "binary file" in report["coverage"]["reason"]


def test_a_corrupt_archive_analysed_nothing(tmp_path):
    broken = tmp_path / "artifact.tgz"
    broken.write_bytes(b"\x1f\x8b\x08\x00not really gzip")
    code, report, _ = _json(str(broken))
    assert code == 4
    assert report["coverage"]["not_read"][0]["path"] == str(broken)


def test_a_missing_path_stays_a_usage_error():
    result = run_cli("/no/such/artifact.tgz")
    assert result.exit_code == 2 and "no such file" in result.stderr


def test_preflight_on_an_empty_folder_analysed_nothing(tmp_path):
    result = run_cli("preflight", str(tmp_path))
    assert result.exit_code == 4
    assert "Nothing was analysed: no file to analyse (3 skipped: not in the model directory)" in result.stdout
    assert run_cli("preflight", str(tmp_path), "--allow-empty").exit_code == 0
    report = json.loads(run_cli("preflight", str(tmp_path), "--format", "json").stdout)
    assert report["coverage"]["status"] == "nothing-analysed" and report["inputs"] == []


# --- partial coverage -------------------------------------------------------------------------------------------

def _bundle_with_one_log_over_budget(tmp_path: Path) -> Path:
    bundle = tmp_path / "bundle"
    (bundle / "node-0").mkdir(parents=True)
    (bundle / "node-1").mkdir()
    lines = HEALTHY_LOG.read_text(encoding="utf-8").splitlines(keepends=True)
    (bundle / "node-0" / "vllm.log").write_text("".join(lines[:40]), encoding="utf-8")
    (bundle / "node-1" / "vllm.log").write_text("".join(lines), encoding="utf-8")  # over the budget below
    return bundle


def test_a_clean_run_that_could_not_read_every_input_exits_5(tmp_path):
    bundle = _bundle_with_one_log_over_budget(tmp_path)
    budget = ("--budget", "max_file_bytes=20K")
    code, report, _ = _json(str(bundle), *budget)
    assert code == 5
    cov = report["coverage"]
    assert cov["status"] == "partial" and cov["files_read"] == 1
    assert cov["not_read"] == [{"path": str(bundle / "node-1" / "vllm.log"),
                                "reason": "larger than the per-file limit of 20480 bytes"}]
    assert run_cli(str(bundle), *budget, "--allow-partial").exit_code == 0
    assert run_cli(str(bundle)).exit_code == 0  # with the default budget everything is read: clean


def test_binaries_and_links_do_not_make_coverage_partial(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "vllm.log").write_bytes(HEALTHY_LOG.read_bytes())
    (folder / "core.bin").write_bytes(bytes(range(256)) * 64)
    (folder / "latest.log").symlink_to(folder / "vllm.log")
    code, report, _ = _json(str(folder))
    assert code == 0 and report["coverage"]["status"] == "complete"
    assert len(report["skipped"]) == 2  # still listed, with their reasons


# --- every format says so ---------------------------------------------------------------------------------------

def _outputs(tmp_path: Path, *args: str):
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    files = {"json": "r.json", "sarif": "r.sarif", "junit": "r.xml", "markdown": "r.md", "html": "r.html",
             "gitlab": "gl.json"}
    extra = [x for fmt, name in files.items() for x in (f"--{fmt}", str(out / name))]
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": None}
    from click.testing import CliRunner

    from diagnose.cli import main

    result = CliRunner().invoke(main, [*args, "--no-color", "-o", str(out / "r.txt"), *extra,
                                       "--format", "text"], env=env, catch_exceptions=False)
    read = {fmt: (out / name).read_text(encoding="utf-8") for fmt, name in files.items()}
    read["text"] = (out / "r.txt").read_text(encoding="utf-8")
    read["github"] = result.stdout
    read["concise"] = run_cli(*args, "--format", "concise").stdout
    return result, read


def test_nothing_analysed_is_said_in_every_format(tmp_path):
    result, out = _outputs(tmp_path, str(KV), "--since", "2030-01-01")
    assert result.exit_code == 4
    assert "Nothing was analysed" in out["text"] and "No findings" not in out["text"]
    assert json.loads(out["json"])["coverage"]["status"] == "nothing-analysed"
    sarif = json.loads(out["sarif"])["runs"][0]["invocations"][0]
    assert sarif["executionSuccessful"] is False and sarif["properties"]["coverage"] == "nothing-analysed"
    assert any(n["descriptor"]["id"] == "nothing-analysed" for n in sarif["toolExecutionNotifications"])
    junit = ET.fromstring(out["junit"])
    case = next(c for c in junit.iter("testcase") if c.get("name") == "something analysed")
    assert case.find("error").get("type") == "nothing-analysed" and int(junit.get("errors")) >= 1
    assert out["markdown"].startswith("## diagnose: nothing analysed") and "[!CAUTION]" in out["markdown"]
    assert "::error title=diagnose%3A nothing analysed::Nothing was analysed" in out["github"]
    assert 'id="coverage"' in out["html"] and "Nothing was analysed" in out["html"]
    gitlab = json.loads(out["gitlab"])
    assert [i["check_name"] for i in gitlab] == ["diagnose/nothing-analysed"] and gitlab[0]["severity"] == "blocker"
    assert "diagnose: Nothing was analysed" in out["concise"] and "nothing was analysed." in out["concise"]


def test_partial_coverage_is_said_in_every_format(tmp_path):
    cut = _cut_gz(tmp_path)
    result, out = _outputs(tmp_path, str(cut))
    assert result.exit_code == 5
    assert "Partial coverage" in out["text"] and "Read in part (1)" in out["text"]
    assert json.loads(out["json"])["inputs"][0]["incomplete"]
    sarif = json.loads(out["sarif"])["runs"][0]["invocations"][0]
    assert sarif["executionSuccessful"] is True and sarif["properties"]["coverage"] == "partial"
    assert any(n["descriptor"]["id"] == "input-incomplete" for n in sarif["toolExecutionNotifications"])
    junit = ET.fromstring(out["junit"])
    case = next(c for c in junit.iter("testcase") if c.get("name") == "every input read")
    assert case.find("failure").get("type") == "partial"
    assert "[!WARNING]" in out["markdown"] and "Inputs read in part (1)" in out["markdown"]
    assert "::warning title=diagnose%3A partial::Partial coverage" in out["github"]
    assert "Partial coverage" in out["html"]
    assert any(i["check_name"] == "diagnose/partial-coverage" and i["severity"] == "major"
               for i in json.loads(out["gitlab"]))
    assert "diagnose: read in part: " in out["concise"]


def test_allow_partial_turns_the_junit_failure_into_a_note(tmp_path):
    cut = _cut_gz(tmp_path)
    out = tmp_path / "r.xml"
    result = run_cli(str(cut), "--allow-partial", "--junit", str(out))
    assert result.exit_code == 0
    case = next(c for c in ET.fromstring(out.read_text(encoding="utf-8")).iter("testcase")
                if c.get("name") == "every input read")
    assert case.find("failure") is None and "Partial coverage" in case.find("system-out").text


@pytest.mark.parametrize("args", [("--fail-on", "critical"), ("--exit-zero",)])
def test_gating_options_do_not_hide_nothing_analysed(args):
    assert run_cli(str(KV), "--since", "2030-01-01", *args).exit_code == 4
