"""The hostile inputs of bench/attacks.py, small, in process: each is read, refused or skipped with its reason, no
traceback, and the run goes on (the other file's out-of-memory error is still found). The full-size inputs, each
in its own process with its peak memory, are the slow tests/test_attacks.py; their times are bench/bench_hostile.py's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, run_cli

sys.path.insert(0, str(ROOT / "bench"))
try:
    import attacks
finally:
    sys.path.pop(0)

SMALL = 0.02  # of the size each attack was found at (deep JSON stays 2,000 levels: past every recursion limit)


def _said(result) -> str:
    return result.stdout + result.stderr


def _run(case: attacks.Case, monkeypatch, *extra: str):
    for key, value in case.env.items():
        monkeypatch.setenv(key, value)
    if case.cwd:
        monkeypatch.chdir(case.cwd)
    return run_cli("--format", "json", *extra, *case.args)


IN_PROCESS = sorted(n for n, a in attacks.ATTACKS.items()
                    if a.group in ("trace", "json", "archive", "template") and not a.slow
                    and not n.startswith(("tar-xz", "tar-bz2", "tar-zst-bomb", "tar-gz-huge", "zip-overlapping-quoted"))
                    and n != "user-regex-bounded-repeat")  # its own test below (8-11 s a run: run once)


@pytest.mark.parametrize("name", IN_PROCESS)
def test_a_hostile_input_costs_only_itself(tmp_path, monkeypatch, name):
    spec = attacks.ATTACKS[name]
    result = _run(spec.make(tmp_path / "in", SMALL), monkeypatch)  # catch_exceptions=False: a traceback fails
    assert result.exit_code in spec.codes, _said(result)[-2000:]
    data = json.loads(result.stdout)
    assert data["errors"] == [], data["errors"]
    assert spec.said in json.dumps(data, ensure_ascii=False) + result.stderr


def test_a_reader_that_fails_costs_only_its_file(tmp_path, monkeypatch):
    """Any exception while one file is read skips that file with the reason; the run goes on and says it is
    incomplete (exit 3), with the other files' findings."""
    import diagnose.parsers.kinds.profiling as profiling

    (tmp_path / "serve.log").write_text(attacks.OOM)
    trace = attacks._trace(tmp_path / "t", attacks._events(attacks._ev()))

    def broken(*a, **kw):
        raise OverflowError("int too large to convert to float")

    monkeypatch.setattr(profiling, "parse_trace_stream", broken)
    result = run_cli("--format", "json", str(tmp_path))
    data = json.loads(result.stdout)
    assert result.exit_code == 3 and trace.args
    assert [f["rule_id"] for f in data["findings"]][:1] == ["MEM001"]
    skipped = {Path(s["path"]).name: s["reason"] for s in data["skipped"]}
    assert skipped["trace_view.json"] == "not read: the reader failed (OverflowError: int too large to convert to float)"
    assert any("trace_view.json failed: OverflowError" in e for e in data["errors"])


# --- files that change after the walk listed them -----------------------------------------------------------

@pytest.mark.parametrize("mode,target", [("link", None), ("fifo", None), ("link", "/dev/zero"), ("dir", None)])
def test_a_file_swapped_after_listing_is_not_read(tmp_path, monkeypatch, mode, target):
    from diagnose.ingest import walk

    case = attacks._swapped(tmp_path, mode, target)
    hook = (Path(case.env["PYTHONPATH"]) / "sitecustomize.py").read_text()
    real_from_file, real_scandir = walk._from_file, walk.os.scandir
    try:
        exec(compile(hook, "sitecustomize", "exec"), {})  # patches the walk as the subprocess hook would
        result = run_cli("--format", "json", *case.args)
    finally:
        walk._from_file, walk.os.scandir = real_from_file, real_scandir
    data = json.loads(result.stdout)
    assert result.exit_code == 1, result.stdout[-2000:]
    assert "OUTSIDE-THE-INPUT-FOLDER" not in result.stdout
    reasons = [s["reason"] for s in data["skipped"]]
    assert any(r.startswith("changed after it was listed (now: ") for r in reasons), reasons
    assert data["coverage"]["status"] == "partial"


def test_stdin_read_in_waits_so_ctrl_c_stops_it():
    """``diagnose -`` on a terminal: Ctrl-C ends the run (exit 130) without waiting for Ctrl-D."""
    import pty
    import select
    import time

    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        os.environ["PYTHONPATH"] = str(ROOT)
        os.execv(sys.executable, [sys.executable, "-m", "diagnose", "-q", "-"])
    deadline = time.monotonic() + 60
    out = b""
    try:
        time.sleep(4)  # the CLI has started and waits on the terminal
        os.write(fd, b"\x03")
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                assert os.waitstatus_to_exitcode(status) == 130
                return
            if select.select([fd], [], [], 0.2)[0]:
                try:
                    out += os.read(fd, 4096)
                except OSError:
                    pass
        pytest.fail(f"still waiting on standard input after Ctrl-C: {out[-300:]!r}")
    finally:
        try:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        except (OSError, ChildProcessError):
            pass


# --- the cache folder, rule and configuration files --------------------------------------------------------

@pytest.mark.parametrize("name", ["cache-links-to-dev-zero", "cache-deep-json", "cache-wrong-shapes"])
def test_a_spoiled_cache_is_rebuilt(tmp_path, name):
    case = attacks.ATTACKS[name].make(tmp_path, SMALL)
    env = {**os.environ, **case.env, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "diagnose", "--format", "json", *case.args], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["findings"][0]["rule_id"] == "MEM001"
    cache = Path(case.env["DIAGNOSE_CACHE_DIR"])
    assert all(p.is_file() and not p.is_symlink() for p in cache.iterdir())  # replaced by good entries


@pytest.mark.parametrize("name", sorted(n for n, a in attacks.ATTACKS.items() if a.group == "rules"))
def test_a_bad_rule_or_configuration_file_is_a_usage_error_naming_it(tmp_path, monkeypatch, name):
    spec = attacks.ATTACKS[name]
    result = _run(spec.make(tmp_path, SMALL), monkeypatch)
    assert result.exit_code == 2, _said(result)[-2000:]
    assert spec.said in result.stderr


# --- templates, user regexes, the page ----------------------------------------------------------------------

def test_the_safe_formatter_fills_holes_only_with_small_widths():
    from diagnose.messages import MAX_PRECISION, MAX_WIDTH, fill

    values = {"count": 3, "share": 1.5, "where": "node-0"}
    assert fill("{count:>1000000}", values) == " " * (MAX_WIDTH - 1) + "3"
    assert fill("{share:.1000000f}", values) == f"{1.5:.{MAX_PRECISION}f}"
    assert fill("{count.__class__} {count[0]} {count!r}", values) == "{count.__class__} {count[0]} {count!r}"
    assert fill("{count:{count}}", values) == "{count:3}"  # no nested spec: the inner hole only
    assert fill("{missing} {missing|count} {share} {where:>8}", values) == " 3 1.5   node-0"  # an unknown value is never printed as ?
    assert fill("{count:,>99999999999999999999}", values) == "," * (MAX_WIDTH - 1) + "3"
    assert fill("{count:%Y}", values) == "3"  # a spec the value does not take: the value as it is


def test_a_user_template_with_a_huge_width_stays_small_in_every_format(tmp_path, monkeypatch):
    case = attacks.ATTACKS["template-width-million"].make(tmp_path, 1.0)
    result = _run(case, monkeypatch)
    data = json.loads(result.stdout)
    summary = next(f["summary"] for f in data["findings"] if f["rule_id"] == "USR901")
    assert len(summary) < 100 and (tmp_path / "page.html").stat().st_size < 5_000_000


def test_a_user_regex_off_the_fast_path_is_said_with_the_rule(tmp_path, monkeypatch):
    spec = attacks.ATTACKS["user-regex-bounded-repeat"]
    result = _run(spec.make(tmp_path, SMALL), monkeypatch)
    assert result.exit_code == 1 and result.exit_code in spec.codes
    assert "USR901" in result.stderr and "{1,5000}" in result.stderr and "fast path" in result.stderr
    data = json.loads(result.stdout)  # and, as every hostile input, it costs only itself
    assert data["errors"] == [], data["errors"]
    assert spec.said in json.dumps(data, ensure_ascii=False) + result.stderr


def test_a_rule_over_its_time_budget_is_named(tmp_path, monkeypatch):
    from diagnose.engine import run as engine_run

    (tmp_path / "serve.log").write_text(attacks.OOM)
    monkeypatch.setattr(engine_run, "RULE_SECONDS", -1.0)
    result = run_cli("--format", "json", str(tmp_path / "serve.log"))
    slow = json.loads(result.stdout)["slow_rules"]
    assert slow and {"rule", "path", "seconds", "budget"} <= set(slow[0])
    assert f"rule {slow[0]['rule']} (" in result.stderr and "budget" in result.stderr


def test_references_on_the_page_are_found_in_linear_time():
    from diagnose.report.page.markup import reference

    assert 'href="https://github.com/vllm-project/vllm-ascend/issues/5"' in reference("vllm-ascend  issue  #5")
    assert 'issues/12"' in reference("vllm PR #12")
    blanks = " \t" * 100_000  # quadratic before: 147 s for a 100 KB line on the page; linear now
    assert reference(blanks + "vllm PR #3").endswith("vllm PR #3</a>")


# --- the small things ---------------------------------------------------------------------------------------

def test_a_typo_of_a_subcommand_suggests_it():
    result = run_cli("rulse")
    assert result.exit_code == 2 and "did you mean 'rules'" in result.stderr


def test_cn_is_chinese(monkeypatch):
    sample = str(ROOT / "samples" / "healthy")
    assert run_cli("--lang", "cn", sample).stdout == run_cli("--lang", "zh", sample).stdout
    from diagnose.messages import locale_lang

    monkeypatch.setenv("DIAGNOSE_LANG", "cn")
    assert locale_lang() == "zh"


def test_since_takes_iso_times_with_an_offset(monkeypatch):
    import time
    from datetime import datetime

    from diagnose.commands.console import parse_time

    monkeypatch.setenv("TZ", "Asia/Shanghai")
    time.tzset()
    try:
        assert parse_time("2025-09-03T06:19:00Z", "--since") == datetime(2025, 9, 3, 14, 19)
        assert parse_time("2025-09-03T14:19:00+08:00", "--since") == datetime(2025, 9, 3, 14, 19)
        assert parse_time("2025-09-03 15:19:00.5+09:00", "--since") == datetime(2025, 9, 3, 14, 19, 0, 500000)
        assert parse_time("2025-09-03", "--since") == datetime(2025, 9, 3)
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert run_cli("--since", "yesterday", str(ROOT / "samples" / "healthy")).exit_code == 2


def test_output_suffixes(tmp_path):
    sample = str(ROOT / "samples" / "healthy")
    run_cli("-o", str(tmp_path / "r.sarif.json"), sample)
    assert json.loads((tmp_path / "r.sarif.json").read_text())["version"] == "2.1.0"
    refused = run_cli("-o", str(tmp_path / "r.csv"), sample)
    # main's format registry (report/formats.py) names the target and lists the suffixes it knows
    assert refused.exit_code == 2 and "r.csv" in refused.stderr and ".sarif.json" in refused.stderr
    assert not (tmp_path / "r.csv").exists()
    assert run_cli("--format", "text", "-o", str(tmp_path / "r.csv"), sample).exit_code in (0, 5)
    assert run_cli("-o", str(tmp_path / "r.txt"), sample).exit_code in (0, 5)


def test_a_tar_zst_is_read(tmp_path, monkeypatch):
    result = _run(attacks.ATTACKS["tar-zst-read"].make(tmp_path, 1.0), monkeypatch)
    data = json.loads(result.stdout)
    assert result.exit_code == 1 and data["inputs"][0]["path"].endswith("logs.tar.zst!node-0/serve.log")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open(tmp_path / "logs.tar.zst", "rb") as stdin:  # and from standard input (a real descriptor)
        proc = subprocess.run([sys.executable, "-m", "diagnose", "--format", "json", "-"], stdin=stdin, env=env,
                              capture_output=True, text=True, timeout=120)
    assert json.loads(proc.stdout)["inputs"][0]["path"] == "<stdin>!node-0/serve.log"


def test_the_readme_states_the_number_of_rules():
    import re

    from diagnose.engine import builtin_rules_dir, load_rules

    rules, _ = load_rules([builtin_rules_dir()])
    stated = re.search(r"^(\d+) rules across", (ROOT / "README.md").read_text(encoding="utf-8"), re.M)
    assert stated and int(stated.group(1)) == len(rules)
