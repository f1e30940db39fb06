"""Properties that hold for any input: no parser raises, every line is parsed or kept raw and the counts add up,
the line reader cuts only over-long lines and never loses a line number, every name has a printable display
form. Every source kind of the registry is covered, under the file names its parser dispatches on."""

from __future__ import annotations

import io
import os

import polars as pl
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from diagnose.ingest.lines import TextInfo, iter_line_chunks
from diagnose.ingest.names import candidates, display, zip_member_name
from diagnose.ingest.walk import SourceFile
from diagnose.model import RECORD_SCHEMA
from diagnose.parsers import registry
from diagnose.parsers.lineframe import FileContext, lines_frame
from diagnose.pipeline import RuleFilters, Settings, read

# Well-formed heads of each kind (written for these tests), so the generated lines reach the parsers' real paths.
HEADS = [
    "", "INFO 09-03 14:00:10 [a.py:1] ", "(APIServer pid=7) ERROR 13-45 25:61:61 [x:1] ",
    "(EngineCore_DP0 pid=9) INFO 07-01 09:00:40 [loggers.py:118] Engine 000: Avg prompt throughput: ",
    "[2025-10-29 09:53:45.928+08:00] [1] [2] [mindie-server] [ERROR] [x.cpp:1] : [MIE04E010109] [daemon] ",
    "[ERROR] HCCL(1,python3):2025-07-23-03:47:57.070.463 [hccl_socket.cc:100] [1][HcclSocket] ",
    "[rank3]: ", "| NPU  Name  | Health  |", "| 0     910B3               | OK            | 95.1 ",
    "+-------------------+", "Kernel Name,Task Type,", "Name,Type,Accelerator Core,Start Time(us),Duration(us),",
    "MatMul,MatMul,AI_CORE,\"1\t\",2.0,INT8", "Step,Computing,Communication(Not Overlapped),Free\n1,",
    "{\"a\": [", "{\"results\": {\"gsm8k\": {\"acc,none\": ",
    "{\"date\": \"20251118-093012\", \"request_throughput\": ",
    "| dataset | version | metric | mode | ", "# HELP vllm:num_requests_running ", "# TYPE vllm:x gauge",
    "vllm:num_requests_running{engine=\"0\"} ", "Version=8.0.RC3", "package_name=Ascend-cann-toolkit",
    "138,237,145,251,", "2025-10-15T00:04:48Z ", "Traceback (most recent call last):", "  File \"x.py\", line 1",
    "RuntimeError: NPU out of memory. Tried to allocate ", "EI0006: [PID: 1] 2025-04-08-18:07:20.444.436 ",
    "Benchmark Result ", "Total Time(s),Success Rate,", "============ Serving Benchmark Result ============",
]
LINE = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=120)
LINES = st.lists(st.tuples(st.sampled_from(HEADS), LINE).map("".join), max_size=20)

# The names each kind's parser dispatches on (the profiler reads its files by name; the others by content).
NAMES = {
    "profiler": ["kernel_details.csv", "op_statistic.csv", "op_summary_0.csv", "step_trace_time.csv",
                 "cluster_step_trace_time.csv", "trace_view.json", "communication.json", "profiler_info_0.json"],
    "expert-hotspot": ["decode/decode_0.csv", "prefill/prefill_1.csv"],
    "mindie-bench": ["result_perf_0.csv", "result_common_0.json"],
    "vllm-bench": ["bench_result.json", "serving_bench.txt"],
    "aisbench": ["summary_20251118.md", "performances.csv"],
    "lm-eval": ["results_2025.json"],
    "version-info": ["version.info", "ascend_toolkit_install.info"],
    "mindie-config": ["config.json"],
    "plog": ["plog-1_20250101000000000.log"],
    "model-metadata": ["model.safetensors.index.json", "quant_model_description.json"],
}
CASES = [(kind, name) for kind in registry.names() for name in NAMES.get(kind, [f"{kind}.log"])]
# The kernel table and the trace keep ordinary data rows out of the records (numbers, analysed and counted):
# there the records are a subset of the lines, each missing one a data row.
SUBSET = {("profiler", n) for n in NAMES["profiler"] if n.startswith(("kernel_details", "op_summary", "trace_view"))}


def _check_records(records: pl.DataFrame, n: int, subset: bool) -> None:
    assert set(RECORD_SCHEMA) <= set(records.columns)  # the contract's columns, whatever the input
    lines = records["line"].to_list()
    assert len(lines) == len(set(lines)) and all(1 <= x <= n for x in lines), lines
    assert records["parsed"].null_count() == 0  # every record is parsed or kept raw, nothing in between
    if not subset:
        assert sorted(lines) == list(range(1, n + 1))


def test_every_kind_is_covered():
    assert {k.name for k in registry.KINDS} <= {kind for kind, _ in CASES}
    assert len(registry.KINDS) >= 14


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=LINES)
@pytest.mark.parametrize(("kind", "name"), CASES)
def test_parsers_never_raise_and_account_for_every_line(kind, name, lines):
    parse = registry.parser_for(kind)
    records, signals = parse(lines_frame(lines), FileContext(f"node-0/{name}", None, kind, None))
    _check_records(records, len(lines), (kind, name) in SUBSET)
    assert isinstance(signals, pl.DataFrame) and {"signal", "line"} <= set(signals.columns)


def _bytes_of(lines: list[str], tail: bytes, encoding: str) -> bytes:
    return "\n".join(lines).encode(encoding, "replace") + tail


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=LINES, tail=st.binary(max_size=300), encoding=st.sampled_from(["utf-8", "utf-16", "gb18030"]))
@pytest.mark.parametrize(("kind", "name"), CASES)
def test_any_bytes_through_the_reader_as_every_kind(kind, name, lines, tail, encoding):
    """The whole read stage (decode, chunks, prefilter off, parse, other families): no error, one input or one
    skip, and the input's counts agree with its records."""
    data = _bytes_of(lines, tail, encoding)
    src = SourceFile(f"node-0/{name}", name, "node-0", len(data), None, open=lambda: io.BytesIO(data))
    parsed = read([src], Settings(kind=kind), RuleFilters())
    assert not parsed.errors
    assert len(parsed.inputs) + len(parsed.skipped) == 1
    if parsed.inputs:
        one = parsed.inputs[0]
        mine = parsed.records.filter(pl.col("file") == one.path)
        _check_records(mine, one.lines, (kind, name) in SUBSET)
        assert one.raw_lines == int((~mine["parsed"]).sum())


@settings(max_examples=40, deadline=None)
@given(data=st.binary(max_size=4096))
def test_arbitrary_bytes_through_the_whole_pipeline(data):
    src = SourceFile("fuzz.log", "fuzz.log", None, len(data), None, open=lambda: io.BytesIO(data))
    parsed = read([src], Settings(), RuleFilters())
    assert not parsed.errors
    assert len(parsed.inputs) + len(parsed.skipped) == 1
    if parsed.inputs:
        assert parsed.records.height == parsed.inputs[0].lines


# --- the line reader ------------------------------------------------------------------------------------------

# Lines of a log without a lone CR (a file with CR only is split on CR: decode.split_lines), some ending CRLF.
ASCII_LINES = st.lists(st.tuples(st.text(alphabet="ab \t", max_size=40), st.booleans())
                       .map(lambda t: t[0] + "\r" * t[1]), max_size=30)


@settings(max_examples=300, deadline=None)
@given(lines=ASCII_LINES, end=st.sampled_from(["", "\n"]), chunk=st.integers(4, 64), max_line=st.integers(1, 48),
       encoding=st.sampled_from(["utf-8", "utf-16"]))
def test_line_reader_cuts_only_over_long_lines_and_keeps_every_line_number(lines, end, chunk, max_line, encoding):
    text = "\n".join(lines) + end
    data = text.encode(encoding)
    first = data[:chunk].decode(encoding, "ignore")
    assume(not ("\r" in first and "\n" not in first))  # the reader would take it for a file with CR only
    expected = text.split("\n")
    if expected and expected[-1] == "":
        expected.pop()
    info = TextInfo()
    got = [x for part in iter_line_chunks(io.BytesIO(data), info, chunk, max_line) for x in part.to_list()]
    assert info.lines == len(got) == len(expected)  # line numbers agree with grep -n
    # A CR before the LF is part of the line end: a line may count as cut by it, or not.
    assert len([e for e in expected if len(e.rstrip("\r")) > max_line]) <= info.cut_lines
    assert info.cut_lines <= len([e for e in expected if len(e) > max_line])
    for g, e in zip(got, expected):
        assert g in (e.rstrip("\r")[:max_line], e[:max_line].rstrip("\r")), (g, e)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=600), chunk=st.integers(1, 64), max_line=st.integers(1, 48))
def test_line_reader_on_any_bytes(data, chunk, max_line):
    info = TextInfo()
    got = [x for part in iter_line_chunks(io.BytesIO(data), info, chunk, max_line) for x in part.to_list()]
    assert info.lines == len(got)
    assert all(len(x) <= max_line for x in got)
    if not info.binary and b"\r" not in data and data.isascii():
        assert len(got) == len(data.split(b"\n")) - (data.endswith(b"\n") or not data)


# --- names -----------------------------------------------------------------------------------------------------

NAME_BYTES = st.binary(min_size=1, max_size=40).map(lambda b: b.replace(b"/", b"_").replace(b"\x00", b"_"))


@settings(max_examples=500, deadline=None)
@example(raw=b"\x81_!\xc2\x80")  # GBK, then after a "!" a C1 control in UTF-8: each part undone on its own
@example(raw="\u3000!".encode() + b"\x81_")  # UTF-8 CJK, then GBK: each part found again in its own encoding
@given(raw=st.one_of(NAME_BYTES, st.text(max_size=30).map(lambda s: s.encode("gb18030", "replace"))))
def test_every_name_has_a_printable_display_form(raw):
    shown = display(os.fsdecode(raw))
    shown.encode("utf-8")  # strict: no surrogates left
    assert not any(ord(c) < 32 or 0x7F <= ord(c) <= 0x9F or c in "\u202a\u202b\u202c\u202d\u202e\u2028\u2029"
                   for c in shown)
    assert display(shown) == shown  # one form: shown twice is shown once
    pl.Series([shown])  # what ended runs before: a polars Series built from the name
    if b"\\" not in raw:
        assert os.fsdecode(raw) in candidates(shown)  # the file is found again from its display form


@settings(max_examples=300, deadline=None)
@given(raw=NAME_BYTES, utf8_flag=st.booleans(), extra=st.binary(max_size=20))
def test_zip_member_names_never_raise(raw, utf8_flag, extra):
    import zipfile

    info = zipfile.ZipInfo(raw.decode("utf-8", "replace") if utf8_flag else raw.decode("cp437"))
    info.flag_bits = 0x800 if utf8_flag else 0
    info.extra = extra
    display(zip_member_name(info)).encode("utf-8")


def test_zip_names_are_decoded_as_unzip_decodes_them():
    import binascii
    import struct
    import zipfile

    def member(raw: bytes, extra: bytes = b"") -> zipfile.ZipInfo:
        info = zipfile.ZipInfo(raw.decode("cp437"))
        info.extra = extra
        return info

    assert zip_member_name(member("日志/显存.log".encode("gbk"))) == "日志/显存.log"
    assert zip_member_name(member("节点-1.log".encode("utf-8"))) == "节点-1.log"  # UTF-8 without the flag
    assert zip_member_name(member("café.log".encode("cp437"))) == "café.log"  # the format's default code page
    raw = "x.log".encode("cp437")
    field = struct.pack("<B", 1) + struct.pack("<I", binascii.crc32(raw)) + "日志.log".encode()
    unicode_path = struct.pack("<HH", 0x7075, len(field)) + field
    assert zip_member_name(member(raw, unicode_path)) == "日志.log"  # the Info-ZIP Unicode path field wins
    stale = struct.pack("<HH", 0x7075, len(field)) + field[:1] + b"\0\0\0\0" + field[5:]
    assert zip_member_name(member(raw, stale)) == "x.log"  # unless its CRC says the name was changed since
