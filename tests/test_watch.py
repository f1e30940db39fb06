"""``diagnose watch`` in-process (diagnose/live/): the samples' lines appended to files as a server writes them,
each finding opened once when its lines arrive and resolved after quiet, a restart that repeats and loses
nothing, and the command's outputs. The long replay (rotation, truncation, kills, 100,000 lines) is in
tests/test_watch_replay.py."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

import pytest

from diagnose.live.state import load, save
from diagnose.live.watcher import Options, Watcher
from diagnose.pipeline import Settings, analyze
from tests.conftest import SAMPLES, run_cli

KV = SAMPLES / "kv-exhaustion" / "node-0" / "vllm-serve-20250903.log"
LINES = KV.read_bytes().splitlines(keepends=True)
MTIME = datetime(2025, 9, 3, 15, 0).timestamp()


class Replay:
    """A log folder written step by step, and a watcher over it on a wall clock the test moves."""

    def __init__(self, root: Path, resolve_after_s: float = 300.0, **options):
        self.root = root / "logs"
        self.log = self.root / "node-0" / "vllm-serve-20250903.log"
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.wall = 1_000_000.0
        self.options = Options([str(self.root)], resolve_after_s=resolve_after_s, **options)
        self.watcher = self.new()

    def new(self) -> Watcher:
        return Watcher(self.options, Settings(), wall=lambda: self.wall)

    def write(self, lines: list[bytes], path: Path | None = None) -> None:
        path = path or self.log
        with open(path, "ab") as fh:
            fh.writelines(lines)
        os.utime(path, (MTIME, MTIME))  # year-less vLLM stamps take the file's year

    def tick(self, seconds: float = 2.0):
        self.wall += seconds
        return self.watcher.tick()


def _opened(events) -> list[str]:
    return [e.finding.rule_id for e in events if e.event == "open"]


@pytest.mark.slow  # a live process through many ticks: about 10 s
def test_each_finding_opens_once_as_its_lines_arrive_and_resolves_after_quiet(tmp_path):
    replay = Replay(tmp_path)
    log, step = [], 40
    for at in range(0, len(LINES), step):
        replay.write(LINES[at:at + step])
        log += [(at, e) for e in replay.tick().events]
    opened = [(at, e.finding.rule_id) for at, e in log if e.event == "open"]
    assert sorted(r for _, r in opened) == sorted(set(r for _, r in opened))  # once each
    first = dict((r, at) for at, r in reversed(opened))
    # KV001's lines begin at line 340 (14:19:12): it opens in the tick that reads them, not later.
    assert first["KV001"] == 320
    kv001 = next(e for _, e in log if e.finding.rule_id == "KV001")
    assert kv001.finding.evidence[0]["line"] == 340 and kv001.finding.fingerprint
    # Nothing more is written: after --resolve-after of quiet (clock time), every open finding resolves once;
    # and an engine that stops printing with 42 requests running, with nothing saying it stopped, is a hang.
    events = []
    for _ in range(200):
        events += replay.tick(5.0).events
    said: dict[str, list[str]] = {}
    for e in [e for _, e in log] + events:
        said.setdefault(e.finding.rule_id, []).append(e.event)
    assert said.pop("ENG020") == ["open"]
    assert sorted(said) == ["KV001", "KV005", "MTP004", "PRF005"]
    assert all(kinds == ["open", "resolve"] for kinds in said.values()), said
    assert [t.rule_id for t in replay.watcher.tracker.open.values()] == ["ENG020"]
    assert [e.seq for _, e in log] + [e.seq for e in events] == list(range(1, len(log) + len(events) + 1))


def test_the_window_judges_what_a_batch_run_over_the_same_lines_finds(tmp_path):
    replay = Replay(tmp_path, window_s=7200.0)
    replay.write(LINES)
    tick = replay.tick()
    batch = analyze([str(replay.root)], Settings())
    assert [(f.rule_id, f.fingerprint, f.count) for f in tick.report.findings] == \
        [(f.rule_id, f.fingerprint, f.count) for f in batch.findings]
    assert [(e.file, e.line, e.text) for e in tick.report.findings[0].evidence] == \
        [(e.file, e.line, e.text) for e in batch.findings[0].evidence]


def test_a_restart_resumes_without_repeating_or_losing_a_finding(tmp_path):
    replay = Replay(tmp_path)
    replay.write(LINES[:360])
    first = _opened(replay.tick().events)
    assert "KV001" in first
    saved = json.loads(json.dumps(replay.watcher.state()))
    (tmp_path / "st").mkdir()
    save(tmp_path / "st", saved)
    # A new process: the state is read back, the window is rebuilt from the files, nothing opens again.
    replay.watcher = replay.new()
    replay.watcher.restore(load(tmp_path / "st"))
    assert replay.watcher.window.size > 0
    assert replay.tick().events == []
    replay.write(LINES[360:])
    later = _opened(replay.tick().events)
    assert "KV001" not in later and set(later) <= {"PRF005"}
    assert sum(replay.watcher.tracker.opened_total.values()) == len(first) + len(later)


def test_the_window_forgets_old_lines_and_stays_within_its_bytes(tmp_path):
    replay = Replay(tmp_path, window_s=300.0, max_window_bytes=20_000)
    for at in range(0, len(LINES), 50):
        replay.write(LINES[at:at + 50])
        replay.tick()
        assert replay.watcher.window.size <= 20_000
    # 5 minutes of log time: the window starts near the end of the file, not at its first line.
    start = min(line for _, line in replay.watcher.window.starts().values())
    assert start > 450


@pytest.mark.slow  # waits on the clock for the engine to go quiet
def test_an_engine_that_goes_quiet_is_a_hang_by_the_clock(tmp_path):
    """Both engines stop at once (all ranks stuck): the logs end with the lines, and the clock, carried on by
    the wall clock, finds the silence; their lines coming back resolve it."""
    from tests.test_silence import _at, two_engines

    replay = Replay(tmp_path, resolve_after_s=60.0, judge_every_s=10.0)
    text = two_engines().encode()  # both engines all along; the replay stops writing at 14:25:02
    cut = [i for i, line in enumerate(text.splitlines(keepends=True)) if b"14:25:0" in line][-1] + 1
    lines = text.splitlines(keepends=True)
    replay.write(lines[:cut])
    events = replay.tick().events
    assert "ENG020" not in _opened(events)
    events = []
    for _ in range(16):  # two minutes without a line, and three of its intervals
        events += replay.tick(10.0).events
    hang = [e for e in events if e.finding.rule_id == "ENG020"]
    assert [e.event for e in hang] == ["open"] and hang[0].finding.facts["quiet_first"] == "Engine 000 @ node-0"
    # Both engines print again, with the time of day it is by then (the clock), a tick's worth at a time.
    now = replay.watcher.clock().strftime("%H:%M:%S")
    events, at = [], next(i for i, line in enumerate(lines) if b"Engine 000:" in line and _at(line.decode()) > now)
    for _ in range(12):
        upto = at + next(i for i, line in enumerate(lines[at:]) if b"Engine 001:" in line) + 1
        replay.write(lines[at:upto])
        at = upto
        events += replay.tick(10.0).events
    assert [e.event for e in events if e.finding.rule_id == "ENG020"] == ["resolve"]


def test_watch_once_writes_json_lines_prom_and_faults(tmp_path):
    logs = tmp_path / "logs" / "node-0"
    logs.mkdir(parents=True)
    (logs / KV.name).write_bytes(KV.read_bytes())
    os.utime(logs / KV.name, (MTIME, MTIME))
    out = tmp_path / "events.jsonl"
    result = run_cli("watch", str(tmp_path / "logs"), "--state", str(tmp_path / "st"), "--once", "--backlog", "1G",
                     "--json-lines", str(out), "--prom", str(tmp_path / "diagnose.prom"),
                     "--mindcluster", str(tmp_path / "fault.json"), "--node-name", "worker-3")
    assert result.exit_code == 1, result.output
    events = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(e["event"], e["rule_id"]) for e in events] == [("open", "KV001"), ("open", "PRF005")]
    assert 'diagnose_findings_active{node="node-0",rule="KV001"' in (tmp_path / "diagnose.prom").read_text()
    fault = json.loads((tmp_path / "fault.json").read_text())
    assert [f["faultCode"] for f in fault["faults"]] == ["100010004", "100010009"]
    assert fault["faults"][0]["influence"] == [{"nodeName": "worker-3", "deviceIds": list(range(8))}]
    # Again: nothing new, nothing said again; the state folder is busy while another watch holds it.
    result = run_cli("watch", str(tmp_path / "logs"), "--state", str(tmp_path / "st"), "--once",
                     "--json-lines", str(out))
    assert result.exit_code == 1 and len(out.read_text().splitlines()) == 2


def test_events_that_cannot_be_written_are_said_once_and_exit_6_and_a_restart_says_them(tmp_path):
    logs = tmp_path / "logs" / "node-0"
    logs.mkdir(parents=True)
    (logs / KV.name).write_bytes(KV.read_bytes())
    os.utime(logs / KV.name, (MTIME, MTIME))
    gone = tmp_path / "gone" / "events.jsonl"  # its folder does not exist
    result = run_cli("watch", str(tmp_path / "logs"), "--state", str(tmp_path / "st"), "--once", "--backlog", "1G",
                     "--json-lines", str(gone))
    assert result.exit_code == 6 and "Traceback" not in result.output
    (line,) = [x for x in result.stderr.splitlines() if x.strip()]
    assert line.startswith("diagnose: error: cannot write --json-lines ") and str(gone) in line
    # Nothing was lost: the state was not saved, so the next run says both events.
    out = tmp_path / "events.jsonl"
    result = run_cli("watch", str(tmp_path / "logs"), "--state", str(tmp_path / "st"), "--once", "--json-lines",
                     str(out))
    assert result.exit_code == 1
    assert [json.loads(x)["rule_id"] for x in out.read_text().splitlines()] == ["KV001", "PRF005"]
    if Path("/dev/full").exists():  # a full disk, and the same in Chinese
        result = run_cli("watch", str(tmp_path / "logs"), "--state", str(tmp_path / "st2"), "--once", "--backlog",
                         "1G", "--json-lines", "/dev/full", "--lang", "zh")
        assert result.exit_code == 6 and "无法写入 --json-lines /dev/full" in result.stderr


def test_watch_refuses_a_state_folder_it_cannot_use(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = run_cli("watch", str(tmp_path), "--state", str(blocker / "st"), "--once")
    assert result.exit_code == 2 and "cannot use the state folder" in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize("value", ["0s", "soon", "-5m"])
def test_bad_durations_are_usage_errors(tmp_path, value):
    result = run_cli("watch", str(tmp_path), "--state", str(tmp_path / "st"), "--once", "--window", value)
    assert result.exit_code == 2 and "duration" in result.output


@pytest.mark.slow
def test_sigusr1_writes_the_report_and_sigterm_stops_it(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    logs = tmp_path / "logs" / "node-0"
    logs.mkdir(parents=True)
    (logs / KV.name).write_bytes(KV.read_bytes())
    os.utime(logs / KV.name, (MTIME, MTIME))
    report = tmp_path / "report.txt"
    proc = subprocess.Popen([sys.executable, "-m", "diagnose", "watch", str(tmp_path / "logs"), "--state",
                             str(tmp_path / "st"), "--backlog", "1G", "--interval", "0.3", "--report", str(report),
                             "--json-lines", str(tmp_path / "e.jsonl")], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "st" / "state.json").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not report.exists()
        proc.send_signal(signal.SIGUSR1)
        while not report.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        text = report.read_text()
        assert "KV001" in text and "KV cache saturated" in text
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and "terminated" in err and "Traceback" not in err


def test_a_failing_tick_is_one_line_not_a_traceback(tmp_path, monkeypatch):
    from diagnose.live.watcher import Watcher

    def broken(self):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(Watcher, "tick", broken)
    result = run_cli("watch", str(tmp_path), "--state", str(tmp_path / "st"), "--once")
    assert result.exit_code == 3 and "a tick failed (RuntimeError: disk on fire)" in result.stderr
    assert "Traceback" not in result.output
