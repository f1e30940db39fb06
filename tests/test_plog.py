"""CANN plog / device logs, CANN error blocks in any file, the HCCL and device rules, and the root cause
across ranks (diagnose/parsers/kinds/plog.py, diagnose/parsers/families/cann.py, diagnose/analysis/rootcause.py)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import polars as pl
import pytest
from helpers import said

from diagnose.authoring.fixtures import evaluate
from diagnose.engine.rulefile import rule_from_dict
from diagnose.parsers.registry import sniff
from diagnose.model import Finding
from diagnose.parsers.kinds.plog import file_ids
from diagnose.pipeline import RuleFilters, Settings, analyze, read_paths
from diagnose.analysis.rootcause import find_root_cause
from diagnose.engine.hits import SELECTED_SCHEMA

SELECTED_NONE = pl.DataFrame(schema=SELECTED_SCHEMA)

from conftest import SAMPLES, run_json

SAMPLE = SAMPLES / "two-node-aicore"


def parse(tmp_path: Path, rel: str, text: str):
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text.lstrip("\n"), encoding="utf-8")
    parsed = read_paths([str(tmp_path)], Settings(), RuleFilters())
    assert not parsed.errors, parsed.errors
    return parsed


# --- plog line variants (the CANN log format) -----------------------------------------------------------------------

VARIANTS = """
[ERROR] HCCL(2717288,python3):2026-07-23-03:47:57.070.463 [hccl_socket.cc:100] [2717288][HcclSocket][Listen] socket type[1], listen failed
[ERROR] HCCL(36035,mindie_llm_backend_connector):2026-05-13-02:25:58.068.817 [op_base.cc:974][36818][Init][CommRootInfoConfig]errNo[0x0000000005000002]HcclCommInitRootInfo failed.
[ERROR] HCCL(106335,):2026-05-21-21:39:58.705.534 [hccl_socket_manager.cc:796] [128655][Wait][LinkEstablish]wait socket establish timeout, role[0] rank[0] timeout[120 s]
[ERROR] RUNTIME(616,):2026-08-13-15:27:53.162.596 [stars_engine.cc:1548]732 ProcLogicCqReport:Task run failed, device_id=3, stream_id=46
[ERROR] HCCP(38011,python):2026-07-15-12:45:32.997.682 [ra_hdc_rdma.c:1199]tid:38011,ra_hdc_rdev_init(1199) : [init][ra_hdc_rdev]ra hdc message process failed ret(-67) phy_id(0)
[ERROR] GE(946748,main):2026-05-19-15:59:07.739.753 [host_cpu_engine.cc:288]947062 LoadLib: ErrorNo: 1343225860(Internal errors)
[ERROR] DVPP(278,python3):2026-08-26-03:01:17.588.147 [PlatformInfo.cpp:37][DVPP] [GetHardwareVersion:37] [T2] get device num fail. ret = 507899
[EVENT] PROFILING(946748,main):2026-05-19-15:59:07.740.922 [msprof_callback_impl.cpp:79] >>> (tid:947062) MsprofCtrlCallback called, type: 255
[EVENT] TDT(946748,main):2026-05-19-15:59:07.741.638 [process_mode_manager.cpp:103][OpenProcess][tid:947062] [ProcessModeManager] open
[INFO] HCCL(860,):2026-12-31-07:42:50.708.882 [externalinput.cc:372] [860]HCCL_CONNECT_TIMEOUT set by default to [120]s
[INFO] ATRACE(860,):2026-12-31-07:47:21.427.775 [awatchdog_monitor.c:149](tid:937) watchdog timeout, moduleId 7, timeout : 300s
[ERROR] TEFUSION(12940,atc):2026-10-17-05:54:07.599.074 [tensor_engine/te_fusion/pywrapper.cc:33]InitPyLogger Failed to import te.platform.log_util
[WARN] ASCENDCL(616,):2026-08-13-15:27:53.170.001 [acl.cpp:112]732 aclInit: repeat initialization
[ERROR] ASCENDCL(616,):2026-08-13-15:27:53.170.120 [stream.cpp:118]732 aclrtSynchronizeStreamWithTimeout: synchronize stream failed, runtime result = 507014
"""


@pytest.fixture(scope="module")
def variants(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("plog")
    parsed = parse(tmp, "plog/plog-616_20260813152753001.log", VARIANTS)
    return parsed.records.sort("line")


def test_every_variant_parses(variants):
    assert variants["source"].unique().to_list() == ["plog"]
    assert variants["parsed"].all()
    assert variants["year_known"].all()


@pytest.mark.parametrize(
    "line, module, proc, pid, message_start",
    [
        (1, "HCCL", "python3", 2717288, "[HcclSocket][Listen] socket type[1]"),  # space, [tid]
        (2, "HCCL", "mindie_llm_backend_connector", 36035, "[Init][CommRootInfoConfig]errNo"),  # [tid] glued
        (3, "HCCL", None, 106335, "[Wait][LinkEstablish]wait socket"),  # empty PName
        (4, "RUNTIME", None, 616, "ProcLogicCqReport:Task run failed"),  # tid glued, then Func:
        (5, "HCCP", "python", 38011, "ra_hdc_rdev_init(1199)"),  # tid:N,
        (6, "GE", "main", 946748, "LoadLib: ErrorNo"),
        (7, "DVPP", "python3", 278, "[DVPP] [GetHardwareVersion:37]"),  # no numeric tid
        (8, "PROFILING", "main", 946748, "MsprofCtrlCallback called"),  # >>> (tid:N)
        (9, "TDT", "main", 946748, "[ProcessModeManager] open"),  # [Func][tid:N]
        (10, "HCCL", None, 860, "HCCL_CONNECT_TIMEOUT set by default"),
        (11, "ATRACE", None, 860, "watchdog timeout, moduleId 7"),  # (tid:N) glued
        (12, "TEFUSION", "atc", 12940, "InitPyLogger Failed"),  # doc example, no tid
    ],
)
def test_variant_fields(variants, line, module, proc, pid, message_start):
    row = variants.filter(pl.col("line") == line).row(0, named=True)
    assert row["component"] == module
    assert row["proc"] == proc
    assert row["pid"] == pid
    assert row["message"].startswith(message_start), row["message"]


def test_levels_and_microsecond_stamps(variants):
    rows = {r["line"]: r for r in variants.iter_rows(named=True)}
    assert rows[1]["ts"] == datetime(2026, 7, 23, 3, 47, 57, 70463)
    assert rows[8]["level"] == "INFO"  # EVENT
    assert rows[13]["level"] == "WARNING"  # WARN
    assert rows[4]["level"] == "ERROR"


def test_codes(variants):
    codes = dict(variants.select("line", "code").iter_rows())
    assert codes[14] == "507014"  # runtime result
    assert codes[7] == "507899"  # ret = ...
    assert codes[5] is None  # ret(-67) is not a runtime code


def test_file_ids():
    assert file_ids("x/plog/plog-860_20251231074149720.log") == (860, None)
    assert file_ids("log/debug/device-3/device-4410_20260315031000101.log") == (4410, 3)
    assert file_ids("/var/log/npu/slog/device-2_20260315031000101.log") == (None, 2)
    assert file_ids("a.tgz!node-1/plog/plog-77_1.log") == (77, None)


def test_rank_and_device_spread_over_the_file(tmp_path):
    text = """
[INFO] HCCL(9501,python3):2026-03-15-03:04:10.213.190 [externalinput.cc:333] [9501]HCCL_EXEC_TIMEOUT set by environment to [60]s
[INFO] RUNTIME(9501,python3):2026-03-15-03:04:10.213.677 [device.cc:402]9501 Init:device init success, device_id=5.
[INFO] HCCL(9501,python3):2026-03-15-03:04:11.056.069 [op_base.cc:1021][9542]Entry-HcclCommInitRootInfoInner:ranks[16], rank[13], rootinfo: host ip[10.0.0.11] port[60000]
[ERROR] RUNTIME(9501,python3):2026-03-15-03:10:31.338.412 [device_error_proc.cc:1412]9542 ProcessStarsCoreErrorInfo:Kernel task happen error, retCode=0x25, [aicore timeout].
"""
    parsed = parse(tmp_path, "node-1/plog/plog-9501_20260315030323430.log", text)
    r = parsed.records.sort("line")
    assert r["rank"].to_list() == [13, 13, 13, 13]
    assert r["device"].to_list() == [5, 5, 5, 5]
    assert r["node"].unique().to_list() == ["node-1"]
    assert r["pid"].unique().to_list() == [9501]


def test_raw_lines_inside_a_plog_excerpt(tmp_path):
    text = """
RuntimeError: EJ0002: [PID: 38079] 2026-07-15-12:45:31.202.787 The network port is down.
[...]
[ERROR] HCCP(38011,python):2026-07-15-12:45:32.997.682 [ra_hdc_rdma.c:1199]tid:38011,ra_hdc_rdev_init(1199) : [init][ra_hdc_rdev]ra hdc message process failed ret(-67) phy_id(0)
"""
    parsed = parse(tmp_path, "pasted.log", text)
    assert parsed.inputs[0].kind == "plog"
    rows = parsed.records.sort("line").to_dicts()
    assert rows[0]["parsed"] is False and rows[0]["code"] == "EJ0002" and rows[0]["level"] == "ERROR"
    assert rows[0]["ts"] == datetime(2026, 7, 15, 12, 45, 31, 202787)
    assert rows[1]["parsed"] is False and rows[1]["message"] == "[...]"
    assert rows[2]["parsed"] is True


def test_sniffing():
    plog_line = "[ERROR] HCCL(1,python3):2026-03-15-03:04:10.213.190 [a.cc:1] [1]x"
    assert sniff("whatever.txt", [plog_line]) == "plog"
    assert sniff("plog-12_20260101000000000.log", []) == "plog"
    torch = ["[rank1]:   File \"x.py\", line 3, in f", "[rank1]: RuntimeError: boom"]
    assert sniff("stderr.txt", torch) == "vllm"


# --- user-facing error blocks (CANN/torch_npu wrappers) -----------------------------------------------------------------

TORCH_BLOCK = """
[rank1]:     work = group.allreduce([tensor], opts)
[rank1]: RuntimeError: InnerRunOpApi:torch_npu/csrc/framework/OpParamMaker.cpp:281 OPS function error: HcclAllreduce, error code is 6
[rank1]: [ERROR] 2026-04-08-18:07:20 (PID:1292363, Device:1, RankID:1) ERR01100 OPS call acl api failed.
[rank1]: EI0006: [PID: 1292363] 2026-04-08-18:07:20.444.436 Getting socket times out. Reason: Remote Rank did not send the data in time.
"""


def test_torch_rank_prefixed_block(tmp_path):
    parsed = parse(tmp_path, "worker-stderr.txt", TORCH_BLOCK)
    assert parsed.inputs[0].kind == "vllm"
    rows = {r["line"]: r for r in parsed.records.to_dicts()}
    assert all(r["rank"] == 1 for r in rows.values())
    assert rows[3]["code"] == "ERR01100" and rows[3]["device"] == 1
    assert rows[4]["code"] == "EI0006"
    assert rows[4]["ts"] == datetime(2026, 4, 8, 18, 7, 20, 444436) and rows[4]["year_known"]


@pytest.mark.parametrize(
    "line, code",
    [
        ("EI0002: [PID: 13075] 2026-06-25-10:45:23.586.187 The wait execution of the Notify register times out.", "EI0002"),
        ("[PID: 749] 2026-12-29-03:16:15.787.356 Get_Socket_Timeout(EI0006): Getting socket times out.", "EI0006"),
        ("EZ9999[PID: 5317] 2026-04-22-08:49:02.433.180 AclNN_Inner_Error(EZ9999):  Nnopbase fails", "EZ9999"),
        ("[ERROR] 2026-07-17-11:24:32 (PID:2000, Device:3, RankID:3) ERR02200 DIST call hccl api failed.", "ERR02200"),
    ],
)
def test_three_header_styles_in_unknown_text(tmp_path, line, code):
    parsed = parse(tmp_path, "notes.txt", line + "\n")
    row = parsed.records.row(0, named=True)
    assert row["code"] == code
    assert row["ts"] is not None and row["ts"].year == 2026


LINK_TABLE = """
[INFO] HCCL(3317,python3):2026-03-15-02:03:12.001.204 [externalinput.cc:372] [3317]HCCL_CONNECT_TIMEOUT set by environment to [600]s
[ERROR] HCCL(3317,python3):2026-03-15-02:15:32.114.860 [hccl_socket_manager.cc:796] [3402][Wait][LinkEstablish]wait socket establish timeout, role[1] rank[12] timeout[600 s]
[ERROR] HCCL(3317,python3):2026-03-15-02:15:32.114.902 [hccl_socket_manager.cc:612] [3402]_________________________LINK_ERROR_INFO___________________________
[ERROR] HCCL(3317,python3):2026-03-15-02:15:32.114.905 [hccl_socket_manager.cc:613] [3402]|  dest_ip(user_rank)  |   dest_port   |  src_ip(user_rank)   |   src_port   |   MyRole   |   Status   |    TlsStatus   |
[ERROR] HCCL(3317,python3):2026-03-15-02:15:32.114.911 [hccl_socket_manager.cc:620] [3402]|  10.20.1.16(12)   |  16666  |   10.20.0.11(3)   |  3402193  |  client  | time out |   DISABLE  | LinkInfo
[ERROR] HCCL(3317,python3):2026-03-15-02:15:32.114.915 [hccl_socket_manager.cc:620] [3402]|  10.20.1.17(13)   |  16666  |   10.20.0.11(3)   |  3402201  |  client  | time out |   DISABLE  | LinkInfo
[ERROR] HCCL(5120,python3):2026-03-15-03:21:03.551.102 [task_exception_handler.cc:812] [5188]        Cluster Exception Location[IP/ID]:[10.0.1.12/5], Arrival Time:[Sun Mar 15 03:11:01 2026], ExceptionType:[Stuck Occurred], Possible Reason:1.Host process is stuck
[ERROR] HCCL(5120,python3):2026-03-15-03:21:03.551.020 [task_exception_handler.cc:740] [5188]notify wait timeout occurred during task execution, stream_id:62, notify_id=311, timeout=600s.
"""


def test_link_table_stuck_location_and_timeouts(tmp_path):
    parsed = parse(tmp_path, "node-0/plog/plog-3317_20260315020311845.log", LINK_TABLE)
    s = parsed.signals
    remote = s.filter(pl.col("signal") == "hccl_link_remote_rank").sort("line")
    assert remote["value"].to_list() == [12.0, 13.0]
    assert remote["text"].to_list() == ["10.20.1.16", "10.20.1.17"]
    assert remote["engine"].unique().to_list() == ["10.20.0.11(3)"]
    local = s.filter(pl.col("signal") == "hccl_link_local_rank")
    assert local["value"].unique().to_list() == [3.0]
    link = s.filter(pl.col("signal") == "hccl_link_error").sort("line")["text"][0]
    assert link == "10.20.1.16(rank 12):16666 <- 10.20.0.11(rank 3) client time out"
    stuck = s.filter(pl.col("signal") == "hccl_stuck_location")
    assert stuck["text"].to_list() == ["10.0.1.12/5"] and stuck["value"].to_list() == [5.0]
    connect = s.filter(pl.col("signal") == "hccl_connect_timeout_s")["value"].to_list()
    assert connect == [600.0, 600.0]  # the plog setting and the wait line
    assert s.filter(pl.col("signal") == "hccl_exec_timeout_s")["value"].to_list() == [600.0]
    # the header row of the table is not a link
    assert s.filter(pl.col("signal") == "hccl_link_error").height == 2


def test_watchdog_timeout_signal(tmp_path):
    line = ("[rank3]:[E315 04:12:10.131512730 compiler_depend.ts:1675] [PG 3 Rank 3] Watchdog caught collective operation "
            "timeout: WorkHCCL(SeqNum=196, OpType=ALLREDUCE, Timeout(ms)=3600000) ran for 3600185 milliseconds before timing out.\n")
    parsed = parse(tmp_path, "stderr.log", line)
    values = parsed.signals.filter(pl.col("signal") == "hccl_watchdog_timeout_s")["value"].to_list()
    assert values == [3600.0]


# --- rules -------------------------------------------------------------------------------------------------------

def test_ei0006_names_peer_and_timeout(catalog):
    findings, errors = evaluate(catalog["COMM001"], LINK_TABLE, "node-0/plog/plog-3317_20260315020311845.log", "plog")
    assert not errors and findings
    summary = said(findings[0].summary)
    assert "HCCL_CONNECT_TIMEOUT in force: 600 s" in summary
    assert "rank 12 (10.20.1.16:16666, link time out)" in summary


def test_remote_rank_stuck_is_a_consequence(catalog):
    assert catalog["COMM002"].consequence and catalog["COMM003"].consequence and catalog["COMM009"].consequence
    assert not catalog["COMM004"].consequence and not catalog["DEV010"].consequence
    findings, _ = evaluate(catalog["COMM002"], TORCH_BLOCK, "stderr.txt", None)
    assert findings and findings[0].ranks == [1]
    findings, _ = evaluate(catalog["COMM001"], TORCH_BLOCK, "stderr.txt", None)
    assert not findings


def test_corpus_style_port_down_is_communication(catalog, tmp_path):
    text = """
RuntimeError: EJ0002: [PID: 40211] 2026-07-15-12:45:31.202.787 The network port is down.
[ERROR] HCCL(40160,python):2026-07-15-12:45:32.997.780 [network_manager.cc:639] [40160][Init][RDMA]errNo[0x000000000500000b] ra rdma init failed, devid[0] ip[192.168.20.148], notifyType[1], return[19]
[ERROR] HCCL(40160,python):2026-07-15-12:45:32.997.787 [hccl_socket.cc:100] [40160][HcclSocket][Listen] socket type[1], listen on ip[192.168.20.148] and specific port[16666] fail. Please check the port status.
"""
    path = tmp_path / "port-down.log"
    path.write_text(text.lstrip())
    report = analyze([str(path)], Settings())
    ids = [f.rule_id for f in report.findings]
    assert ids[0] == "COMM004" and "COMM008" in ids
    assert "192.168.20.148 (device 0)" in said(report.findings[0].summary)
    assert "hccn_tool -i N -link -g" in said(report.findings[0].remediation)


# --- the two-node sample and the root cause across ranks -------------------------------------------------------

@pytest.fixture(scope="module")
def sample_report():
    code, report = run_json(str(SAMPLE))
    assert code in (0, 1)
    return report


def test_sample_reads_every_file(sample_report):
    kinds = [i["kind"] for i in sample_report["inputs"]]
    assert kinds.count("plog") == 16 and kinds.count("vllm") == 2 and kinds.count("npu-smi") == 2
    assert not sample_report["errors"]


def test_sample_chain_starts_at_the_older_driver_then_the_aicore_timeout_on_rank_13(sample_report):
    # node-1 runs an older driver (VER001 declares that it can cause DEV010 on the same node): the chain's
    # start leads, and the first failing rank's finding follows it, pointing at it.
    start, first = sample_report["findings"][:2]
    assert start["rule_id"] == "VER001" and start["nodes"] == ["node-1"] and start["caused_by"] is None
    assert first["rule_id"] == "DEV010"
    assert first["caused_by"] == "VER001"
    assert first["summary"].startswith("Rank 13 on node-1 failed first at 2026-03-15 03:10:31.338; 14 ranks timed out")
    assert "MoeDistributeDispatchV2_ND_ND_BF16_INT8_high_performance_2000001002" in first["summary"]
    assert "10.0.0.12/5" in first["summary"]
    assert first["evidence"][0]["file"].endswith("node-1/plog/plog-9501_20260315030323430.log")


def test_sample_timeouts_and_engine_death_are_consequences(sample_report):
    by_id = {f["rule_id"]: f for f in sample_report["findings"]}
    assert by_id["COMM003"]["caused_by"] == "DEV010"
    assert by_id["ENG001"]["caused_by"] == "DEV010"
    order = [f["rule_id"] for f in sample_report["findings"]]
    assert order.index("DEV010") < order.index("COMM003") and order.index("DEV010") < order.index("ENG001")


def _waiting_plogs(tmp_path: Path, ranks: range, node: str, peer: str = "10.0.0.12/5") -> None:
    for r in ranks:
        pid = 4000 + r
        text = (
            f"[INFO] HCCL({pid},python3):2026-03-15-03:04:11.056.069 [op_base.cc:1021][{pid}]Entry-HcclCommInitRootInfoInner:ranks[4], rank[{r}], rootinfo: host ip[10.0.0.11] port[60000]\n"
            f"[ERROR] HCCL({pid},python3):2026-03-15-03:11:02.40{r}.000 [task_exception_handler.cc:740] [{pid}]notify wait timeout occurred during task execution, stream_id:62, notify_id=311, timeout=60s.\n"
            f"[ERROR] HCCL({pid},python3):2026-03-15-03:11:02.40{r}.100 [task_exception_handler.cc:812] [{pid}]        Cluster Exception Location[IP/ID]:[{peer}], Arrival Time:[x], ExceptionType:[Stuck Occurred], Possible Reason:1.Host process is stuck\n"
        )
        d = tmp_path / node / "plog"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"plog-{pid}_20260315030410000.log").write_text(text)


def test_silent_peer_gets_a_root_cause_finding(tmp_path):
    _waiting_plogs(tmp_path, range(0, 3), "node-0")
    report = analyze([str(tmp_path)], Settings())
    first = report.findings[0]
    assert first.rule_id == "RC001" and not first.consequence
    assert "3 ranks timed out waiting" in said(first.summary) and "10.0.0.12/5" in said(first.summary)
    assert all(f.caused_by == "RC001" for f in report.findings if f.consequence)


def test_the_peer_is_the_one_the_failure_names_not_routine_task_traffic(tmp_path):
    """HCCL's info-level task launches name a remoteRank each (thousands of lines in a busy plog); the peer a
    root cause names is the one the failure lines name."""
    for r in range(3):
        pid = 4000 + r
        traffic = "".join(
            f"[INFO] HCCL({pid},python3):2026-03-15-03:05:{k % 60:02d}.{k:03d}.000 [dispatcher_pub.cc:511] [{pid}]"
            f"LaunchTask: stream[13] task[{k}] type[notify_wait] remoteRank[{k % 2}]\n" for k in range(40))
        text = (
            f"[INFO] HCCL({pid},python3):2026-03-15-03:04:11.056.069 [op_base.cc:1021][{pid}]Entry-HcclCommInitRootInfoInner:ranks[4], rank[{r}], rootinfo: host ip[10.0.0.11] port[60000]\n"
            + traffic +
            f"[ERROR] HCCL({pid},python3):2026-03-15-03:11:02.40{r}.000 [task_exception_handler.cc:740] [{pid}]notify wait timeout occurred during task execution, stream_id:62, notify_id=311, timeout=60s.\n"
            f"[ERROR] HCCL({pid},python3):2026-03-15-03:11:02.40{r}.100 [task_exception_handler.cc:823] [{pid}][TaskExceptionHandler]tag[AlltoAllV_10.0.0.11%enp189s0f0_60000_0_1], remote rank[3], opIndex[77]\n"
        )
        d = tmp_path / "node-0" / "plog"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"plog-{pid}_20260315030410000.log").write_text(text)
    parsed = read_paths([str(tmp_path)], Settings(), RuleFilters())
    named = parsed.signals.filter(pl.col("signal") == "hccl_remote_rank")
    assert named["value"].to_list() == [3.0, 3.0, 3.0]
    report = analyze([str(tmp_path)], Settings())
    first = report.findings[0]
    assert first.rule_id == "RC001" and "rank 3" in said(first.summary), said(first.summary)


def test_earliest_unmatched_error_is_the_first_failing_rank(tmp_path):
    _waiting_plogs(tmp_path, range(0, 3), "node-0")
    d = tmp_path / "node-1" / "plog"
    d.mkdir(parents=True)
    (d / "plog-7003_20260315030410000.log").write_text(
        "[INFO] HCCL(7003,python3):2026-03-15-03:04:11.056.069 [op_base.cc:1021][7003]Entry-HcclCommInitRootInfoInner:ranks[4], rank[3], rootinfo: host ip[10.0.0.11] port[60000]\n"
        "[ERROR] GE(7003,python3):2026-03-15-03:10:20.100.200 [graph_manager.cc:88]7003 RunGraph: something unusual failed\n"
    )
    report = analyze([str(tmp_path)], Settings())
    first = report.findings[0]
    assert first.rule_id == "RC001"
    assert said(first.summary).startswith("Rank 3 on node-1 failed first at 2026-03-15 03:10:20.100; 3 ranks timed out")
    assert first.ranks == [3] and first.nodes == ["node-1"]


def test_one_waiting_rank_changes_nothing():
    f = Finding("X1", "x", "engine", "error", "t", "s", 1, None, None, [], [], [], "r", [])
    assert find_root_cause([f], SELECTED_NONE, pl.DataFrame(), pl.DataFrame()) == [f]


def test_zh_sentence(tmp_path):
    _waiting_plogs(tmp_path, range(0, 2), "node-0")
    d = tmp_path / "node-1" / "plog"
    d.mkdir(parents=True)
    (d / "plog-7005_20260315030410000.log").write_text(
        "[INFO] HCCL(7005,python3):2026-03-15-03:04:11.056.069 [op_base.cc:1021][7005]Entry-HcclCommInitRootInfoInner:ranks[4], rank[5], rootinfo: host ip[10.0.0.11] port[60000]\n"
        "[ERROR] RUNTIME(7005,python3):2026-03-15-03:10:31.338.412 [device_error_proc.cc:1412]7005 ProcessStarsCoreErrorInfo:Kernel task happen error, retCode=0x25, [aicore timeout].\n"
    )
    report = analyze([str(tmp_path)], Settings(lang="zh"))
    first = report.findings[0]
    assert first.rule_id == "DEV010"
    assert said(first.summary, "zh").startswith("节点 node-1 上的 rank 5 最先失败")


def test_rule_id_helper_roundtrip():
    # a rule built in memory with a signal in its summary gets the signal's value
    rule = rule_from_dict({
        "id": "T001", "name": "t", "category": "communication", "severity": "error",
        "title": {"en": "t"}, "remediation": {"en": "r"}, "summary": {"en": "exec {hccl_exec_timeout_s} s"},
        "match": {"kind": "pattern", "regex": "notify wait timeout"},
    }, "mem")
    findings, errors = evaluate(rule, LINK_TABLE, "node-0/plog/plog-3317_20260315020311845.log", "plog")
    assert not errors and said(findings[0].summary) == "exec 600 s"


def test_connect_timeouts_on_every_rank_point_at_the_silent_peer(tmp_path):
    for r in range(0, 3):
        pid = 3300 + r
        text = (
            f"[INFO] HCCL({pid},python3):2026-03-15-02:03:12.001.204 [op_base.cc:1021][{pid}]Entry-HcclCommInitRootInfoInner:ranks[16], rank[{r}], rootinfo: host ip[10.20.0.11] port[60000]\n"
            f"[ERROR] HCCL({pid},python3):2026-03-15-02:05:32.114.86{r} [hccl_socket_manager.cc:796] [{pid}][Wait][LinkEstablish]wait socket establish timeout, role[1] rank[12] timeout[120 s]\n"
            f"[ERROR] HCCL({pid},python3):2026-03-15-02:05:32.114.91{r} [hccl_socket_manager.cc:620] [{pid}]|  10.20.1.16(12)   |  16666  |   10.20.0.1{r}({r})   |  3402193  |  client  | time out |   DISABLE  | LinkInfo\n"
        )
        d = tmp_path / "node-0" / "plog"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"plog-{pid}_20260315020311845.log").write_text(text)
    report = analyze([str(tmp_path)], Settings())
    first = report.findings[0]
    assert first.rule_id == "RC001"
    assert "rank 12 (10.20.1.16)" in said(first.summary) and "3 ranks timed out" in said(first.summary)


def test_sample_timeout_finding_names_timeout_and_stuck_location(sample_report):
    comm = next(f for f in sample_report["findings"] if f["rule_id"] == "COMM003")
    assert "HCCL_EXEC_TIMEOUT in force: 60 s" in comm["summary"]
    assert "stuck location named: rank 13" in comm["summary"]


def test_bad_plog_input_never_raises(tmp_path):
    d = tmp_path / "plog"
    d.mkdir()
    (d / "plog-1_2.log").write_text("")
    (d / "plog-12_3.log").write_text(
        "[ERROR] HCCL(12,python3):2026-13-45-03:04:10.213.190 [a.cc:1] [12]bad date\n"
        "garbage \x01 line\n"
        "[INFO] GE(1,):2026-01-01-00:00:00 [x.cc:2]3 no fraction\n"
    )
    parsed = read_paths([str(tmp_path)], Settings(), RuleFilters())
    assert not parsed.errors
    rows = parsed.records.sort("line").to_dicts()
    assert rows[0]["parsed"] and rows[0]["ts"] is None and rows[0]["component"] == "HCCL"
    assert not rows[1]["parsed"] and rows[1]["event"] == 1
    assert rows[2]["ts"] == datetime(2026, 1, 1) and rows[2]["message"] == "no fraction"


def test_an_older_unrelated_error_is_not_the_first_failure(tmp_path):
    _waiting_plogs(tmp_path, range(0, 3), "node-0")
    d = tmp_path / "node-1" / "plog"
    d.mkdir(parents=True)
    (d / "plog-7003_20260314030410000.log").write_text(  # a day earlier: another incident
        "[INFO] HCCL(7003,python3):2026-03-14-03:04:11.056.069 [op_base.cc:1021][7003]Entry-HcclCommInitRootInfoInner:ranks[4], rank[3], rootinfo: host ip[10.0.0.11] port[60000]\n"
        "[ERROR] RUNTIME(7003,python3):2026-03-14-03:10:31.338.412 [device_error_proc.cc:1412]7003 ProcessStarsCoreErrorInfo:Kernel task happen error, retCode=0x25, [aicore timeout].\n"
    )
    report = analyze([str(tmp_path)], Settings())
    assert report.findings[0].rule_id == "RC001"
    assert "10.0.0.12/5" in said(report.findings[0].summary)


def test_device_log_under_its_device_folder(tmp_path):
    text = "[ERROR] AICPU(3121,aicpu_scheduler):2026-03-15-03:10:31.401.002 [ae_kernel_lib.cc:230][tid:3130] kernel run failed\n"
    parsed = parse(tmp_path, "node-1/debug/device-5/device-3121_20260315030200417.log", text)
    row = parsed.records.row(0, named=True)
    assert parsed.inputs[0].kind == "plog"
    assert (row["device"], row["pid"], row["node"], row["component"]) == (5, 3121, "node-1", "AICPU")
    assert row["message"] == "kernel run failed"
