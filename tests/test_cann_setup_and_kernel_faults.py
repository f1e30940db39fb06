"""Two families the plog explains only in words: HCCL link and communicator set-up failures (COMM011, COMM006) and
an operator's kernel trapping on the AI Core / Vector Core (OPS010). The logs are written here, in the formats
the CANN runtime, HCCL and torch_npu print (hcomm transport_manager.cc, topoinfo_exchange_agent.cc; runtime
device_error_core_proc.cc, davinci_kernel_task.cc; torch_npu NPUQueue.cpp), with the benign lines around them."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from helpers import said

from diagnose.pipeline import RuleFilters, Settings, analyze, read_paths

PID = 41822


def _plog(pid: int, stamp: str, rows: list[tuple[str, str, str, str]]) -> str:
    """rows: (level, module, time, body): one plog line each, as CANN writes them."""
    return "".join(f"[{lvl}] {mod}({pid},python3):2026-03-15-{t} {body}\n" for lvl, mod, t, body in rows)


def _write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _transport_bundle(root: Path) -> None:
    """Two nodes: every rank of node-0 fails to build its RDMA links to node-1, whose ranks started late."""
    for rank, dev in ((1, 1), (2, 2)):
        pid = PID + rank
        rows = [
            ("INFO", "HCCL", "02:14:03.118.201", f"[op_base.cc:1021][{pid}]Entry-HcclCommInitRootInfoInner:ranks[16], "
                                                 f"rank[{rank}], rootinfo: host ip[10.0.0.11] port[60000]"),
            ("INFO", "RUNTIME", "02:14:03.130.010", f"[device.cc:512] {pid} SetDevice: device_id={dev}"),
        ]
        for peer in (8 + rank, 12 + rank):
            rows += [
                ("ERROR", "HCCL", "02:16:03.514.332", f"[hccl_socket_manager.cc:388] [{pid + 85}][Create][Sockets]create to "
                                                      f"rank[{peer}] connection is failed. ret[9]"),
                ("ERROR", "HCCL", "02:16:03.514.361", f"[transport_manager.cc:1203] [{pid + 85}][Create]errNo[0x0000000005000009] "
                                                      f"transport create fail in thread, local rank[{rank}] remote rank[{peer}]"),
                ("ERROR", "HCCL", "02:16:03.514.377", f"[transport_manager.cc:1311] [{pid + 85}][Create][DestLink]Transport "
                                                      f"init error! creakLink para:rank[{rank}]-localUserrank[{rank}]-"
                                                      f"localIpAddr[29.1.0.{10 + dev}], dst_rank[{peer}]-remoteUserrank[{peer}]-"
                                                      f"remote_ip_addr[29.1.1.{10 + dev}], machineType[1], serverId[10.0.0.11], "
                                                      f"linkMode[1], shmDev_[0], tag[AllReduce_10.0.0.11%eth0_60000_0_1773540843]"),
            ]
        rows.append(("ERROR", "HCCL", "02:16:03.514.398", f"[hccl_communicator_host.cc:2871] [{pid}][AllReduce]Alloc "
                                                          "transports failed, tag[AllReduce_10.0.0.11%eth0_60000_0_1773540843]"))
        _write(root, f"node-0/plog/plog-{pid}_20260315021401118.log", _plog(pid, "", rows))


def test_link_set_up_failure_is_communication_with_the_nic_checks(tmp_path):
    _transport_bundle(tmp_path)
    report = analyze([str(tmp_path)], Settings())
    first = report.findings[0]
    assert (first.rule_id, first.category) == ("COMM011", "communication")
    summary = said(first.summary)
    assert "create to rank[9] connection is failed" in summary and "remote rank 9" in summary
    remedy = said(first.remediation)
    for needle in ("hccn_tool -i <dev> -link -g", "HCCL_CONNECT_TIMEOUT", "HCCL_SOCKET_IFNAME", "16666", "60000"):
        assert needle in remedy
    assert not report.unrecognised or all("transport" not in said(u.message).lower() for u in report.unrecognised)


def test_init_failures_in_words_are_communication(tmp_path):
    pid = 7730
    rows = [
        ("INFO", "HCCL", "04:00:01.017.220", f"[op_base.cc:1021][{pid}]Entry-HcclCommInitRootInfoInner:ranks[16], rank[12], "
                                             "rootinfo: host ip[10.0.0.11] port[60000]"),
        ("ERROR", "HCCL", "04:02:01.033.904", f"[topoinfo_exchange_agent.cc:301] [{pid}][Get][Connection] topo exchange "
                                              "agent get socket timeout! timeout[120 s]"),
        ("ERROR", "HCCL", "04:02:01.033.928", f"[topoinfo_exchange_agent.cc:118] [{pid}][TopoInfoExchangeAgent][Setup]"
                                              "TopoExchangeAgent: connect server[10.0.0.11 : 60000] failed"),
    ]
    _write(tmp_path, f"node-1/plog/plog-{pid}_20260315040000112.log", _plog(pid, "", rows))
    tls = 9120
    _write(tmp_path, f"node-0/plog/plog-{tls}_20260315050000112.log", _plog(tls, "", [
        ("ERROR", "HCCL", "04:00:07.211.045", f"[topoinfo_exchange_agent.cc:850] [{tls}]Value disable for config \"tls\" is "
                                              "invalid. Expected: \"All ranks are consistent. Current status: rankList for "
                                              "enabled tls: 0-7; rankList for disabled tls:8-15 rankList for query failure tls:.\""),
    ]))
    report = analyze([str(tmp_path)], Settings())
    comm = [f for f in report.findings if f.rule_id == "COMM006"]
    assert comm and comm[0].category == "communication"
    assert report.findings[0].category == "communication"
    assert "tls" in said(comm[0].remediation).lower()


def _kernel_exception(root: Path, *, ecc: bool = False) -> None:
    pid = 28871
    why = ("A multi-bit ECC error occurs when MTE reads/writes UB. See the RAS alarm handling." if ecc
           else "The DDR address of the MTE instruction is out of range.")
    rows = [
        ("INFO", "RUNTIME", "06:14:07.001.220", f"[stream.cc:912]{pid + 42} stream_id=2, task_id=4410 launched"),
        ("ERROR", "RUNTIME", "06:14:07.102.551", f"[device_error_core_proc.cc:645]{pid + 49} PrintCoreInfo:The error from "
                                                 "device(chipId:3, dieId:0), serial number is 21, there is an exception of "
                                                 "aivec error, core id is 17, error code = 0x800000, dump info: pc start: "
                                                 "0x12c0c1a0b200, current: 0x12c0c1a0c61c, vec error info: 0xc10f2a17e3, "
                                                 "mte error info: 0x7103000081, ifu error info: 0x2a1f00017c840, ccu error "
                                                 "info: 0x88e0104a0000017, cube error info: 0, biu error info: 0, aic error "
                                                 "mask: 0x6500020bd00028c, para base: 0x12c1408a3000."),
        ("ERROR", "RUNTIME", "06:14:07.102.570", f"[device_error_core_proc.cc:658]{pid + 49} PrintCoreInfo:The extend info: "
                                                 f"errcode:(0x800000, 0, 0) errorStr: {why} fixp_error0 info: 0x3000081, "
                                                 "fixp_error1 info: 0x71, fsmId:0, tslot:3, thread:0, ctxid:0, blk:11."),
        ("ERROR", "RUNTIME", "06:14:07.102.611", f"[davinci_kernel_task.cc:1729]{pid + 49} PreCheckTaskErr:Kernel task "
                                                 "happen error, retCode=0x31, [vector core exception]."),
        ("ERROR", "RUNTIME", "06:14:07.102.640", f"[davinci_kernel_task.cc:1502]{pid + 49} PrintErrorInfoForDavinciTask:"
                                                 "[DFX_INFO]AI Core kernel execution failed, device_id=3, stream_id=2, "
                                                 "report_stream_id=2, task_id=4410, flip_num=0, fault kernel_name="
                                                 "SparseFlashAttention_9ab1c23f_mix_aiv, fault kernel info ext=none, "
                                                 "program id=88, hash=7410233195184400112."),
    ]
    _write(root, f"node-1/plog/plog-{pid}_20260315061402330.log", _plog(pid, "", rows))
    worker = (
        "(Worker_TP3 pid=28871) INFO 03-15 06:13:50 [acl_graph.py:257] Replaying aclgraph\n"
        "(Worker_TP3 pid=28871) ERROR 03-15 06:14:07 [multiproc_executor.py:611] WorkerProc hit an exception.\n"
        "(Worker_TP3 pid=28871) ERROR 03-15 06:14:07 [multiproc_executor.py:611] RuntimeError: The Inner error is "
        "reported as above. The process exits for this inner error, and the current working operator name is "
        "SparseFlashAttention.\n"
        "(Worker_TP3 pid=28871) ERROR 03-15 06:14:07 [multiproc_executor.py:611] Since the operator is called "
        "asynchronously, the stacktrace may be inaccurate. If you want to get the accurate stacktrace, please set the "
        "environment variable ASCEND_LAUNCH_BLOCKING=1.\n"
        "(Worker_TP3 pid=28871) ERROR 03-15 06:14:07 [multiproc_executor.py:611] [ERROR] 2026-03-15-06:14:07 "
        "(PID:28871, Device:3, RankID:-1) ERR00100 PTA call acl api failed\n"
        "(Worker_TP3 pid=28871) ERROR 03-15 06:14:07 [multiproc_executor.py:611] EZ9999: Inner Error!\n"
        "(Worker_TP3 pid=28871) ERROR 03-15 06:14:07 [multiproc_executor.py:611] EZ9999: [PID: 28871] "
        "2026-03-15-06:14:07.102.551 The error from device(chipId:3, dieId:0), serial number is 21, there is an "
        "exception of aivec error, core id is 17, error code = 0x800000, dump info: pc start: 0x12c0c1a0b200, current: "
        "0x12c0c1a0c61c.[FUNC:ProcessStarsCoreErrorInfo][FILE:device_error_core_proc.cc][LINE:303]\n"
        "(Worker_TP3 pid=28871) ERROR 03-15 06:14:07 [multiproc_executor.py:611]         TraceBack (most recent call "
        "last):\n"
        "(Worker_TP3 pid=28871) ERROR 03-15 06:14:07 [multiproc_executor.py:611]        Kernel task happen error, "
        "retCode=0x31, [vector core exception].[FUNC:PreCheckTaskErr][FILE:davinci_kernel_task.cc][LINE:1729]\n"
    )
    _write(root, "node-1/vllm_worker.log", worker)


def test_attention_kernel_exception_is_the_operator_not_the_card(tmp_path):
    _kernel_exception(tmp_path)
    report = analyze([str(tmp_path)], Settings())
    first = report.findings[0]
    assert (first.rule_id, first.category) == ("OPS010", "operators")
    summary = said(first.summary)
    assert "kernel: SparseFlashAttention_9ab1c23f_mix_aiv" in summary
    assert "operator torch_npu was running: SparseFlashAttention" in summary
    device = [f for f in report.findings if f.rule_id == "DEV012"]
    assert device and device[0].caused_by == "OPS010"


def test_an_ecc_error_in_the_dump_leaves_the_card_first(tmp_path):
    _kernel_exception(tmp_path, ecc=True)
    report = analyze([str(tmp_path)], Settings())
    assert report.findings[0].rule_id == "DEV013"
    ops = [f for f in report.findings if f.rule_id == "OPS010"]
    assert ops and ops[0].caused_by == "DEV013"


def test_the_operator_signal(tmp_path):
    _write(tmp_path, "stderr.log",
           "[rank1]:[E315 06:45:07.793461280 OpParamMaker.cpp:355] call aclnnSparseFlashAttention failed, detail:EZ9999\n"
           "RuntimeError: The Inner error is reported as above. The process exits for this inner error, and the current "
           "working operator name is MlaProlog.\n")
    parsed = read_paths([str(tmp_path)], Settings(), RuleFilters())
    ops = parsed.signals.filter(pl.col("signal") == "npu_operator").sort("line")["text"].to_list()
    assert ops == ["aclnnSparseFlashAttention", "MlaProlog"]


def test_healthy_set_up_and_info_lines_stay_quiet(tmp_path):
    pid = 7001
    _write(tmp_path, f"plog/plog-{pid}_20260315090000001.log", _plog(pid, "", [
        ("INFO", "HCCL", "09:02:00.118.004", f"[transport_manager.cc:702] [{pid}][Create][DestLink]rank[2] create link to "
                                             "rank[10] success, linkType[RDMA], take time[1203]us"),
        ("INFO", "HCCL", "09:02:00.118.040", f"[transport_manager.cc:877] [{pid}][Alloc]Enable P2P success, src "
                                             "devicePhyId[2], dst devicePhyId[3]"),
        ("INFO", "HCCL", "09:02:00.301.100", f"[op_base.cc:1102][{pid}]HcclCommInitRootInfo success, take time [201003]us"),
        ("INFO", "RUNTIME", "09:02:00.441.002", f"[stream.cc:1183]{pid} kernel task finished, retCode=0x0, stream_id=5"),
    ]))
    report = analyze([str(tmp_path)], Settings())
    assert [f.rule_id for f in report.findings if f.severity in ("warning", "error", "critical")] == []
