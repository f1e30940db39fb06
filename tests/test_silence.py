"""The silence pass (diagnose/analysis/silence.py, rule ENG020 engine-went-quiet): a serving engine whose
periodic lines stop while nothing says it stopped is a hang, named by its last line.

The fixtures replay the healthy sample's lines (samples/healthy): its ``Engine 000`` throughput lines, and a
second data-parallel engine made of the same lines relabelled ``Engine 001``, which stops at a chosen time.
"""

from __future__ import annotations

import json
import os
import re
from datetime import datetime
from pathlib import Path

import pytest

from diagnose.analysis.silence import SILENCE_ID, find_silence
from diagnose.parsers import registry
from diagnose.pipeline import Settings, analyze, filters_for, load_catalog, read_paths
from tests.conftest import SAMPLES, run_cli
from helpers import said

HEALTHY = (SAMPLES / "healthy" / "node-0" / "vllm-serve-20250903.log").read_text(encoding="utf-8").splitlines()
_STAMP = re.compile(r" (\d\d-\d\d \d\d:\d\d:\d\d) ")
_THROUGHPUT = "Engine 000: Avg prompt throughput"
MTIME = datetime(2025, 9, 3, 15, 0).timestamp()


def _at(line: str) -> str | None:
    m = _STAMP.search(line)
    return m.group(1)[6:] if m else None


def two_engines(stop: str | None = None, last_idle: bool = False, after: list[str] = ()) -> str:
    """The healthy log with a second engine: every ``Engine 000`` throughput line is followed by the same
    line for ``Engine 001`` until ``stop`` (HH:MM:SS); ``last_idle`` makes Engine 001's last line an idle
    one; ``after`` are lines appended to the log right after Engine 001's last line."""
    out, last = [], None
    for line in HEALTHY:
        out.append(line)
        if _THROUGHPUT in line:
            when = _at(line)
            if stop is None or when <= stop:
                last = len(out)
                out.append(line.replace("Engine 000:", "Engine 001:"))
            elif after:
                out.extend(after)
                after = []
    if last_idle and stop is not None:
        out[last] = re.sub(r"Avg prompt throughput: [0-9.]+", "Avg prompt throughput: 0.0", out[last])
        out[last] = re.sub(r"Avg generation throughput: [0-9.]+", "Avg generation throughput: 0.0", out[last])
        out[last] = re.sub(r"Running: \d+ reqs, Waiting: \d+ reqs", "Running: 0 reqs, Waiting: 0 reqs", out[last])
    return "\n".join(out) + "\n"


def _findings(tmp_path: Path, files: dict[str, str], now: datetime | None = None) -> list:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        os.utime(path, (MTIME, MTIME))  # year-less vLLM stamps take the year of the file's time
    report = analyze([str(tmp_path)], Settings(now=now))
    return [f for f in report.findings if f.rule_id == SILENCE_ID]


def test_an_engine_that_stops_while_the_other_goes_on_is_named_with_its_last_line(tmp_path):
    found = _findings(tmp_path, {"node-0/vllm-serve.log": two_engines(stop="14:20:02")})
    assert len(found) == 1
    f = found[0]
    assert f.severity == "error" and f.category == "engine"
    assert f.facts["quiet_first"] == "Engine 001 @ node-0" and f.facts["quiet_engines"] == ["Engine 001 @ node-0"]
    assert "Engine 001 @ node-0 went quiet first" in said(f.summary) and "2025-09-03 14:20:02" in said(f.summary)
    assert f.first_seen == datetime(2025, 9, 3, 14, 20, 2)
    # The evidence names the quiet engine's last line first, then the last line of the engine that went on.
    first = f.evidence[0]
    assert "Engine 001:" in first.text and "14:20:02" in first.text
    assert first.text == (tmp_path / "node-0/vllm-serve.log").read_text().splitlines()[first.line - 1]
    assert "Engine 000:" in f.evidence[1].text and "14:32:42" in f.evidence[1].text
    assert set(f.facts["last_lines"]) == {"Engine 001 @ node-0", "Engine 000 @ node-0"}
    assert f.facts["interval_s"] == 10.0 and f.facts["quiet_s"] == 760.0 and f.facts["running_reqs"] > 0


@pytest.mark.parametrize("case", ["both go on", "idle", "error after", "shut down", "too short"])
def test_near_misses_raise_no_hang(tmp_path, case):
    text = {
        "both go on": lambda: two_engines(),
        "idle": lambda: two_engines(stop="14:20:02", last_idle=True),
        "error after": lambda: two_engines(stop="14:20:02", after=[
            "(APIServer pid=3280921) ERROR 09-03 14:20:10 [core_client.py:564] Engine core proc EngineCore_DP1 died "
            "unexpectedly, shutting down client."]),
        "shut down": lambda: two_engines(stop="14:20:02", after=[
            "(EngineCore_DP1 pid=3281208) INFO 09-03 14:20:05 [core.py:700] Shutting down."]),
        "too short": lambda: two_engines(stop="14:32:22"),  # quiet for 2 of its 10 s intervals
    }[case]()
    assert _findings(tmp_path, {"node-0/vllm-serve.log": text}) == []


def test_a_server_restarted_into_a_new_file_is_no_hang(tmp_path):
    """The first process's lines stop (killed, no word); a new process of the same engine writes a new file."""
    lines = two_engines().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if "14:20:02" in line)
    later = [line for line in lines[cut:] if _at(line) is None or _at(line) > "14:21:00"]
    assert _findings(tmp_path, {"node-0/vllm_ascend_20250903_140000_100.log": "".join(lines[:cut]),
                                "node-0/vllm_ascend_20250903_142100_200.log": "".join(later)}) == []


def test_the_quiet_node_is_named_when_its_other_files_still_grow(tmp_path):
    """Two nodes, one engine each: node-1's throughput lines stop while its plog and node-0 go on."""
    node1 = [line for line in HEALTHY if not ((_THROUGHPUT in line or "SpecDecoding metrics" in line)
                                              and _at(line) > "14:25:02")]
    plog = [f"[INFO] HCCL(9501,python3):2025-09-03-14:{m:02d}:00.000.000 [heartbeat.cc:120] [9501]heartbeat send "
            f"to rank[0] ok" for m in range(20, 33)]
    found = _findings(tmp_path, {"node-0/vllm-serve.log": "\n".join(HEALTHY) + "\n",
                                 "node-1/vllm-serve.log": "\n".join(node1) + "\n",
                                 "node-1/plog/plog-9501_20250903140000000.log": "\n".join(plog) + "\n"})
    assert [f.facts["quiet_first"] for f in found] == ["Engine 000 (vllm-serve.log) @ node-1"]
    assert found[0].nodes == ["node-1"] and found[0].evidence[0].file.endswith("node-1/vllm-serve.log")


def test_every_engine_quiet_is_a_hang_only_against_a_later_clock(tmp_path):
    """All ranks stuck at once (vllm-ascend#8975): the logs alone end with the lines, so a batch run sees no
    silence; watch's clock (``Settings.now``) does."""
    files = {"node-0/vllm-serve.log": two_engines(stop="14:32:42")}
    assert _findings(tmp_path, files) == []
    found = _findings(tmp_path, files, now=datetime(2025, 9, 3, 14, 37, 42))
    assert len(found) == 1 and found[0].count == 2 and found[0].facts["quiet_s"] == 300.0


def test_the_pass_on_frames(tmp_path):
    """find_silence on the frames of a read, without the pipeline: None without a periodic series."""
    (tmp_path / "vllm-serve.log").write_text(two_engines(stop="14:20:02"), encoding="utf-8")
    os.utime(tmp_path / "vllm-serve.log", (MTIME, MTIME))
    settings = Settings()
    rules, _ = load_catalog(settings)
    parsed = read_paths([str(tmp_path)], settings, filters_for(rules))
    assert find_silence(parsed.records, None, registry.periodic_signals()) is None
    assert find_silence(parsed.records, parsed.series, {}) is None
    found = find_silence(parsed.records, parsed.series, registry.periodic_signals())
    assert found is not None and "最先静默" in said(found.summary, "zh") and found.evidence[0].text == ""


def test_the_cli_reports_it_and_selection_names_it(tmp_path):
    (tmp_path / "node-0").mkdir()
    (tmp_path / "node-0" / "vllm-serve.log").write_text(two_engines(stop="14:20:02"), encoding="utf-8")
    result = run_cli("--format", "json", str(tmp_path))
    ids = [f["rule_id"] for f in json.loads(result.stdout)["findings"]]
    assert SILENCE_ID in ids and result.exit_code == 1
    result = run_cli("--format", "json", "--ignore", "engine-went-quiet", str(tmp_path))
    assert SILENCE_ID not in [f["rule_id"] for f in json.loads(result.stdout)["findings"]]


def test_no_sample_reports_a_hang():
    for sample in ("healthy", "kv-exhaustion", "mtp-ineffective", "two-node-aicore", "mindie-deepseek"):
        report = analyze([str(SAMPLES / sample)], Settings())
        assert SILENCE_ID not in [f.rule_id for f in report.findings], sample


def test_a_rotated_log_is_one_stream_and_one_fingerprint(tmp_path):
    """The engine's lines go on in the file that replaced the rotated one: no hang; and a finding keeps its
    fingerprint whichever file of the rotation its first line is in."""
    from diagnose.analysis.fingerprint import file_shape, unrotated

    lines = two_engines().splitlines(keepends=True)
    half = len(lines) // 2
    assert _findings(tmp_path, {"node-0/vllm-serve.log.1": "".join(lines[:half]),
                                "node-0/vllm-serve.log": "".join(lines[half:])}) == []
    assert file_shape("node-0/vllm-serve.log.1") == file_shape("node-0/vllm-serve.log") == "vllm-serve.log"
    assert file_shape("vllm_ascend_20250903_140000_77_002.log") == file_shape("vllm_ascend_20250903_140000_77.log")
    assert unrotated("node-0/app.log-20250903") == "node-0/app.log" and unrotated("plog-1_2.log") == "plog-1_2.log"


def test_streams_of_the_series_by_log_and_engine_label():
    """The streams come from the series with its names categorical (diagnose/analysis/silence.py ``_streams``):
    a rotation's files are one stream, ``#n`` suffixes and a missing engine are labels of their own, a stream of
    two times is too short and a value without a time is no line; the last line is the state line of the last
    time."""
    from datetime import timedelta

    import polars as pl

    from diagnose.analysis.silence import _streams
    from diagnose.model.series import SERIES_SCHEMA

    start, rows = datetime(2025, 9, 3, 14), []
    for file, node, engine, at, n in [("n0/app.log.1", "node-0", "Engine 000", 0, 20),
                                      ("n0/app.log", "node-0", "Engine 000", 300, 20),
                                      ("n1/vllm.log", "node-1", None, 0, 30),
                                      ("n1/vllm.log", "node-1", "Engine 000#1", 0, 30),
                                      ("n2/x.log", None, "Engine 001", 10, 2)]:
        for i in range(n):
            for k, sig in enumerate(("kv_cache_usage_pct", "running_reqs", "waiting_reqs", "gen_throughput")):
                rows.append(("vllm", file, 100 + i, node, start + timedelta(seconds=at + 10 * i), engine, sig,
                             float(k + i % 3)))
    rows.append(("vllm", "n9/nots.log", 1, "node-9", None, "Engine 000", "running_reqs", 1.0))
    got = _streams(pl.DataFrame(rows, schema=SERIES_SCHEMA, orient="row"), registry.periodic_signals())
    got = got.sort("node", "engine").select("node", "engine", "n", "interval_s", "file", "last_line", "running_reqs")
    assert got.rows() == [("node-0", "Engine 000", 40, 10.0, "n0/app.log", 119, 1.0 + 19 % 3),
                          ("node-1", "", 30, 10.0, "n1/vllm.log", 129, 1.0 + 29 % 3),
                          ("node-1", "Engine 000", 30, 10.0, "n1/vllm.log", 129, 1.0 + 29 % 3)]
