"""Messages known to be harmless (knowledge/benign.toml) and their loader (diagnose/knowledge/benign.py)."""

from __future__ import annotations

import time

import polars as pl
import pytest

from diagnose.knowledge.benign import (
    BenignTableError,
    benign_ids,
    benign_mask,
    builtin_benign_path,
    builtin_entries,
    load_benign,
)
from diagnose.scan.fastregex import unicode_boundaries

ENTRIES = load_benign(builtin_benign_path(), check=True)
IDS = [e.id for e in ENTRIES]


def test_the_table_loads_checked_and_unchecked_alike():
    assert len(ENTRIES) >= 10 and len(set(IDS)) == len(IDS)
    assert builtin_entries() == ENTRIES
    assert builtin_benign_path().parent.name in ("knowledge", "_knowledge")
    for e in ENTRIES:
        assert e.why["en"] and e.why["zh"] and e.source and e.project and e.component
        assert not unicode_boundaries(e.regex)  # stays on the DFA fast path on any text


@pytest.mark.parametrize("ident", IDS)
def test_each_entry_matches_its_example_and_not_its_near_miss(ident):
    entry = next(e for e in ENTRIES if e.id == ident)
    lines = pl.Series("message", [entry.example, entry.near_miss])
    assert benign_mask(lines).to_list() == [True, False]
    assert benign_ids(lines).to_list() == [ident, None]
    # no entry of the table matches the near miss: it is a real failure
    assert benign_mask(pl.Series([entry.near_miss])).to_list() == [False]


REAL_FAILURES = [
    # errors that look like the benign lines and must keep counting
    "[ERROR] RUNTIME(2210,):2026-03-02-11:40:02.118.004 [api_c.cc:1097]2210 rtMemcpy:ErrCode=107030, desc=[the current "
    "capture mode does not support this operation], InnerCode=0x703001c",
    "(Worker_TP3 pid=2214) ERROR 03-02 11:40:03 [worker.py:210] halGetDeviceInfo get device type version failed , "
    "ret:4[FUNC:Init][FILE:config_manager.cpp][LINE:61]",
    "ERROR 03-02 11:40:05 [core_client.py:704] Engine core proc EngineCore died unexpectedly, shutting down client.",
    "RuntimeError: ACL stream synchronize failed, error code:507035",
    "[ERROR] 2026-03-02-11:20:41 (PID:1402, Device:0, RankID:0) ERR02200 DIST call hccl api failed.",
    "EE1002: [PID: 1402] 2026-03-02-11:20:41.118.331 The stream sync timed out, stream_id=3, timeout=1800000ms.",
    "ImportError: /usr/local/lib/python3.10/site-packages/vllm_ascend/vllm_ascend_C.so: undefined symbol: aclnnFoo",
    "RuntimeError: Failed to infer device type",
    "torch.OutOfMemoryError: NPU out of memory. Tried to allocate 2.00 GiB",
]


def test_real_failures_are_never_benign():
    assert benign_mask(pl.Series(REAL_FAILURES)).to_list() == [False] * len(REAL_FAILURES)


def test_nulls_and_non_ascii_text():
    lines = pl.Series("message", [None, "推理请求 Failed to import from vllm._C with ModuleNotFoundError(无)", "普通日志"])
    assert benign_mask(lines).to_list() == [False, True, False]
    assert benign_ids(lines).to_list() == [None, "vllm-c-extension-missing", None]
    assert benign_mask(pl.Series("message", [], dtype=pl.String)).to_list() == []


def test_the_loader_is_fast_on_a_hundred_thousand_lines():
    base = [e.example for e in ENTRIES] + REAL_FAILURES + [
        "INFO 03-02 11:21:10 [loggers.py:118] Engine 000: Avg prompt throughput: 339.5 tokens/s, Running: 62 reqs",
        "[INFO] HCCL(1402,python3):2026-03-02-11:20:40.118.331 [op_base.cc:974] entry-HcclAllReduce: tag[x] 推理中",
    ]
    lines = pl.Series("message", (base * (100_000 // len(base) + 1))[:100_000])
    start = time.perf_counter()
    mask = benign_mask(lines)
    ids = benign_ids(lines)
    elapsed = time.perf_counter() - start
    assert mask.sum() == ids.drop_nulls().len() > 30_000
    assert elapsed < 3.0, elapsed  # one DFA scan per line; the id pass only re-reads the matched lines


VALID = '''
[[benign]]
id = "demo-probe"
project = "Demo"
component = "probe"
regex = 'probe \\b[a-z]+\\b is not supported'
why.en = "A probe that falls back."
why.zh = "会回退的探测。"
source = "example.org/demo.c:12"
example = "probe colour is not supported"
near_miss = "probe colour failed: not supported by the device, aborting"
'''


def _errors(tmp_path, text):
    path = tmp_path / "benign.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BenignTableError) as info:
        load_benign(path)
    return path, info.value.errors


def test_a_valid_table_loads_with_ascii_boundaries(tmp_path):
    path = tmp_path / "benign.toml"
    path.write_text(VALID, encoding="utf-8")
    (entry,) = load_benign(path)
    assert entry.regex == "probe (?-u:\\b)[a-z]+(?-u:\\b) is not supported"
    assert benign_ids(pl.Series(["x probe depth is not supported", "y"]), (entry,)).to_list() == ["demo-probe", None]


def test_the_validator_names_file_and_field(tmp_path):
    path, errors = _errors(tmp_path, VALID.replace("probe \\b[a-z]+", "(?<=x)probe \\b[a-z]+"))
    assert any(e.startswith(f"{path}: benign[0].regex: invalid regex") for e in errors), errors
    path, errors = _errors(tmp_path, VALID.replace("aborting", "probe colour is not supported"))
    assert f"{path}: benign[0].near_miss: is matched by its regex" in errors
    path, errors = _errors(tmp_path, VALID.replace('example = "probe colour is not supported"', 'example = "nothing"'))
    assert f"{path}: benign[0].example: not matched by its regex" in errors
    path, errors = _errors(tmp_path, VALID.replace('why.zh = "会回退的探测。"\n', ""))
    assert f"{path}: benign[0].why: must have non-empty en and zh texts" in errors
    path, errors = _errors(tmp_path, VALID + VALID)
    assert f"{path}: benign[1].id: duplicate id 'demo-probe'" in errors
    path, errors = _errors(tmp_path, VALID.replace('id = "demo-probe"', 'id = "Demo Probe"'))
    assert f"{path}: benign[0].id: 'Demo Probe' must be lower-case words joined by '-'" in errors
    path, errors = _errors(tmp_path, VALID.replace("probe \\b[a-z]+", "probe (?P<w>[a-z]+)"))
    assert any("named groups are not allowed" in e for e in errors), errors
    path, errors = _errors(tmp_path, VALID.replace('source = "example.org/demo.c:12"\n', ""))
    assert f"{path}: benign[0].source: missing" in errors
