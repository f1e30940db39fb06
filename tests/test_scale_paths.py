"""The paths that keep large inputs fast and memory bounded: the byte-level line reader, the periodic
metric series, evidence read back from files, and large files parsed two at a time."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import polars as pl
import pytest

from diagnose.ingest.lines import CHUNK_BYTES, TextInfo, head_lines, iter_line_chunks, peek_head, read_table
from diagnose.ingest.reread import read_lines
from diagnose.pipeline import Settings, analyze
from diagnose.model.series import signal_rows

from conftest import run_json


def _lines(data: bytes, chunk: int) -> tuple[list[str], TextInfo]:
    info = TextInfo()
    out: list[str] = []
    for series in iter_line_chunks(io.BytesIO(data), info, chunk_bytes=chunk):
        out += series.to_list()
    return out, info


def _expected(data: bytes) -> list[str]:
    lines = data.decode("utf-8", errors="replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip("\r") for line in lines]


ODD_LINES = [
    b"", b"   ", b'"unbalanced quote', b'""', b"a,b,c", b"tab\there", b"crlf\r", b"cr\rinside",
    "中文日志 ERROR".encode(), b"bad \xff\xfe bytes", b"# not a comment", b"x" * 3000,
]


@pytest.mark.parametrize("chunk", [7, 1 << 20, 8 << 20])
def test_byte_reader_keeps_every_line_as_written(chunk: int):
    # Over 1 MB so the polars reader path runs, with every odd line variant repeated through it.
    body = b"\n".join(ODD_LINES * 400) + b"\nlast line without newline"
    got, info = _lines(body, chunk)
    assert got == _expected(body)
    assert info.lines == len(got)
    # the label is decided on the first chunk, which holds an invalid byte unless the chunk is tiny
    assert info.encoding == ("utf-8" if chunk < 1000 else "utf-8 (invalid bytes replaced)")


def test_a_block_with_nul_takes_the_python_path_and_loses_nothing():
    body = (b"INFO line one\n" * 100_000) + b"NUL\x00inside\n" + b"tail\n"
    got, _ = _lines(body, 8 << 20)
    assert len(got) == 100_002 and got[100_000] == "NUL\x00inside"


def _table(data: bytes, size: int | None = None, chunk: int = CHUNK_BYTES):
    info = TextInfo()
    lines, kept = read_table(io.BufferedReader(io.BytesIO(data)), info, size, chunk)
    return lines.to_list(), kept, info


@pytest.mark.parametrize("size, chunk", [(None, 7), (None, 1 << 20), ("exact", 7), (100, 1 << 20)])
def test_a_table_read_whole_keeps_every_line_and_its_bytes(size, chunk: int):
    # Read in one call when its size is known, else (or when it is larger than said) in chunks.
    body = b"\r\n".join(ODD_LINES * 400) + b"\r\nlast row without newline"
    got, kept, info = _table(body, len(body) if size == "exact" else size, chunk)
    assert got == _expected(body)
    assert kept == body and info.lines == len(got) and info.bytes == len(body)


@pytest.mark.parametrize("encoded", [
    "Name,Type\r\n算子,MatMul\r\n".encode("utf-16"),
    "Name,Type\n算子,MatMul\n".encode("gb18030"),
    b"\xef\xbb\xbfName,Type\nop,MatMul\n",
    b"Name,Type\rop,MatMul\r",
])
def test_a_table_in_another_encoding_is_read_as_lines_without_its_bytes(encoded: bytes):
    got, kept, _ = _table(encoded)
    assert kept is None
    assert got == _lines(encoded, CHUNK_BYTES)[0] and len(got) == 2 and got[0] == "Name,Type"


def test_the_sniffed_head_is_the_first_lines_as_the_reader_gives_them():
    body = b"\r\n".join(ODD_LINES * 40) + b"\r\n"
    assert head_lines(body) == _expected(body)[:200]
    for stream in (io.BytesIO(body), io.BufferedReader(io.BytesIO(body))):  # peeked, then read from the start
        assert peek_head(stream, 100) == body[:100] and stream.read() == body
    assert head_lines("Name,Type\r\n算子,MatMul\r\n".encode("gb18030")) == ["Name,Type", "算子,MatMul"]
    assert head_lines(b"") == []


def test_reread_finds_lines_in_plain_and_gzip_files(tmp_path: Path):
    text = "".join(f"line {i}\n" for i in range(1, 200_001))
    plain = tmp_path / "a.log"
    plain.write_text(text)
    packed = tmp_path / "b.log.gz"
    packed.write_bytes(gzip.compress(text.encode()))
    want = {1, 77_777, 200_000}
    assert read_lines(str(plain), want) == {n: f"line {n}" for n in want}
    assert read_lines(str(packed), want) == {n: f"line {n}" for n in want}
    assert read_lines(str(plain), {300_000}) == {}
    assert read_lines("bundle.tgz!member.log", {1}) == {}
    assert read_lines(str(tmp_path / "missing.log"), {1}) == {}


def _metric_log(path: Path, n: int, saturated: range) -> None:
    rows = []
    for i in range(n):
        kv = 99.0 if i in saturated else 40.0
        waiting = (i - saturated.start + 1) * 5 if i in saturated else 0
        mm, ss = divmod(i * 10, 60)
        hh, mm = divmod(mm, 60)
        rows.append(
            f"(APIServer pid=7) INFO 09-03 {10 + hh:02d}:{mm:02d}:{ss:02d} [loggers.py:118] Engine 000: "
            f"Avg prompt throughput: 1500.0 tokens/s, Avg generation throughput: 1300.0 tokens/s, Running: 30 reqs, "
            f"Waiting: {waiting} reqs, GPU KV cache usage: {kv:.1f}%, Prefix cache hit rate: 12.0%"
        )
    path.write_text("\n".join(rows) + "\n")


def test_periodic_metrics_go_to_the_series_and_rules_still_see_every_sample(tmp_path: Path):
    log = tmp_path / "vllm-serve.log"
    _metric_log(log, 400, range(200, 230))
    options = Settings()
    report = analyze([str(tmp_path)], options)
    kv = [f for f in report.findings if f.rule_id == "KV001"]
    assert kv, [f.rule_id for f in report.findings]
    # every sample of the run counts, though the signals frame kept only the lines around it
    assert kv[0].count == 30
    assert report.series.filter(pl.col("signal") == "kv_cache_usage_pct").height == 400
    kept = report.signals.filter(pl.col("signal") == "kv_cache_usage_pct")
    assert kept.height < 60
    assert signal_rows("kv_cache_usage_pct", report.signals, report.series).height == 400
    # evidence text of the run is there, quoted from the kept lines
    assert all("GPU KV cache usage: 99.0%" in e.text for e in kv[0].evidence)


def test_evidence_on_a_line_not_kept_in_memory_is_read_back_from_the_file(tmp_path: Path):
    from diagnose.engine.run import _evidence

    log = tmp_path / "vllm-serve.log"
    _metric_log(log, 100, range(0, 0))
    options = Settings()
    report = analyze([str(tmp_path)], options)
    hits = pl.DataFrame({"file": [str(log)], "line": [57], "vtext": [None], "value": [40.0]},
                        schema={"file": pl.String, "line": pl.UInt32, "vtext": pl.String, "value": pl.Float64})
    from diagnose.ingest.reread import read_lines

    evidence = _evidence(hits, report.signals.clear().select("file", "line", pl.lit("").alias("text")),
                         read_back=read_lines)
    assert "Engine 000: Avg prompt throughput" in evidence[0].text and evidence[0].line == 57


def test_large_files_parsed_in_parallel_give_the_same_report_every_time(tmp_path: Path, monkeypatch):
    monkeypatch.setattr("diagnose.pipeline.reading.WORKERS", 2)  # the default on four or more cores
    for node in range(3):
        folder = tmp_path / f"node-{node}"
        folder.mkdir()
        _metric_log(folder / "vllm-serve.log", 3000, range(1000 + node * 100, 1040 + node * 100))
        (folder / "plog-1.log").write_text(
            "".join(f"[ERROR] HCCL(1,python3):2025-09-03-10:{i // 60:02d}:{i % 60:02d}.000.000 [x.cc:1][2] rank[{node}] "
                    f"notify wait timeout {i}\n" for i in range(3000)))
    runs = [run_json(str(tmp_path))[1] for _ in range(2)]
    assert json.dumps(runs[0], sort_keys=True) == json.dumps(runs[1], sort_keys=True)
    assert [i["path"] for i in runs[0]["inputs"]] == sorted(i["path"] for i in runs[0]["inputs"])


def test_lines_kept_from_many_chunks_are_parsed_together_and_give_the_same_report(tmp_path: Path, monkeypatch):
    """Selected (pipeline/chunks.py) parses the lines the prefilter kept from several chunks at once; the
    report is the one chunk-by-chunk parsing gives, a traceback across a chunk boundary included."""
    import functools

    from diagnose.ingest import lines as lines_mod
    from diagnose.pipeline import chunks, reading

    log = tmp_path / "vllm-serve.log"
    _metric_log(log, 4000, range(2000, 2040))
    with log.open("a") as out:
        out.write("(Worker_TP0 pid=8) ERROR 09-03 21:00:00 [multiproc_executor.py:585] WorkerProc hit an exception.\n"
                  "Traceback (most recent call last):\n" + "  File \"x.py\", line 1, in f\n" * 400 +
                  "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.97 GiB total capacity)\n")
        for i in range(600):
            out.write(f"(APIServer pid=7) INFO 09-03 21:{i // 60 % 60:02d}:{i % 60:02d} [logger.py:43] Received request "
                      f"c-{i}: prompt: '请解释 NPU out of memory', params: SamplingParams(n=1), prompt_token_ids: [0, "
                      f"{i}], lora_request: None.\n")
    monkeypatch.setattr(reading, "iter_line_chunks", functools.partial(lines_mod.iter_line_chunks, chunk_bytes=32 * 1024))
    together = run_json(str(log))[1]
    monkeypatch.setattr(chunks.Selected, "PARSE_BYTES", 0)  # every chunk parsed on its own
    alone = run_json(str(log))[1]
    assert {f["rule_id"] for f in together["findings"]} >= {"MEM001", "KV001"}
    assert json.dumps(together, sort_keys=True) == json.dumps(alone, sort_keys=True)
