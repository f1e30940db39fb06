"""Errors no rule knows: candidates, masking, grouping, exclusion of explained records, the report sections,
starter rules (`diagnose rules new`) and the baseline "new" marking (diagnose/analysis/signatures.py)."""

from __future__ import annotations

import json

import polars as pl
import pytest

from diagnose.analysis import signatures as sig
from diagnose.knowledge.masks import mask_text
from diagnose.authoring import starter
from diagnose.engine.rulefile import load_rule
from diagnose.model import conform_records
from diagnose.pipeline import Settings, analyze

from conftest import SAMPLES, run_cli, run_json

SAMPLE = SAMPLES / "two-node-aicore"
PLANTED = ("ra_hdc_qp_modify(<N>) : [modify][ra_hdc_qp]qp state modify to RTS failed ret(<N>) phy_id(<N>) "
           "qpn(<HEX>) remote <IP>:<PORT> mr addr <HEX> len <N>")


def masked(message: str) -> str:
    return mask_text(message)


# --- masking: one case per variable kind --------------------------------------------------------------------------

@pytest.mark.parametrize("message, expected", [
    # timestamps: CANN, ISO, vLLM month-day, bare clock, ctime
    ("EZ9999: [PID: 9501] 2026-03-15-03:10:31.339.402 Inner Error!", "EZ9999: [PID: <PID>] <TS> Inner Error!"),
    ("started 2025-09-03T14:19:12.123 then", "started <TS> then"),
    ("last seen 03-15 03:10:41 here", "last seen <TS> here"),
    ("at 03:10:41,123 again", "at <TS> again"),
    ("Arrival Time:[Sun Mar 15 03:10:01 2026]", "Arrival Time:[<TS>]"),
    # pids and tids
    ("worker pid=4410 tid:4533 died", "worker pid=<PID> tid:<PID> died"),
    # ranks and devices
    ("remote rank[13] local_rank=2 RankID:8", "remote rank[<RANK>] local_rank=<RANK> RankID:<RANK>"),
    ("device_id=5, Device:3, npu 7, chipId:1, deviceLogicId[5]",
     "device_id=<DEV>, Device:<DEV>, npu <DEV>, chipId:<DEV>, deviceLogicId[<DEV>]"),
    # hex numbers and addresses
    ("retCode=0x25 addr 0x7f3a2c01b000 hash 7f3a2c01b0", "retCode=<HEX> addr <HEX> hash <HEX>"),
    # IPs and ports
    ("connect to 10.0.0.12:16666 failed, host ip[10.0.0.11] port[60000]",
     "connect to <IP>:<PORT> failed, host ip[<IP>] port[<PORT>]"),
    # sizes
    ("Tried to allocate 30.00 MiB of 60.96 GiB, 2097152 bytes", "Tried to allocate <SIZE> of <SIZE>, <SIZE>"),
    # paths, absolute and relative with a line number
    ('File "/vllm-workspace/vllm/vllm/v1/engine/core.py", line 710, in run',
     'File "<PATH>", line <N>, in run'),
    ("InnerRunOpApi:torch_npu/csrc/framework/OpParamMaker.cpp:281 HCCL function error",
     "InnerRunOpApi:<PATH> HCCL function error"),
    # request ids and UUIDs
    ("Aborted request chatcmpl-8f3c2a9b1d4e and cmpl-42-0", "Aborted request <REQ> and <REQ>"),
    ("trace 123e4567-e89b-12d3-a456-426614174000 lost", "trace <UUID> lost"),
    # other numbers; error codes and identifiers with digits stay
    ("found in 60 seconds, retry 3 of 5, score -1.5", "found in <N> seconds, retry <N> of <N>, score <N>"),
    ("EI0002 MoeDistributeDispatchV2 ERR02200 HcclAllreduce", "EI0002 MoeDistributeDispatchV2 ERR02200 HcclAllreduce"),
    ("  lots   of\tspace  ", "lots of space"),
])
def test_mask_each_variable_kind(message, expected):
    assert masked(message) == expected


def test_masks_give_one_signature_for_lines_that_differ_only_in_variables():
    a = masked("qp create failed ret(-110) phy_id(0) qpn(0x1a3) remote 10.0.0.12:16666 addr 0x7f3a2c01b000 len 2097152")
    b = masked("qp create failed ret(-12) phy_id(3) qpn(0x2c7) remote 10.0.0.15:16670 addr 0x7f3a2c61f000 len 4096")
    assert a == b


# --- candidates, grouping, order -----------------------------------------------------------------------------------

def _records(rows: list[dict]) -> pl.DataFrame:
    base = {"source": "vllm", "parsed": True, "year_known": True}
    out = []
    for r in rows:
        row = {**base, **r}
        row.setdefault("event", row["line"])
        row.setdefault("text", row["message"])
        out.append(row)
    return conform_records(pl.DataFrame(out))


def _keys(pairs=()) -> pl.DataFrame:
    return pl.DataFrame({"file": [p[0] for p in pairs], "event": [p[1] for p in pairs]},
                        schema={"file": pl.String, "event": pl.UInt32})


def test_traceback_keeps_exception_line_and_code_lines_only():
    recs = _records([
        {"file": "a.log", "line": 1, "level": "ERROR", "message": "WorkerProc hit an exception."},
        {"file": "a.log", "line": 2, "event": 1, "level": "ERROR", "message": "Traceback (most recent call last):"},
        {"file": "a.log", "line": 3, "event": 1, "level": "ERROR",
         "message": '  File "/x/model_runner_v1.py", line 1880, in execute_model'},
        {"file": "a.log", "line": 4, "event": 1, "level": "ERROR", "message": "    self.model()"},
        {"file": "a.log", "line": 5, "event": 1, "level": "ERROR", "message": "RuntimeError: widget exploded 42"},
        {"file": "a.log", "line": 6, "event": 1, "level": "ERROR", "code": "EZ9999",
         "message": "EZ9999: [PID: 9501] 2026-03-15-03:10:31.339.402 Inner Error!"},
        {"file": "a.log", "line": 7, "level": "INFO", "message": "all fine 7"},
        {"file": "a.log", "line": 8, "level": "WARNING", "message": "lonely warning 8"},
    ])
    assert sig.candidates(recs)["line"].to_list() == [5, 6, 8]


def test_group_counts_times_nodes_ranks_and_example():
    from datetime import datetime

    recs = _records([
        {"file": "n1.log", "line": 3, "node": "node-1", "rank": 9, "ts": datetime(2026, 1, 1, 10, 0, 5),
         "level": "ERROR", "message": "widget overflow at 0x7f00aa on device_id=1"},
        {"file": "n0.log", "line": 7, "node": "node-0", "rank": 2, "ts": datetime(2026, 1, 1, 10, 0, 1),
         "level": "ERROR", "message": "widget overflow at 0x7f00bb on device_id=0"},
        {"file": "n0.log", "line": 20, "node": "node-0", "rank": 2, "ts": datetime(2026, 1, 1, 10, 9, 0),
         "level": "ERROR", "message": "widget overflow at 0x7f00cc on device_id=0"},
        {"file": "n0.log", "line": 40, "node": "node-0", "ts": datetime(2026, 1, 1, 10, 9, 30),
         "level": "WARNING", "message": "slow disk 5"},
    ])
    items, more = sig.unrecognised(recs, _keys())
    assert more == 0 and [i.count for i in items] == [3, 1]
    top = items[0]
    assert top.signature == "widget overflow at <HEX> on device_id=<DEV>"
    assert top.first_seen == "2026-01-01 10:00:01" and top.last_seen == "2026-01-01 10:09:00"
    assert top.nodes == ["node-0", "node-1"] and top.ranks == [2, 9]
    assert (top.example.file, top.example.line) == ("n0.log", 7)


def test_order_is_count_then_signature_and_top_n_says_how_many_more():
    rows = []
    for i, word in enumerate(["delta", "alpha", "charlie", "bravo"]):
        for j in range(2 if word in ("charlie", "bravo") else 1):
            rows.append({"file": "x.log", "line": 10 * i + j + 1, "level": "ERROR", "message": f"{word} broke {j}"})
    recs = _records(rows)
    items, more = sig.unrecognised(recs, _keys(), top=3)
    assert [i.signature for i in items] == ["bravo broke <N>", "charlie broke <N>", "alpha broke <N>"]
    assert more == 1


def test_same_input_same_signatures_run_to_run():
    recs = _records([{"file": f"f{i % 3}.log", "line": i + 1, "level": "ERROR", "message": f"err {i % 4} at {i}"}
                     for i in range(30)])
    first = sig.unrecognised(recs, _keys())
    for _ in range(3):
        assert sig.unrecognised(recs.sample(fraction=1.0, shuffle=True, seed=_), _keys()) == first


def test_explained_event_is_not_listed_and_neither_is_its_error_block():
    from datetime import datetime

    t = datetime(2026, 3, 15, 3, 10, 31)
    recs = _records([
        {"file": "a.log", "line": 1, "level": "ERROR", "message": "WorkerProc hit an exception."},
        {"file": "a.log", "line": 2, "event": 1, "level": "ERROR", "message": "RuntimeError: known thing 1"},
        {"file": "p.log", "line": 5, "ts": t, "level": "ERROR", "source": "plog", "message": "Task run failed, id=3"},
        {"file": "p.log", "line": 6, "ts": t, "level": "ERROR", "source": "plog", "message": "known timeout"},
        {"file": "p.log", "line": 9, "ts": t, "level": "ERROR", "source": "plog", "message": "separate trouble 9"},
    ])
    items, _ = sig.unrecognised(recs, _keys([("a.log", 1), ("p.log", 6)]))
    assert [i.signature for i in items] == ["separate trouble <N>"]


VLLM_LOG = """\
(Worker_TP0 pid=812) INFO 06-30 23:40:02 [worker.py:210] Available KV cache memory: 18.42 GiB
(Worker_TP0 pid=812) ERROR 06-30 23:41:02 [multiproc_executor.py:585] WorkerProc hit an exception.
(Worker_TP0 pid=812) ERROR 06-30 23:41:02 [multiproc_executor.py:585] Traceback (most recent call last):
(Worker_TP0 pid=812) ERROR 06-30 23:41:02 [multiproc_executor.py:585]   File "/vllm-workspace/vllm-ascend/vllm_ascend/worker/model_runner_v1.py", line 1880, in execute_model
(Worker_TP0 pid=812) ERROR 06-30 23:41:02 [multiproc_executor.py:585] torch.OutOfMemoryError: NPU out of memory. Tried to allocate 172.00 MiB (NPU 0; 29.49 GiB total capacity; 28.97 GiB already allocated; 28.97 GiB current active; 122.25 MiB free; 28.98 GiB reserved in total by PyTorch)
(APIServer pid=700) ERROR 06-30 23:41:05 [serving_chat.py:1021] Error in chat completion stream generator for request chatcmpl-4b1f9a2c: frobnicator jammed at slot 17
(APIServer pid=700) ERROR 06-30 23:41:06 [serving_chat.py:1021] Error in chat completion stream generator for request chatcmpl-77aa01de: frobnicator jammed at slot 3
"""


def test_rule_explained_traceback_is_excluded_by_event(tmp_path):
    log = tmp_path / "node-0" / "vllm-serve.log"
    log.parent.mkdir()
    log.write_text(VLLM_LOG)
    report = analyze([str(tmp_path)], Settings())
    assert "MEM001" in [f.rule_id for f in report.findings]
    sigs = [u.signature for u in report.unrecognised]
    # the OOM exception line and its opener ("WorkerProc hit an exception.") belong to the explained event
    assert sigs == ["Error in chat completion stream generator for request <REQ>: frobnicator jammed at slot <N>"]
    assert report.unrecognised[0].count == 2


# --- the two-node sample -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    out = tmp_path_factory.mktemp("sample") / "report.json"
    result = run_cli(str(SAMPLE), "--json", str(out), "--no-color")
    return result, json.loads(out.read_text())


def test_sample_planted_error_tops_the_section_with_a_clean_signature(sample):
    _, data = sample
    top = data["unrecognised"][0]
    assert top["signature"] == PLANTED
    assert top["count"] == 8 and top["nodes"] == ["node-0"] and top["ranks"] == [0, 1, 2, 3]
    assert top["first_seen"].startswith("2026-03-15 03:07:12") and top["source"] == "plog"
    assert top["example"]["file"].endswith("node-0/plog/plog-4410_20260315030210417.log")
    assert top["example"]["line"] == 9
    assert [f["rule_id"] for f in data["findings"][:2]] == ["VER001", "DEV010"]  # the older driver, then its timeout


def test_sample_known_errors_are_not_listed(sample):
    _, data = sample
    listed = " ".join(u["signature"] + " " + u["example"]["text"] for u in data["unrecognised"])
    for known in ("aicore timeout", "notify wait timeout", "Notify register", "EngineDead", "fatal error",
                  "HcclAllreduce", "ACL stream synchronize", "synchronize stream failed", "Task run failed"):
        assert known not in listed, known
    assert data["unrecognised_more"] == 0 and "unrecognised_new" not in data


def test_sample_text_and_markdown_sections(sample, tmp_path):
    result, _ = sample
    text = result.stdout
    assert "Unrecognised errors (no rule explains them): 2 signatures" in text
    assert text.index("Unrecognised errors") > text.index("DEV010")
    md = run_cli(str(SAMPLE), "--format", "markdown").stdout
    assert "### Unrecognised errors" in md and "qp state modify to RTS failed" in md
    assert "node-0/plog/plog-4410_20260315030210417.log:9:" in md


# --- starter rules -------------------------------------------------------------------------------------------------

def test_starter_rule_from_report_passes_rules_test(sample, tmp_path):
    _, data = sample
    report = tmp_path / "r.json"
    report.write_text(json.dumps(data))
    out = tmp_path / "my-rules"
    res = run_cli("rules", "new", "--from-report", str(report), "--index", "1", "-o", str(out))
    assert res.exit_code == 0, res.output
    files = list(out.glob("USR001.*.toml"))
    assert len(files) == 1
    rule = load_rule(files[0])
    assert rule.sources == ["plog"] and rule.severity == "error" and rule.match.kind == "pattern"
    assert "TODO" in rule.remediation["en"] and rule.remediation.get("zh")
    assert [t.fires for t in rule.tests] == [True, False]
    quiet = rule.tests[1].log
    assert quiet != rule.tests[0].log and "HCCP(4410,python3)" in quiet  # a near miss of the same line
    res = run_cli("rules", "test", str(out))
    assert res.exit_code == 0, res.output
    assert "2 passed, 0 failed" in res.output
    # a second one goes next to it with the next free id
    res = run_cli("rules", "new", "--from-report", str(report), "--index", "2", "-o", str(out))
    assert res.exit_code == 0 and list(out.glob("USR002.*.toml"))
    assert run_cli("rules", "test", str(out)).exit_code == 0


def test_starter_rule_from_signature_alone_and_with_an_example(tmp_path):
    out = tmp_path / "r"
    res = run_cli("rules", "new", "--from-signature", "qp create failed ret(<N>) on <IP>:<PORT> at <TS>",
                  "-o", str(out), "--id", "SITE-101", "--category", "communication")
    assert res.exit_code == 0, res.output
    res = run_cli("rules", "new", "--from-signature", "widget overflow at <HEX> (<SIZE>) in <PATH>",
                  "--example", "(Worker_TP3 pid=9) ERROR 06-30 23:41:02 [w.py:12] widget overflow at 0x7f01 "
                  "(2.00 GiB) in /tmp/a/b.bin", "--kind", "vllm", "-o", str(out), "--name", "widget-overflow")
    assert res.exit_code == 0, res.output
    assert (out / "USR001.widget-overflow.toml").exists()
    res = run_cli("rules", "test", str(out))
    assert res.exit_code == 0, res.output
    assert "4 passed, 0 failed" in res.output


def test_signature_regex_matches_what_the_mask_took():
    msg = ("connect 10.0.0.12:16666 took 2.50 GiB at 2026-03-15-03:10:31.339.402 pid=4410 rank[3] device_id=5 "
           "addr 0x7f3a file /a/b/c.py req chatcmpl-9a trace 123e4567-e89b-12d3-a456-426614174000 n=-12.5")
    pattern = starter.signature_regex(masked(msg))
    assert pl.Series([msg]).str.contains(pattern)[0]
    assert pl.Series([starter.sample_line(masked(msg))]).str.contains(pattern)[0]


def test_rules_new_usage_errors(tmp_path):
    assert run_cli("rules", "new", "-o", str(tmp_path)).exit_code == 2
    empty = tmp_path / "e.json"
    empty.write_text(json.dumps({"findings": [], "inputs": [], "unrecognised": []}))
    assert run_cli("rules", "new", "--from-report", str(empty), "-o", str(tmp_path / "x")).exit_code == 2


# --- baseline ------------------------------------------------------------------------------------------------------

def test_baseline_marks_new_signatures(sample, tmp_path):
    _, data = sample
    old = dict(data, unrecognised=[u for u in data["unrecognised"] if u["signature"] != PLANTED])
    base = tmp_path / "last-week.json"
    base.write_text(json.dumps(old))
    code, now = run_json(str(SAMPLE), "--baseline", str(base))
    assert now["unrecognised_new"] == 1 and not now["errors"]
    assert [(u["signature"] == PLANTED, u["new"]) for u in now["unrecognised"]] == [(True, True), (False, False)]
    text = run_cli(str(SAMPLE), "--baseline", str(base), "--no-color").stdout
    assert "1 new error signature since the baseline" in text and "[NEW]" in text
    same = tmp_path / "same.json"
    same.write_text(json.dumps(data))
    _, again = run_json(str(SAMPLE), "--baseline", str(same))
    assert again["unrecognised_new"] == 0
    assert [f["rule_id"] for f in again["findings"]] == [f["rule_id"] for f in data["findings"]]


def test_baseline_report_without_the_section_marks_nothing(sample, tmp_path):
    _, data = sample
    old = {k: v for k, v in data.items() if not k.startswith("unrecognised")}
    base = tmp_path / "old.json"
    base.write_text(json.dumps(old))
    _, now = run_json(str(SAMPLE), "--baseline", str(base))
    assert "unrecognised_new" not in now and all("new" not in u for u in now["unrecognised"])


def test_request_connection_and_endpoint_ids_are_masked():
    # One line per request must make one signature (MindIE's `reqId: endpoint_common_N`), not one per request.
    from diagnose.knowledge.masks import mask_text

    lines = [f"[endpoint] Failed to send response, reqId: endpoint_common_{n}, connId: {c}, ret: -32"
             for n, c in ((7, 1201), (8812, 44), (90311, 5))]
    assert {mask_text(line) for line in lines} == {"[endpoint] Failed to send response, reqId: <ID>, connId: <ID>, ret: <N>"}
    assert mask_text("Connection 4567 closed by peer while reqId: endpoint_common_9 was streaming") == \
        "Connection <N> closed by peer while reqId: <ID> was streaming"
    assert mask_text("session_id=ab12-x9 dropped, stream_id=62") == "session_id=<ID> dropped, stream_id=<ID>"
    assert mask_text("queue 3 is full, wait 10ms") == mask_text("queue 12 is full, wait 8ms") == "queue <N> is full, wait <DUR>"
    # what is not an id stays: a setting's value, a word that merely ends in a digit
    assert mask_text("env HCCL_OP_EXPANSION_MODE is not set, use default value [AIV]").endswith("[AIV]")
