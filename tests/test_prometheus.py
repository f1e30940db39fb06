"""vLLM /metrics snapshots (Prometheus text exposition): every variant the parser reads, and the rules on them."""

from __future__ import annotations

import polars as pl

import helpers
from conftest import SAMPLES, run_json
from diagnose.parsers.registry import sniff

CLASSIC = """
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="DeepSeek-R1"} 7.0
vllm:num_requests_waiting{engine="1",model_name="DeepSeek-R1"} 0.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="DeepSeek-R1"} 0.981
vllm:kv_cache_usage_perc{engine="1",model_name="DeepSeek-R1"} 0.42
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="DeepSeek-R1"} 12.0
vllm:num_preemptions_total{engine="1",model_name="DeepSeek-R1"} 0.0
# HELP vllm:num_preemptions_created Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_created gauge
vllm:num_preemptions_created{engine="0",model_name="DeepSeek-R1"} 1.7568634e+09
"""


def _values(signals: pl.DataFrame) -> dict[tuple[str, str], float]:
    return {(s, e): v for s, e, v in signals.select("signal", "engine", "value").iter_rows()}


def test_classic_exposition_gauges_and_counters_per_engine():
    records, signals = helpers.parse("vllm-metrics", CLASSIC, "metrics.txt")
    got = _values(signals)
    assert got[("waiting_reqs", "Engine 000")] == 7.0 and got[("waiting_reqs", "Engine 001")] == 0.0
    assert abs(got[("kv_cache_usage_pct", "Engine 000")] - 98.1) < 1e-9
    assert got[("preemptions_total", "Engine 000")] == 12.0
    assert ("preemptions_total", "Engine 001") in got  # a zero counter is a value too
    # each value sits on its own sample line; every line is a record, none dropped
    line = signals.filter((pl.col("signal") == "waiting_reqs") & (pl.col("engine") == "Engine 001"))["line"][0]
    assert records.filter(pl.col("line") == line)["text"][0].startswith('vllm:num_requests_waiting{engine="1"')
    assert records.height == len(CLASSIC.strip("\n").split("\n")) and records["parsed"].all()


def test_openmetrics_style_type_line_and_old_metric_names():
    text = """
# HELP vllm:gpu_cache_usage_perc GPU KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="DeepSeek-R1"} 0.5
# HELP vllm:num_preemptions Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions counter
vllm:num_preemptions_total{model_name="DeepSeek-R1"} 3.0
"""
    _, signals = helpers.parse("vllm-metrics", text, "metrics.txt")
    got = _values(signals)
    assert got[("kv_cache_usage_pct", "engine")] == 50.0  # no engine label: one engine
    assert got[("preemptions_total", "engine")] == 3.0


def test_several_snapshots_in_one_file_dated_by_the_date_lines_above_them():
    text = ("Wed Sep  3 14:20:00 CST 2025\n" + CLASSIC.strip("\n") + "\n"
            "2025-09-03 14:21:00\n" + CLASSIC.strip("\n").replace("} 12.0", "} 40.0") + "\n")
    records, signals = helpers.parse("vllm-metrics", text, "metrics.txt")
    pre = signals.filter((pl.col("signal") == "preemptions_total") & (pl.col("engine") == "Engine 000"))
    assert pre["value"].to_list() == [12.0, 40.0]
    assert [t.minute for t in pre["ts"].to_list()] == [20, 21]


def test_a_cut_snapshot_keeps_what_it_has_and_no_line_is_lost():
    cut = CLASSIC.strip("\n").split("\n")[:9]  # stops inside the preemptions family
    records, signals = helpers.parse("vllm-metrics", cut + ['vllm:num_preemptions_total{engine="0",mod'], "m.txt")
    assert records.height == len(cut) + 1
    assert _values(signals)[("waiting_reqs", "Engine 000")] == 7.0  # the complete families are read
    last = records.filter(pl.col("line") == records.height).row(0, named=True)
    assert not last["parsed"] and last["text"].endswith(",mod")  # the cut line is kept, as a raw record


def test_two_snapshots_give_the_rates_of_the_interval_and_a_restart_is_not_negative():
    report_dir = SAMPLES / "vllm-metrics"
    code, data = run_json(str(report_dir))
    ids = [f["rule_id"] for f in data["findings"]]
    assert code == 1 and ids[:2] == ["MTP005", "KV007"], ids
    kv = next(f for f in data["findings"] if f["rule_id"] == "KV007")
    assert "59 in the last interval" in kv["summary"] and "99.3%" in kv["summary"]
    from diagnose.parsers.kinds.prometheus import _rates

    rows = pl.DataFrame({
        "file": ["a", "b"], "line": [1, 1], "source": ["vllm-metrics"] * 2, "node": ["n"] * 2,
        "ts": [None, None], "engine": ["Engine 000"] * 2, "signal": ["preemptions_total"] * 2,
        "value": [50.0, 4.0], "text": [None, None],
    }, schema={"file": pl.String, "line": pl.UInt32, "source": pl.String, "node": pl.String,
               "ts": pl.Datetime("us"), "engine": pl.String, "signal": pl.String, "value": pl.Float64,
               "text": pl.String})
    out = _rates(rows, None)
    assert out.filter(pl.col("signal") == "preemptions_delta")["value"].to_list() == [4.0]  # restarted: 4 since


def test_sniffed_by_content_whatever_the_name():
    assert sniff("curl-output.txt", CLASSIC.strip("\n").split("\n")) == "vllm-metrics"
    assert sniff("node-0/metrics.txt", ["vllm:num_requests_running 3.0"]) == "vllm-metrics"
    assert sniff("serve.log", ["INFO 09-03 14:20:00 [loggers.py:1] Engine 000: Avg prompt throughput: 1.0 tokens/s"]) == "vllm"


NON_FINITE = """
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="DeepSeek-R1"} NaN
vllm:kv_cache_usage_perc{engine="1",model_name="DeepSeek-R1"} +Inf
vllm:kv_cache_usage_perc{engine="2",model_name="DeepSeek-R1"} 0.5
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="DeepSeek-R1"} -Inf
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="DeepSeek-R1"} NaN
"""


def test_non_finite_values_are_unknown_not_signals():
    records, signals = helpers.parse("vllm-metrics", NON_FINITE, "metrics.txt")
    got = _values(signals)
    # NaN and +-Inf are no measurement: no signal at all, so no rule reads "KV cache usage at inf%"
    assert got == {("kv_cache_usage_pct", "Engine 002"): 50.0}
    assert records.height == len(NON_FINITE.strip("\n").split("\n"))  # every line kept as a record


def test_a_snapshot_of_non_finite_values_reports_no_inf_and_stays_small(tmp_path):
    import sys

    from conftest import ROOT

    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import peak
    finally:
        sys.path.pop(0)
    (tmp_path / "metrics.txt").write_text("".join(NON_FINITE * 50))
    proc, own = peak.run([sys.executable, "-m", "diagnose", "--format", "json", "--allow-partial", "--exit-zero",
                          str(tmp_path / "metrics.txt")], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "inf%" not in proc.stdout.lower() and "nan%" not in proc.stdout.lower()
    assert own is not None and own["maxrss_mb"] < 500, own
