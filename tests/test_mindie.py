"""MindIE: every line form of the reference, mixed streams, the day-of-month stamp bug, GBK files, error-code split,
config.json, OOM numbers, the MindIE rules and the samples/mindie-deepseek bundle."""

from __future__ import annotations

from datetime import datetime

import polars as pl
import pytest
from helpers import said

import helpers
from conftest import SAMPLES, run_json
from diagnose.authoring.fixtures import evaluate
from diagnose.parsers.registry import sniff
from diagnose.parsers.kinds import mindie
from diagnose.parsers.families.oom import oom_signals


def parse(text: str, kind: str = "mindie", path: str = "node-0/mindieservice_daemon.log"):
    return helpers.parse(kind, text, path, node="node-0")


def row(records: pl.DataFrame, line: int = 1) -> dict:
    return records.filter(pl.col("line") == line).row(0, named=True)


# --- line forms -----------------------------------------------------------------------------------

LINE_FORMS = [
    pytest.param(
        "[2025-11-03 10:31:50.884+08:00] [51201] [51203] [mindie-server] [ERROR] [llm_daemon.cpp:76] : "
        "[MIE04E010109] [daemon] Daemon wait pid with 51230 exit, Please check the service log or python log.",
        dict(ts=datetime(2025, 11, 3, 10, 31, 50, 884000), pid=51201, proc="mindie-server", level="ERROR",
             component="llm_daemon.cpp:76", code="MIE04E010109"),
        "[MIE04E010109] [daemon] Daemon wait pid",
        id="verbose C++ +08:00 with code and sub-component",
    ),
    pytest.param(
        "[2025-11-03 10:31:49.003+0800] [51230] [281472913651744] [mindie-server] [ERROR] [model.py:43] : "
        "[MIE04E13030A] [Model]\t>>> return initialize error result: {'status': 'error', 'npuBlockNum': '0', 'cpuBlockNum': '0'}",
        dict(ts=datetime(2025, 11, 3, 10, 31, 49), pid=51230, proc="mindie-server", level="ERROR",
             component="model.py:43", code="MIE04E13030A"),
        "[MIE04E13030A] [Model]\t>>> return initialize",
        id="Python model wrapper +0800 (sub-second dropped)",
    ),
    pytest.param(
        "[2025-10-29 09:53:45.863049] [64924] [281464256065888] [llm] [ERROR] [acl_nn_operation.cpp:143] "
        "gmmNode call SetAclNNWorkspaceExecutor fail, error:161002",
        dict(ts=datetime(2025, 10, 29, 9, 53, 45, 863049), pid=64924, proc="llm", level="ERROR",
             component="acl_nn_operation.cpp:143", code=None),
        "gmmNode call SetAclNNWorkspaceExecutor fail",
        id="LLM C++ 6-digit fraction, no zone, no colon",
    ),
    pytest.param(
        "[2025-05-13 02:25:58.64217] [error] [36815] [hccl_runner.cpp:132] AllGatherHcclRunner:0 "
        "HcclCommInitRootInfo fail, error:2, rank:1, rankSize:4",
        dict(ts=datetime(2025, 5, 13, 2, 25, 58, 642170), pid=None, proc="atb", level="ERROR",
             component="hccl_runner.cpp:132"),
        "AllGatherHcclRunner:0 HcclCommInitRootInfo fail",
        id="ATB 5-digit fraction, lower-case level, one id",
    ),
    pytest.param(
        "[error] [1079] [multi_latent_attention_operation.cpp:91] headNum should be {8,16,32,64,128}",
        dict(ts=None, year_known=False, proc="atb", level="ERROR", component="multi_latent_attention_operation.cpp:91"),
        "headNum should be {8,16,32,64,128}",
        id="bare ATB line without a stamp",
    ),
    pytest.param(
        "[2025-10-29 09:52:10.491+08:00] [64884] [64886] [mindie-server] ===init log===",
        dict(ts=datetime(2025, 10, 29, 9, 52, 10, 491000), pid=64884, proc="mindie-server", level=None),
        "===init log===",
        id="init marker with tid and component",
    ),
    pytest.param(
        "[2025-10-29 09:52:10.492+08:00] [64884] ===init log===",
        dict(ts=datetime(2025, 10, 29, 9, 52, 10, 492000), pid=64884, proc="mindie"),
        "===init log===",
        id="init marker with pid only",
    ),
    pytest.param(
        "[2025-11-03 10:22:05,311] [51230] [281472913651744] [llm] [INFO] [spec_worker.py-58] : "
        "The number of sepculative tokens is 1. Init MtpWorker...",
        dict(ts=datetime(2025, 11, 3, 10, 22, 5, 311000), pid=51230, proc="llm", level="INFO",
             component="spec_worker.py-58"),
        "The number of sepculative tokens is 1.",
        id="Python LLM comma milliseconds and file.py-NN",
    ),
    pytest.param(
        "[2025-11-03 14:02:09,552] [61230] [281473111111111] [llmmodels] [WARN] [kvcache_settings.py-75] : "
        "[MIE05E01000A] Invalid number of NPU blocks: -38.",
        dict(level="WARNING", proc="llmmodels", code="MIE05E01000A", component="kvcache_settings.py-75"),
        "[MIE05E01000A] Invalid number of NPU blocks",
        id="Python LLM WARN with an error code",
    ),
    pytest.param(
        "[2025-11-03 14:02:09.552+08:00] : [ERROR] [MIE04E120208] Available shared memory size is not enough",
        dict(ts=datetime(2025, 11, 3, 14, 2, 9, 552000), level="ERROR", code="MIE04E120208", pid=None),
        "[MIE04E120208] Available shared memory",
        id="non-verbose with code",
    ),
    pytest.param(
        "[2025-11-03 14:02:09,552] : [INFO] Daemon start success!",
        dict(ts=datetime(2025, 11, 3, 14, 2, 9, 552000), level="INFO", code=None),
        "Daemon start success!",
        id="non-verbose Python without code",
    ),
    pytest.param(
        "[2025-11-03 10:22:05.311+08:00] [51230] [51232] [mindie-server] [FATAL] : [endpoint] Socket bind failed",
        dict(level="CRITICAL", component=None, pid=51230),
        "[endpoint] Socket bind failed",
        id="verbose without file:line",
    ),
]


@pytest.mark.parametrize("line, want, message_start", LINE_FORMS)
def test_line_forms(line, want, message_start):
    records, _ = parse(line)
    got = row(records)
    assert got["parsed"] is True
    assert got["source"] == "mindie"
    assert got["message"].startswith(message_start)
    for key, value in want.items():
        assert got[key] == value, key
    if got["ts"] is not None:
        assert got["year_known"] is True


def test_day_of_month_in_milliseconds_is_not_used_for_ordering():
    records, _ = parse(
        "[2025-10-29 09:53:45.029+0800] [64924] [2814] [mindie-server] [ERROR] [model.py:40] : [Model]\t>>> Exception:x\n"
        "[2025-10-28 23:10:01.028+0800] [64924] [2814] [mindie-server] [INFO] [model.py:31] : [Model]\t>>> start\n"
        "[2025-10-29 09:53:45.029+08:00] [64884] [64886] [mindie-server] [INFO] [llm_daemon.cpp:70] : [daemon] ok\n"
    )
    ts = records["ts"].to_list()
    assert ts[0] == datetime(2025, 10, 29, 9, 53, 45)  # .029 is the day, not milliseconds
    assert ts[1] == datetime(2025, 10, 28, 23, 10, 1)
    assert ts[2] == datetime(2025, 10, 29, 9, 53, 45, 29000)  # `+08:00` C++ stamps keep their milliseconds


def test_raw_lines_and_mixed_stream_grouping():
    text = """
[2025-10-29 09:52:10.491+08:00] [64884] [64886] [mindie-server] ===init log===
Start to parse ranktable file
[2025-10-29 09:53:45.863238] [error] [65032] [graph_runner.cpp:762] integrated_gmmRunner_5_4_9_0_2:0  node[0] setup fail, error code:12
mki_log log dir:/root/atb/log exist
[2025-10-29 09:53:45.029+0800] [64924] [2814] [mindie-server] [ERROR] [model.py:40] : [Model]\t>>> Exception:Setup fail, enable log
Traceback (most recent call last):
  File "/usr/local/lib/python3.11/site-packages/atb_llm/runner/model_runner.py", line 344, in warm_up
RuntimeError: Setup fail, enable log

[2025-10-29 09:53:45.928+08:00] [64884] [64886] [mindie-server] [ERROR] [llm_daemon.cpp:76] : [MIE04E010109] [daemon] Daemon wait pid with 64924 exit
[ERROR] TBE Subprocess[task_distribute] raise error[], main process disappeared!
Daemon is killing...
"""
    records, _ = parse(text)
    assert records.height == 12
    parsed = records.filter(pl.col("parsed"))["line"].to_list()
    assert parsed == [1, 3, 5, 10]
    events = dict(zip(records["line"].to_list(), records["event"].to_list()))
    assert [events[n] for n in (6, 7, 8, 9)] == [5, 5, 5, 5]  # the traceback belongs to the exception line
    assert events[2] == 1 and events[4] == 3
    assert events[11] == 10 and events[12] == 10
    tb = row(records, 8)
    assert tb["parsed"] is False and tb["message"] == "RuntimeError: Setup fail, enable log"
    assert tb["ts"] == datetime(2025, 10, 29, 9, 53, 45) and tb["pid"] == 64924  # inherited from the opener
    assert row(records, 11)["level"] == "ERROR"


def test_malformed_lines_stay_raw():
    records, signals = parse("[2025-13-45 99:99:99.1+08:00] [1] [2] [x] [ERROR] [a.cpp:1] : broken\n\x00garbage ]]][[[\n")
    assert records.height == 2
    assert records["ts"].null_count() == 2


def test_sniff_mindie_forms_and_mixed_streams():
    daemon = [
        "[2025-10-29 09:52:10.491+08:00] [64884] [64886] [mindie-server] ===init log===",
        "Start to parse ranktable file",
        "[2025-10-29 09:53:45.863049] [64924] [2814] [llm] [ERROR] [acl_nn_operation.cpp:143] gmmNode call x fail",
        "Daemon is killing...",
    ]
    assert sniff("tee_output.log", daemon) == "mindie"
    atb = [
        "[2025-05-13 02:25:58.64217] [error] [36815] [hccl_runner.cpp:132] AllGatherHcclRunner:0 fail",
        "[2025-05-13 02:25:58.64301] [error] [36815] [hccl_runner.cpp:140] CommPool commCreateFunc fail",
        "some stdout line",
    ]
    assert sniff("output-2.log", atb) == "mindie"
    bare = ["Daemon start success!", "[...]", "[error] [1079] [multi_latent_attention_operation.cpp:91] headNum should be"]
    assert sniff("garbled.log", bare) == "mindie"
    python = ["[2025-11-03 10:22:05,311] [51230] [2814] [llm] [INFO] [spec_worker.py-58] : Init MtpWorker..."]
    assert sniff("mindie-llm_51230_20251103102205298.log", python) == "mindie"
    nonverbose = ["[2025-11-03 14:02:09.552+08:00] : [INFO] started", "[2025-11-03 14:02:10.552+08:00] : [ERROR] x"]
    assert sniff("x.log", nonverbose) == "mindie"


def test_gbk_encoded_mindie_log(tmp_path):
    text = (
        "[2025-11-03 10:31:49.003+0800] [51230] [2814] [mindie-server] [ERROR] [model.py:40] : [Model]\t>>> "
        "Exception:模型初始化失败 Setup fail, enable log: export ASDOPS_LOG_LEVEL=ERROR\n"
        "[2025-11-03 10:31:50.884+08:00] [51201] [51203] [mindie-server] [ERROR] [llm_daemon.cpp:76] : "
        "[MIE04E010109] [daemon] Daemon wait pid with 51230 exit, 请检查服务日志\n"
        "Daemon is killing...\n"
    )
    path = tmp_path / "mindie-server_51201_202511031021.log"
    path.write_bytes(text.encode("gbk"))
    code, report = run_json(str(path))
    assert code == 1, report["errors"]
    assert report["inputs"][0]["kind"] == "mindie"
    ids = [f["rule_id"] for f in report["findings"]]
    assert ids[0] == "ENG011" and "ENG010" in ids
    evidence = [e["text"] for f in report["findings"] for e in f["evidence"]]
    assert any("模型初始化失败" in t for t in evidence)


# --- error codes ---------------------------------------------------------------------------------


def test_split_code():
    parts = mindie.split_code("MIE04E010109")
    assert parts == {
        "code": "MIE04E010109", "component": "04", "component_name": "server", "severity": "error",
        "subcomponent": "01", "subcomponent_name": "daemon", "number": "0109",
    }
    assert mindie.split_code("MIE04E13030A")["subcomponent_name"] == "model_wrapper"
    assert mindie.split_code("MIE05E01000A")["component_name"] == "llm"
    assert mindie.split_code("EI0006") is None and mindie.split_code(None) is None


def test_code_parts_expr():
    frame = pl.DataFrame({"code": ["MIE04E120208", "EI0006", None]})
    out = frame.select(mindie.code_parts_expr("code")).unnest("code_parts")
    assert out.row(0) == ("04", "12", "0208")
    assert out.row(1) == (None, None, None) and out.row(2) == (None, None, None)


# --- signals: OOM, blocks, MTP ---------------------------------------------------------------------

OOM_LINE = (
    "[2025-10-29 10:01:04.029+0800] [76781] [2814] [mindie-server] [ERROR] [model.py:40] : [Model]\t>>> "
    "Exception:NPU out of memory. Tried to allocate 450.00 MiB (NPU 4; 60.97 GiB total capacity; 14.67 GiB already "
    "allocated; 14.67 GiB current active; 22.66 MiB free; 14.71 GiB reserved in total by PyTorch) If reserved memory "
    "is >> allocated memory try setting max_split_size_mb to avoid fragmentation."
)


def _values(signals: pl.DataFrame) -> dict[str, float]:
    return {s: v for s, v in signals.select("signal", "value").iter_rows() if v is not None}


def test_oom_signals_from_mindie_once_per_event():
    text = OOM_LINE + "\nTraceback (most recent call last):\nRuntimeError: " + OOM_LINE.split("Exception:")[1]
    _, signals = parse(text)
    oom = signals.filter(pl.col("signal").str.starts_with("npu_oom_"))
    assert oom["line"].unique().to_list() == [1]  # the traceback's copy does not count twice
    v = _values(oom)
    assert v["npu_oom_total_gib"] == pytest.approx(60.97)
    assert v["npu_oom_allocated_gib"] == pytest.approx(14.67)
    assert v["npu_oom_reserved_gib"] == pytest.approx(14.71)
    assert v["npu_oom_free_gib"] == pytest.approx(22.66 / 1024)
    assert v["npu_oom_request_gib"] == pytest.approx(450 / 1024)
    assert v["npu_oom_held_elsewhere_gib"] == pytest.approx(60.97 - 14.71 - 22.66 / 1024)
    assert oom["engine"].unique().to_list() == ["NPU 4"]


def test_oom_signals_from_vllm_without_reserved():
    line = ("(Worker_TP0 pid=812) ERROR 06-30 23:41:02 [multiproc_executor.py:585] torch.OutOfMemoryError: NPU out of "
            "memory. Tried to allocate 172.00 MiB (NPU 0; 29.49 GiB total capacity; 28.97 GiB already allocated; "
            "122.25 MiB free)")
    _, signals = parse(line, kind="vllm", path="node-0/vllm.log")
    v = _values(signals)
    assert v["npu_oom_held_elsewhere_gib"] == pytest.approx(29.49 - 28.97 - 122.25 / 1024)
    assert "npu_oom_reserved_gib" not in v


def test_oom_signals_ignore_other_lines():
    records, _ = parse("[2025-10-29 10:01:04.029+08:00] [1] [2] [mindie-server] [INFO] [a.cpp:1] : out of memory soon")
    assert oom_signals(records).height == 0


def test_block_and_mtp_signals():
    _, signals = parse(
        "[2025-11-03 14:02:10,114] [61230] [2814] [llm] [INFO] [kvcache_settings.py-88] : CpuBlockNum:512; NpuBlockNum: 1747\n"
        "[2025-11-03 14:02:09,551] [61230] [2814] [llm] [INFO] [kvcache_settings.py-71] : num_cpu_blocks:512, num_npu_blocks:-38\n"
        "[2025-11-03 10:22:05,311] [51230] [2814] [llm] [INFO] [spec_worker.py-58] : The number of sepculative tokens is 1. Init MtpWorker...\n"
        "[2025-10-29 10:01:04.029+0800] [76781] [2814] [mindie-server] [ERROR] [model.py:43] : [MIE04E13030A] [Model]\t>>> "
        "return initialize error result: {'status': 'error', 'npuBlockNum': '0', 'cpuBlockNum': '0'}\n"
    )
    blocks = signals.filter(pl.col("signal") == "kv_blocks").select("line", "value").rows()
    assert blocks == [(1, 1747.0), (2, -38.0)]  # the init-failure result's '0' is not a block count
    assert signals.filter(pl.col("signal") == "speculative_method")["text"].to_list() == ["mtp"]
    assert signals.filter(pl.col("signal") == "num_speculative_tokens")["value"].to_list() == [1.0]


# --- config.json ---------------------------------------------------------------------------------

CONFIG = """{
    "Version" : "1.0.0",
    "BackendConfig" : {
        "modelInstanceNumber" : 1,
        "npuDeviceIds" : [
            [0, 1, 2, 3]
        ],
        "multiNodesInferEnabled" : false,
        "ModelDeployConfig" : {
            "maxSeqLen" : 2560,
            "maxInputTokenLen" : 2048,
            "ModelConfig" : [
                {
                    "modelName" : "deepseek_v3",
                    "worldSize" : 8,
                    "npuMemSize" : -1,
                    "dp" : 2, "tp" : 4,
                    "moe_tp" : 1,
                    "moe_ep" : 8,
                    "plugin_params" : "{\\"plugin_type\\":\\"mtp\\",\\"num_speculative_tokens\\": 1}"
                }
            ]
        },
        "ScheduleConfig" : { "cacheBlockSize" : 128, "maxPrefillTokens" : 8192, "maxBatchSize" : 200 }
    }
}"""


def test_config_signals_and_lines():
    records, signals = parse(CONFIG, kind="mindie-config", path="node-0/conf/config.json")
    assert records.height == len(CONFIG.splitlines())
    got = {(s, e): (ln, v, t) for ln, e, s, v, t in signals.select("line", "engine", "signal", "value", "text").iter_rows()}
    assert got[("mindie_world_size", "ModelConfig[0]")][:2] == (15, 8.0)
    assert got[("mindie_device_count", "ModelConfig[0]")][:2] == (5, 4.0)
    assert got[("mindie_device_world_gap", "ModelConfig[0]")][:2] == (15, 4.0)
    assert got[("mindie_max_seq_len", "config")][:2] == (10, 2560.0)
    assert got[("mindie_max_input_token_len", "config")][1] == 2048.0
    assert got[("mindie_npu_mem_size", "ModelConfig[0]")][1] == -1.0
    assert got[("mindie_dp", "ModelConfig[0]")][:2] == (17, 2.0)
    assert got[("mindie_tp", "ModelConfig[0]")][:2] == (17, 4.0)
    assert got[("mindie_moe_tp", "ModelConfig[0]")][1] == 1.0
    assert got[("mindie_moe_ep", "ModelConfig[0]")][1] == 8.0
    assert got[("mindie_cache_block_size", "config")][:2] == (24, 128.0)
    assert got[("mindie_multi_node", "config")][1] == 0.0
    assert got[("speculative_method", "ModelConfig[0]")] == (20, None, "mtp")
    assert got[("num_speculative_tokens", "ModelConfig[0]")][1] == 1.0
    assert row(records, 10)["message"] == "BackendConfig.ModelDeployConfig.maxSeqLen = 2560"
    assert row(records, 10)["parsed"] is True and row(records, 1)["parsed"] is False


def test_config_lenient_and_broken():
    commented = CONFIG.replace('"maxSeqLen" : 2560,', '"maxSeqLen" : 32768, // NOTE: 32k, see http://example')
    commented = commented.replace('"moe_ep" : 8,', '"moe_ep" : 8,,').replace(",,", ",")
    commented = commented.replace('"maxBatchSize" : 200 }', '"maxBatchSize" : 200, }')
    _, signals = parse(commented, kind="mindie-config", path="config.json")
    assert _values(signals.filter(pl.col("signal") == "mindie_max_seq_len")) == {"mindie_max_seq_len": 32768.0}
    broken = CONFIG[: CONFIG.index('"ScheduleConfig"')]  # truncated file
    records, signals = parse(broken, kind="mindie-config", path="config.json")
    assert records.height == len(broken.strip("\n").split("\n"))
    assert _values(signals)["mindie_world_size"] == 8.0


def test_config_multi_node_has_no_gap():
    multi = CONFIG.replace('"multiNodesInferEnabled" : false', '"multiNodesInferEnabled" : true')
    _, signals = parse(multi, kind="mindie-config", path="config.json")
    assert "mindie_device_world_gap" not in signals["signal"].to_list()


def test_config_sniffing():
    assert sniff("conf/config.json", CONFIG.splitlines()) == "mindie-config"
    assert sniff("anything.json", CONFIG.replace("\n", " ").splitlines()) == "mindie-config"
    hf = ['{', '  "architectures": ["DeepseekV3ForCausalLM"],', '  "num_attention_heads": 128', '}']
    assert sniff("config.json", hf) != "mindie-config"


# --- rules ---------------------------------------------------------------------------------------


def _fire(catalog, rule_id: str, log: str, path: str = "node-0/daemon.log", kind: str | None = None):
    findings, errors = evaluate(catalog[rule_id], log.strip("\n"), path, kind)
    assert not errors
    return findings


INIT_FAILURE = """
[2025-10-29 09:46:15.396+08:00] [76758] [76760] [mindie-server] ===init log===
""" + OOM_LINE + """
Traceback (most recent call last):
  File "/usr/local/lib/python3.11/site-packages/mindie_llm/modeling/model_wrapper/atb/atb_model_wrapper.py", line 52, in __init__
    self.model_runner.load_weights()
[2025-10-29 10:01:04.029+0800] [76781] [2814] [mindie-server] [ERROR] [model.py:43] : [MIE04E13030A] [Model]\t>>> return initialize error result: {'status': 'error', 'npuBlockNum': '0', 'cpuBlockNum': '0'}
[2025-10-29 10:01:06.167+08:00] [76758] [76760] [mindie-server] [ERROR] [llm_daemon.cpp:76] : [MIE04E010109] [daemon] Daemon wait pid with 76781 exit, Please check the service log or python log.
Daemon is killing...
"""


@pytest.mark.parametrize("rule_id", ["KV001", "KV002", "KV003", "KV004", "KV010", "KV011"])
def test_npu_block_num_zero_in_init_failure_fires_no_kv_rule(catalog, rule_id):
    if rule_id in catalog:
        assert _fire(catalog, rule_id, INIT_FAILURE) == []


def test_negative_npu_blocks_fire_kv011(catalog):
    findings = _fire(catalog, "KV011", (
        "[2025-11-03 14:02:09,552] [61230] [2814] [llm] [ERROR] [kvcache_settings.py-75] : [MIE05E01000A] "
        "Invalid number of NPU blocks: -38. This is due to warm_up out of memory."
    ))
    assert findings and findings[0].category == "kv-cache"


def test_mindie_oom_during_weight_load(tmp_path):
    path = tmp_path / "node-0" / "mindieservice_daemon.log"
    path.parent.mkdir()
    path.write_text(INIT_FAILURE.strip("\n") + "\n", encoding="utf-8")
    code, report = run_json(str(path))
    findings = report["findings"]
    assert findings[0]["category"] == "memory"
    assert {f["rule_id"] for f in findings} >= {"MEM001", "MEM002", "ENG010"}
    assert not [f for f in findings if f["category"] == "kv-cache"]
    mem001 = next(f for f in findings if f["rule_id"] == "MEM001")
    assert "while loading weights" in mem001["summary"]
    mem002 = next(f for f in findings if f["rule_id"] == "MEM002")
    assert "46.2 GiB" in mem002["summary"] and "NPU 4" in mem002["summary"]
    eng010 = next(f for f in findings if f["rule_id"] == "ENG010")
    assert eng010["caused_by"] in ("MEM001", "MEM002")


def test_operator_setup_failure_is_root_and_exit_is_consequence(catalog):
    log = """
[2025-10-29 09:53:45.863049] [64924] [2814] [llm] [ERROR] [acl_nn_operation.cpp:143] gmmNode call SetAclNNWorkspaceExecutor fail, error:161002
[2025-10-29 09:53:45.029+0800] [64924] [2814] [mindie-server] [ERROR] [model.py:43] : [MIE04E13030A] [Model]\t>>> return initialize error result: {'status': 'error', 'npuBlockNum': '0', 'cpuBlockNum': '0'}
[2025-10-29 09:53:45.928+08:00] [64884] [64886] [mindie-server] [ERROR] [llm_daemon.cpp:76] : [MIE04E010109] [daemon] Daemon wait pid with 64924 exit
"""
    assert catalog["ENG011"].consequence is False and catalog["ENG011"].category == "engine"
    assert catalog["ENG010"].consequence is True
    assert _fire(catalog, "ENG011", log)[0].evidence[0].line == 1
    assert [e.line for e in _fire(catalog, "ENG010", log)[0].evidence] == [2, 3]


def test_headnum_rule_and_device_id_rules(catalog):
    found = _fire(catalog, "CFG010", "[error] [1079] [multi_latent_attention_operation.cpp:91] headNum should be {8,16,32,64,128}")
    assert found[0].category == "config" and "dp 4, tp 8, moe_tp 1, moe_ep 32" in said(found[0].remediation).replace('"', "").replace(":", "")
    gap = _fire(catalog, "CFG011", CONFIG, path="node-0/conf/config.json", kind="mindie-config")
    assert gap and "worldSize 8" in said(gap[0].summary) and gap[0].evidence[0].line == 15
    good = CONFIG.replace('"worldSize" : 8', '"worldSize" : 4')
    assert _fire(catalog, "CFG011", good, path="node-0/conf/config.json", kind="mindie-config") == []


# --- the sample bundle ---------------------------------------------------------------------------


def test_sample_mindie_deepseek():
    code, report = run_json(str(SAMPLES / "mindie-deepseek"))
    assert code == 1, report["errors"]
    assert not report["errors"]
    kinds = sorted(i["kind"] for i in report["inputs"] if i["path"].endswith((".log", ".json")))  # beside derived inputs
    assert kinds == ["mindie", "mindie", "mindie-config"]
    findings = report["findings"]
    assert findings[0]["rule_id"] == "CFG010" and findings[0]["category"] == "config"
    ids = [f["rule_id"] for f in findings]
    assert "ENG011" in ids and ids.index("ENG011") < ids.index("ENG010")
    assert ids[-1] == "ENG010"  # the only consequence, listed last
    assert next(f for f in findings if f["rule_id"] == "ENG010")["caused_by"] == "CFG010"
    assert not [f for f in findings if f["category"] == "kv-cache"]
    assert all(f["nodes"] == ["node-0"] for f in findings if f["rule_id"] in ("CFG010", "ENG011", "ENG010"))
