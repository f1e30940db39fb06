"""The vLLM / vllm-ascend parser on every line variant of the reference (vllm.md section 1)."""

from __future__ import annotations

from datetime import datetime

import polars as pl
import pytest

import helpers


def parse(lines: list[str], node: str | None = "node-0"):
    return helpers.parse("vllm", lines, "serve.log", node)


def one(line: str) -> dict:
    records, _ = parse([line])
    assert records.height == 1
    return records.row(0, named=True)


@pytest.mark.parametrize(
    "line, proc, pid, level, component, message",
    [
        # vLLM <= 0.7: no opening bracket before file:line
        ("INFO 03-26 11:49:00 executor_base.py:111] # npu blocks: 3915, # CPU blocks: 910",
         None, None, "INFO", "executor_base.py:111", "# npu blocks: 3915, # CPU blocks: 910"),
        # 0.8 and later
        ("INFO 04-27 03:09:33 [__init__.py:30] Available plugins for group vllm.platform_plugins:",
         None, None, "INFO", "__init__.py:30", "Available plugins for group vllm.platform_plugins:"),
        # DEBUG relative paths
        ("DEBUG 07-20 14:20:39 [v1/engine/core.py:1101] EngineCore loop active.",
         None, None, "DEBUG", "v1/engine/core.py:1101", "EngineCore loop active."),
        ("DEBUG 07-20 14:20:39 [model_executor/.../quantization/utils/fp8_utils.py:12] x",
         None, None, "DEBUG", "model_executor/.../quantization/utils/fp8_utils.py:12", "x"),
        # process prefixes of every era
        ("(APIServer pid=3280921) ERROR 07-01 09:01:37 [v1/engine/async_llm.py:707] boom",
         "APIServer", 3280921, "ERROR", "v1/engine/async_llm.py:707", "boom"),
        ("(EngineCore_DP0 pid=414) INFO 07-01 09:01:37 [core.py:69] x", "EngineCore_DP0", 414, "INFO", "core.py:69", "x"),
        ("(EngineCore pid=414) INFO 07-01 09:01:37 [core.py:69] x", "EngineCore", 414, "INFO", "core.py:69", "x"),
        ("(VllmWorker rank=0 pid=75322) INFO 07-01 09:01:37 [worker.py:1] x", "VllmWorker", 75322, "INFO", "worker.py:1", "x"),
        ("(VllmWorker TP2 pid=75322) INFO 07-01 09:01:37 [worker.py:1] x", "VllmWorker", 75322, "INFO", "worker.py:1", "x"),
        ("(Worker_DP0_TP3_EP3 pid=6735) WARNING 07-01 09:01:37 [w.py:2] x", "Worker_DP0_TP3_EP3", 6735, "WARNING", "w.py:2", "x"),
        ("(VllmWorkerProcess pid=176029) ERROR 04-17 15:30:42 worker.py:12] x", "VllmWorkerProcess", 176029, "ERROR", "worker.py:12", "x"),
        ("(ApiServer_3 pid=12) INFO 07-01 09:01:37 [api.py:2] x", "ApiServer_3", 12, "INFO", "api.py:2", "x"),
        # nested prefixes: the innermost process wrote the line
        ("(EngineCore_1 pid=75299) (VllmWorker rank=1 pid=75322) ERROR 07-01 09:01:37 [w.py:9] x",
         "VllmWorker", 75322, "ERROR", "w.py:9", "x"),
        # milliseconds variant of the vllm-ascend file logger
        ("INFO 08-06 06:15:24.123 [ascend_config.py:874] Dynamic EPLB is False",
         None, None, "INFO", "ascend_config.py:874", "Dynamic EPLB is False"),
        # docker compose service prefix
        ("vllm-1  | ERROR 07-01 09:01:37 [core.py:1] x", None, None, "ERROR", "core.py:1", "x"),
        ("deepseek-v3_2-exp  | (EngineCore_DP0 pid=414) ERROR 07-01 09:01:37 [core.py:1] x",
         "EngineCore_DP0", 414, "ERROR", "core.py:1", "x"),
        # log collector prefix
        ("2026-05-01 18:27:06.747 | (APIServer pid=1) INFO 05-01 16:27:06 [model.py:555] x",
         "APIServer", 1, "INFO", "model.py:555", "x"),
    ],
)
def test_head_variants(line, proc, pid, level, component, message):
    row = one(line)
    assert row["parsed"] is True
    assert row["proc"] == proc
    assert row["pid"] == pid
    assert row["level"] == level
    assert row["component"] == component
    assert row["message"] == message


def test_ansi_colour_and_carriage_return_are_stripped():
    row = one("\x1b[1;36m(VllmWorkerProcess pid=176029)\x1b[0;0m \x1b[31mERROR\x1b[0m 04-17 15:30:42 worker.py:12] boom\r")
    assert (row["proc"], row["level"], row["message"]) == ("VllmWorkerProcess", "ERROR", "boom")
    assert "\x1b" not in row["text"] and "\r" not in row["text"]


def test_ray_ip_prefix_gives_node_and_repeated_suffix_is_stripped():
    row = one("(RayWorkerWrapper pid=169568, ip=10.151.18.104) ERROR 05-12 06:35:53 [worker_base.py:620] "
              "Error executing method 'load_model'. [repeated 14x across cluster]")
    assert row["node"] == "10.151.18.104"
    assert row["proc"] == "RayWorkerWrapper"
    assert row["message"] == "Error executing method 'load_model'."
    assert row["text"].endswith("[repeated 14x across cluster]")


def test_local_ray_worker_keeps_the_path_node():
    row = one("(RayWorkerWrapper pid=343190) INFO 05-12 06:35:52 [model_runner.py:943] Starting to load model")
    assert row["node"] == "node-0"


def test_docker_timestamp_gives_the_year_and_keeps_local_time():
    row = one("2025-10-15T00:04:48.758564289Z (APIServer pid=1) INFO 10-14 17:04:48 [loggers.py:123] hello")
    assert row["ts"] == datetime(2025, 10, 14, 17, 4, 48)
    assert row["year_known"] is True


def test_docker_timestamp_across_new_year():
    row = one("2026-01-01T07:00:01Z (APIServer pid=1) INFO 12-31 23:00:01 [loggers.py:123] hello")
    assert row["ts"] == datetime(2025, 12, 31, 23, 0, 1)


def test_yearless_stamp_uses_placeholder_year_until_dated():
    row = one("INFO 02-29 10:00:00 [core.py:1] leap day")
    assert (row["ts"].month, row["ts"].day, row["year_known"]) == (2, 29, False)


def test_invalid_date_becomes_null_not_an_error():
    row = one("INFO 13-45 99:00:00 [core.py:1] garbage stamp")
    assert row["ts"] is None


def test_multiline_traceback_with_repeated_prefix_is_one_event():
    lines = [
        "(Worker_TP0_EP0 pid=6735) ERROR 07-20 14:20:39 [multiproc_executor.py:1000] Traceback (most recent call last):",
        "(Worker_TP1_EP1 pid=6736) ERROR 07-20 14:20:39 [multiproc_executor.py:1000] Traceback (most recent call last):",
        '(Worker_TP0_EP0 pid=6735) ERROR 07-20 14:20:39 [multiproc_executor.py:1000]   File "x.py", line 3, in f',
        '(Worker_TP1_EP1 pid=6736) ERROR 07-20 14:20:39 [multiproc_executor.py:1000]   File "x.py", line 3, in f',
        "(Worker_TP0_EP0 pid=6735) ERROR 07-20 14:20:39 [multiproc_executor.py:1000] KeyError: 'a'",
        "(Worker_TP1_EP1 pid=6736) ERROR 07-20 14:20:39 [multiproc_executor.py:1000] KeyError: 'b'",
        "(Worker_TP0_EP0 pid=6735) INFO 07-20 14:20:40 [core.py:1] next message",
    ]
    records, _ = parse(lines)
    assert records["event"].to_list() == [1, 2, 1, 2, 1, 2, 7]
    assert records["rank"].to_list()[:2] == [0, 1]


def test_raw_traceback_lines_join_their_opener_and_inherit_time_and_level():
    lines = [
        "ERROR 05-12 06:35:53 [worker_base.py:620] Error executing method 'load_model'.",
        "Traceback (most recent call last):",
        '  File "/vllm-workspace/vllm/worker/worker_base.py", line 612, in execute_method',
        "KeyError: 'model.layers.0.self_attn.q_a_proj.weight'",
    ]
    records, _ = parse(lines)
    assert records["parsed"].to_list() == [True, False, False, False]
    assert records["event"].to_list() == [1, 1, 1, 1]
    assert records["level"].to_list() == ["ERROR"] * 4
    assert records["ts"].n_unique() == 1
    assert records["message"][3] == "KeyError: 'model.layers.0.self_attn.q_a_proj.weight'"


def test_torch_rank_prefix_and_cann_trailer_carry_rank_device_code_and_year():
    lines = [
        "[rank1]: RuntimeError: InnerRunOpApi:torch_npu/csrc/framework/OpParamMaker.cpp:281 OPS function error: HcclAllreduce, error code is 6",
        "[rank1]: [ERROR] 2025-04-08-18:07:20 (PID:1292363, Device:1, RankID:1) ERR01100 OPS call acl api failed.",
        "[rank1]: EI0006: [PID: 1292363] 2025-04-08-18:07:20.444.436 Getting socket times out.",
    ]
    records, _ = parse(lines)
    assert records["rank"].to_list() == [1, 1, 1]
    assert records["code"].to_list() == [None, "ERR01100", "EI0006"]
    assert records["device"][1] == 1
    assert records["ts"][1] == datetime(2025, 4, 8, 18, 7, 20)
    assert records["year_known"][1] is True


def test_uvicorn_access_line_is_parsed_and_timed_from_the_line_above():
    lines = [
        "(APIServer pid=7) INFO 09-03 14:00:10 [loggers.py:118] Engine 000: Avg prompt throughput: 1.0 tokens/s, "
        "Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 3.0%, Prefix cache hit rate: 0.0%",
        '(APIServer pid=7) INFO:     10.119.3.149:39702 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    ]
    records, _ = parse(lines)
    assert records["parsed"].to_list() == [True, True]
    assert records["ts"][1] == records["ts"][0]
    assert records["message"][1].startswith("10.119.3.149")


def test_a_uvicorn_line_behind_a_container_stamp_borrows_the_year_with_the_time():
    # The container stamp gives the year of the line above; the uvicorn line borrows that line's time, and must say
    # its year is known too (else dating added the year a second time: 2050).
    lines = [
        "2025-10-15T00:04:58.759144988Z (APIServer pid=1) INFO 10-14 17:04:58 [loggers.py:123] Engine 000: Avg prompt "
        "throughput: 0.0 tokens/s, Avg generation throughput: 736.1 tokens/s, Running: 33 reqs, Waiting: 40 reqs, GPU "
        "KV cache usage: 97.5%, Prefix cache hit rate: 43.5%",
        '2025-10-15T00:05:07.582692730Z (APIServer pid=1) INFO:     10.250.5.32:48646 - "GET /metrics HTTP/1.1" 200 OK',
    ]
    records, _ = parse(lines)
    assert records["ts"].to_list() == [datetime(2025, 10, 14, 17, 4, 58)] * 2
    assert records["year_known"].to_list() == [True, True]


def test_the_exception_line_of_a_process_traceback_is_an_error():
    # vLLM repeats its head on every line of a record it logs: a line without one that joined the process's last
    # INFO record is the process's own stderr, and its exception line an error; a logged traceback keeps its level.
    records, _ = parse([
        "(EngineCore_DP0 pid=5) INFO 10-01 10:00:05 [worker.py:100] Loading weights",
        "(EngineCore_DP0 pid=5) Traceback (most recent call last):",
        '(EngineCore_DP0 pid=5)   File "/v/vllm_ascend/worker/worker.py", line 270, in _init_device',
        "(EngineCore_DP0 pid=5) RuntimeError: the flux capacitor is off",
        "(APIServer pid=1) WARNING 10-01 10:00:06 [api.py:1] retrying",
        "(APIServer pid=1) WARNING 10-01 10:00:06 [api.py:1] ValueError: bad request body",
    ])
    assert records["level"].to_list() == ["INFO", "INFO", "INFO", "ERROR", "WARNING", "WARNING"]


def _signals(lines):
    _, signals = parse(lines)
    return {(r["signal"], r["engine"]): (r["value"], r["text"]) for r in signals.iter_rows(named=True)}


def test_a_spec_decoding_line_cut_before_its_rate_gives_the_rate_from_its_counts():
    s = _signals([
        "(APIServer pid=27) INFO 08-04 21:20:47 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: 1.05, "
        "Accepted throughput: 2.60 tokens/s, Drafted throughput: 246.97 tokens/s, Accepted: 26 tokens, Drafted: 2470 "
        "tokens, Per-position acceptan",
    ])
    (pct, _), = [v for (name, _), v in s.items() if name == "spec_acceptance_pct"]
    assert pct == 100.0 * 26 / 2470
    # a written rate is the rate, and nothing drafted is no rate
    s = _signals(["INFO 08-04 21:20:47 [metrics.py:101] SpecDecoding metrics: Accepted: 0 tokens, Drafted: 0 tokens"])
    assert not [n for (n, _) in s if n == "spec_acceptance_pct"]


def test_v1_throughput_line_signals_with_grouped_numbers():
    s = _signals([
        "(APIServer pid=1) INFO 10-14 17:04:48 [loggers.py:123] Engine 002: Avg prompt throughput: 1,024.5 tokens/s, "
        "Avg generation throughput: 300.0 tokens/s, Running: 3 reqs, Waiting: 7 reqs, GPU KV cache usage: 97.5%, "
        "Prefix cache hit rate: 10.0%, External prefix cache hit rate: 0.0%"
    ])
    assert s[("prompt_throughput", "Engine 002")][0] == 1024.5
    assert s[("waiting_reqs", "Engine 002")][0] == 7
    assert s[("kv_cache_usage_pct", "Engine 002")][0] == 97.5
    assert s[("prefix_cache_hit_pct", "Engine 002")][0] == 10.0


def test_v0_throughput_line_pending_and_swapped():
    s = _signals([
        "INFO 03-26 11:50:00 metrics.py:455] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 15.2 tokens/s, "
        "Running: 1 reqs, Swapped: 2 reqs, Pending: 4 reqs, GPU KV cache usage: 0.5%, CPU KV cache usage: 0.0%."
    ])
    assert s[("waiting_reqs", "engine")][0] == 4
    assert s[("swapped_reqs", "engine")][0] == 2


def test_spec_decoding_all_formats():
    lines = [
        # V0 fraction
        "INFO 03-02 09:10:00 metrics.py:455] Speculative metrics: Draft acceptance rate: 0.550, System efficiency: 0.7, "
        "Number of speculative tokens: 1, Number of accepted tokens: 55, Number of draft tokens: 100, Number of emitted tokens: 155.",
        # V1 ~0.8.3
        "(APIServer pid=2) INFO 05-01 10:00:00 [metrics.py:1] SpecDecoding metrics: Draft acceptance rate: 61.0%, Accepted: 61 tokens, Drafted: 100 tokens",
    ]
    _, signals = parse(lines)
    acc = signals.filter(pl.col("signal") == "spec_acceptance_pct")["value"].to_list()
    assert acc == pytest.approx([55.0, 61.0])
    drafted = signals.filter(pl.col("signal") == "spec_drafted_tokens")["value"].to_list()
    assert drafted == [100.0, 100.0]


def test_spec_decoding_current_format_with_per_position_under_dp_engine():
    lines = [
        "(APIServer pid=79) INFO 08-05 12:25:03 [loggers.py:1] Engine 001: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 3.0%, Prefix cache hit rate: 0.0%",
        "(APIServer pid=79) INFO 08-05 12:25:03 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: 2.91, Accepted throughput: 0.72 tokens/s, Drafted throughput: 2.64 tokens/s, Accepted: 44 tokens, Drafted: 161 tokens, Per-position acceptance rate: 0.739, 0.478, 0.261, Avg Draft acceptance rate: 27.3%",
    ]
    s = _signals(lines)
    assert s[("spec_acceptance_pct", "Engine 001")][0] == 27.3
    assert s[("spec_mean_acceptance_len", "Engine 001")][0] == 2.91
    assert s[("spec_pos_acceptance", "Engine 001#1")][0] == 0.739
    assert s[("spec_pos_acceptance", "Engine 001#3")][0] == 0.261


def test_startup_capacity_and_config_signals():
    s = _signals([
        "(EngineCore_DP0 pid=5) INFO 08-11 09:14:40 [kv_cache_utils.py:1087] GPU KV cache size: 1,098,000 tokens",
        "(EngineCore_DP0 pid=5) INFO 08-11 09:14:40 [kv_cache_utils.py:1091] Maximum concurrency for 32,768 tokens per request: 33.51x",
        "(Worker_TP0 pid=6) INFO 08-11 09:13:40 [model_runner_v1.py:2011] Loading model weights took 40.8213 GB",
        "(APIServer pid=4) INFO 08-11 09:12:00 [utils.py:326] non-default args: {'model': '/m', 'tensor_parallel_size': 16, "
        "'quantization': 'ascend', 'speculative_config': {'method': 'deepseek_mtp', 'num_speculative_tokens': 2}}",
        "(EngineCore_DP0 pid=5) INFO 08-11 09:12:01 [core.py:69] Initializing a V1 LLM engine (v0.9.1) with config: model='/m'",
    ])
    assert s[("kv_cache_tokens", "EngineCore_DP0")][0] == 1_098_000
    assert s[("max_model_len", "EngineCore_DP0")][0] == 32768
    assert s[("max_concurrency", "EngineCore_DP0")][0] == 33.51
    assert s[("weights_gb", "Worker_TP0")][0] == pytest.approx(40.8213)
    assert s[("tensor_parallel_size", "APIServer")][0] == 16
    assert s[("num_speculative_tokens", "APIServer")][0] == 2
    assert s[("speculative_method", "APIServer")][1] == "deepseek_mtp"
    assert s[("quantization", "APIServer")][1] == "ascend"
    assert s[("vllm_version", "EngineCore_DP0")][1] == "0.9.1"


def test_every_line_is_kept():
    lines = ["", "garbage \x00 line", "INFO 01-01 00:00:00 [a.py:1] ok", "   "]
    records, _ = parse(lines)
    assert records["line"].to_list() == [1, 2, 3, 4]
    assert records["parsed"].to_list() == [False, False, True, False]
