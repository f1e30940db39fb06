"""Logs nobody here wrote: pasted and mangled text, mixed kinds, error-code families, tracebacks, short
excerpts, prompts that quote errors, and the verdict when no rule knows the error."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from conftest import run_cli, run_json
from diagnose.parsers.registry import sniff
from diagnose.pipeline.repair import repair

KV_LINE = ("(APIServer pid=3280921) INFO 09-03 14:{m:02d}:{s:02d} [loggers.py:118] Engine 000: Avg prompt throughput: "
           "339.5 tokens/s, Avg generation throughput: 45.0 tokens/s, Running: 20 reqs, Waiting: {w} reqs, GPU KV cache "
           "usage: {kv}%, Prefix cache hit rate: 12.0%")
SPEC_LINE = ("(APIServer pid=3280921) INFO 09-03 14:{m:02d}:{s:02d} [metrics.py:96] SpecDecoding metrics: Mean acceptance "
             "length: 1.01, Accepted throughput: 0.4 tokens/s, Drafted throughput: 45.00 tokens/s, Accepted: 4 tokens, "
             "Drafted: 450 tokens, Per-position acceptance rate: 0.009, Avg Draft acceptance rate: 0.9%")


def _saturated(n: int = 6) -> list[str]:
    lines = []
    for i in range(n):
        lines.append(KV_LINE.format(m=19 + i // 6, s=(i * 10) % 60, w=3 + 9 * i, kv=f"{97.0 + i * 0.4:.1f}"))
        lines.append(SPEC_LINE.format(m=19 + i // 6, s=(i * 10) % 60))
    return lines


def _ids(path: Path, *args: str) -> list[str]:
    _, data = run_json(str(path), *args)
    return [f["rule_id"] for f in data["findings"]]


def _write(tmp_path: Path, name: str, text: str, newline: str = "\n") -> Path:
    path = tmp_path / name
    path.write_bytes(text.replace("\n", newline).encode("utf-8"))
    return path


# --- paste repair --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("width", [160, 200])
def test_metric_lines_wrapped_at_a_fixed_width_are_joined(tmp_path: Path, width: int):
    pieces = []
    for line in _saturated():
        pieces += [line[i:i + width] for i in range(0, len(line), width)]
    ids = _ids(_write(tmp_path, "pasted.txt", "\n".join(pieces) + "\n"))
    assert "KV001" in ids and "MTP001" in ids, ids


def test_wrapped_lines_keep_their_line_numbers_and_no_line_is_dropped():
    text = ["x" * 70 + "abc", "defgh tail of the first line"] * 3
    frame = pl.DataFrame({"line": pl.Series(range(1, 7), dtype=pl.UInt32), "text": text})
    out = repair(frame)
    assert out.height == 6 and out["line"].to_list() == list(range(1, 7))
    assert out["text"][0] == text[0] + text[1] and out["text"][1] == ""


def test_an_error_message_wrapped_by_hand_is_joined_before_matching():
    lines = ["INFO 09-03 14:00:00 [api_server.py:1] Started server process [7]",
             "ValueError: No available memory for the cache blocks. Try increasing",
             "`gpu_memory_utilization` when initializing the engine.",
             "INFO 09-03 14:00:02 [api_server.py:9] Shutting down"]
    out = repair(pl.DataFrame({"line": list(range(1, 5)), "text": lines}))["text"].to_list()
    assert out[1] == ("ValueError: No available memory for the cache blocks. Try increasing "
                      "`gpu_memory_utilization` when initializing the engine.")
    assert out[2] == "" and out[0] == lines[0] and out[3] == lines[3]  # nothing dropped, numbers kept


def test_a_finished_message_and_traceback_grammar_are_not_joined():
    lines = ["RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB.",
             "some other text a user pasted",
             "ERROR 09-03 14:00:00 [worker.py:80] Worker failed while loading the weights of layer",
             "During handling of the above exception, another exception occurred:",
             "  File \"/x/vllm/worker.py\", line 9, in load"]
    out = repair(pl.DataFrame({"line": list(range(1, 6)), "text": lines}))["text"].to_list()
    assert out == lines


def test_lines_of_equal_length_are_not_taken_for_wraps():
    rows = [f"+{'-' * 78}+", "| NPU  Name | Health | " + " " * 56 + "|"] * 4
    rows = [r[:80].ljust(80) for r in rows]
    frame = pl.DataFrame({"line": pl.Series(range(1, 9), dtype=pl.UInt32), "text": rows})
    assert repair(frame)["text"].to_list() == rows


def test_blank_lines_between_every_line_change_nothing(tmp_path: Path):
    ids = _ids(_write(tmp_path, "double-spaced.log", "\n\n".join(_saturated()) + "\n"))
    assert "KV001" in ids and "MTP001" in ids, ids


@pytest.mark.parametrize("marker", ["> ", "> > ", ">"])
def test_quote_markers_are_removed(tmp_path: Path, marker: str):
    ids = _ids(_write(tmp_path, "reply.md", "\n".join(marker + ln for ln in _saturated()) + "\n"))
    assert "KV001" in ids and "MTP001" in ids, ids


def test_code_fences_are_dropped(tmp_path: Path):
    ids = _ids(_write(tmp_path, "issue.md", "```log\n" + "\n".join(_saturated()) + "\n```\n"))
    assert "KV001" in ids, ids


def test_a_metric_line_cut_at_the_end_of_a_paste_still_gives_its_fields(tmp_path: Path):
    lines = _saturated(3)
    cut = KV_LINE.format(m=20, s=0, w=77, kv="99.9")
    lines.append(cut[: cut.index("GPU KV cache")])  # stops after the counters, before the rates
    _, data = run_json(str(_write(tmp_path, "cut.log", "\n".join(lines) + "\n")))
    kv = next(f for f in data["findings"] if f["rule_id"] == "KV001")
    assert "3 to 21" in kv["summary"] or "grew from 3" in kv["summary"], kv["summary"]


def test_container_stamps_in_front_of_every_line(tmp_path: Path):
    stamped = [f"2025-09-03T06:{19 + i // 12:02d}:{(i * 5) % 60:02d}.123456789Z {ln}" for i, ln in enumerate(_saturated())]
    ids = _ids(_write(tmp_path, "docker-logs.txt", "\n".join(stamped) + "\n"))
    assert "KV001" in ids and "MTP001" in ids, ids


# --- kind gating: terminal captures, bare tracebacks ---------------------------------------------------------

def test_a_tty_capture_with_colour_codes_and_crlf_is_read_as_vllm(tmp_path: Path):
    tty = [ln.replace("(APIServer pid=3280921) INFO", "\x1b[1;36m(APIServer pid=3280921)\x1b[0;0m \x1b[32mINFO\x1b[0m")
           .replace(" [loggers.py", " \x1b[90m[loggers.py").replace(" [metrics.py", " \x1b[90m[metrics.py")
           for ln in _saturated()]
    path = _write(tmp_path, "capture.txt", "\n".join(tty) + "\n", newline="\r\n")
    assert sniff(path.name, path.read_text().splitlines()) == "vllm"
    ids = _ids(path)
    assert "KV001" in ids and "MTP001" in ids, ids


def test_colour_codes_that_lost_their_escape_are_removed(tmp_path: Path):
    lines = ["[0;36m(EngineCore_DP0 pid=224)[0;0m ERROR 03-03 10:59:11 [core.py:938] " + t for t in (
        "Traceback (most recent call last):",
        '  File "/vllm/vllm/distributed/device_communicators/shm_broadcast.py", line 536, in acquire_read',
        "TimeoutError")]
    assert "ENG013" in _ids(_write(tmp_path, "paste.log", "\n".join(lines) + "\n"))


def test_a_bare_worker_traceback_without_levels_is_a_vllm_log(tmp_path: Path):
    text = "\n".join([
        "(EngineCore_DP0 pid=5120) Traceback (most recent call last):",
        '(EngineCore_DP0 pid=5120)   File "/vllm/vllm/v1/core/kv_cache_utils.py", line 700, in check_enough_kv_cache_memory',
        "(EngineCore_DP0 pid=5120) ValueError: No available memory for the cache blocks. Try increasing "
        "`gpu_memory_utilization` when initializing the engine.",
    ]) + "\n"
    path = _write(tmp_path, "stderr.txt", text)
    assert sniff(path.name, text.splitlines()) == "vllm"
    ids = _ids(path)
    assert "KV003" in ids and "KV008" in ids, ids


# --- error-code families -------------------------------------------------------------------------------------

@pytest.mark.parametrize("line, rule, category, code", [
    ("RuntimeError: ACL stream synchronize failed, error code:507035", "CODE002", "device", "507035"),
    ("RuntimeError: rtKernelLaunch failed, error code is 507999", "CODE002", "device", "507999"),  # unlisted
    ("EZ1001: [PID: 9] 2026-01-02-03:04:05.111.222 aclnnFoo got an unsupported dtype", "CODE001", "operators", "EZ1001"),
    ("EJ0099: [PID: 9] 2026-01-02-03:04:05.111.222 the RoCE agent reported a fault", "CODE001", "communication",
     "EJ0099"),  # unlisted: the module letter decides
    ("[ERROR] 2025-07-17-11:24:32 (PID:2000, Device:3, RankID:3) ERR02200 DIST call hccl api failed.",
     "CODE005", "communication", "ERR02200"),
    ("[2025-10-29 09:53:45.928+08:00] [64884] [64886] [mindie-server] [ERROR] [x.cpp:1] : [MIE04E11FF01] [sched] bad",
     "CODE004", None, "MIE04E11FF01"),
])
def test_a_code_of_a_family_gives_a_finding_in_its_category(tmp_path: Path, line, rule, category, code):
    _, data = run_json(str(_write(tmp_path, "x.log", line + "\n")))
    found = [f for f in data["findings"] if f["rule_id"] == rule]
    assert found and code in found[0]["summary"], data["findings"]
    if category:
        assert found[0]["category"] == category


@pytest.mark.parametrize("line", [
    "INFO 06-01 10:00:01 [api_server.py:1] listening on 0.0.0.0:507035",
    "latency E2E p99 12 ms; pointer 0x7f3a2b1c; shape [1, 7168]; EPOCH1 started; pid 507014",
    "2025-04-08 18:07:20 request id 500001 done",
])
def test_numbers_and_words_that_only_look_like_codes_give_nothing(tmp_path: Path, line):
    assert _ids(_write(tmp_path, "x.log", line + "\n")) == []


def test_a_code_on_a_line_another_rule_explains_gives_no_code_finding(tmp_path: Path):
    line = ("(Worker_TP0 pid=1) ERROR 06-30 21:05:11 [multiproc_executor.py:585] EI0006: [PID: 1] 2025-06-30-21:05:11.1.2 "
            "Getting socket times out. Reason: Remote Rank did not send the data in time.")
    ids = _ids(_write(tmp_path, "x.log", line + "\n"))
    assert any(i.startswith("COMM") for i in ids) and "CODE001" not in ids, ids


# --- tracebacks ------------------------------------------------------------------------------------------------

def _tb(proc: str, frames: list[str], exc: str | None) -> list[str]:
    head = f"({proc} pid=7) ERROR 08-11 09:20:01 [multiproc_executor.py:671] "
    out = [head + "Traceback (most recent call last):"]
    out += [head + f'  File "{f.split(":")[0]}", line 10, in {f.split(":")[1]}' for f in frames]
    if exc:
        out.append(head + exc)
    return out


def test_interleaved_worker_tracebacks_are_read_per_process(tmp_path: Path):
    a = _tb("Worker_TP0", ["/v/spec_decode/mtp_proposer.py:load_model", "/v/models/deepseek_mtp.py:load_weights"],
            "KeyError: 'model.layers.61.embed_tokens.weight'")
    b = _tb("Worker_TP1", ["/v/worker/worker.py:init_device"], "RuntimeError: unrelated")
    mixed = [x for pair in zip(a, b + [""] * (len(a) - len(b))) for x in pair if x]
    _, data = run_json(str(_write(tmp_path, "serve.log", "\n".join(mixed) + "\n")))
    mtp = next(f for f in data["findings"] if f["rule_id"] == "MTP006")
    assert "deepseek_mtp.py:load_weights" in mtp["summary"] and "Worker_TP1" not in mtp["summary"]


def test_the_deepest_exception_ranks_before_the_engine_death_it_caused(tmp_path: Path):
    lines = _tb("Worker_TP0", ["/v/worker/worker.py:load_model", "/v/vllm_ascend/quantization/quant_config.py:"
                               "is_layer_skipped_ascend"], "KeyError: 'model.layers.0.self_attn.q_a_proj.weight'")
    lines.append("(APIServer pid=3) ERROR 08-11 09:20:05 [async_llm.py:480] vllm.v1.engine.exceptions.EngineDeadError: "
                 "EngineCore encountered an issue. See stack trace (above) for the root cause.")
    _, data = run_json(str(_write(tmp_path, "serve.log", "\n".join(lines) + "\n")))
    ids = [f["rule_id"] for f in data["findings"]]
    assert ids[0] == "QNT001" and "ENG001" in ids
    eng = next(f for f in data["findings"] if f["rule_id"] == "ENG001")
    assert eng["caused_by"] == "QNT001"


def test_a_lost_exception_line_falls_back_to_the_raise(tmp_path: Path):
    text = ('File "/vllm-workspace/vllm-ascend/vllm_ascend/eplb/utils.py", line 80, in model_register\n'
            ' raise NotImplementedError("EPLB is not supported.")\n')
    assert "MOE005" in _ids(_write(tmp_path, "x.log", text))


@pytest.mark.parametrize("exc, rule", [
    ("ModuleNotFoundError: No module named 'custom_ops'", "VER008"),
    ("AttributeError: '_OpNamespace' '_C_ascend' object has no attribute 'npu_foo'", "VER009"),
    ("ImportError: libtorch_npu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi", "VER007"),
])
def test_versions_classes_of_exceptions(tmp_path: Path, exc, rule):
    lines = _tb("EngineCore_DP0", ["/v/vllm_ascend/worker/worker_v1.py:__init__"], exc)
    assert rule in _ids(_write(tmp_path, "x.log", "\n".join(lines) + "\n"))


# --- short excerpts ---------------------------------------------------------------------------------------------

def test_three_saturated_samples_of_a_paste_are_enough(tmp_path: Path):
    # The queue does not grow in these three lines (KV001 wants it rising over a run): a paste is short.
    lines = [KV_LINE.format(m=19, s=s, w=40, kv="98.5") for s in (0, 10, 20)]
    _, data = run_json(str(_write(tmp_path, "x.log", "\n".join(lines) + "\n")))
    kv = next(f for f in data["findings"] if f["rule_id"] == "KV001")
    assert kv["severity"] == "error" and "from all 3 samples of a short excerpt" in kv["summary"]


def test_one_sample_is_a_note_and_a_recovered_blip_is_nothing(tmp_path: Path):
    one = KV_LINE.format(m=19, s=0, w=768, kv="97.8")
    _, data = run_json(str(_write(tmp_path, "one.log", one + "\n")))
    kv = next(f for f in data["findings"] if f["rule_id"] == "KV001")
    assert kv["severity"] == "info"
    blip = [KV_LINE.format(m=19, s=0, w=5, kv="99.0"), KV_LINE.format(m=19, s=10, w=0, kv="40.0")]
    assert "KV001" not in _ids(_write(tmp_path, "blip.log", "\n".join(blip) + "\n"))


# --- prompts are not evidence ----------------------------------------------------------------------------------

PROMPT = ("(APIServer pid=7) INFO 09-03 14:19:12 [logger.py:43] Received request chatcmpl-{i}: prompt: "
          "'<｜begin▁of▁sentence｜><｜User｜>我的服务报错 {err}，怎么办？<｜Assistant｜><think>\\n', params: "
          "SamplingParams(n=1, temperature=0.6, max_tokens=8192), prompt_token_ids: [0, 1, 2], lora_request: None.")


@pytest.mark.parametrize("err, rule", [
    ("RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.97 GiB total capacity; 1.00 GiB "
     "already allocated; 1.00 GiB current active; 10.00 MiB free; 1.20 GiB reserved in total by PyTorch)", "MEM001"),
    ("EI0006: Getting socket times out. Reason: Remote Rank did not send the data in time", "COMM002"),
])
def test_an_error_quoted_in_a_prompt_fires_nothing_and_the_same_as_a_record_does(tmp_path: Path, err, rule):
    prompts = "\n".join(PROMPT.format(i=i, err=err) for i in range(3)) + "\n"
    _, data = run_json(str(_write(tmp_path, "serve.log", prompts)))
    assert data["findings"] == [], [f["rule_id"] for f in data["findings"]]
    assert "NPU out of memory" not in str(data) and "did not send" not in str(data)
    record = f"(Worker_TP0 pid=8) ERROR 09-03 14:19:13 [multiproc_executor.py:585] {err}\n"
    assert rule in _ids(_write(tmp_path, "serve.log", prompts + record))


REQUEST_HEAD = "(APIServer pid=7) INFO 09-03 14:19:12 [logger.py:43] Received request cmpl-1: "


@pytest.mark.parametrize("rest", [
    "prompt: '请分析 HCCL_CONNECT_TIMEOUT <｜User｜>', params: SamplingParams(n=1), prompt_token_ids: [0, 1], "
    "lora_request: None.",
    # repr() quotes with " when the prompt holds a ', and escapes a quote it cannot avoid
    "prompt: \"it's NPU out of memory\", params: SamplingParams(n=1), prompt_token_ids: [5], lora_request: None.",
    "prompt: 'a \\'quoted\\' word', params: SamplingParams(n=1), prompt_token_ids: [1, 2], prompt_embeds shape: "
    "None, lora_request: None.",
    "prompt: 'the prompt says , params: and more', params: SamplingParams(n=1), prompt_token_ids: [3], "
    "lora_request: None.",
    "prompt: 'cut before the ids', params: SamplingParams(n=1), prompt_token_ids: [0, 1, 2",
    "prompt: 'no ids logged', params: SamplingParams(n=1), lora_request: None.",
    "prompt: 'prompt_token_ids: [9] inside', params: SamplingParams(n=1), prompt_token_ids: [4], lora_request: None.",
    "prompt: None, params: SamplingParams(n=1), prompt_token_ids: [0, 1], lora_request: None.",
    "prompt: 'cut in the prompt",
    "prompt: 'x', then something else entirely",
])
def test_the_fast_prompt_mask_masks_as_the_regex_mask_does(rest):
    """mask_logged_prompts (literal searches, before the prefilter) leaves each line as mask_requests (the
    regexes) would make it, or for mask_requests to finish."""
    from diagnose.pipeline.repair import mask_logged_prompts, mask_requests

    frame = pl.DataFrame({"line": [1, 2], "text": [REQUEST_HEAD + rest, "(APIServer pid=7) INFO 09-03 14:19:13 "
                                                   "[loggers.py:1] Engine 000: Avg prompt throughput: 1.0 tokens/s"]})
    assert mask_requests(mask_logged_prompts(frame)).equals(mask_requests(frame))


def test_a_prompt_is_masked_before_the_prefilter_scans_it():
    from diagnose.pipeline.repair import mask_logged_prompts

    frame = pl.DataFrame({"line": [1], "text": [REQUEST_HEAD + "prompt: '请分析 HCCL_CONNECT_TIMEOUT', params: "
                                                "SamplingParams(n=1), prompt_token_ids: [0, 128803], lora_request: None."]})
    text = mask_logged_prompts(frame)["text"][0]
    assert text == (REQUEST_HEAD + "prompt: <masked>, params: SamplingParams(n=1), prompt_token_ids: [<masked>], "
                    "lora_request: None.")


# --- the verdict -----------------------------------------------------------------------------------------------

def test_an_error_no_rule_knows_that_ended_the_run_is_said_at_the_top_and_fails_it(tmp_path: Path):
    path = _write(tmp_path, "x.log", "Traceback (most recent call last):\n  File \"a.py\", line 1, in f\n"
                                     "RuntimeError: the flux capacitor is off\n")
    result = run_cli(str(path), "--no-color")
    assert result.exit_code == 1
    assert "Root cause: The run ended with RuntimeError (END001)" in result.stdout
    assert "flux capacitor" in result.stdout
    assert run_cli(str(path), "--fail-on", "critical").exit_code == 0


def test_a_process_traceback_without_levels_that_no_rule_knows_fails_the_run(tmp_path: Path):
    # An engine core's stderr as vLLM prefixes it: no level, no time. Its exception line is the error that ended
    # the run, and what it says decides the category (not the worker module that raised it).
    text = "\n".join([
        "(EngineCore_DP0 pid=2198) Traceback (most recent call last):",
        '(EngineCore_DP0 pid=2198)   File "/vllm-workspace/vllm-ascend/vllm_ascend/worker/worker.py", line 313, '
        "in init_device",
        "(EngineCore_DP0 pid=2198)     self.device = self._init_device()",
        '(EngineCore_DP0 pid=2198)   File "/vllm-workspace/vllm-ascend/vllm_ascend/worker/worker.py", line 270, '
        "in _init_device",
        "(EngineCore_DP0 pid=2198)     raise ValueError(",
        "(EngineCore_DP0 pid=2198) ValueError: Free memory on device (27.18/60.96 GiB) on startup is less than "
        "desired GPU memory utilization (0.9, 54.86 GiB). Decrease GPU memory utilization or reduce GPU memory used "
        "by other processes.",
    ]) + "\n"
    path = _write(tmp_path, "stderr.txt", text)
    code, report = run_json(str(path))
    assert code == 1
    top = report["findings"][0]
    assert top["rule_id"] == "END001" and top["category"] == "memory", top
    assert [e["line"] for e in top["evidence"]] == [6]


def test_an_engine_core_that_died_after_its_start_up_lines_fails_the_run(tmp_path: Path):
    # The uncaught exception joins the process's last INFO record (no head of its own); it is still the error
    # that ended the process. The same exception with the process going on afterwards ended nothing.
    head = ["(EngineCore_DP0 pid=2198) INFO 10-01 10:00:00 [core.py:70] Initializing a V1 LLM engine (v0.11.0)",
            "(EngineCore_DP0 pid=2198) INFO 10-01 10:00:05 [worker.py:100] Loading weights"]
    crash = ["(EngineCore_DP0 pid=2198) Process EngineCore_DP0:",
             "(EngineCore_DP0 pid=2198) Traceback (most recent call last):",
             '(EngineCore_DP0 pid=2198)   File "/vllm-workspace/vllm-ascend/vllm_ascend/worker/worker.py", line 270, '
             "in _init_device",
             "(EngineCore_DP0 pid=2198) RuntimeError: the flux capacitor is off"]
    code, report = run_json(str(_write(tmp_path, "a.log", "\n".join(head + crash) + "\n")))
    assert code == 1 and report["findings"][0]["rule_id"] == "END001"
    # (without `Process EngineCore_DP0:`, multiprocessing's line for a process that died: a traceback printed by
    # a handler)
    went_on = head + crash[1:] + ["(EngineCore_DP0 pid=2198) INFO 10-01 10:00:09 [core.py:90] Retrying with defaults"]
    code, report = run_json(str(_write(tmp_path, "b.log", "\n".join(went_on) + "\n")))
    assert code == 0 and not report["findings"], report["findings"]


def test_a_traceback_that_lost_its_exception_line_is_classified_by_what_its_record_said(tmp_path: Path):
    # vLLM V0's engine logs `logger.exception(e)`: the KeyError's key, then the traceback, in one record; the
    # paste stops inside the traceback. The key names a quantization parameter, the frame only the engine loop.
    path = _write(tmp_path, "x.log", "\n".join([
        "INFO 06-20 23:20:10 model_runner.py:1 Starting to load model /models/qwen-w8a8...",
        "ERROR 06-20 23:20:13 engine.py:400] 'layers.0.mlp.gate_up_proj.deq_scale'",
        "ERROR 06-20 23:20:13 engine.py:400] Traceback (most recent call last):",
        'ERROR 06-20 23:20:13 engine.py:400]   File "/usr/lib/python3.10/site-packages/vllm/engine/multiprocessing/'
        'engine.py", line 391, in run_mp_engine',
        "ERROR 06-20 23:20:13 engine.py:400]     engine = MQLLMEngine.from_engine_args(engine_args=engine_args,",
    ]) + "\n")
    _, report = run_json(str(path))
    top = report["findings"][0]
    assert top["rule_id"] == "END001" and top["category"] == "quantization", top
    assert "deq_scale" in top["summary"]


def test_an_error_no_rule_knows_in_a_run_that_went_on_is_listed_and_passes(tmp_path: Path):
    path = _write(tmp_path, "x.log",
                  "INFO 09-03 14:19:12 [api_server.py:1] Started server process [7]\n"
                  "ERROR 09-03 14:19:13 [serving.py:88] the flux capacitor is off for request 12\n"
                  "INFO 09-03 14:19:14 [loggers.py:118] Engine 000: Avg prompt throughput: 1.0 tokens/s\n")
    result = run_cli(str(path), "--no-color")
    assert result.exit_code == 0
    assert "No failure found: the run did not end abnormally" in result.stdout and "flux capacitor" in result.stdout
    assert run_cli(str(path), "--fail-on-unrecognised").exit_code == 1


def test_a_clean_log_says_no_findings_and_exits_0(tmp_path: Path):
    path = _write(tmp_path, "x.log", "INFO 09-03 14:19:12 [api_server.py:1] Started server process [7]\n")
    result = run_cli(str(path), "--no-color")
    assert result.exit_code == 0 and "No findings." in result.stdout
