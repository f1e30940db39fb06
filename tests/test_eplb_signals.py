"""Every EPLB log line and metric as signals, in each generation's exact wording, each with a near miss.

The wordings are the sources' format strings filled in (the reference profiling-and-expert-load.md §D2-D7 names
the commits): vLLM ``vllm/distributed/eplb/eplb_state.py`` (three generations), vllm-ascend ``eplb_worker.py``
(two), SGLang ``expert_distribution.py`` (the balancedness line and the GPU-count histogram), MindIE FlashLB
``flash_lb.py``, vllm-ascend's ``eplb:expert_hotness:*`` gauges (``observability/handlers.py``)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import helpers
from diagnose.ingest.walk import iter_sources
from diagnose.parsers.registry import sniff
from diagnose.pipeline import RuleFilters, Settings, read

VLLM = {
    # generation 1, the first release with EPLB (@0014ec6c58e1): no step number, no model
    "generation 1": ("(EngineCore_DP0 pid=948) INFO 09-17 17:43:06 [distributed/eplb/eplb_state.py:390] "
                     "EPLB step: avg_tokens=1024.50, max_tokens=1500, balancedness=0.6830",
                     {"eplb_avg_tokens": 1024.5, "eplb_max_tokens": 1500.0, "eplb_balancedness": 0.683}),
    "generation 2": ("(EngineCore_DP0 pid=948) INFO 03-02 08:00:00 [eplb_state.py:540] EPLB step: 2250 for model "
                     "DeepSeek-R1: avg_tokens=8841.25, max_tokens=11020, balancedness=0.8023",
                     {"eplb_avg_tokens": 8841.25, "eplb_max_tokens": 11020.0, "eplb_balancedness": 0.8023}),
    "generation 3": ("(APIServer pid=90) INFO 10-02 13:00:00 [eplb_state.py:512] EPLB step: 3000 for model 0: "
                     "avg_tokens=10412.50, max_tokens=14020, balancedness=0.7427, steps until the next "
                     "rearrangement: 2990",
                     {"eplb_avg_tokens": 10412.5, "eplb_max_tokens": 14020.0, "eplb_balancedness": 0.7427,
                      "eplb_steps_to_rearrangement": 2990.0}),
    # a fork appends imbalanceness=..., lower_bound=...: balancedness stays the 4-decimal value, not a later one
    "fork with imbalanceness": ("INFO 05-01 09:00:00 [eplb_state.py:390] EPLB step: avg_tokens=10.00, max_tokens=20, "
                                "balancedness=0.5000, imbalanceness=1.0000, lower_bound=0.2000, upper_bound=2.0000",
                                {"eplb_avg_tokens": 10.0, "eplb_max_tokens": 20.0, "eplb_balancedness": 0.5}),
}
VLLM_ASCEND = {
    "v0.16-v0.20": ("INFO 05-12 08:40:02 [eplb_worker.py:140] [Expert Hotness] Current: mean=1.233, max=1.870, "
                    "Updated: mean=1.020, max=1.090",
                    {"eplb_imbalance_current_mean": 1.233, "eplb_imbalance_current_max": 1.87,
                     "eplb_imbalance_updated_mean": 1.02, "eplb_imbalance_updated_max": 1.09}),
    "v0.21+": ("INFO 11-24 10:12:11 [eplb_worker.py:318] [eplb/worker] Expert hotness imbalance, current: "
               "mean=1.372 max=2.410, updated: mean=1.041 max=1.122",
               {"eplb_imbalance_current_mean": 1.372, "eplb_imbalance_current_max": 2.41,
                "eplb_imbalance_updated_mean": 1.041, "eplb_imbalance_updated_max": 1.122}),
}
SGLANG = ("[2025-07-01 10:01:00 DP0 TP0 EP0] [Expert Balancedness] forward_pass_id=1523 current_pass_balancedness=0.876 "
          "last_10_average_balancedness=0.891 last_100_average_balancedness=0.883 "
          "last_1000_average_balancedness=0.879  gpu_physical_count_sum=12845")
FLASHLB = ("[2026-04-23 10:00:00,123] [1234] [5678] [llmmodels] [INFO] [flash_lb.py-532] : "
           "new_par: 1.0832415, cur_par: 1.4120367, ptr_par: 1.2, change: [ 3 10 41]")
NEAR_MISSES = {
    "vllm": [
        "(APIServer pid=90) INFO 10-02 13:00:00 [eplb_state.py:600] Rearranging experts (profile)...",
        "(APIServer pid=90) INFO 10-02 13:00:00 [eplb_state.py:640] Rearranged experts in 1.20 s.",
        "INFO 10-02 13:00:00 [config.py:12] log_balancedness=True, EPLB step interval 3000",  # words, no line
        "INFO 05-12 08:40:02 [eplb_worker.py:140] [eplb/updator] EPLB warm-up completed",
        "[2025-07-01 10:00:05 TP0] ExpertDistributionRecorder auto start record since enable_expert_distribution_metrics",
    ],
    "mindie": [
        "[2026-04-23 10:06:00,123] [1234] [5678] [llmmodels] [INFO] [eplb_worker.py-99] : the planner compares "
        "new_par: with cur_par before it changes layers",
        "[2026-04-23 10:06:00,123] [1234] [5678] [llmmodels] [INFO] [flash_lb.py-532] : new_par: 1.08, cur_par: 1.41",
        "[2026-04-23 10:06:00,123] [1234] [5678] [llmmodels] [INFO] [model.py-459] : EPLB level is : 2",
    ],
}


def _values(signals: pl.DataFrame) -> dict[str, float]:
    return {s: v for s, v in signals.select("signal", "value").iter_rows() if s.startswith(("eplb_", "flashlb_"))}


@pytest.mark.parametrize("case", sorted(VLLM))
def test_every_vllm_generation_gives_balancedness_and_tokens(case: str):
    line, want = VLLM[case]
    got = _values(helpers.parse("vllm", line)[1])
    assert got == pytest.approx(want), case


@pytest.mark.parametrize("case", sorted(VLLM_ASCEND))
def test_both_vllm_ascend_hotness_lines(case: str):
    line, want = VLLM_ASCEND[case]
    assert _values(helpers.parse("vllm", line)[1]) == pytest.approx(want)


def test_sglang_balancedness_line_every_value():
    got = _values(helpers.parse("vllm", SGLANG)[1])
    assert got == pytest.approx({"eplb_pass_balancedness": 0.876, "eplb_balancedness_last_10": 0.891,
                                 "eplb_balancedness_last_100": 0.883, "eplb_balancedness_last_1000": 0.879,
                                 "eplb_gpu_physical_count_sum": 12845.0})


def test_mindie_flashlb_planning_round():
    _, signals = helpers.parse("mindie", FLASHLB + "\n" + FLASHLB.replace("change: [ 3 10 41]", "change: []")
                               .replace("new_par: 1.0832415", "new_par: nan"), "mindie-llm.log")
    first = signals.filter(pl.col("line") == 1)
    assert _values(first) == pytest.approx({"flashlb_new_par": 1.0832415, "flashlb_cur_par": 1.4120367,
                                            "flashlb_ptr_par": 1.2, "flashlb_layers_changed": 3.0})
    assert first.filter(pl.col("signal") == "flashlb_layers_changed")["text"][0] == "3,10,41"
    second = _values(signals.filter(pl.col("line") == 2))
    assert "flashlb_new_par" not in second and second["flashlb_layers_changed"] == 0  # nan is no value


@pytest.mark.parametrize("kind", sorted(NEAR_MISSES))
def test_near_misses_give_no_eplb_signal(kind: str):
    _, signals = helpers.parse(kind, NEAR_MISSES[kind], "server.log")
    assert _values(signals) == {}


def test_a_sglang_log_of_no_known_kind_still_gives_its_signals(tmp_path: Path):
    """SGLang's logger head (`[date time TP0]`) is no kind of its own: the line family is read anyway."""
    log = tmp_path / "sglang_server.log"
    log.write_text("[2025-07-01 10:00:00] server_args=ServerArgs(model_path='/models/DeepSeek-V3', ep_size=16)\n"
                   + SGLANG + "\n" + SGLANG.replace("10:01:00", "10:01:01").replace("0.876", "0.612") + "\n")
    parsed = read([s for s in iter_sources([str(log)])], Settings(), RuleFilters())
    got = parsed.signals.filter(pl.col("signal") == "eplb_pass_balancedness").sort("ts")
    assert got["value"].to_list() == [0.876, 0.612] and got["ts"].dt.second().to_list() == [0, 1]


GAUGES = """Mon Nov  2 10:00:00 CST 2026
# HELP eplb:expert_hotness:current_mean EPLB expert hotness
# TYPE eplb:expert_hotness:current_mean gauge
eplb:expert_hotness:current_mean{phase="all",rank="0"} 1.372
# HELP eplb:expert_hotness:current_max EPLB expert hotness
# TYPE eplb:expert_hotness:current_max gauge
eplb:expert_hotness:current_max{phase="all",rank="0"} 2.41
# HELP eplb:expert_hotness:update_max EPLB expert hotness
# TYPE eplb:expert_hotness:update_max gauge
eplb:expert_hotness:update_max{phase="all",rank="0"} 1.122
# HELP eplb:expert_hotness:imbalance EPLB per-layer imbalance
# TYPE eplb:expert_hotness:imbalance gauge
eplb:expert_hotness:imbalance{layer="0",phase="current",rank="0"} 1.21
eplb:expert_hotness:imbalance{layer="1",phase="current",rank="0"} 2.41
eplb:expert_hotness:imbalance{layer="0",phase="update",rank="0"} 1.02
# HELP eplb:expert_weight_update:duration EPLB weight update duration
# TYPE eplb:expert_weight_update:duration gauge
eplb:expert_weight_update:duration{phase="all"} 3.5
# HELP sglang:eplb_gpu_physical_count The selected count of physical experts on each layer and GPU rank.
# TYPE sglang:eplb_gpu_physical_count histogram
sglang:eplb_gpu_physical_count_bucket{layer="3",le="0.0"} 10.0
sglang:eplb_gpu_physical_count_bucket{layer="3",le="1.0"} 40.0
sglang:eplb_gpu_physical_count_bucket{layer="3",le="2.0"} 60.0
sglang:eplb_gpu_physical_count_bucket{layer="3",le="+Inf"} 60.0
sglang:eplb_gpu_physical_count_count{layer="3"} 60.0
sglang:eplb_gpu_physical_count_sum{layer="3"} 70.0
# HELP sglang:e2e_request_latency_seconds Histogram of end-to-end request latency in seconds
# TYPE sglang:e2e_request_latency_seconds histogram
sglang:e2e_request_latency_seconds_bucket{layer="3",le="0.1"} 5.0
sglang:e2e_request_latency_seconds_bucket{layer="3",le="+Inf"} 9.0
"""


def test_gauges_of_vllm_ascend_and_the_sglang_histogram():
    assert sniff("metrics.prom", GAUGES.splitlines()) == "vllm-metrics"
    assert sniff("scrape.log", GAUGES.splitlines()[1:]) == "vllm-metrics"  # by content too, without the date
    records, signals = helpers.parse("vllm-metrics", GAUGES, "metrics.prom")
    got = {(s, e): v for s, e, v in signals.select("signal", "engine", "value").iter_rows()}
    assert got == pytest.approx({
        ("eplb_imbalance_current_mean", "engine"): 1.372, ("eplb_imbalance_current_max", "engine"): 2.41,
        ("eplb_imbalance_updated_max", "engine"): 1.122,
        ("eplb_layer_imbalance", "layer 0"): 1.21, ("eplb_layer_imbalance", "layer 1"): 2.41,
        ("eplb_layer_imbalance_updated", "layer 0"): 1.02,
        # buckets are cumulated in the exposition: ranks 0, 1, 2 served 10, 30 and 20 selections
        ("eplb_gpu_physical_count", "layer 3 rank 0"): 10.0, ("eplb_gpu_physical_count", "layer 3 rank 1"): 30.0,
        ("eplb_gpu_physical_count", "layer 3 rank 2"): 20.0, ("eplb_layer_gpu_max_over_mean", "layer 3"): 1.5,
    })  # the duration gauge and the latency histogram (with a `layer` label) are no expert load
    line = signals.filter(pl.col("engine") == "layer 1")["line"][0]
    assert records.filter(pl.col("line") == line)["text"][0].startswith('eplb:expert_hotness:imbalance{layer="1"')
    assert signals["ts"].dt.day().unique().to_list() == [2]
