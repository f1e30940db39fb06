"""The run's budget of periodic samples (``--budget max_series_rows``, diagnose/pipeline/samples.py): samples
past it are not kept, the files that lost some are read in part with the reason, their error lines are still
read, and the passes that read how a series ends do not take the cut for the end of the file.

The logs are generated here: vLLM V1 throughput lines every 10 s (six periodic samples a line), as the
metric-only attack of bench/attacks.py writes them."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl

from conftest import run_cli
from diagnose.messages import messages
from diagnose.model.series import SERIES_SCHEMA, cap, trim

START = datetime(2025, 9, 3, 14, 0, 0)
OOM = "(APIServer pid=7) ERROR {t} [core.py:811] RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB"


def metric(i: int, engine: int = 0, running: int = 4) -> str:
    t = (START + timedelta(seconds=10 * i)).strftime("%m-%d %H:%M:%S")
    return (f"(APIServer pid=7) INFO {t} [loggers.py:118] Engine {engine:03d}: Avg prompt throughput: "
            f"{100 + i % 7}.0 tokens/s, Avg generation throughput: {900 + i % 11}.0 tokens/s, Running: {running} "
            f"reqs, Waiting: 0 reqs, GPU KV cache usage: {10 + i % 50}.5%, Prefix cache hit rate: 0.0%")


def stamp(i: int) -> str:
    return (START + timedelta(seconds=10 * i)).strftime("%m-%d %H:%M:%S")


def report(*args: str) -> tuple[int, dict]:
    result = run_cli("--format", "json", *args)
    return result.exit_code, json.loads(result.stdout)


def test_the_cut_is_reported_and_the_error_after_it_is_found(tmp_path: Path):
    lines = [metric(i) for i in range(400)]
    lines.insert(300, OOM.format(t=stamp(300)))  # far past the budget of 100 lines
    log = tmp_path / "serve.log"
    log.write_text("\n".join(lines) + "\n")
    code, full = report(str(log))
    assert full["coverage"]["status"] == "complete"
    code, cut = report("--budget", "max_series_rows=600", str(log))
    assert "MEM001" in [f["rule_id"] for f in cut["findings"]]  # the error line after the cut is matched
    (entry,) = cut["coverage"]["incomplete"]
    assert entry["path"] == str(log)
    # 400 lines of 6 samples; the first 600 (100 lines) kept
    assert entry["reason"].startswith("1800 periodic metric samples past the first 600 of the run were not kept")
    assert cut["coverage"]["status"] == "partial" and code != 0
    zh = run_cli("--lang", "zh", "--budget", "max_series_rows=600", str(log)).stdout
    assert "个周期性指标样本" in "".join(zh.split())


def test_a_cut_file_is_no_hang(tmp_path: Path, monkeypatch):
    """Engine 000 serves for 30 min, then stops while another node's log goes on: a hang (ENG020). With its
    samples cut after 100 lines (16 min), its last sample kept is the budget's end, not a silence."""
    import diagnose.pipeline.stages as stages

    node0 = tmp_path / "node-0" / "serve.log"
    node1 = tmp_path / "node-1" / "serve.log"
    node0.parent.mkdir()
    node1.parent.mkdir()
    node0.write_text("\n".join(metric(i) for i in range(180)) + "\n")
    warning = f"(APIServer pid=7) WARNING {stamp(400)} [api_server.py:9] slow client"
    node1.write_text("\n".join([*(metric(i, engine=1) for i in range(400)), warning]) + "\n")
    _, whole = report(str(tmp_path))
    assert "ENG020" in [f["rule_id"] for f in whole["findings"]]
    _, cut = report("--budget", "max_series_rows=600", str(tmp_path))
    assert "ENG020" not in [f["rule_id"] for f in cut["findings"]]
    assert {e["path"] for e in cut["coverage"]["incomplete"]} == {str(node0), str(node1)}
    monkeypatch.setattr(stages, "cut_files", lambda inputs: {})  # the cut not said: a hang at the budget's end
    _, blind = report("--budget", "max_series_rows=600", str(tmp_path))
    assert "ENG020" in [f["rule_id"] for f in blind["findings"]]


def test_files_past_the_budget_are_cut_in_walk_order_whatever_finishes_first(tmp_path: Path, monkeypatch):
    """The samples kept are the budget's first lines in the walk's order, read in a worker or not."""
    import diagnose.pipeline.reading as reading

    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.log").write_text("\n".join(metric(i) for i in range(120)) + "\n")
    _, one = report("--budget", "max_series_rows=1000", str(tmp_path))
    monkeypatch.setattr(reading, "SMALL_FILE", 1)  # every file through the workers
    _, two = report("--budget", "max_series_rows=1000", str(tmp_path))
    cuts = {e["path"].rsplit("/", 1)[-1]: e["reason"].split()[0] for e in one["coverage"]["incomplete"]}
    # a keeps 720, b 276 (46 whole lines of the 280 left), c nothing
    assert cuts == {"b.log": "444", "c.log": "720"}
    assert one["coverage"] == two["coverage"]


def test_cap_and_trim_cut_between_lines():
    rows = pl.DataFrame({
        "file": ["f"] * 7, "line": [1, 1, 2, 2, 2, 3, 3], "source": ["vllm"] * 7, "node": [None] * 7,
        "ts": [None] * 7, "engine": ["e"] * 7, "signal": ["running_reqs", "x", "running_reqs", "waiting_reqs",
                                                          "running_reqs", "running_reqs", "waiting_reqs"],
        "value": [1.0] * 7, "text": [None] * 7,
    }, schema_overrides={"line": pl.UInt32, "ts": pl.Datetime("us"), "node": pl.String, "text": pl.String})
    spec = {"vllm": frozenset({"running_reqs", "waiting_reqs"})}
    kept, taken, dropped = cap(rows, spec, 3)
    # line 1 has one periodic sample, line 2 three: 4 > 3, so only line 1's sample and the other signal stay
    assert kept["line"].to_list() == [1, 1] and (taken, dropped) == (1, 5)
    series = rows.filter(pl.col("signal") != "x").select(pl.col(c).cast(t) for c, t in SERIES_SCHEMA.items())
    kept, out = trim(series, 4)
    assert kept["line"].to_list() == [1, 2, 2, 2] and out["line"].to_list() == [3]


def test_the_reason_is_in_both_languages():
    for lang in ("en", "zh"):
        assert "600" in messages(lang)("input_note.samples_cut", n=5, limit=600)


def test_a_periodic_signal_past_the_cut_is_not_missing(tmp_path: Path, monkeypatch):
    """MTP configured and serving; its SpecDecoding lines start after 150 metric lines. With the budget cut at
    100 lines they are not kept: MTP002 (MTP configured, no acceptance metrics) must not take them for absent."""
    import diagnose.pipeline.stages as stages

    args = ("(APIServer pid=7) INFO 09-03 13:59:00 [utils.py:326] non-default args: {'model': '/models/DeepSeek-R1',"
            " 'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 1}}")
    spec = ("(APIServer pid=7) INFO {t} [metrics.py:86] SpecDecoding metrics: Draft acceptance rate: 81.2%, Mean "
            "acceptance length: 1.81, Accepted: 812 tokens, Drafted: 1000 tokens, Per-position acceptance rate: 0.812")
    lines = [args]
    for i in range(200):
        lines.append(metric(i, running=30))
        if i >= 150:
            lines.append(spec.format(t=stamp(i)))
    log = tmp_path / "node-0" / "serve.log"
    log.parent.mkdir()
    log.write_text("\n".join(lines) + "\n")
    _, whole = report(str(tmp_path))
    assert "MTP002" not in [f["rule_id"] for f in whole["findings"]]
    _, cut = report("--budget", "max_series_rows=600", str(tmp_path))
    assert "MTP002" not in [f["rule_id"] for f in cut["findings"]] and cut["coverage"]["status"] == "partial"
    monkeypatch.setattr(stages, "cut_files", lambda inputs: {})  # the cut not said: the metrics look absent
    _, blind = report("--budget", "max_series_rows=600", str(tmp_path))
    assert "MTP002" in [f["rule_id"] for f in blind["findings"]]


def test_a_cut_file_is_no_short_excerpt(tmp_path: Path, monkeypatch):
    """b.log begins with two saturated intervals (KV001 needs three) and runs 200 more. Cut after those two,
    its series looks like a pasted excerpt that ends where the trouble is; it is not one."""
    import diagnose.pipeline.stages as stages

    (tmp_path / "a.log").write_text("\n".join(metric(i) for i in range(100)) + "\n")
    hot = [metric(i).replace("Waiting: 0 reqs", f"Waiting: {i + 1} reqs").replace(f"{10 + i % 50}.5%", "99.0%")
           for i in range(2)]
    (tmp_path / "b.log").write_text("\n".join([*hot, *(metric(i) for i in range(2, 200))]) + "\n")
    _, whole = report(str(tmp_path))
    assert "KV001" not in [f["rule_id"] for f in whole["findings"]]
    _, cut = report("--budget", "max_series_rows=612", str(tmp_path))
    assert "KV001" not in [f["rule_id"] for f in cut["findings"]]
    assert [e["path"].rsplit("/", 1)[-1] for e in cut["coverage"]["incomplete"]] == ["b.log"]
    monkeypatch.setattr(stages, "cut_files", lambda inputs: {})
    _, blind = report("--budget", "max_series_rows=612", str(tmp_path))
    assert "KV001" in [f["rule_id"] for f in blind["findings"]]
