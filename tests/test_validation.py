"""Validation runs: benchmark/accuracy result parsers, the baseline comparison, the VAL rules, the sample."""

from __future__ import annotations

import json

import polars as pl
import pytest

from diagnose.model import builtins

import helpers
from conftest import SAMPLES, run_cli, run_json
from diagnose.report.comparison import comparison_markdown
from diagnose.validation.baseline import load_baseline
from diagnose.validation.compare import compare_rows
from diagnose.validation.tolerances import Baseline, quant_policy
from diagnose.authoring.fixtures import evaluate
from diagnose.parsers.registry import sniff
from diagnose.pipeline import Settings, analyze

SAMPLE = SAMPLES / "validation-regression"


def parse(kind: str, text: str, path: str = "x/result.json"):
    records, signals = helpers.parse(kind, text, path)
    assert records.height == len(text.strip("\n").split("\n"))  # nothing dropped
    return records, signals


values = helpers.by_signal_engine
by_signal = helpers.by_signal


# --- vllm bench -------------------------------------------------------------------------------------------

SERVE_CURRENT = json.dumps({
    "date": "20251120-101530", "endpoint_type": "openai", "backend": "openai", "label": None,
    "model_id": "DeepSeek-R1-W8A8", "tokenizer_id": "/m/DeepSeek-R1-W8A8", "num_prompts": 64, "request_rate": "inf",
    "burstiness": 1.0, "max_concurrency": 16, "duration": 301.2, "completed": 61, "failed": 3,
    "total_input_tokens": 224000, "total_output_tokens": 62464, "request_throughput": 0.2025, "request_goodput": None,
    "output_throughput": 207.38, "total_token_throughput": 951.06, "max_output_tokens_per_s": 256.0,
    "mean_ttft_ms": 1620.4, "median_ttft_ms": 1544.1, "std_ttft_ms": 301.2, "p99_ttft_ms": 2893.5,
    "mean_tpot_ms": 71.3, "p99_tpot_ms": 88.1, "p99.9_itl_ms": 250.0, "p99_itl_ms": 190.2, "tp": "16",
})


def test_serve_json_current():
    _, sig = parse("vllm-bench", SERVE_CURRENT, "b/openai-infqps-concurrency16-DeepSeek-R1-W8A8-20251120-101530.json")
    v = by_signal(sig)
    assert v["bench_failed_requests"] == 3 and v["bench_completed"] == 61 and v["bench_num_prompts"] == 64
    assert v["bench_p99_tpot_ms"] == 88.1 and v["bench_p99_ttft_ms"] == 2893.5 and v["bench_p99_itl_ms"] == 190.2
    assert v["bench_p99.9_itl_ms"] == 250.0 and "bench_std_ttft_ms" not in v
    assert v["bench_output_throughput"] == 207.38 and v["bench_total_throughput"] == 951.06
    assert v["bench_request_rate"] == float("inf") and v["bench_max_concurrency"] == 16
    assert v["bench_model"] == "DeepSeek-R1-W8A8" and v["bench_tp"] == 16
    engines = set(sig.filter(pl.col("signal").str.contains("_ms$"))["engine"])
    assert engines == {"openai-infqps-concurrency16-DeepSeek-R1-W8A8"}  # timestamp stripped
    assert set(sig["line"]) == {1}


def test_serve_json_legacy_without_failed():
    legacy = {"backend": "vllm", "model_id": "DeepSeek-R1", "num_prompts": 5, "completed": 3, "duration": 10.0,
              "request_goodput:": None, "output_throughput": 100.0, "mean_ttft_ms": 50.0, "p99_tpot_ms": 30.0,
              "input_lens": [1, 1, 1, 1, 1], "output_lens": [10, 0, 12, 0, 9],
              "errors": ["", "Bad Gateway", "", "timeout", ""]}
    _, sig = parse("vllm-bench", json.dumps(legacy, indent=4))
    v = by_signal(sig)
    assert v["bench_failed_requests"] == 2  # from the errors array
    assert v["bench_p99_tpot_ms"] == 30.0
    # indent-4 JSON: each value on the line of its key
    line = sig.filter(pl.col("signal") == "bench_p99_tpot_ms")["line"][0]
    assert line == 10


def test_serve_jsonl_append_keeps_runs_apart():
    a = json.dumps({"completed": 10, "failed": 0, "duration": 5.0, "p99_tpot_ms": 40.0, "max_concurrency": 8})
    b = json.dumps({"completed": 9, "failed": 1, "duration": 5.0, "p99_tpot_ms": 55.0, "max_concurrency": 16})
    _, sig = parse("vllm-bench", a + "\n" + b, "r/sweep.json")
    tpot = sig.filter(pl.col("signal") == "bench_p99_tpot_ms").sort("line")
    assert tpot["value"].to_list() == [40.0, 55.0] and tpot["line"].to_list() == [1, 2]
    assert tpot["engine"].to_list() == ["sweep#1", "sweep#2"]


def test_latency_and_throughput_json():
    lat = json.dumps({"avg_latency": 1.5, "std_latency": 0.1, "latencies": [1.4, 1.6],
                      "percentiles": {"10": 1.3, "50": 1.5, "90": 1.7, "99": 1.9}}, indent=4)
    _, sig = parse("vllm-bench", lat, "r/latency_deepseek_tp16.json")
    v = by_signal(sig)
    assert v["bench_latency_avg_ms"] == 1500.0 and v["bench_latency_p99_ms"] == pytest.approx(1900.0)
    thr = json.dumps({"elapsed_time": 20.0, "num_requests": 200, "total_num_tokens": 40000,
                      "requests_per_second": 10.0, "tokens_per_second": 2000.0, "model_name": "DeepSeek-V3"})
    _, sig = parse("vllm-bench", thr, "r/throughput_deepseek.json")
    v = by_signal(sig)
    assert v["bench_request_throughput"] == 10.0 and v["bench_total_throughput"] == 2000.0
    assert v["bench_model"] == "DeepSeek-V3"


SUMMARY_LEGACY = """
Namespace(backend='vllm', model='/models/DeepSeek-R1-W8A8', max_concurrency=32, temperature=None)
Traffic request rate: inf
============ Serving Benchmark Result ============
Successful requests:                     200       
Benchmark duration (s):                  212.77    
Total input tokens:                      42659     
Total generated tokens:                  43545     
Request throughput (req/s):              0.94      
Output token throughput (tok/s):         204.66    
Total Token throughput (tok/s):          405.16    
---------------Time to First Token----------------
Mean TTFT (ms):                          104.14    
Median TTFT (ms):                        102.22    
P99 TTFT (ms):                           153.82    
-----Time per Output Token (excl. 1st token)------
Mean TPOT (ms):                          38.78     
P99 TPOT (ms):                           45.10     
---------------Inter-token Latency----------------
Mean ITL (ms):                           38.46     
P99 ITL (ms):                            90.02     
==================================================
"""

SUMMARY_CURRENT = """
============ Serving Benchmark Result ============
Successful requests:                     10        
Failed requests:                         2         
Request rate configured (RPS):           10.00     
Benchmark duration (s):                  98.73     
Request throughput (req/s):              0.10      
Output token throughput (tok/s):         303.86    
Peak output token throughput (tok/s):    355.00    
Total token throughput (tok/s):          6786.69   
"""


def test_serve_console_summaries():
    _, sig = parse("vllm-bench", SUMMARY_LEGACY, "logs/bench_serve.log")
    v = by_signal(sig)
    assert v["bench_completed"] == 200 and v["bench_total_throughput"] == 405.16
    assert v["bench_p99_ttft_ms"] == 153.82 and v["bench_p99_tpot_ms"] == 45.10 and v["bench_mean_itl_ms"] == 38.46
    assert v["bench_max_concurrency"] == 32 and v["bench_model"] == "/models/DeepSeek-R1-W8A8"
    assert "bench_temperature" not in v  # temperature=None is not a number
    assert sig.filter(pl.col("signal") == "bench_p99_tpot_ms")["line"][0] == 17
    _, sig = parse("vllm-bench", SUMMARY_CURRENT, "logs/bench_serve.log")
    v = by_signal(sig)
    assert v["bench_failed_requests"] == 2 and v["bench_total_throughput"] == 6786.69
    assert v["bench_request_rate"] == 10.0


def test_latency_throughput_console():
    text = """
Throughput: 4.64 requests/s, 2000.51 total tokens/s, 1010.54 output tokens/s
Total num prompt tokens:  42659
Avg latency: 1.2345 seconds
50% percentile latency: 1.2 seconds
99% percentile latency: 1.9 seconds
"""
    _, sig = parse("vllm-bench", text, "logs/bench.log")
    v = by_signal(sig)
    assert v["bench_request_throughput"] == 4.64 and v["bench_output_throughput"] == 1010.54
    assert v["bench_latency_avg_ms"] == pytest.approx(1234.5) and v["bench_latency_p99_ms"] == pytest.approx(1900)


def test_bad_json_is_kept_raw():
    records, sig = parse("vllm-bench", '{"completed": 3, "dur', "r/broken.json")
    assert sig.height == 0 and not records["parsed"].any()


# --- AISBench and lm-eval ------------------------------------------------------------------------------------

def test_aisbench_summary_forms():
    md = """
| dataset | version | metric | mode | vllm-api-general-chat |
|----- | ----- | ----- | ----- | -----|
| aime2024dataset | - | accuracy | gen | 80.00 |
| gpqadataset | - | accuracy | gen | 72.22 |
"""
    _, sig = parse("aisbench", md, "o/summary/summary_20251120_101530.md")
    assert values(sig)[("accuracy_pct", "aime2024dataset")] == 80.0
    assert values(sig)[("accuracy_pct", "gpqadataset")] == 72.22
    csv = "dataset,version,metric,mode,total_count,vllm-api-general-chat\naime2024,604a78,accuracy,gen,30,80.00 (24/30)\ngsm8k,84f965,accuracy,gen,1319,-\n"
    _, sig = parse("aisbench", csv, "o/summary/summary_20251120_101530.csv")
    assert values(sig) == {("accuracy_pct", "aime2024"): 80.0}  # `-` = failed evaluation, no value
    tab = """
20251120_101530
tabulate format
^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
dataset    version    metric    mode      vllm-api-general-chat    vllm-api-stream-chat
---------  ---------  --------  ------  -----------------------  ----------------------
gsm8k      84f965     accuracy  gen                        56.70                    55.97
aime2024   604a78     accuracy  gen                        50.00                    50.00
$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$
csv format
dataset,version,metric,mode,vllm-api-general-chat,vllm-api-stream-chat
gsm8k,84f965,accuracy,gen,56.70,55.97
"""
    _, sig = parse("aisbench", tab, "o/summary/summary_20251120_101530.txt")
    acc = sig.filter(pl.col("signal") == "accuracy_pct")
    assert acc.height == 2  # one value per dataset although the file repeats the table
    assert values(sig)[("accuracy_pct", "gsm8k")] == 56.70
    assert acc.filter(pl.col("engine") == "gsm8k")["line"][0] == 6
    assert sniff("summary_20251120_101530.txt", tab.strip().split("\n")) == "aisbench"


def test_aisbench_perf_outputs():
    csv = """Performance Parameters,Stage,Average,Min,Max,Median,P75,P90,P99,N
E2EL,total,60130.1 ms,50120.0 ms,70100.2 ms,60002.3 ms,64000.1 ms,68000.4 ms,70000.0 ms,400
TTFT,total,2006.0 ms,2005.1 ms,2007.4 ms,2006.1 ms,2006.5 ms,2007.0 ms,2007.3 ms,400
TPOT,total,20.1 ms,20.1 ms,20.2 ms,20.1 ms,20.1 ms,20.2 ms,20.2 ms,400
OutputTokens,total,1500,1500,1500,1500,1500,1500,1500,400
"""
    _, sig = parse("aisbench", csv, "o/performances/vllm-api-stream-chat/gsm8kdataset.csv")
    v = by_signal(sig)
    assert v["bench_mean_ttft_ms"] == 2006.0 and v["bench_p99_ttft_ms"] == 2007.3 and v["bench_p99_tpot_ms"] == 20.2
    assert v["bench_median_e2el_ms"] == 60002.3
    common = {"Benchmark Duration": {"total": "98409.4916 ms"}, "Total Requests": {"total": 400},
              "Failed Requests": {"total": 2}, "Success Requests": {"total": 398},
              "Output Token Throughput": {"total": "41.622 token/s"}, "Request Throughput": {"total": "4.06 req/s"}}
    _, sig = parse("aisbench", json.dumps(common, indent=4), "o/performances/vllm-api-stream-chat/gsm8kdataset.json")
    v = by_signal(sig)
    assert v["bench_failed_requests"] == 2 and v["bench_completed"] == 398
    assert v["bench_output_throughput"] == 41.622 and v["bench_duration_s"] == pytest.approx(98.4094916)
    grid = """
╒══════════════════════════╤═════════╤═════════════════╤═════════════════╤═════════════════╤═════════════════╤═════════════════╤═════════════════╤═════════════════╤═════╕
│ Performance Parameters   │ Stage   │ Average         │ Min             │ Max             │ Median          │ P75             │ P90             │ P99             │  N  │
╞══════════════════════════╪═════════╪═════════════════╪═════════════════╪═════════════════╪═════════════════╪═════════════════╪═════════════════╪═════════════════╪═════╡
│ TTFT                     │ total   │ 2006.0 ms       │ 2005.1 ms       │ 2007.4 ms       │ 2006.1 ms       │ 2006.5 ms       │ 2007.0 ms       │ 2007.3 ms       │ 400 │
╘══════════════════════════╧═════════╧═════════════════╧═════════════════╧═════════════════╧═════════════════╧═════════════════╧═════════════════╧═════════════════╧═════╛
╒══════════════════════════╤═════════╤══════════════════╕
│ Common Metric            │ Stage   │ Value            │
╞══════════════════════════╪═════════╪══════════════════╡
│ Failed Requests          │ total   │ 0                │
│ Output Token Throughput  │ total   │ 41.622 token/s   │
╘══════════════════════════╧═════════╧══════════════════╛
"""
    _, sig = parse("aisbench", grid, "logs/ais_bench_perf.log")
    v = by_signal(sig)
    assert v["bench_p99_ttft_ms"] == 2007.3 and v["bench_failed_requests"] == 0 and v["bench_output_throughput"] == 41.622
    assert sniff("ais_bench_perf.log", grid.strip().split("\n")) == "aisbench"


def test_aisbench_model_config():
    cfg = (SAMPLE / "run/aisbench/20251125_150102/configs/20251125_150102_51873.py").read_text()
    _, sig = parse("aisbench", cfg, "o/configs/20251125_150102_51873.py")
    v = values(sig)
    assert v[("bench_temperature", "DeepSeek-R1-W8A8")] == 0.0
    assert v[("bench_max_tokens", "DeepSeek-R1-W8A8")] == 32768
    assert by_signal(sig)["bench_model"] == "DeepSeek-R1-W8A8"


LMEVAL = {
    "results": {"gsm8k": {"alias": "gsm8k", "exact_match,strict-match": 0.9568,
                          "exact_match_stderr,strict-match": 0.0056, "exact_match,flexible-extract": 0.96},
                "gpqa_diamond_zeroshot": {"alias": "gpqa", "acc_norm,none": 0.711, "acc_norm_stderr,none": "N/A"}},
    "config": {"model": "local-completions",
               "model_args": "model=DeepSeek-R1,base_url=http://10.0.0.11:8000/v1/completions",
               "gen_kwargs": "temperature=0.6,max_gen_toks=4096"},
    "n-shot": {"gsm8k": 5}, "lm_eval_version": "0.4.9", "date": 1754561796.0,
}


def test_lmeval_results_json():
    text = json.dumps(LMEVAL, indent=2)
    assert sniff("results_2026-08-07T11-16-36.123456.json", text.split("\n")) == "lm-eval"
    _, sig = parse("lm-eval", text, "o/path__DeepSeek-R1/results_2026-08-07T11-16-36.123456.json")
    v = values(sig)
    assert v[("accuracy_pct", "gsm8k")] == pytest.approx(95.68)  # strict-match preferred, fraction → percent
    assert v[("accuracy_pct", "gpqa_diamond_zeroshot")] == pytest.approx(71.1)
    assert v[("bench_temperature", "DeepSeek-R1")] == 0.6 and v[("bench_max_tokens", "DeepSeek-R1")] == 4096


def test_lmeval_console_table():
    text = """
local-completions (model=DeepSeek-R1,base_url=http://10.0.0.11:8000/v1/completions), gen_kwargs: (temperature=0,max_gen_toks=32768), limit: None, num_fewshot: None, batch_size: 1
|Tasks|Version|     Filter     |n-shot|  Metric   |   |Value |   |Stderr|
|-----|------:|----------------|-----:|-----------|---|-----:|---|-----:|
|gsm8k|      3|flexible-extract|     5|exact_match|↑  |0.3215|±  |0.0129|
|     |       |strict-match    |     5|exact_match|↑  |0.2077|±  |0.0112|
"""
    assert sniff("lm_eval.log", text.strip().split("\n")) == "lm-eval"
    _, sig = parse("lm-eval", text, "logs/lm_eval.log")
    v = values(sig)
    assert v[("accuracy_pct", "gsm8k")] == pytest.approx(32.15)
    assert v[("bench_temperature", "DeepSeek-R1")] == 0 and v[("bench_max_tokens", "DeepSeek-R1")] == 32768


def test_sniff_result_files():
    serve = (SAMPLE / "run/bench/openai-infqps-concurrency64-DeepSeek-R1-W8A8-20251125-141210.json").read_text()
    assert sniff("openai-infqps-concurrency64-DeepSeek-R1-W8A8-20251125-141210.json", [serve]) == "vllm-bench"
    assert sniff("bench_serve.log", SUMMARY_CURRENT.strip().split("\n")) == "vllm-bench"
    cfg = (SAMPLE / "run/aisbench/20251125_150102/configs/20251125_150102_51873.py").read_text()
    assert sniff("20251125_150102_51873.py", cfg.split("\n")) == "aisbench"
    md = (SAMPLE / "run/aisbench/20251125_150102/summary/summary_20251125_150102.md").read_text()
    assert sniff("summary_20251125_150102.md", md.split("\n")) == "aisbench"


def test_validation_facts_parser():
    facts = """
# diagnose validation facts v1
compare metric=p99_tpot_ms run=c64 baseline=52.1 this=67.73 change=+30.00% tolerance=10% verdict=regressed
compare metric=output_throughput run=c64 baseline=100 this=90 change=-10.00% tolerance=5% verdict=regressed
compare metric=failed_requests run=c64 baseline=0 this=3 change=+3 tolerance=0 verdict=regressed
compare metric=accuracy dataset=aime2024 baseline=80 this=76 change=-4.00pt tolerance=3pt verdict=regressed
compare metric=accuracy dataset=gsm8k baseline=95 this=94 change=-1.00pt tolerance=3pt verdict=ok
not-comparable what=quantization baseline=W8A8 this=FP8
mismatch what=tp bench=8 server=16
"""
    records, sig = parse("validation-facts", facts, "<validation>")
    v = values(sig)
    assert v[("regression_pct", "p99_tpot_ms")] == 30.0 and v[("regression_pct", "output_throughput")] == 10.0
    assert ("regression_pct", "failed_requests") not in v  # absolute, VAL003's business
    assert v[("accuracy_drop_points", "aime2024")] == 4.0 and ("accuracy_drop_points", "gsm8k") not in v
    assert v[("comparison_not_comparable", "quantization")] == 1.0
    assert v[("bench_server_mismatch", "tp")] == 1.0
    assert records["parsed"].all()



def test_comparison_facts_as_records_equal_the_facts_text_read_back():
    """The comparison hands its facts over as values; the VAL rules' fixtures write them as text. Both must
    give the same records and signals, or the fixtures would test something a run never sees."""
    from diagnose.parsers.kinds import validation_facts
    from diagnose.parsers.lineframe import FileContext, lines_frame
    from diagnose.validation.compare import Fact, HEADER, comparison_facts

    run = [{"metric": "p99_tpot_ms", "scope": "c64", "value": 67.73, "file": "f", "line": 1},
           {"metric": "output_throughput", "scope": "c64", "value": 1180.0, "file": "f", "line": 2},
           {"metric": "accuracy", "scope": "aime2024dataset", "value": 76.0, "file": "g", "line": 3},
           {"metric": "failed_requests", "scope": "c64", "value": 3.0, "file": "f", "line": 4}]
    base = Baseline([{"metric": "p99_tpot_ms", "scope": "c64", "value": 52.1, "tol": None},
                     {"metric": "output_throughput", "scope": "c64", "value": 1342.55, "tol": None},
                     {"metric": "accuracy", "scope": "AIME2024", "value": 80.0, "tol": None},
                     {"metric": "failed_requests", "scope": "c64", "value": 0.0, "tol": None}], "run")
    notes = [Fact("not-comparable", {"what": "quantization", "baseline": "W8A8", "this": "FP8"}, ("b.log", 7)),
             Fact("mismatch", {"what": "tp", "bench": "8", "server": "16"})]
    facts = comparison_facts(compare_rows(run, base, set()), notes)
    assert len(facts) == 6
    direct_records, direct_signals = validation_facts.from_facts("<validation>", [(f.verb, f.fields, f.line()) for f in facts])
    text = [HEADER, *(f.line() for f in facts)]
    records, signals = validation_facts.parse(
        lines_frame(text), FileContext(path="<validation>", node=None, kind=validation_facts.KIND, mtime=None))
    cols = ["message", "level", "source", "parsed"]
    assert direct_records.select(cols).equals(records.tail(len(facts)).select(cols))
    sig = ["signal", "engine", "value", "text", "source"]
    assert direct_signals.select(sig).equals(signals.select(sig))
    assert set(direct_signals["signal"]) == {"regression_pct", "accuracy_drop_points", "comparison_not_comparable",
                                             "bench_server_mismatch"}


# --- comparison ------------------------------------------------------------------------------------------------

def test_comparison_numbers_and_verdicts():
    run = [{"metric": "p99_tpot_ms", "scope": "c64", "value": 67.73, "file": "f", "line": 1},
           {"metric": "output_throughput", "scope": "c64", "value": 1180.0, "file": "f", "line": 1},
           {"metric": "mean_ttft_ms", "scope": "c64", "value": 700.0, "file": "f", "line": 1},
           {"metric": "accuracy", "scope": "aime2024dataset", "value": 76.0, "file": "g", "line": 3},
           {"metric": "failed_requests", "scope": "c64", "value": 3.0, "file": "f", "line": 1}]
    base = Baseline([{"metric": "p99_tpot_ms", "scope": "c64", "value": 52.1, "tol": None},
                     {"metric": "output_throughput", "scope": "c64", "value": 1342.55, "tol": None},
                     {"metric": "mean_ttft_ms", "scope": "c64", "value": 812.4, "tol": None},
                     {"metric": "accuracy", "scope": "AIME2024", "value": 80.0, "tol": None},
                     {"metric": "accuracy", "scope": "gsm8k", "value": 95.0, "tol": None},
                     {"metric": "failed_requests", "scope": "c64", "value": 0.0, "tol": None}], "run")
    rows = {(r["metric"], r["scope"]): r for r in compare_rows(run, base, set())}
    tpot = rows[("p99_tpot_ms", "c64")]
    assert tpot["change"] == pytest.approx(30.0, abs=0.01) and tpot["verdict"] == "regressed"
    thr = rows[("output_throughput", "c64")]
    assert thr["change"] == pytest.approx(-12.108, abs=0.01) and thr["verdict"] == "regressed"
    assert rows[("mean_ttft_ms", "c64")]["verdict"] == "improved"
    acc = rows[("accuracy", "aime2024dataset")]
    assert acc["baseline"] == 80.0 and acc["change"] == -4.0 and acc["verdict"] == "regressed" and acc["unit"] == "pt"
    assert rows[("accuracy", "gsm8k")]["verdict"] == "missing in this run"
    assert rows[("failed_requests", "c64")]["change"] == 3 and rows[("failed_requests", "c64")]["verdict"] == "regressed"
    # not like for like: nothing is judged
    rows = compare_rows(run, base, {"*"})
    assert {r["verdict"] for r in rows} <= {"not comparable", "missing in this run"}


def test_toml_baseline(tmp_path):
    base = load_baseline(str(SAMPLE / "expected-DeepSeek-R1-W8A8.toml"))
    assert base.quantization == "W8A8" and not base.errors
    rows = {(r["metric"], r["scope"]): r for r in base.rows}
    assert rows[("accuracy", "AIME2024")] == {"metric": "accuracy", "scope": "AIME2024", "value": 80.0, "tol": 3.0}
    assert rows[("failed_requests", "")]["value"] == 0
    bad = tmp_path / "b.toml"
    bad.write_text('[performance]\nwhatever_ms_typo = "x"\nfoo = 3\n')
    assert load_baseline(str(bad)).errors


def test_quantization_policy_and_not_comparable(tmp_path):
    sig = pl.DataFrame({"signal": ["bench_model", "quantization"], "text": ["DeepSeek-R1-FP8", "ascend"]})
    assert quant_policy(sig) == "FP8"
    toml = tmp_path / "fp8-vs-w8a8.toml"
    toml.write_text('quantization = "W8A8"\n[accuracy]\naime2024 = { value = 80.0, tol = 3 }\n')
    run = tmp_path / "run"
    (run / "summary").mkdir(parents=True)
    (run / "summary/summary_20251125_150102.md").write_text(
        "| dataset | version | metric | mode | m |\n|----- | -----|\n| aime2024 | - | accuracy | gen | 70.00 |\n")
    (run / "bench").mkdir()
    (run / "bench/openai-infqps-DeepSeek-R1-FP8-20251125-141210.json").write_text(
        json.dumps({"model_id": "DeepSeek-R1-FP8", "completed": 10, "failed": 0, "duration": 1.0}))
    code, data = run_json(str(run), "--baseline", str(toml))
    ids = [f["rule_id"] for f in data["findings"]]
    assert "VAL010" in ids and "VAL001" not in ids
    assert {r["verdict"] for r in data["comparisons"] if r["metric"] == "accuracy"} == {"not comparable"}


def test_server_mismatch_fact(tmp_path):
    (tmp_path / "bench.json").write_text(json.dumps({"model_id": "DeepSeek-V3", "tp": "8", "completed": 4,
                                                      "failed": 0, "duration": 1.0}))
    (tmp_path / "vllm-server.log").write_text(
        "(APIServer pid=1) INFO 11-25 13:58:40 [utils.py:233] non-default args: {'model': '/models/DeepSeek-R1-W8A8', "
        "'tensor_parallel_size': 16}\n")
    report = analyze([str(tmp_path)], Settings())
    found = {f.rule_id: f for f in report.findings}
    assert "VAL008" in found and found["VAL008"].count == 2  # tp and model
    assert any("bench=8 server=16" in e.text for e in found["VAL008"].evidence)


# --- the sample and the CLI ------------------------------------------------------------------------------------

def test_sample_regressions_reported_with_numbers():
    code, data = run_json(str(SAMPLE / "run"), "--baseline", str(SAMPLE / "baseline"))
    assert code == 1
    found = {f["rule_id"]: f for f in data["findings"]}
    assert list(found) == ["VAL002", "VAL001", "VAL003", "VAL004"]
    assert "UnquantizedLinearMethod" in found["VAL002"]["evidence"][0]["text"]
    assert "aime2024 is 4.00 points" in found["VAL001"]["summary"]
    assert "3 requests failed" in found["VAL003"]["summary"]
    assert "p99_tpot_ms is 30.0% worse" in found["VAL004"]["summary"]
    rows = {(r["metric"], r["scope"]): r for r in data["comparisons"]}
    tpot = next(r for (m, _), r in rows.items() if m == "p99_tpot_ms")
    assert (tpot["baseline"], tpot["this"], tpot["verdict"]) == (52.1, 67.73, "regressed")
    assert rows[("accuracy", "aime2024")]["change"] == -4.0


def test_self_comparison_reports_nothing():
    code, data = run_json(str(SAMPLE / "baseline"), "--baseline", str(SAMPLE / "baseline"))
    assert code == 0 and data["findings"] == []
    assert data["comparisons"] and {r["verdict"] for r in data["comparisons"]} == {"ok"}
    # the regressed run against itself: no comparison finding (its own 3 failed requests stay)
    code, data = run_json(str(SAMPLE / "run"), "--baseline", str(SAMPLE / "run"))
    assert [f["rule_id"] for f in data["findings"]] == ["VAL003"]


def test_json_report_as_baseline(tmp_path):
    out = tmp_path / "base.json"
    run_cli("--format", "json", "-o", str(out), str(SAMPLE / "baseline"))
    code, data = run_json(str(SAMPLE / "run"), "--baseline", str(out))
    assert {"VAL001", "VAL004", "VAL003"} <= {f["rule_id"] for f in data["findings"]}


def test_text_and_markdown_table():
    result = run_cli("--no-color", str(SAMPLE / "run"), "--baseline", str(SAMPLE / "baseline"))
    assert "Comparison with the baseline" in result.stdout and "regressed (±10%)" in result.stdout
    report = analyze([str(SAMPLE / "run")], Settings(baseline=str(SAMPLE / "baseline")))
    md = comparison_markdown(report)
    assert "| p99_tpot_ms | openai-infqps-concurrency64-DeepSeek-R1-W8A8 | 52.1 | 67.73 | +30.00% | **regressed" in md
    assert comparison_markdown(analyze([str(SAMPLE / "run" / "node0")], Settings())) == ""


def test_no_results_no_comparisons_key():
    report = analyze([str(SAMPLE / "run" / "node0")], Settings())
    assert "comparisons" not in builtins(report.document(), str)


# --- every VAL rule on its own fixtures -----------------------------------------------------------------------

@pytest.mark.parametrize("rule_id", [f"VAL{i:03d}" for i in range(1, 11)])
def test_val_rule_fixtures(catalog, rule_id):
    rule = catalog[rule_id]
    assert any(t.fires for t in rule.tests) and any(not t.fires for t in rule.tests)
    assert rule.text("title", "zh") and rule.text("remediation", "zh")
    for test in rule.tests:
        findings, errors = evaluate(rule, test.log, test.path, test.kind)
        assert not errors
        assert bool(findings) == test.fires, test.name
        if test.fires and test.lines:
            assert [e.line for e in findings[0].evidence][: len(test.lines)] == test.lines


def test_bad_baseline_toml_is_a_usage_error(tmp_path):
    bad = tmp_path / "expected.toml"
    bad.write_text('[accuracy]\naime2024 = "eighty"\n')
    result = run_cli(str(SAMPLE / "run"), "--baseline", str(bad))
    assert result.exit_code == 2 and "aime2024" in result.stderr


def test_table_in_chinese_and_without_baseline():
    result = run_cli("--no-color", "--lang", "zh", str(SAMPLE / "run"), "--baseline", str(SAMPLE / "baseline"))
    assert "与基线对比" in result.stdout and "精度" in result.stdout
    result = run_cli("--no-color", str(SAMPLE / "run" / "bench"))
    assert "Benchmark and accuracy results (no --baseline)" in result.stdout


# --- speculative decoding in the bench summary, MindIE Benchmark ------------------------------------------

SPEC_SECTION = """
============ Serving Benchmark Result ============
Successful requests:                     1000
---------------Time to First Token----------------
Mean TTFT (ms):                          1537.32
---------------Speculative Decoding---------------
Acceptance rate (%):                     31.22
Acceptance length:                       1.94
Drafts:                                  1057351
Draft tokens:                            3172053
Accepted tokens:                         990188
Per-position acceptance (%):
  Position 0:                            83.28
  Position 1:                            7.17
  Position 2:                            3.19
==================================================
"""


def test_speculative_decoding_section():
    _, sig = parse("vllm-bench", SPEC_SECTION, "bench/mtp3.txt")
    v = by_signal(sig)
    assert v["bench_spec_acceptance_pct"] == 31.22 and v["bench_spec_acceptance_length"] == 1.94
    assert v["bench_spec_drafts"] == 1057351 and v["bench_spec_accepted_tokens"] == 990188
    assert v["bench_spec_pos1_of_pos0_pct"] == pytest.approx(7.17 / 83.28 * 100)
    assert sig.filter(pl.col("signal") == "bench_spec_pos1_of_pos0_pct")["line"][0] == 13  # position 1's line


def test_speculative_decoding_pasted_without_padding_and_two_runs():
    flat = "\n".join(line.strip() for line in SPEC_SECTION.strip().split("\n"))
    second = flat.replace("83.28", "80.00").replace("7.17", "60.00")
    _, sig = parse("vllm-bench", flat + "\n" + second, "bench/notes.txt")
    ratios = sig.filter(pl.col("signal") == "bench_spec_pos1_of_pos0_pct")["value"].to_list()
    assert ratios == [pytest.approx(7.17 / 83.28 * 100), pytest.approx(75.0)]


def test_speculative_decoding_in_the_result_json():
    doc = json.dumps({"completed": 10, "spec_decode_acceptance_rate": 44.3, "spec_decode_acceptance_length": 4.1,
                      "spec_decode_per_position_acceptance_rates": [0.74, 0.58, 0.49]})
    _, sig = parse("vllm-bench", doc, "bench/result.json")
    v = by_signal(sig)
    assert v["bench_spec_acceptance_length"] == 4.1
    assert v["bench_spec_pos1_of_pos0_pct"] == pytest.approx(58 / 74 * 100)


MINDIE_TABLES = """
The BenchMark test performance metric result is:
+---------------------+----------------+----------------+----------------+----------------+----------------+----------------+----------------+---+
|              Metric |        average |            max |            min |            P75 |            P90 |        SLO_P90 |            P99 | N |
+---------------------+----------------+----------------+----------------+----------------+----------------+----------------+----------------+---+
|      FirstTokenTime |    394.7728 ms |    394.7728 ms |    394.7728 ms |    394.7728 ms |    394.7728 ms |    394.7728 ms |    394.7728 ms | 1 |
|          DecodeTime |    183.7376 ms |    227.1558 ms |     153.524 ms |    205.9031 ms |    222.7119 ms |    183.7376 ms |    226.8792 ms | 1 |
|        GenerateTime |   9582.6747 ms |   9582.6747 ms |   9582.6747 ms |   9582.6747 ms |   9582.6747 ms |   9582.6747 ms |   9582.6747 ms | 1 |
|     GeneratedTokens |           51.0 |             51 |             51 |           51.0 |           51.0 |           51.0 |           51.0 | 1 |
|       QueueWaitTime |    162.8431 μs |        5102 μs |          55 μs |        67.0 μs |        71.0 μs |        71.0 μs |      2589.5 μs | 1 |
+---------------------+----------------+----------------+----------------+----------------+----------------+----------------+----------------+---+
[2025-11-07 15:33:18.416+08:00] [56739] [281459100502816] [benchmark] [INFO] [output.py:121]
The BenchMark test common metric result is:
+------------------------+-------------------------------+
|          Common Metric |                         Value |
+------------------------+-------------------------------+
|            TimeElapsed |                      9.5827 s |
|                 Failed |                     0( 0.0% ) |
|               Returned |                   1( 100.0% ) |
|            Concurrency |                           128 |
|              ModelName |                   deepseek-v3 |
|             Throughput |                  0.1044 req/s |
|    OutputGenerateSpeed |                5.3221 token/s |
+------------------------+-------------------------------+
"""


def test_mindie_benchmark_console_tables():
    _, sig = parse("mindie-bench", MINDIE_TABLES, "instance/benchmark_run.log")
    v = by_signal(sig)
    assert v["bench_mean_ttft_ms"] == pytest.approx(394.7728)
    assert v["bench_mean_itl_ms"] == pytest.approx(183.7376) and v["bench_p99_itl_ms"] == pytest.approx(226.8792)
    assert v["bench_p90_itl_ms"] == pytest.approx(222.7119)  # P90, not SLO_P90
    assert v["bench_mean_e2el_ms"] == pytest.approx(9582.6747)
    assert v["bench_mean_tpot_ms"] == pytest.approx((9582.6747 - 394.7728) / 50)
    assert v["bench_duration_s"] == pytest.approx(9.5827) and v["bench_failed_requests"] == 0
    assert v["bench_completed"] == 1 and v["bench_max_concurrency"] == 128
    assert v["bench_output_throughput"] == pytest.approx(5.3221) and v["bench_model"] == "deepseek-v3"


def test_mindie_benchmark_csv_files_both_layouts():
    head = "FirstTokenTime,DecodeTime,GenerateTime,GeneratedTokens"
    rows8 = ["572.8 ms,60.1 ms,9000 ms,150", "900 ms,80 ms,9500 ms,160", "300 ms,40 ms,8000 ms,140",
             "600 ms,61 ms,9100 ms,151", "700 ms,70 ms,9200 ms,155", "65 ms,65 ms,9300 ms,156",
             "800 ms,75 ms,9400 ms,158", "32,32,32,32"]
    _, sig = parse("mindie-bench", "\n".join([head, *rows8]), "out/result_perf_20250101120000.csv")
    v = by_signal(sig)
    assert v["bench_mean_ttft_ms"] == 572.8 and v["bench_p90_itl_ms"] == 70 and v["bench_p99_itl_ms"] == 75
    rows6 = [rows8[0], rows8[1], rows8[2], rows8[3], rows8[6], rows8[7]]  # 1.0.RC2: no P90, no SLO_P90
    _, sig = parse("mindie-bench", "\n".join([head, *rows6]), "out/result_perf_20240101120000.csv")
    v = by_signal(sig)
    assert v["bench_p99_itl_ms"] == 75 and "bench_p90_itl_ms" not in v
    common = "CurrentTime,TimeElapsed,DataSource,Failed,Returned,Total,Concurrency,ModelName,lpct,Throughput,GenerateSpeed\n" \
             "2025-01-01 12:00:00,120.5 s,/d/gsm8k.jsonl,3( 0.3% ),997( 99.7% ),1000[ 100.0% ],64,dsr1,2.1 ms,8.3 req/s,950.2 token/s"
    _, sig = parse("mindie-bench", common, "out/result_common_20250101120000.csv")
    v = by_signal(sig)
    assert v["bench_failed_requests"] == 3 and v["bench_duration_s"] == 120.5
    assert v["bench_output_throughput"] == 950.2 and v["bench_request_throughput"] == 8.3


def test_sniff_mindie_benchmark():
    assert sniff("benchmark_run.log", MINDIE_TABLES.strip().split("\n")) == "mindie-bench"
    assert sniff("paste.txt", MINDIE_TABLES.strip().split("\n")[2:9]) == "mindie-bench"
