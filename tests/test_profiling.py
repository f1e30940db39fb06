"""Profiler parser (diagnose/parsers/kinds/profiling/) and the operators/performance rules built on it."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import polars as pl
import pytest
from helpers import said

from diagnose.authoring.fixtures import evaluate
from diagnose.parsers.registry import parser_for
from diagnose.parsers.lineframe import FileContext, lines_frame
from diagnose.parsers.kinds.profiling import cross_file_signals, folder_key, parse_stream, rank_from_path, streamed
from diagnose.parsers.kinds.profiling.trace import parse_trace_stream

from conftest import SAMPLES, run_json

PT = "node-a/ascend01_4242_20250707101200123_ascend_pt/ASCEND_PROFILER_OUTPUT/"

# CANN 8 kernel_details: start time quoted with a trailing TAB, shapes with literal quotes, DT_ dtypes, N/A.
KD_CANN8 = (
    "Step Id,Model ID,Task ID,Stream ID,Name,Type,OP State,Accelerator Core,Start Time(us),Duration(us),"
    "Wait Time(us),Block Num,Mix Block Num,HF32 Eligible,Input Shapes,Input Data Types,Input Formats,"
    "Output Shapes,Output Data Types,Output Formats\n"
    '4,4294967295,11,2,aclnnDynamicQuant_DynamicQuant_DynamicQuant,DynamicQuant,static,AI_VECTOR_CORE,'
    '"1751872031102300.100\t",10.0,0.5,40,0,NO,"""64,7168""",DT_BF16,ND,"""64,7168;64""",DT_INT8;FLOAT,ND;ND\n'
    '4,4294967295,12,2,aclnnGroupedMatmul_GroupedMatmul_GroupedMatmul,GroupedMatmul,static,MIX_AIC,'
    '"1751872031102311.420\t",300.0,0.5,24,48,NO,"""512,7168;16,7168,4096;16""",DT_INT8;INT8;INT64,ND;NZ;ND,'
    '"""512,4096""",DT_BF16,ND\n'
    '4,4294967295,13,2,aclnnMatmul_MatMulCommon_MatMulV2,MatMulV2,static,AI_CORE,'
    '"1751872031102700.000\t",100.0,0.5,24,0,NO,"""64,7168;7168,256""",DT_BF16;DT_BF16,ND;ND,"""64,256""",DT_BF16,ND\n'
    '4,4294967295,14,2,aclnnCast_CastAiCpu_Cast,Cast,static,AI_CPU,"1751872031102800.000\t",N/A,0.5,1,0,NO,'
    '"""64""",INT32,ND,"""64""",UINT64,ND\n'
    '4,4294967295,N/A,N/A,MoeDistributeCombineV2Aicpu,MoeDistributeCombineV2,static,AI_CPU,'
    '"1751872031102900.000\t",50.0,N/A,N/A,N/A,NO,N/A,N/A,N/A,N/A,N/A,N/A\n'
    '4,4294967295,15,2,aclnnDropOutGenMask_DropOutGenMask_DropOutGenMask,DropOutGenMask,static,AI_VECTOR_CORE,'
    '"1751872031103000.000\t",5.0,0.5,8,0,NO,"""4096""",UINT8,ND,"""512""",UINT8,ND\n'
)

# The same rows as older CANN / msprof op_summary spell them: Op Name, OP Type, Task Type, Task * Time, Block Dim.
OP_SUMMARY = (
    "Device_id,Model ID,Task ID,Stream ID,Op Name,OP Type,Task Type,Task Start Time(us),Task Duration(us),"
    "Task Wait Time(us),Block Dim,Mix Block Dim,Input Shapes,Input Data Types,Input Formats,Output Shapes,"
    "Output Data Types,Output Formats\n"
    '0,4294967295,12,2,aclnnGroupedMatmul_GroupedMatmul_GroupedMatmul,GroupedMatmul,MIX_AIC,1751872031102311.420,'
    '300.0,0.5,24,48,"""512,7168;16,7168,4096;16""",INT8;INT8;INT64,ND;NZ;ND,"""512,4096""",DT_BF16,ND\n'
    '0,4294967295,13,2,aclnnMatmul_MatMulCommon_MatMulV2,MatMulV2,AI_CORE,1751872031102700.000,100.0,0.5,24,0,'
    '"""64,7168;7168,256""",FLOAT16;FLOAT16,ND;ND,"""64,256""",FLOAT16,ND\n'
    "0,4294967295,14,2,trans_Cast_5,Cast,AI_CPU,1751872031102800.000,20.0,0.5,1,0,\"\"\"\"\"\",INT32,ND,"
    "\"\"\"\"\"\",UINT64,ND\n"
)


def parse(text: str, path: str):
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    ctx = FileContext(path=path, node=None, kind="profiler", mtime=None)
    return parser_for("profiler")(lines_frame(lines), ctx)


def sig(signals: pl.DataFrame, name: str) -> pl.DataFrame:
    return signals.filter(pl.col("signal") == name)


def msg(records: pl.DataFrame, line: int) -> str:
    return records.filter(pl.col("line") == line)["message"][0]


def test_cann8_kernel_details_rows_become_readable_records():
    records, signals = parse(KD_CANN8, PT + "kernel_details.csv")
    # Ordinary rows (the DropOutGenMask on line 7) are analysed, not kept; notable and evidence rows are.
    assert records["line"].to_list() == [1, 3, 4, 5]
    assert records["source"].unique().to_list() == ["profiler"]
    # TAB-quoted start time is a wall-clock timestamp.
    assert str(records.filter(pl.col("line") == 5)["ts"][0]).startswith("2025-07-07")
    # N/A duration: kept as N/A, not a crash, not counted.
    assert msg(records, 5).startswith("AI_CPU operator aclnnCast_CastAiCpu_Cast (Cast) N/A us, INT32->UINT64")
    # The MC2 Aicpu kernel (line 6) is not a fallback: not counted (checked below), not kept.
    assert "unquantized matmul aclnnMatmul_MatMulCommon_MatMulV2" in msg(records, 4)
    assert "BF16;BF16" in msg(records, 4) and "[64,7168;7168,256]" in msg(records, 4)
    share = sig(signals, "aicpu_time_share_pct")
    assert share["value"][0] == 0.0  # the only AI CPU fallback has no duration
    assert share["text"][0].startswith("profile ascend01_4242_20250707101200123_ascend_pt: ")


def test_quantized_coverage_from_dtype_spellings():
    _, signals = parse(KD_CANN8, PT + "kernel_details.csv")
    cov = sig(signals, "quant_matmul_coverage_pct")
    assert cov.height == 1
    assert cov["value"][0] == pytest.approx(75.0)  # 300 us INT8 GroupedMatmul of 400 us matmul time
    assert cov["line"][0] == 4  # evidence: the BF16 MatMulV2 row
    assert "MatMulV2 BF16 x1 100.0 us, weight [7168,256]" in cov["text"][0]
    assert sig(signals, "matmul_time_us")["value"][0] == pytest.approx(400.0)
    assert sig(signals, "gmm_tokens")["value"][0] == 512  # first dimension of the first input
    assert sig(signals, "moe_dispatch_combine_us")["value"][0] == 50.0


def test_uint8_masks_do_not_make_a_deployment_quantized():
    text = KD_CANN8.replace("DT_INT8;INT8;INT64", "DT_BF16;DT_BF16;INT64").replace("DT_INT8;FLOAT", "DT_BF16;FLOAT")
    text = text.replace("DynamicQuant", "RmsNorm")
    _, signals = parse(text, PT + "kernel_details.csv")
    assert sig(signals, "quant_matmul_coverage_pct").height == 0
    assert sig(signals, "quant_matmul_time_us")["value"][0] == 0.0


def test_op_summary_header_drift_gives_the_same_analysis():
    records, signals = parse(OP_SUMMARY, "PROF_000001_20250707101200123_ABCDEFGH/mindstudio_profiler_output/op_summary_20250707101530.csv")
    assert msg(records, 4).startswith("AI_CPU operator trans_Cast_5 (Cast) 20.0 us, INT32->UINT64 (AI CPU")
    share = sig(signals, "aicpu_time_share_pct")
    assert share["value"][0] == pytest.approx(100 * 20 / 420)
    assert share["engine"][0] == "device 0"  # from Device_id
    cov = sig(signals, "quant_matmul_coverage_pct")
    assert cov["value"][0] == pytest.approx(75.0) and "MatMulV2 FLOAT16" in cov["text"][0]


def test_kernel_details_without_dtype_columns_says_what_could_not_run():
    text = (
        "Step Id,Name,Type,Accelerator Core,Start Time(us),Duration(us),Wait Time(us),Block Num\n"
        '2,aclnnGroupedMatmul_GroupedMatmul_GroupedMatmul,GroupedMatmul,MIX_AIC,"1751872034100311.420\t",201.5,0.6,24\n'
        '2,aclnnNonzero_NonZeroAiCpu_NonZero,NonZero,AI_CPU,"1751872034100520.100\t",35.5,0.4,1\n'
    )
    records, signals = parse(text, PT + "kernel_details.csv")
    note = msg(records, 1)
    assert note.startswith("profiler: no Input Data Types / Input Shapes column")
    assert "quantized-operator coverage" in note and "MoE token counts" in note
    assert sig(signals, "quant_matmul_coverage_pct").height == 0 and sig(signals, "gmm_tokens").height == 0
    assert sig(signals, "aicpu_time_share_pct")["value"][0] == pytest.approx(100 * 35.5 / 237.0)


def test_old_cann_block_dim_and_hccl_rows():
    text = (
        "Step Id,Model ID,Task ID,Stream ID,Name,Type,Accelerator Core,Start Time(us),Duration(us),Wait Time(us),"
        "Block Dim,Mix Block Dim,Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats\n"
        "1,4294967295,N/A,N/A,hcom_allReduce__123_0,hcom_allReduce_,HCCL,1699529622793969.5,9000.0,2.0,0,N/A,N/A,N/A,N/A,N/A,N/A,N/A\n"
        '1,4294967295,1265,16,Cast66,Cast,AI_VECTOR_CORE,1699529623106755.2,3.0,1.0,9,0,"""4,1025""",INT64,FORMAT_ND,"""4,1025""",INT32,FORMAT_ND\n'
    )
    records, signals = parse(text, PT + "kernel_details.csv")
    assert records["line"].to_list() == [1]  # nothing notable: only the header is kept
    assert sig(signals, "device_time_us")["value"][0] == 3.0  # communication rows are not device compute
    assert sig(signals, "matmul_time_us").height == 0


def test_step_trace_spelling_with_space_and_cluster_trace():
    text = (
        "Device_id,Step,Computing,Communication (Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,"
        "Communication(Not Overlapped and Exclude Receive),Preparing\n"
        "3,1,5000.0,300.5,20.0,320.5,100.0,0,0,300.5,0\n"
        "3,2,N/A,300.5,20.0,320.5,100.0,0,0,300.5,0\n"
    )
    records, signals = parse(text, "x/rank3_ascend_pt/ASCEND_PROFILER_OUTPUT/step_trace_time.csv")
    assert sig(signals, "computing_us")["value"].to_list() == [5000.0]
    assert sig(signals, "comm_not_overlapped_us")["engine"][0] == "rank 3"
    assert msg(records, 2).startswith("step 1 rank 3: computing 5000.0 us")


def test_cluster_step_trace_names_the_slow_rank_and_who_waits():
    text = (
        "Step,Type,Index,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,"
        "Communication(Not Overlapped and Exclude Receive)\n"
        ",rank,0,50000,40000,10,40010,1000,0,0,40000\n"
        ",rank,1,90000,1000,10,1010,1000,0,0,1000\n"
        ",rank,2,51000,39000,10,39010,1000,0,0,39000\n"
        ',stage,"(0, 1, 2)",90000,40000,10,40010,1000,0,0,40000\n'
    )
    _, signals = parse(text, "cluster_analysis_output/cluster_step_trace_time.csv")
    s = sig(signals, "straggler_ratio")
    assert s["engine"][0] == "rank 1" and s["line"][0] == 3
    assert s["value"][0] == pytest.approx(91000 / 51500)
    assert "waiting for it (communication not overlapped): rank 0 40.0 ms, rank 2 39.0 ms" in s["text"][0]
    assert sig(signals, "slow_rank")["value"][0] == 1


TRACE = (
    "[\n"
    '{"ph": "M", "name": "process_name", "pid": 800, "tid": 0, "args": {"name": "Ascend Hardware"}},\n'
    '{"name": "aclnnAdd_AddAiCore_Add", "pid": 800, "tid": 3, "ts": "1704161511422904.204", "dur": 10.0, '
    '"args": {"Task Type": "Other"}, "ph": "X"},\n'
    '{"name": "aclnnCast_CastAiCpu_Cast", "pid": 800, "tid": 3, "ts": "1704161511434018.972", "dur": 30.0, '
    '"args": {"Task Type": "AI_CPU"}, "ph": "X"},\n'
    '{"name": "aclnnMul_MulAiCore_Mul", "pid": 800, "tid": 3, "ts": "17041615114'
)


def test_truncated_trace_view_one_event_per_line():
    records, signals = parse(TRACE, PT + "trace_view.json")
    assert msg(records, 4).startswith("AI_CPU operator aclnnCast_CastAiCpu_Cast (Cast) 30.0 us")
    notes = records.filter(pl.col("message").str.starts_with("profiler: "))["message"].to_list()
    assert any("trace_view.json is truncated" in n and "3 events before the cut" in n for n in notes)
    assert sig(signals, "aicpu_time_share_pct")["value"][0] == pytest.approx(75.0)


def test_truncated_trace_view_in_one_line_is_salvaged():
    one_line = TRACE.replace("\n", "")
    records, signals = parse(one_line, PT + "trace_view.json")
    assert records.height == 1
    assert "truncated" in records["message"][0] or "AI_CPU" in records["message"][0]
    assert sig(signals, "aicpu_time_share_pct")["value"][0] == pytest.approx(75.0)


def test_broken_json_files_are_reported_not_raised():
    records, signals = parse('{"(0, 1)": {"step": {"hcom', "out/cluster_communication.json")
    assert records["message"][0].startswith("profiler: cluster_communication.json is truncated")
    assert signals.height == 0
    records, _ = parse(json.dumps({"step1": {"collective": {}}}), "out/communication.json")
    assert records["parsed"].all()


def test_rank_from_profiler_info_and_folder_names():
    assert rank_from_path("a/dp0_pp0_tp0_dcp0_ep5_rank5_1234_20250707_ascend_pt/ASCEND_PROFILER_OUTPUT/x.csv") == 5
    assert rank_from_path("a/host_1234_20250707_ascend_pt/profiler_info_7.json") == 7
    assert rank_from_path("a/host_1234_20250707_ascend_pt/ASCEND_PROFILER_OUTPUT/x.csv") is None
    assert folder_key("a/h_1_2_ascend_pt/ASCEND_PROFILER_OUTPUT/k.csv") == "a/h_1_2_ascend_pt"
    _, signals = parse('{"rank_id": 3, "config": {}}', "a/h_1_2_ascend_pt/profiler_info.json")
    assert sig(signals, "profiler_rank")["value"][0] == 3


def _step_file(folder: str, computing: float, comm: float) -> tuple[pl.DataFrame, pl.DataFrame]:
    text = (
        "Device_id,Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble\n"
        f"0,1,{computing},{comm},10,{comm + 10},500,0,0\n0,2,{computing},{comm},10,{comm + 10},500,0,0\n"
    )
    return parse(text, f"{folder}/ASCEND_PROFILER_OUTPUT/step_trace_time.csv")


def test_cross_file_slow_rank_uses_profiler_info_ranks():
    parts = []
    for r, (comp, comm) in enumerate([(10000, 9000), (19000, 500), (10200, 8800)]):
        folder = f"cap/host_{100 + r}_20250707_ascend_pt"
        parts.append(_step_file(folder, comp, comm)[1])
        parts.append(parse(json.dumps({"config": {}}), f"{folder}/profiler_info_{r}.json")[1])
    signals = cross_file_signals(pl.concat(parts, how="vertical_relaxed"))
    s = sig(signals, "straggler_ratio")
    assert s.height == 1 and s["engine"][0] == "rank 1"
    assert s["text"][0].startswith("rank 1 is the slow rank")
    assert "rank 0 9.0 ms, rank 2 8.8 ms" in s["text"][0]
    assert s["file"][0].startswith("cap/host_101_")


def test_cross_file_moe_imbalance():
    parts = []
    for r, (tokens, dur) in enumerate([(256, 100.0), (260, 104.0), (900, 320.0)]):
        text = KD_CANN8.splitlines()[0] + "\n" + (
            f'4,4294967295,12,2,aclnnGroupedMatmul_GroupedMatmul_GroupedMatmul,GroupedMatmul,static,MIX_AIC,'
            f'"1751872031102311.420\t",{dur},0.5,24,48,NO,"""{tokens},7168;16,7168,4096;16""",INT8;INT8;INT64,ND;NZ;ND,'
            f'"""{tokens},4096""",DT_BF16,ND\n'
        )
        parts.append(parse(text, f"cap/dp0_pp0_tp0_dcp0_ep{r}_rank{r}_9_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv")[1])
    signals = cross_file_signals(pl.concat(parts, how="vertical_relaxed"))
    m = sig(signals, "moe_rank_imbalance")
    assert m["engine"][0] == "rank 2"
    assert m["value"][0] == pytest.approx(320 / (524 / 3))
    assert "tokens max/mean 1.91" in m["text"][0]


RULES = ("OPS001", "OPS002", "OPS003", "OPS004", "OPS005", "OPS006", "PRF001", "PRF002", "PRF003", "QNT101")


@pytest.mark.parametrize("rule_id", RULES)
def test_profiler_rules_have_firing_and_quiet_fixtures(catalog, rule_id):
    # The fixtures themselves run with the whole catalog's (tests/test_rule_catalog.py).
    rule = catalog[rule_id]
    assert any(t.fires for t in rule.tests) and any(not t.fires for t in rule.tests)


def test_host_fallback_log_is_an_operators_finding(catalog):
    log = (
        "[W compiler_depend.ts:51] Warning: CAUTION: The operator 'aten::isin.Tensor_Tensor_out' is not currently "
        "supported on the NPU backend and will fall back to run on the CPU. This may have performance implications. "
        "(function npu_cpu_fallback)\n"
    )
    findings, errors = evaluate(catalog["OPS003"], log, "logs/worker.log", None)
    assert not errors and findings[0].category == "operators" and "aten::isin.Tensor_Tensor_out" in said(findings[0].summary)


def test_mc2_only_profile_has_no_ai_cpu_finding(catalog):
    text = KD_CANN8.splitlines()[0] + "\n" + KD_CANN8.splitlines()[5] + "\n"
    for rid in ("OPS001", "OPS002"):
        findings, errors = evaluate(catalog[rid], text, PT + "kernel_details.csv", "profiler")
        assert not errors and not findings


def test_sample_profiler_w8a8():
    code, report = run_json(str(SAMPLES / "profiler-w8a8"))
    assert not report["errors"]
    by_id = {f["rule_id"]: f for f in report["findings"]}
    cov = by_id["OPS006"]
    assert cov["severity"] == "warning" and "On rank 0 only 71.3%" in cov["summary"]
    assert "GroupedMatmul BF16" in cov["summary"]
    assert by_id["OPS001"]["severity"] == "info"
    assert not [f for f in report["findings"] if f["severity"] in ("error", "critical")]
    kinds = {i["kind"] for i in report["inputs"] if i["path"].endswith((".csv", ".json"))}
    assert kinds == {"profiler"}



def test_a_trace_beside_its_kernel_table_is_not_read_and_a_lone_trace_is(tmp_path):
    """A rank's trace_view.json gives what its kernel_details.csv gives (AI CPU launches, their share), without
    dtypes: beside the table it is skipped by design, with the reason, and the findings stay; a rank with a
    trace and no kernel table still has it read."""
    import shutil

    both = tmp_path / "both"
    shutil.copytree(SAMPLES / "profiler-w8a8", both)
    _, full = run_json(str(SAMPLES / "profiler-w8a8"))
    _, report = run_json(str(both))
    skipped = [s for s in report["skipped"] if s["path"].endswith("trace_view.json")]
    assert len(skipped) == 1 and "kernel table" in skipped[0]["reason"]
    assert report["coverage"]["status"] == "complete"
    assert [f["rule_id"] for f in report["findings"]] == [f["rule_id"] for f in full["findings"]]
    lone = tmp_path / "lone"
    trace = next((SAMPLES / "profiler-w8a8").rglob("trace_view.json"))
    (lone / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    shutil.copyfile(trace, lone / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "trace_view.json")
    _, alone = run_json(str(lone))
    assert [i["path"] for i in alone["inputs"] if i["path"].endswith("trace_view.json")]
    assert not alone["skipped"]

def test_op_statistic_core_type_and_mc2_exclusion():
    text = (
        "Device_id,OP Type,Core Type,Count,Total Time(us),Min Time(us),Avg Time(us),Max Time(us),Ratio(%)\n"
        "0,GroupedMatmul,MIX_AIC,580,55100.0,90.0,95.0,101.0,80.1\n"
        "0,MoeDistributeDispatchV2,AI_CPU,580,10000.0,15.0,17.2,20.0,14.5\n"
        "0,NonZero,AI_CPU,10,3700.0,360.0,370.0,380.0,5.4\n"
    )
    records, signals = parse(text, PT + "op_statistic.csv")
    assert msg(records, 4).startswith("AI_CPU operator NonZero (NonZero) 3700.0 us, 10 launches in op_statistic")
    assert not msg(records, 3).startswith("AI_CPU")  # MC2 dispatch on the AI CPU is by design
    share = sig(signals, "aicpu_time_share_pct")
    assert share["value"][0] == pytest.approx(100 * 3700 / 68800) and share["line"][0] == 4


def test_profiler_output_is_known_by_its_name_alone():
    from diagnose.parsers.registry import sniff

    vllm_line = "(APIServer pid=1) INFO 09-03 10:00:00 [api_server.py:1] Starting vLLM API server"
    assert sniff("rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv", [vllm_line]) == "profiler"
    assert sniff("PROF_1/mindstudio_profiler_output/op_summary_20250707.csv", []) == "profiler"
    assert sniff("logs/kernel_details_notes.txt", [vllm_line]) == "vllm"


# --- trace_view.json: read as a stream, in bounded memory -----------------------------------------------------

HW, HOST = 800, 4100


def _trace_events() -> list[dict]:
    """A trace with what the analysis must get right: lanes named before and after their events, AI CPU launches
    (by Task Type and by name), an MC2 kernel on the AI CPU (not a fallback), host events with AiCpu-like names
    (not device time), flow events, strings holding ``}, {`` and arrays of objects in args (boundaries that are not
    boundaries), a pid given as text, an event without args and one with ``"args": null``."""
    def hw(name, dur, task="AI_CORE", **args):
        return {"name": name, "pid": HW, "tid": 2, "ts": f"{1751872031000000 + dur:.3f}", "dur": dur,
                "args": {"Model Id": 4294967295, "Task Type": task, **args}, "ph": "X"}
    return [
        {"ph": "X", "name": "aten::nonzero", "pid": HOST, "tid": HOST, "ts": "1751872030999990.000", "dur": 70.0,
         "cat": "cpu_op", "args": {"Sequence number": -1, "Input Dims": [[64, 256]], "Call stack": "a.py(1): f}, {g"}},
        {"ph": "M", "name": "process_name", "pid": HOST, "tid": 0, "args": {"name": "Python"}},
        hw("aclnnAdd_AddAiCore_Add", 10.0, "Other", note="x}, {\"ph\": \"X\", \"dur\": 9999}"),
        {"ph": "M", "name": "process_name", "pid": str(HW), "tid": 0, "args": {"name": "Ascend Hardware"}},
        hw("aclnnCast_CastAiCpu_Cast", 30.0, "AI_CPU", shapes=[{"dims": [64]}, {"dims": [1]}]),
        {"ph": "s", "bp": "e", "name": "HostToDevice", "id": "7", "pid": HOST, "tid": HOST, "ts": "1751872031000001.0"},
        hw("MoeDistributeCombineV2Aicpu", 40.0, "AI_CPU"),
        {"ph": "X", "name": "HostSideAiCpuHelper", "pid": HOST, "tid": HOST, "ts": "1751872031000002.0", "dur": 500.0},
        hw("aclnnNonzero_NonZeroAiCpu_NonZero", 20.0, "AI_CORE"),
        {"ph": "X", "name": "EVENT_WAIT", "pid": HW, "tid": 2, "ts": "1751872031000100.0", "dur": 5.0},
        {"ph": "X", "name": "NoArgs", "pid": HOST, "tid": 1, "ts": "1751872031000101.0", "dur": 1.0, "args": None},
        {"ph": "M", "name": "process_name", "pid": 900, "tid": 0, "args": {"name": "Overlap Analysis"}},
    ]


# Device time 10 + 30 + 40 + 20 + 5 = 105 us; AI CPU fallbacks Cast 30 + NonZero 20 (the MC2 kernel is not one).
TRACE_SHARE = 100 * 50 / 105


def _layouts(events: list[dict]) -> dict[str, str]:
    return {
        "one line": json.dumps(events),
        "one line, compact": json.dumps(events, separators=(",", ":")),
        "one event per line": "[\n" + ",\n".join(json.dumps(e) for e in events) + "\n]\n",
        "pretty-printed": json.dumps(events, indent=2),
        "object form": json.dumps({"displayTimeUnit": "ms", "otherData": {"v": [1, {"a": "]"}]}, "traceEvents": events,
                                   "stackFrames": {}}),
        "object form, pretty": json.dumps({"traceEvents": events, "displayTimeUnit": "ns"}, indent=1),
    }


def _stream(text: str, path: str = PT + "trace_view.json", block_bytes: int | None = None):
    ctx = FileContext(path=path, node=None, kind="profiler", mtime=None)
    return parse_trace_stream(io.BytesIO(text.encode()), ctx, block_bytes=block_bytes)


def _ai_records(records: pl.DataFrame) -> list[tuple[int, str]]:
    return records.filter(pl.col("message").str.starts_with("AI_CPU")).select("line", "message").rows()


@pytest.mark.parametrize("layout", list(_layouts([])))
def test_trace_view_stream_matches_the_whole_file_path(layout):
    text = _layouts(_trace_events())[layout]
    records, signals = parse(text, PT + "trace_view.json")  # the lines the reader read
    share = sig(signals, "aicpu_time_share_pct")
    assert share["value"][0] == pytest.approx(TRACE_SHARE)
    assert "(50.0 us, 2 launches)" in share["text"][0] and "MoeDistribute" not in share["text"][0]
    assert not records.filter(pl.col("message").str.starts_with("profiler:")).height  # nothing unread, not cut
    # As the pipeline calls it: with the file's bytes kept by the reader.
    lines = text.split("\n")
    ctx = FileContext(path=PT + "trace_view.json", node=None, kind="profiler", mtime=None, data=text.encode())
    b_records, b_signals = parser_for("profiler")(lines_frame(lines[:-1] if lines[-1] == "" else lines), ctx)
    assert b_signals.equals(signals) and b_records.equals(records)
    for block_bytes in (None, 64, 300):  # tiny blocks: many cuts, some of them inside nested values
        s_records, s_signals = _stream(text, block_bytes=block_bytes)
        assert s_signals.drop("value").equals(signals.drop("value"))
        assert s_signals["value"][0] == pytest.approx(share["value"][0], rel=1e-12)
        assert _ai_records(s_records) == _ai_records(records)
        assert not s_records.filter(pl.col("message").str.starts_with("profiler:")).height
    if "\n" not in text:  # one summary record; its evidence is the launch, not the whole line
        assert records.height == 1
        assert records["text"][0].replace(" ", "").startswith('{"name":"aclnnCast_CastAiCpu_Cast"')
    else:  # a record per launch, on the line where its event starts
        lines = text.split("\n")
        for line, _ in _ai_records(records):
            assert lines[line - 1].lstrip().startswith("{")
        assert len(_ai_records(records)) == 2


def test_trace_view_stream_reports_the_reader_counts():
    text = _layouts(_trace_events())["one event per line"]

    class Info:
        pass

    info = Info()
    ctx = FileContext(path=PT + "trace_view.json", node=None, kind="profiler", mtime=None)
    records, signals = parse_stream(io.BytesIO(text.encode()), ctx, info)
    assert (info.bytes, info.lines, info.encoding) == (len(text.encode()), text.count("\n"), "utf-8")
    assert streamed(PT + "trace_view.json") and not streamed(PT + "kernel_details.csv")
    with pytest.raises(ValueError):
        parse_stream(io.BytesIO(b""), FileContext(path=PT + "kernel_details.csv", node=None, kind="profiler", mtime=None))
    # Every signal line has a record with a text (evidence is never read back from a gigabyte file).
    assert set(signals["line"].to_list()) <= set(records.filter(pl.col("text") != "")["line"].to_list())


@pytest.mark.parametrize("layout", ["one line", "one event per line"])
@pytest.mark.parametrize("keep", [0.35, 0.6, 0.97])
def test_truncated_trace_view_stream_keeps_what_was_read(layout, keep):
    events = _trace_events()
    whole = _layouts(events)[layout]
    text = whole[: int(len(whole) * keep)]
    # What a reader can recover: the events complete before the cut.
    complete = [e for e in events if whole.index(json.dumps(e)) + len(json.dumps(e)) <= len(text)]
    for records, signals in (parse(text, PT + "trace_view.json"), _stream(text), _stream(text, block_bytes=100)):
        notes = records.filter(pl.col("message").str.starts_with("profiler: "))["message"].to_list()
        assert any("trace_view.json is truncated" in n and f"{len(complete)} events before the cut" in n for n in notes)
        assert records["text"].str.len_bytes().min() > 0  # evidence is never read back from the file
        hw_pid_known = any(e.get("args", {}) and e["args"].get("name") == "Ascend Hardware" for e in complete)
        share = sig(signals, "aicpu_time_share_pct")
        if not hw_pid_known:
            assert share.height == 0
            continue
        dev = sum(e["dur"] for e in complete if str(e["pid"]) == str(HW) and e["ph"] == "X")
        ai = sum(e["dur"] for e in complete if str(e["pid"]) == str(HW) and e["ph"] == "X"
                 and ("AiCpu" in e["name"] or (e.get("args") or {}).get("Task Type") == "AI_CPU")
                 and not e["name"].endswith("Aicpu"))
        assert share["value"][0] == pytest.approx(100 * ai / dev)


def test_trace_view_cut_right_after_an_event_is_truncated_not_lost():
    events = _trace_events()
    text = json.dumps(events)[:-1]  # the closing bracket is missing: every event is whole
    for records, signals in (parse(text, PT + "trace_view.json"), _stream(text)):
        assert sig(signals, "aicpu_time_share_pct")["value"][0] == pytest.approx(TRACE_SHARE)
        assert any(f"{len(events)} events before the cut" in m for m in records["message"].to_list())


def test_unreadable_trace_event_is_reported_and_skipped():
    events = _trace_events()
    lines = ["["] + [json.dumps(e) + "," for e in events[:-1]] + [json.dumps(events[-1]), "]"]
    assert events[5]["ph"] == "s"  # a flow event (no device time) becomes a line that is not JSON:
    lines[6] = '{"name": "broken", "ph": "X", "pid": 800, "dur": 1e9, "args": {"Task Type": "AI_CPU",'
    text = "\n".join(lines) + "\n"
    for records, signals in (parse(text, PT + "trace_view.json"), _stream(text), _stream(text, block_bytes=200)):
        notes = records.filter(pl.col("message").str.starts_with("profiler: "))["message"].to_list()
        assert notes == ["profiler: 1 trace event line(s) could not be read, first at line 7"]
        assert sig(signals, "aicpu_time_share_pct")["value"][0] == pytest.approx(TRACE_SHARE)


@pytest.mark.parametrize("text", ["", "   \n", "{}", '{"traceEvents": []}', "[]", "[1, 2, \"x\"]", "not json", "\x00\x01"])
def test_odd_trace_view_files_do_not_raise(text):
    for records, signals in (parse(text, PT + "trace_view.json"), _stream(text)):
        assert sig(signals, "aicpu_time_share_pct").height == 0


def _write_big_trace(path, mb: int) -> int:
    """A one-line trace of about ``mb`` MB (the generator's events, repeated): one AI CPU launch per 103 events."""
    unit = [{"name": f"aclnnKernel{k}_K{k}AiCore_K{k}", "pid": HW, "tid": 2, "ts": f"{1751872031000000 + k:.3f}",
             "dur": 10.0, "args": {"Model Id": 4294967295, "Task Type": "AI_CORE", "Stream Id": 2, "Task Id": k},
             "ph": "X"} for k in range(102)]
    unit.append({"name": "aclnnNonzero_NonZeroAiCpu_NonZero", "pid": HW, "tid": 2, "ts": "1751872031000200.000",
                 "dur": 40.0, "args": {"Task Type": "AI_CPU"}, "ph": "X"})
    chunk = ", ".join(json.dumps(e) for e in unit).encode()
    head = json.dumps({"ph": "M", "name": "process_name", "pid": HW, "tid": 0, "args": {"name": "Ascend Hardware"}})
    reps = max(1, mb * 1024 * 1024 // (len(chunk) + 2))
    with open(path, "wb") as out:
        out.write(b"[" + head.encode())
        block = (b", " + chunk) * 64
        for _ in range(reps // 64):
            out.write(block)
        out.write((b", " + chunk) * (reps % 64) + b"]")
    return reps


@pytest.mark.slow
def test_large_trace_view_is_read_in_bounded_memory(tmp_path):
    path = tmp_path / "x_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    path.parent.mkdir(parents=True)
    reps = _write_big_trace(path, 200)
    script = (
        "import json, resource, sys\n"
        "from diagnose.parsers.kinds import profiling\n"
        "from diagnose.parsers.lineframe import FileContext\n"
        "ctx = FileContext(path=sys.argv[1], node=None, kind='profiler', mtime=None)\n"
        "with open(sys.argv[1], 'rb') as f:\n"
        "    records, signals = profiling.parse_stream(f, ctx)\n"
        # VmHWM, not ru_maxrss: a child's ru_maxrss starts from its parent's (this pytest process's) peak.
        "hwm = int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0])\n"
        "print(json.dumps({'rss_mb': hwm / 1024,\n"
        "                  'share': signals['value'][0], 'text': signals['text'][0], 'records': records.height}))\n"
    )
    out = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=True)
    got = json.loads(out.stdout)
    assert path.stat().st_size > 190 * 1024 * 1024
    assert got["rss_mb"] < 250, got  # the file is 200 MB: memory does not grow with it (about 140 MB here)
    assert got["share"] == pytest.approx(100 * 40 / (102 * 10 + 40))
    assert f"{reps} launches" in got["text"] and got["records"] == 1
