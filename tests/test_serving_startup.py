"""Serving start-up failures that are settings or number formats, not engine crashes.

A MindIE daemon that stops because its endpoint cannot listen, its config.json fails a check, its TLS files are
missing or a device id is outside the visible range prints `Failed to init endpoint!` / `Daemon is killing...`
last; an FP8 checkpoint on Atlas A2/A3 ends in a torch_npu code that reads like a version problem. These tests
build such pastes (MindIE's console and log shapes, benign lines around them) and check the first finding is the
setting or the format, and the daemon exit or the code is attributed to it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import run_json
from diagnose.knowledge.categories import category_of

START = "[2026-03-11 09:41:02.118+08:00] [48211] [48211] [server] [INFO] [llm_daemon.cpp:301] : [daemon] Start mindie server"
CONFIG_OK = ("[2026-03-11 09:41:02.226+08:00] [48211] [48211] [server] [INFO] [config_manager_impl.cpp:120] : "
             "[ConfigManager::InitConfigManager] Successfully init config manager")
ENDPOINT_FAILED = ("[2026-03-11 09:41:59.411+08:00] [48211] [48211] [server] [ERROR] [llm_daemon.cpp:318] : "
                   "[MIE04E01041C] [daemon] Failed to init endpoint! Please check the service log or console output.")
KILLING = "Daemon is killing, please wait about 30 seconds..."


def _mindie(cause: str) -> str:
    return "\n".join([START, CONFIG_OK, cause, ENDPOINT_FAILED, KILLING]) + "\n"


def _report(tmp_path: Path, text: str, name: str = "mindie_console.log") -> dict:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    _, data = run_json(str(path))
    return data


def _server(message: str) -> str:
    return f"[2026-03-11 09:41:59.410+08:00] [48211] [48233] [server] [ERROR] [http_server.cpp:236] : [MIE04E020407] [endpoint] {message}"


@pytest.mark.parametrize("cause, rule, category, says", [
    (_server("Socket bind failed, bind_result is -1. Address already in use"), "CFG020", "config", "`metricsPort`"),
    (_server("Management or Business or Metrics Http server listen port is occupied"), "CFG020", "config", "metricsPort"),
    (_server("Failed to listen 10.8.0.4:1025, please check if business ip and port are legal."), "CFG020", "config",
     "`ipAddress` / `port`"),
    ("Input ipAddress [0.0.0.0] is invalid", "CFG020", "config", "allowAllZeroIpListening"),
    ("serverConfig.port [443] is less than [1024]", "CFG021", "config", "serverConfig.port"),
    ("The value of modelParam.maxInputTokenLen should be in [1, 4194304].", "CFG021", "config", "maxInputTokenLen"),
    ("The value of maxPrefillTokens should not be less than maxInputTokenLen.", "CFG021", "config", "maxPrefillTokens"),
    ("ERR: serverConfig_.tlsCaFile size must in [1, 3] .", "CFG022", "config", "httpsEnabled"),
    ("The size of npuDeviceIds (subset) does not equal to worldSize", "CFG012", "config", "npuDeviceIds"),
    ("EE1001: [PID: 48260] 2026-03-11-09:41:40.118.442 The argument is invalid.Reason: Set device failed, invalid "
     "device, set device=8, valid device range is [0, 8)", "CFG023", "config", "ASCEND_RT_VISIBLE_DEVICES"),
    ("Check path: config.json failed, by: Check Owner group permission failed: /home/svc/mindie/conf/config.json current "
     "permission is 6, but required no greater than 4. Required permisssion is -rw-r-----, but got permission is "
     "-rw-rw-r--", "CFG025", "config", "640"),
    ("[2026-03-11 09:41:40.120+08:00] [48260] [281473650098176] [llm] [ERROR] [utils.py:111] : Set device npu:3 for "
     "rank 3 fails, call aclrtSetDevice failed, error code is 507033", "DEV014", "device", "another process"),
])
def test_the_daemon_exit_is_the_echo_of_the_setting_that_failed(tmp_path: Path, cause, rule, category, says):
    data = _report(tmp_path, _mindie(cause))
    first = data["findings"][0]
    assert (first["rule_id"], first["category"]) == (rule, category), [f["rule_id"] for f in data["findings"]]
    assert says in first["summary"]
    daemon = next(f for f in data["findings"] if f["rule_id"] == "ENG010")
    assert daemon["caused_by"] == rule
    assert not any(f["category"] == "engine" and not f.get("caused_by") for f in data["findings"]
                   if f["rule_id"] != "END001")


def test_a_healthy_start_that_prints_its_ports_and_devices_gives_nothing(tmp_path: Path):
    text = "\n".join([
        "+ export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7",
        START, CONFIG_OK,
        "[2026-03-11 09:41:02.300+08:00] [48211] [48211] [server] [INFO] [server_config.cpp:190] : httpsEnabled false, "
        "ipAddress 10.8.0.4, port 1025, managementPort 1026, metricsPort 1027, npuDeviceIds [[0,1,2,3,4,5,6,7]]",
        "[2026-03-11 09:41:40.120+08:00] [48260] [281473650098176] [llm] [INFO] [utils.py:122] : Device npu:0 has been "
        "set to rank 0.",
        "[2026-03-11 09:41:58.904+08:00] [48211] [48211] [server] [INFO] [infer_backend_manager.cpp:201] : "
        "[backend_manager] Init engine mindieservice_llm_engine success",
        "Daemon start success!",
    ]) + "\n"
    data = _report(tmp_path, text)
    assert [f["rule_id"] for f in data["findings"] if f["severity"] != "info"] == []


WORKER = "(VllmWorker rank=3 pid=8812) ERROR 03-15 12:20:44 [multiproc_executor.py:487] "


@pytest.mark.parametrize("lines", [
    ["ValueError: fp8 quantization is currently not supported in npu."],
    [WORKER + "RuntimeError: Float8_e4m3fn has not been supported",
     WORKER + "[ERROR] 2026-03-15-12:20:44 (PID:8812, Device:3, RankID:-1) ERR01007 OPS feature not supported"],
    ['NotImplementedError: Ascend hardware dose not support "get_min_capability" feature.'],
])
def test_fp8_refused_on_ascend_is_quantization_not_versions(tmp_path: Path, lines):
    text = "\n".join([
        "INFO 03-15 11:02:10 [__init__.py:235] Platform plugin ascend is activated",
        "INFO 03-15 11:02:14 [api_server.py:1043] vLLM API server version 0.9.1",
        *lines,
        "ERROR 03-15 12:20:46 [core.py:515] EngineCore failed to start.",
    ]) + "\n"
    data = _report(tmp_path, text, "serve.log")
    first = data["findings"][0]
    assert (first["rule_id"], first["category"]) == ("QNT009", "quantization"), [f["rule_id"] for f in data["findings"]]
    assert "msModelSlim" in first["summary"]
    assert all(f.get("caused_by") == "QNT009" for f in data["findings"] if f["category"] in ("versions", "engine")
               and f["rule_id"] != "END001")


def test_an_aclnn_fp8_refusal_on_a2_leads_with_the_checkpoint_format(tmp_path: Path):
    text = ("(Worker_TP2 pid=7120) ERROR 04-02 10:00:09 [multiproc_executor.py:671] RuntimeError: call aclnnMatmul "
            "failed, detail:EZ1001: [PID: 7120] 2026-04-02-10:00:09.118.004 AclNN_Parameter_Error(EZ1001): aclnnMatmul "
            "not implemented for DT_FLOAT8_E4M3FN, should be in dtype support list [DT_FLOAT16,DT_FLOAT,DT_BFLOAT16,].\n"
            "(EngineCore_DP0 pid=7001) ERROR 04-02 10:00:11 [core.py:708] EngineCore failed to start.\n")
    data = _report(tmp_path, text, "serve.log")
    ids = [f["rule_id"] for f in data["findings"]]
    assert ids[0] == "QNT101", ids
    assert next(f for f in data["findings"] if f["rule_id"] == "OPS005")["caused_by"] == "QNT101"


@pytest.mark.parametrize("project, path, template, category", [
    ("mindie-llm", "src/server/endpoint/http_wrapper/http_server.cpp",
     "Management or Business or Metrics Http server listen port is occupied", "config"),
    ("cann-runtime", "src/runtime/core/src/runtime.cc",
     "set ASCEND_RT_VISIBLE_DEVICES:[{}] error, it must be configured in ascending order.", "config"),
    ("torch-npu", "torch_npu/csrc/core/npu/NPUStream.cpp",
     "Invalid device_index : {}, valid device_index range is [0, {})", "config"),
    ("mindie-llm", "mindie_llm/utils/file_utils.py",
     "The file should not be writable by group users. Please check the input path:{}, and change mode to {}.", "config"),
    ("torch-npu", "torch_npu/csrc/aten/common/DLConvertor.cpp", "float8 types are not supported by dlpack",
     "quantization"),
    ("hccl", "src/platform/hccl_socket.cc", "HCCL socket bind failed: address already in use", "communication"),
])
def test_unexplained_start_up_messages_take_the_category_of_their_fix(project, path, template, category):
    assert category_of(project, path, template) == category
