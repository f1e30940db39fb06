"""The replay harness of ``diagnose watch`` (slow: tens of seconds).

The samples' lines are appended to a log folder at an accelerated rate, as a server writes them, with a
rotation (``app.log`` renamed ``app.log.1`` while lines are still unread) and a copytruncate (``app.log.1``
renamed ``.2``, ``app.log`` copied to ``app.log.1`` and truncated) in the middle:

- each finding a batch run over the whole stream reports opens exactly once, within two ticks of the tick at
  which a batch run over the lines written so far first reports it, with evidence that points at the real
  file and line; after the stream stops, each resolves once after ``--resolve-after`` of quiet;
- killed (SIGKILL) and restarted mid-stream, ``diagnose watch`` says each finding once, as an uninterrupted
  watch does: no repeat, no loss;
- over 100,000 appended lines its memory stays bounded.

The measured numbers are printed (run with ``-s``): ticks to open, resident memory.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from diagnose.live.watcher import Options, Watcher
from diagnose.pipeline import Settings, analyze
from tests.conftest import SAMPLES

pytestmark = pytest.mark.slow

LINES = (SAMPLES / "kv-exhaustion" / "node-0" / "vllm-serve-20250903.log").read_bytes().splitlines(keepends=True)
MTIME = datetime(2025, 9, 3, 15, 0).timestamp()
STEP = 20  # lines per tick
ROTATE_AT, COPYTRUNCATE_AT = 200, 420  # line counts where the rotation and the copytruncate fall
KILL_AT = {60: 0.0, 200: 0.5, 340: 0.25, 500: 1.0}  # line count -> seconds after the step, then SIGKILL


class Stream:
    """Writes the sample into ``logs/node-0/vllm-serve.log`` the way a server and logrotate would."""

    def __init__(self, root: Path):
        self.folder = root / "logs" / "node-0"
        self.folder.mkdir(parents=True)
        self.log = self.folder / "vllm-serve.log"
        self.written = 0

    def write(self, lines: list[bytes]) -> None:
        with open(self.log, "ab") as fh:
            fh.writelines(lines)
        self.written += len(lines)
        for path in self.folder.iterdir():
            os.utime(path, (MTIME, MTIME))  # year-less stamps are dated by the file's year

    def rotate(self) -> None:
        self.log.rename(self.folder / "vllm-serve.log.1")

    def copytruncate(self) -> None:
        (self.folder / "vllm-serve.log.1").rename(self.folder / "vllm-serve.log.2")
        shutil.copyfile(self.log, self.folder / "vllm-serve.log.1")
        with open(self.log, "r+b") as fh:
            fh.truncate(0)

    def step(self, upto: int) -> None:
        """Lines up to ``upto``, with the rotation or the copytruncate when this step crosses one, part of the
        lines written before it and not yet read."""
        start = self.written
        for at, turn in ((ROTATE_AT, self.rotate), (COPYTRUNCATE_AT, self.copytruncate)):
            if start < at <= upto:
                self.write(LINES[start:at - 5])
                turn()
                start = at - 5
        self.write(LINES[start:upto])


def _batch_rules(lines: list[bytes], tmp: Path) -> set[str]:
    tmp.mkdir(parents=True, exist_ok=True)
    log = tmp / "vllm-serve.log"
    log.write_bytes(b"".join(lines))
    os.utime(log, (MTIME, MTIME))
    return {f.rule_id for f in analyze([str(tmp)], Settings()).findings}


def test_replay_with_rotation_and_copytruncate_opens_each_finding_once_and_on_time(tmp_path):
    stream = Stream(tmp_path)
    wall = [1_000_000.0]
    watcher = Watcher(Options([str(tmp_path / "logs")], resolve_after_s=300.0), Settings(), wall=lambda: wall[0])
    events: list[tuple[int, object]] = []
    ticks = 0
    while stream.written < len(LINES):
        stream.step(min(stream.written + STEP, len(LINES)))
        wall[0] += 2.0
        ticks += 1
        for event in watcher.tick().events:
            events.append((ticks, event))
            for ev in event.finding.evidence[:1]:  # evidence points at the real file and line, as it is now
                with open(ev["file"], "rb") as fh:
                    assert fh.read().splitlines()[ev["line"] - 1].decode() == ev["text"]
    # What a batch run over the same files finds. (A run-level trend such as PRF005 is computed per file, so
    # the rotation hides it from both alike.)
    expected = {f.rule_id for f in analyze([str(tmp_path / "logs")], Settings()).findings}
    assert {"KV001", "KV005", "MTP004"} <= expected
    opened = [(t, e.finding.rule_id) for t, e in events if e.event == "open"]
    assert sorted(r for _, r in opened) == sorted(expected), opened  # each once, none missing or extra
    late = {}
    for tick, rule in opened:
        # The first tick at which a batch over the lines written so far reports it.
        first = tick
        while first > 1 and rule in _batch_rules(LINES[:(first - 1) * STEP], tmp_path / f"batch-{rule}-{first}"):
            first -= 1
        late[rule] = tick - first
    print(f"\nticks to open (watch tick - first batch tick), {STEP} lines a tick: {late}")
    assert all(0 <= n <= 2 for n in late.values()), late
    # The stream stops: every finding resolves once after five minutes of clock time without an occurrence
    # (the engine, quiet with requests running, opens the hang finding, which holds while the quiet lasts).
    quiet = []
    for _ in range(120):
        wall[0] += 5.0
        quiet += watcher.tick().events
    resolved = sorted(e.finding.rule_id for e in quiet if e.event == "resolve")
    assert resolved == sorted(r for r in expected if r not in {e.finding.rule_id for _, e in events
                                                                  if e.event == "resolve"})
    for e in quiet:
        if e.event == "resolve" and e.finding.last_seen:
            at = datetime.fromisoformat(e.at)
            assert at - datetime.fromisoformat(e.finding.last_seen) >= timedelta(seconds=300)
    assert [e.finding.rule_id for e in quiet if e.event == "open"] == ["ENG020"]


def _start(tmp_path: Path, out: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "diagnose", "watch", str(tmp_path / "logs"), "--state", str(tmp_path / "st"),
         "--json-lines", str(out), "--interval", "0.2", "--backlog", "1G", "--resolve-after", "1h", *extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)


def _caught_up(tmp_path: Path, stream: Stream, timeout: float = 120.0) -> None:
    """Wait until the watch's saved state has read every byte written."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = json.loads((tmp_path / "st" / "state.json").read_text())
        except (OSError, ValueError):
            time.sleep(0.2)
            continue
        sizes = {str(p): p.stat().st_size for p in stream.folder.iterdir()}
        done = {p["path"]: p["offset"] for p in state["follower"]["files"].values()}
        if sizes and all(done.get(path) == size for path, size in sizes.items()):
            return
        time.sleep(0.2)
    raise AssertionError("the watch did not catch up")


def test_killed_and_restarted_it_neither_repeats_nor_loses_a_finding(tmp_path):
    reference = tmp_path / "reference"
    stream = Stream(reference)
    watcher = Watcher(Options([str(reference / "logs")], resolve_after_s=3600.0), Settings())
    wanted = set()
    while stream.written < len(LINES):
        stream.step(min(stream.written + STEP, len(LINES)))
        wanted |= {e.finding.fingerprint for e in watcher.tick().events if e.event == "open"
                   and e.finding.rule_id != "ENG020"}
    live = tmp_path / "live"
    stream = Stream(live)
    out = live / "events.jsonl"
    proc = _start(live, out)
    kills = 0
    try:
        while stream.written < len(LINES):
            stream.step(min(stream.written + STEP, len(LINES)))
            if stream.written in KILL_AT:  # before, during or after the tick that reads these lines
                time.sleep(KILL_AT[stream.written])
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                kills += 1
                proc = _start(live, out)
            _caught_up(live, stream)  # the pace of its ticks: each step is read before the next is written
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    events = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    said = [(e["event"], e["fingerprint"]) for e in events if e["rule_id"] != "ENG020"]
    assert kills == len(KILL_AT)
    assert len(said) == len(set(said)), said  # nothing said twice
    assert {fp for kind, fp in said if kind == "open"} == wanted  # nothing lost
    assert [e["seq"] for e in events] == sorted({e["seq"] for e in events})


def _rss_kb(pid: int) -> tuple[int, int]:
    status = Path(f"/proc/{pid}/status").read_text()
    rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1))
    peak = int(re.search(r"VmHWM:\s+(\d+)", status).group(1))
    return rss, peak


def _stamped(n: int) -> list[bytes]:
    """``n`` lines cycled from the sample, stamped 3 s apart from its start on (so that the window moves)."""
    base = datetime(2025, 9, 3, 14, 0, 0)
    stamp = re.compile(rb"\d\d-\d\d \d\d:\d\d:\d\d")
    out = []
    for i in range(n):
        when = (base + timedelta(seconds=3 * i)).strftime("%m-%d %H:%M:%S").encode()
        out.append(stamp.sub(when, LINES[i % len(LINES)], count=1))
    return out


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads resident memory from /proc")
def test_memory_stays_bounded_over_100000_appended_lines(tmp_path):
    lines = _stamped(100_000)
    stream = Stream(tmp_path)
    out = tmp_path / "events.jsonl"
    proc = _start(tmp_path, out, "--interval", "0.5")
    seen = {}
    try:
        for at in range(0, len(lines), 4000):
            with open(stream.log, "ab") as fh:
                fh.writelines(lines[at:at + 4000])
            stream.written += 4000
            if stream.written % 20_000 == 0:  # read up to here, then measured
                _caught_up(tmp_path, stream, timeout=300)
                seen[stream.written] = _rss_kb(proc.pid)
            else:
                time.sleep(0.5)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    rss = {n: r // 1024 for n, (r, _) in seen.items()}
    peak = seen[100_000][1] // 1024
    print(f"\nresident memory (MB) after each 20,000 lines read: {rss}; peak {peak} MB")
    assert peak < 600, seen
    assert rss[100_000] <= rss[20_000] * 1.25 + 30, rss  # no growth with the lines read: bounded by the window
    window = json.loads((tmp_path / "st" / "state.json").read_text())["window"]
    assert all(start[1] > 90_000 for start in window.values())  # the window moved with the lines
