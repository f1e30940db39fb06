"""The quiet-rule query asks the rules whose regex the planner covers only about the records holding one of
their literals (engine/run.py, scan/plan.py ``gate_searches``): the rules it calls quiet must be exactly those
whose condition no record meets."""

from __future__ import annotations

import polars as pl
from helpers import parse

from diagnose.engine.run import _quiet_pattern_rules
from diagnose.engine.selectors import record_condition
from diagnose.pipeline import Settings, load_catalog
from diagnose.scan.plan import gate_searches


def _records() -> pl.DataFrame:
    plog = [
        "[INFO] HCCL(3281448,python3):2025-07-23-02:00:03.521.205 [dispatcher_pub.cc:521] [3281471]LaunchTask: "
        "stream[57] task[10333] type[notify_wait] remoteRank[11]",
        "[ERROR] HCCL(3281448,python3):2025-07-23-02:10:03.521.205 [transport.cc:88] [3281471]notify wait timeout, "
        "HCCL_EXEC_TIMEOUT=1800",
        "[ERROR] RUNTIME(3281448,python3):2025-07-23-02:10:04.000.001 [stream.cc:12] [3281471]EI0002: The wait "
        "execution of the Notify register times out.",
        "[WARNING] ASCENDCL(3281448,python3):2025-07-23-02:10:05.000.001 [acl.cc:9] [3281471]Remote Rank did not "
        "send the data in time",
    ]
    vllm = [
        "INFO 07-23 02:00:01 [api_server.py:1000] vLLM API server version 0.9.1",
        "ERROR 07-23 02:11:00 [core.py:500] EngineCore encountered a fatal error.",
        "ERROR 07-23 02:11:01 [core.py:501] RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB",
        "WARNING 07-23 02:11:02 [worker.py:12] LOST HEARTBEAT from rank 3",
    ]
    plog_records, _ = parse("plog", plog, path="plog/plog-3281448_20250723020002003.log")
    vllm_records, _ = parse("vllm", vllm, path="vllm-serve.log")
    return pl.concat([plog_records, vllm_records], how="diagonal_relaxed")


def test_quiet_rules_are_those_no_record_meets():
    rules, _ = load_catalog(Settings())
    records = _records()
    quiet = _quiet_pattern_rules(rules, records)
    expected = set()
    for rule in rules:
        m = rule.match
        if m.kind == "pattern" and m.selector.reads_records:
            sources = m.selector.sources_for(rule.sources or None)
            cond = record_condition(m.selector)
            if sources:
                cond = cond & pl.col("source").is_in(sources)
            if not records.select(cond.any()).item():
                expected.add(rule.id)
    assert quiet == expected
    assert len(expected) < len([r for r in rules if r.match.kind == "pattern"])  # some rules did fire


def test_gate_covers_only_patterns_with_literals():
    gate = gate_searches(("notify wait timeout|(?i)lost heartbeat", r"\d{4}-\d+"))
    assert gate.covered == {"notify wait timeout|(?i)lost heartbeat"}
    texts = pl.Series(["a LOST heartBEAT here", "notify wait timeout", "2024-1"])
    assert texts.str.contains(gate.search).to_list() == [True, True, False]
