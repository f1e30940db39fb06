"""`diagnose rules list|show|signals` and rule folders: a wrong category is an error, `show` renders Markdown on
a terminal, `signals` documents what rules can read, a broken rule file lists every problem, an empty rules
folder is a warning."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLES, run_cli

from diagnose.parsers import registry

KV = SAMPLES / "kv-exhaustion"


def test_rules_list_unknown_category_is_a_usage_error():
    result = run_cli("rules", "list", "--category", "kv_cache")
    assert result.exit_code == 2
    assert "'kv_cache' is not one of" in result.stderr and "kv-cache" in result.stderr
    assert "0 rules" not in result.stdout
    listing = run_cli("rules", "list", "--category", "kv-cache")
    assert listing.exit_code == 0 and "KV001" in listing.stdout and "MTP001" not in listing.stdout


def test_rules_signals_lists_every_declared_signal_with_kind_unit_and_meaning():
    result = run_cli("rules", "signals", "--format", "json")
    assert result.exit_code == 0
    rows = json.loads(result.stdout)
    listed = {(r["signal"], r["kind"]) for r in rows}
    for kind in registry.KINDS:
        for name in kind.signals:
            assert (name, kind.name) in listed or (name, "any") in listed, (kind.name, name)
    for name in registry.SHARED_SIGNALS:
        assert (name, "any") in listed
    by = {(r["signal"], r["kind"]): r for r in rows}
    assert by[("kv_cache_usage_pct", "vllm")]["unit"] == "%"
    assert by[("gen_throughput", "vllm")]["unit"] == "tokens/s"
    assert by[("hbm_used_mb", "npu-smi")]["unit"] == "MB"
    assert by[("npu_oom_free_gib", "any")]["unit"] == "GiB"
    assert by[("vllm_version", "vllm")]["unit"] == "text"
    assert by[("mtp_enabled", "preflight")]["unit"] == "1/0"
    assert by[("spec_pos_acceptance", "vllm")]["unit"] == "fraction"
    assert all(r["meaning"] for r in rows)


def test_rules_signals_filters_by_word_and_kind():
    result = run_cli("rules", "signals", "kv_cache")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["signal", "kind", "unit", "meaning"]
    assert any(re.match(r"kv_cache_usage_pct\s+vllm\s+%\s+KV cache usage", line) for line in lines)
    assert all("kv_cache" in line for line in lines[1:-1])
    smi = run_cli("rules", "signals", "--kind", "npu-smi", "--format", "json")
    assert {r["kind"] for r in json.loads(smi.stdout)} == {"npu-smi"}
    bad = run_cli("rules", "signals", "--kind", "nvidia-smi")
    assert bad.exit_code == 2 and "npu-smi" in bad.stderr
    assert run_cli("rules", "signals", "no_such_signal_name").exit_code == 2


def _on_a_terminal(*args: str) -> str:
    """Run `python -m diagnose ARGS` with standard output on a pseudo-terminal."""
    import pty

    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100", "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "diagnose", *args], stdout=follower, stderr=subprocess.PIPE,
                            env=env, cwd=str(ROOT))
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    assert proc.wait(timeout=120) == 0
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals")
def test_rules_show_renders_markdown_on_a_terminal_and_prints_it_raw_in_a_pipe():
    shown = _on_a_terminal("rules", "show", "KV001")
    assert "\x1b[" in shown  # styled by rich
    plain = re.sub(r"\x1b\[[0-9;]*m", "", shown)
    assert "KV001" in plain and "kv-cache-saturated" in plain and "--max-num-seqs" in plain
    assert "# KV001" not in plain and "`kv-cache-saturated`" not in plain  # the Markdown was rendered
    piped = run_cli("rules", "show", "KV001")
    assert piped.exit_code == 0
    assert piped.stdout.startswith("# KV001 `kv-cache-saturated`") and "\x1b[" not in piped.stdout


BROKEN = '''id = "usr1"
name = "Bad Name"
category = "kv_cache"
severity = "fatal"
titel.en = "x"
remediation.en = "y"
[match]
kind = "pattern"
regex = "(?=x)"
[[test]]
fires = "yes"
extra = 1
log = "a"
[[test]]
log = "b"
file = "c"
'''


def test_every_problem_of_a_broken_rule_file_is_reported(tmp_path: Path):
    folder = tmp_path / "my-rules"
    folder.mkdir()
    (folder / "USR001.bad.toml").write_text(BROKEN)
    expected = ["titel: unknown field", "id: 'usr1' must look like", "name: must be lower-case",
                "category: 'kv_cache' is not one of", "severity: 'fatal' is not one of", "match.regex: invalid",
                "title: missing", "test[0].extra: unknown field", "test[0].fires: missing", "test[1].fires: missing",
                "test[1]: give exactly one of `log`"]
    for args, code in (((str(KV), "--rules", str(folder)), 2), (("rules", "list", "--rules", str(folder)), 2),
                       (("rules", "test", str(folder)), 1)):
        result = run_cli(*args)
        assert result.exit_code == code, args
        errors = [line for line in result.stderr.splitlines() if line.startswith("diagnose: error:")]
        assert len(errors) == len(expected), (args, result.stderr)
        for text in expected:
            assert any(f"USR001.bad.toml: {text}" in line for line in errors), (args, text)


def test_an_empty_rules_folder_is_a_warning(tmp_path: Path):
    empty = tmp_path / "no-rules-here"
    empty.mkdir()
    (empty / "README.md").write_text("rules go here\n")
    result = run_cli(str(KV), "--rules", str(empty), "--format", "json")
    assert result.exit_code == 1  # the built-in rules still ran
    assert f"diagnose: warning: {empty}: no rule files (*.toml)" in result.stderr
    assert json.loads(result.stdout)["findings"]
    listing = run_cli("rules", "list", "--rules", str(empty))
    assert listing.exit_code == 0 and "no rule files" in listing.stderr
    codes_only = tmp_path / "codes-only"
    (codes_only / "codes").mkdir(parents=True)
    (codes_only / "codes" / "acl.toml").write_text("")  # error-code tables are not rules
    assert "no rule files" in run_cli("rules", "list", "--rules", str(codes_only)).stderr
