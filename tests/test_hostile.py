"""Hostile and broken input: every file read or skipped with a reason, nothing written, no traceback."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hostile
from conftest import ROOT, run_cli, run_json
from diagnose.parsers import registry
from diagnose.parsers.common import FileContext, lines_frame


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("hostile") / "bundle"
    return root, hostile.build(root, bomb_mib=8)


@pytest.fixture(scope="module")
def report(bundle):
    """The whole CLI on the bundle, in a subprocess; a lower bomb floor keeps the test's bombs small."""
    root, _ = bundle
    before = _snapshot(root.parent)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "diagnose", "--format", "json", "--budget", "bomb_floor=4M", str(root)],
                          capture_output=True, text=True, env=env, timeout=300, cwd=root.parent)
    after = _snapshot(root.parent)
    import json

    return proc, json.loads(proc.stdout), before, after


def _snapshot(folder: Path) -> set[str]:
    return {str(p) for p in folder.rglob("*")}


def test_runs_to_completion_without_traceback(report):
    proc, data, _, _ = report
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr
    assert data["errors"] == []


def test_every_case_is_read_or_skipped_with_its_reason(bundle, report):
    root, expect = bundle
    _, data, _, _ = report
    # An archive counts as read when its members were (their paths are `archive!member`).
    read = {Path(i["path"].split("!")[0]).relative_to(root).as_posix() for i in data["inputs"]}
    skipped = {s["path"]: s["reason"] for s in data["skipped"]}
    for name, outcome in expect.items():
        path = str(root / name)
        if outcome == "read":
            assert name in read, f"{name} was not read: {skipped.get(path)}"
        elif name == "deep":
            assert any("nesting" in r for r in skipped.values())
        else:
            reasons = [r for p, r in skipped.items() if p == path or p.startswith(path + "!")]
            reasons += [i["note"] for i in data["inputs"] if i["path"].startswith(path + "!") and i["note"]]
            assert reasons and any(outcome in r for r in reasons), f"{name}: {reasons}"


def test_archive_members_with_links_and_escapes_are_never_followed(bundle, report):
    root, _ = bundle
    _, data, before, after = report
    skipped = {s["path"]: s["reason"] for s in data["skipped"]}
    assert "link" in skipped[f"{root}/evil.tgz!link-out"]
    assert "link" in skipped[f"{root}/evil.tgz!hard-link"]
    assert "special" in skipped[f"{root}/evil.tgz!fifo-in-tar"]
    assert "link" in skipped[f"{root}/evil.zip!zip-link"]
    members = [i["path"] for i in data["inputs"] if "evil" in i["path"]]
    assert f"{root}/evil.tgz!escape.log" in members and f"{root}/evil.tgz!etc/absolute.log" in members
    assert after == before  # nothing written next to or outside the bundle


def test_text_oddities_are_decoded_and_counted(bundle, report):
    root, _ = bundle
    _, data, _, _ = report
    inputs = {Path(i["path"]).name: i for i in data["inputs"]}
    assert inputs["empty.log"]["lines"] == 0
    assert inputs["gbk.log"]["encoding"] == "gb18030"
    assert inputs["utf16.log"]["encoding"] == "utf-16" and inputs["utf16.log"]["lines"] == 2
    assert inputs["crlf.log"]["lines"] == 2 and inputs["cr-only.log"]["lines"] == 2
    assert inputs["huge-line.log"]["lines"] == 2
    assert "truncated" in (inputs["truncated.log.gz"]["note"] or "")
    assert "truncated" in (inputs["serve.log"]["note"] or "")  # the cut tar member: its head is read
    assert inputs["f001999.log"]["lines"] == 1


def test_the_oom_in_each_readable_variant_is_still_found(report):
    _, data, _, _ = report
    oom = next(f for f in data["findings"] if f["rule_id"] == "MEM001")
    assert oom["count"] >= 8  # nul, utf-8, utf16, crlf, cr, huge line, gz, archives …


def test_timestamps_from_1970_and_2999_are_kept(report):
    _, data, _, _ = report
    assert any(i["path"].endswith("ts-1970-2999.log") and i["lines"] == 2 for i in data["inputs"])


def test_text_report_strips_control_sequences(tmp_path: Path):
    log = tmp_path / "evil.log"
    log.write_text("(W pid=1) ERROR 01-01 10:00:00 [w.py:1] RuntimeError: NPU out of memory. Tried to allocate "
                   "1.00 MiB \x1b]0;pwned\x07\x1b[2J\x1b[31m[bold]markup[/bold] %s {0} {count}\n")
    out = run_cli(str(log), "--no-color").stdout
    assert "\x1b" not in out and "\x07" not in out
    # Markup and format placeholders stay literal text (the panel may wrap the line between them).
    flat = "".join(out.replace("│", "").split())
    assert "[bold]markup[/bold]%s{0}{count}" in flat
    code, data = run_json(str(log))
    assert data["findings"][0]["evidence"][0]["text"].endswith("[bold]markup[/bold] %s {0} {count}")


def test_a_file_growing_while_read_does_not_break_the_run(tmp_path: Path):
    log = tmp_path / "node-0" / "growing.log"
    log.parent.mkdir()
    log.write_text(hostile.GOOD * 1000)
    stop = threading.Event()

    def writer():
        with open(log, "a") as fh:
            while not stop.is_set():
                fh.write(hostile.GOOD * 50)
                fh.flush()
                time.sleep(0.001)

    t = threading.Thread(target=writer)
    t.start()
    try:
        code, data = run_json(str(tmp_path))
    finally:
        stop.set()
        t.join()
    assert code == 0 and data["inputs"][0]["lines"] >= 1000


def test_a_file_shrinking_while_read(tmp_path: Path, monkeypatch):
    from diagnose.ingest import walk

    log = tmp_path / "shrink.log"
    log.write_text(hostile.OOM * 100)
    real_open = open

    def shrinking_open(path, mode="r", *a, **kw):
        fh = real_open(path, mode, *a, **kw)
        if str(path) == str(log):
            os.truncate(log, 10)
        return fh

    monkeypatch.setattr(walk, "open", shrinking_open, raising=False)
    code, data = run_json(str(log))
    assert code in (0, 1) and data["inputs"][0]["path"] == str(log)


# --- property tests: no parser raises, and every input line is accounted for -------------------

LINE = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n"), max_size=300)
PREFIXES = st.sampled_from([
    "", "INFO 09-03 14:00:10 [a.py:1] ", "(APIServer pid=7) ERROR 13-45 25:61:61 [x:1] ",
    "[2025-10-29 09:53:45.928+08:00] [1] [2] [mindie-server] [ERROR] [x.cpp:1] : [MIE04E010109] [daemon] ",
    "[ERROR] HCCL(1,python3):2025-07-23-03:47:57.070.463 [hccl_socket.cc:100] [1][HcclSocket] ",
    "[rank3]: ", "| NPU  Name  | Health  |", "Kernel Name,Task Type,", "{\"a\": [", "2025-10-15T00:04:48Z ",
])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(st.tuples(PREFIXES, LINE).map("".join), max_size=25))
@pytest.mark.parametrize("kind", registry.names())
def test_parsers_never_raise_and_account_for_every_line(kind, lines):
    parse = registry.parser_for(kind)
    frame = lines_frame(lines)
    records, signals = parse(frame, FileContext(f"x/{kind}.log", None, kind, None))
    if kind in ("vllm", "mindie", "plog", "unknown"):
        assert records["line"].to_list() == list(range(1, len(lines) + 1))
    assert isinstance(signals, pl.DataFrame)


@settings(max_examples=40, deadline=None)
@given(data=st.binary(max_size=4096))
def test_arbitrary_bytes_through_the_whole_pipeline(data):
    from diagnose.ingest.walk import SourceFile
    from diagnose.pipeline import RuleFilters, Settings, read

    src = SourceFile("fuzz.log", "fuzz.log", None, len(data), None, open=lambda: io.BytesIO(data))
    parsed = read([src], Settings(), RuleFilters())
    assert not parsed.errors
    assert len(parsed.inputs) + len(parsed.skipped) == 1
    if parsed.inputs:
        assert parsed.records.height == parsed.inputs[0].lines


def test_budget_option_is_validated():
    assert run_cli("--budget", "max_file_bytes=lots", str(ROOT / "samples" / "healthy")).exit_code == 2
    assert run_cli("--budget", "nonsense=1", str(ROOT / "samples" / "healthy")).exit_code == 2
    result = run_cli("--budget", "max_file_bytes=1K", "--format", "json", str(ROOT / "samples" / "healthy"))
    assert "per-file limit of 1024 bytes" in result.stdout + result.stderr


def _many_small_files(tmp_path: Path, n: int) -> None:
    """Small files are parsed in batches (a query per file would take hours for 100,000 of them): every file
    is listed, and the one with an error is named in the evidence with its own line number and node."""
    folder = tmp_path / "node-0"
    folder.mkdir()
    line = hostile.GOOD
    for i in range(n):
        (folder / f"plog-{i:06d}.log").write_text(line)
    (folder / f"plog-{n}.log").write_text(hostile.OOM)
    code, data = run_json(str(tmp_path))
    assert code == 1
    assert len(data["inputs"]) == n + 1 and data["skipped"] == []
    oom = next(f for f in data["findings"] if f["rule_id"] == "MEM001")
    assert oom["evidence"][0]["file"].endswith(f"plog-{n}.log") and oom["evidence"][0]["line"] == 1
    assert oom["nodes"] == ["node-0"]


def test_thousands_of_small_files_are_read_in_batches(tmp_path: Path):
    _many_small_files(tmp_path, 5_000)  # more than two batches (diagnose/pipeline/reading.py _SmallFiles)


@pytest.mark.slow
def test_a_hundred_thousand_small_files(tmp_path: Path):
    _many_small_files(tmp_path, 100_000)


def test_time_budget_lists_what_was_not_reached(tmp_path: Path):
    for i in range(3):
        (tmp_path / f"f{i}.log").write_text(hostile.GOOD)
    result = run_cli("--budget", "max_seconds=1", "--format", "json", str(tmp_path))
    assert result.exit_code == 0  # nothing unreadable, nothing wrong: the budget was not hit this fast
    import diagnose.pipeline.reading as pipeline

    real = pipeline.time.monotonic
    ticks = iter([0.0] + [10.0] * 100)
    try:
        pipeline.time.monotonic = lambda: next(ticks)  # the clock jumps past the budget after the start
        late = run_cli("--budget", "max_seconds=1", str(tmp_path))
    finally:
        pipeline.time.monotonic = real
    # Nothing could be read in time: nothing was analysed (exit 4), each file named with the reason.
    assert late.exit_code == 4 and late.stdout.count("time budget of 1 s reached") == 3
    assert "none of the 3 inputs could be read" in late.stderr


@pytest.mark.parametrize("case", sorted((ROOT / "tests" / "data" / "fuzz").glob("*.bin")), ids=lambda p: p.name)
def test_inputs_the_fuzzer_once_broke_us_with(case: Path):
    """Regressions from bench/fuzz.py: a zip whose directory and header names differ, an unsupported zip
    version, a gzip header cut inside a tar stream."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import fuzz
    finally:
        sys.path.pop(0)
    fuzz.one_input(case.read_bytes())
