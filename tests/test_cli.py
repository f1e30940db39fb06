"""The command line as users meet it: exit codes, formats, inputs of every shape, skipped files."""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path


from conftest import ROOT, SAMPLES, run_cli, run_json

KV = SAMPLES / "kv-exhaustion"
HEALTHY = SAMPLES / "healthy"
MTP = SAMPLES / "mtp-ineffective"
KV_LOG = (KV / "node-0" / "vllm-serve-20250903.log").read_bytes()


def test_kv_sample_exits_1_with_the_kv_finding_evidence_and_remediation():
    result = run_cli(str(KV), "--no-color")
    assert result.exit_code == 1
    out = result.stdout
    assert "KV001" in out and "KV cache saturated" in out
    assert "vllm-serve-20250903.log:" in out  # evidence with file:line
    assert "--gpu-memory-utilization" in out  # remediation
    assert "\x1b[" not in out  # no colour codes when not on a terminal


def test_healthy_sample_exits_0_without_any_warning():
    code, report = run_json(str(HEALTHY))
    assert code == 0
    assert [f for f in report["findings"] if f["severity"] != "info"] == []


def test_mtp_sample_reports_acceptance_collapse_first():
    code, report = run_json(str(MTP))
    assert code == 1
    assert report["findings"][0]["rule_id"] == "MTP001"
    assert report["findings"][0]["category"] == "mtp"


def test_json_matches_the_documented_schema():
    code, report = run_json(str(KV))
    assert set(report) >= {"version", "inputs", "skipped", "findings"}
    for item in report["inputs"]:
        assert set(item) >= {"path", "kind", "lines", "bytes"}
    finding = report["findings"][0]
    assert set(finding) >= {
        "rule_id", "category", "severity", "title", "summary", "count", "first_seen", "last_seen",
        "nodes", "ranks", "evidence", "remediation", "references",
    }
    assert finding["nodes"] == ["node-0"]
    assert finding["first_seen"].startswith("2025-09-03 14:")
    ev = finding["evidence"][0]
    assert set(ev) == {"file", "line", "text"} and isinstance(ev["line"], int)
    assert "GPU KV cache usage" in ev["text"]


def test_nonexistent_path_exits_2_with_one_line():
    result = run_cli("/no/such/place")
    assert result.exit_code == 2
    assert result.stderr.strip().count("\n") == 0
    assert "no such file" in result.stderr


def test_fail_on_threshold_and_exit_zero():
    assert run_cli(str(KV), "--fail-on", "critical").exit_code == 0
    assert run_cli(str(KV), "--fail-on", "warning").exit_code == 1
    assert run_cli(str(KV), "--exit-zero").exit_code == 0


def test_unknown_option_is_a_usage_error():
    assert run_cli(str(KV), "--formatt", "json").exit_code == 2
    assert run_cli(str(KV), "--format", "yaml").exit_code == 2


def test_output_file_and_quiet(tmp_path: Path):
    out = tmp_path / "report.json"
    result = run_cli(str(KV), "--format", "json", "-o", str(out), "-q")
    assert result.exit_code == 1 and result.stdout == ""
    assert json.loads(out.read_text())["findings"][0]["rule_id"] == "KV001"


def _bundle(tmp_path: Path) -> Path:
    folder = tmp_path / "incident" / "node-1"
    folder.mkdir(parents=True)
    (folder / "vllm-20250903.log").write_bytes(KV_LOG)
    return tmp_path / "incident"


def test_tar_gz_zip_and_gz_inputs_give_the_same_finding(tmp_path: Path):
    tgz = tmp_path / "bundle.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(_bundle(tmp_path), arcname="incident")
    zpath = tmp_path / "bundle.zip"
    with zipfile.ZipFile(zpath, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("incident/node-2/vllm.log", KV_LOG)
    gz = tmp_path / "serve.log.gz"
    gz.write_bytes(gzip.compress(KV_LOG))
    for path, node in ((tgz, "node-1"), (zpath, "node-2"), (gz, None)):
        code, report = run_json(str(path))
        assert code == 1, path
        f = report["findings"][0]
        assert f["rule_id"] == "KV001"
        assert f["nodes"] == ([node] if node else [])
        assert "!" in f["evidence"][0]["file"] or path == gz
    assert not (tmp_path / "incident" / "node-2").exists()  # nothing extracted


def test_nested_archive_one_level(tmp_path: Path):
    inner = io.BytesIO()
    with tarfile.open(fileobj=inner, mode="w:gz") as tar:
        info = tarfile.TarInfo("node-5/vllm.log")
        info.size = len(KV_LOG)
        tar.addfile(info, io.BytesIO(KV_LOG))
    outer = tmp_path / "artifacts.zip"
    with zipfile.ZipFile(outer, "w") as zf:
        zf.writestr("logs/node-logs.tar.gz", inner.getvalue())
    code, report = run_json(str(outer))
    assert code == 1
    assert report["findings"][0]["nodes"] == ["node-5"]


def test_stdin_plain_and_gzip():
    code, report = run_json("-", input=KV_LOG)
    assert code == 1 and report["findings"][0]["rule_id"] == "KV001"
    code, report = run_json("-", input=gzip.compress(KV_LOG))
    assert code == 1 and report["inputs"][0]["path"] == "<stdin>"


def test_unreadable_and_binary_files_are_skipped_with_reasons(tmp_path: Path):
    bundle = _bundle(tmp_path)
    (bundle / "core.bin").write_bytes(bytes(range(256)) * 64)
    (bundle / "broken.tgz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    os.mkfifo(bundle / "pipe")
    (bundle / "loop").symlink_to(bundle)
    secret = bundle / "secret.log"
    secret.write_text("x")
    secret.chmod(0)
    code, report = run_json(str(bundle))
    assert code == 1  # the readable file still gives its finding
    reasons = {Path(s["path"]).name: s["reason"] for s in report["skipped"]}
    assert reasons["core.bin"].startswith("binary")
    assert "corrupt" in reasons["broken.tgz"]
    assert "FIFO" in reasons["pipe"]
    assert "symbolic link" in reasons["loop"]
    if os.geteuid() != 0:  # root reads anything
        assert "permission" in reasons["secret.log"]
    text = run_cli(str(bundle), "--no-color").stdout
    assert "Skipped" in text and "core.bin" in text


def test_only_unreadable_input_exits_4_nothing_analysed(tmp_path: Path):
    (tmp_path / "core.bin").write_bytes(bytes(range(256)) * 64)
    result = run_cli(str(tmp_path / "core.bin"))
    assert result.exit_code == 4
    assert "Nothing was analysed" in result.stdout and "binary" in result.stderr


def test_since_until_window():
    code, report = run_json(str(KV), "--until", "2025-09-03 14:15:00")
    # before the saturation only start-up advice (KV005 capacity, MTP004) can be found, nothing that fails a run
    assert code == 0 and all(f["severity"] in ("info", "warning") for f in report["findings"])
    assert "KV001" not in [f["rule_id"] for f in report["findings"]]
    code, report = run_json(str(KV), "--since", "2025-09-03 14:20:00")
    assert code == 1
    assert report["findings"][0]["first_seen"] >= "2025-09-03 14:20:00"
    assert run_cli(str(KV), "--since", "yesterday").exit_code == 2


def test_a_folder_named_like_a_subcommand_is_still_a_path(tmp_path: Path, monkeypatch):
    folder = tmp_path / "rules" / "node-0"
    folder.mkdir(parents=True)
    (folder / "vllm.log").write_bytes(KV_LOG)
    monkeypatch.chdir(tmp_path)
    assert run_cli("rules").exit_code == 1  # alone: the folder
    assert run_cli("./rules").exit_code == 1
    assert run_cli("--", "rules").exit_code == 1
    assert run_cli("check", "rules").exit_code == 1
    listing = run_cli("rules", "list")  # followed by a verb: the subcommand
    assert listing.exit_code == 0 and "KV001" in listing.stdout


def test_rules_list_show_and_test():
    listing = run_cli("rules", "list")
    assert "KV001" in listing.stdout and "kv-cache" in listing.stdout
    shown = run_cli("rules", "show", "KV001")
    assert shown.exit_code == 0
    assert "--max-num-seqs" in shown.stdout and "threshold" in shown.stdout
    assert run_cli("rules", "show", "kv-cache-saturated").exit_code == 0
    assert run_cli("rules", "show", "NOPE999").exit_code == 2
    # `rules test` on one folder (the whole catalog's fixtures run once, in tests/test_rule_catalog.py).
    tested = run_cli("rules", "test", str(ROOT / "rules" / "engine"))
    assert tested.exit_code == 0, tested.stdout
    assert " 0 failed" in tested.stdout and "ENG001" in tested.stdout


def test_lang_zh_prints_chinese():
    out = run_cli(str(KV), "--lang", "zh", "--no-color").stdout
    assert "KV 缓存饱和" in out and "处理建议" in out


def test_user_rules_folder_and_broken_user_rule(tmp_path: Path):
    rules = tmp_path / "myrules"
    rules.mkdir()
    (rules / "USR001.queue-warning.toml").write_text(
        'id = "USR001"\nname = "queue-warning"\ncategory = "engine"\nseverity = "critical"\n'
        'title.en = "Queue warning"\nremediation.en = "Scale out."\n'
        '[match]\nkind = "pattern"\nregex = "waiting for more than \\\\d+ s"\n'
    )
    code, report = run_json(str(KV), "--rules", str(rules))
    assert "USR001" in [f["rule_id"] for f in report["findings"]]
    assert report["findings"][0]["rule_id"] == "USR001"  # critical ranks first
    (rules / "USR002.bad.toml").write_text('id = "USR002"\nname = "bad"\ncategory = "engine"\nseverity = "error"\n'
                                            'title.en = "x"\nremediation.en = "y"\n[match]\nkind = "pattern"\nregex = "(?=x)"\n')
    result = run_cli(str(KV), "--rules", str(rules))
    assert result.exit_code == 2
    assert "USR002.bad.toml: match.regex" in result.stderr


def test_python_dash_m_and_console_script_work():
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    proc = subprocess.run([sys.executable, "-m", "diagnose", "--format", "json", str(KV)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["findings"][0]["rule_id"] == "KV001"
    assert "Traceback" not in proc.stderr
    if shutil.which("diagnose"):
        help_text = subprocess.run(["diagnose", "--help"], capture_output=True, text=True, timeout=60)
        assert help_text.returncode == 0 and "PATH" in help_text.stdout


def test_python_m_without_a_dependency_is_one_line_and_exit_2():
    """`python -m diagnose` from a checkout, in an interpreter without the dependencies: no traceback."""
    script = ("import importlib.util as u, runpy; real = u.find_spec\n"
              "u.find_spec = lambda name, *a: None if name == 'polars' else real(name, *a)\n"
              "runpy.run_module('diagnose', run_name='__main__')\n")
    out = subprocess.run([sys.executable, "-c", script, "x.log"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith("diagnose: error: not installed for ") and "polars" in out.stderr
    assert "Traceback" not in out.stderr and out.stderr.count("\n") == 1
