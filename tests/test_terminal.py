"""The terminal report at 80 columns and up, colour (--color, NO_COLOR, FORCE_COLOR, pipes), the width, the
wording of counts, and the progress line on standard error."""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
import zipfile

import pytest
from click.testing import CliRunner

from diagnose.cli import main

from conftest import ROOT, SAMPLES

INCIDENTS = ["two-node-aicore", "kv-exhaustion", "mindie-deepseek", "mtp-ineffective", "validation-regression",
             "vllm-metrics", "ci-artifact", "healthy", "profiler-w8a8"]
ESC = "\x1b["


def invoke(*args: str, env: dict[str, str] | None = None):
    base = {"COLUMNS": None, "NO_COLOR": None, "FORCE_COLOR": None}  # the suite's own terminal must not leak in
    return CliRunner().invoke(main, list(args), env={**base, **(env or {})}, catch_exceptions=False)


def report_of(sample: str) -> dict:
    return json.loads(invoke("--format", "json", str(SAMPLES / sample)).stdout)


def finding_list(text: str, n: int) -> list[str]:
    """The lines of the findings list: after "Findings (n)", up to the first finding's heading."""
    lines = text.splitlines()
    start = lines.index(f"Findings ({n})") + 1
    end = next(i for i, line in enumerate(lines) if line.startswith("1. "))
    return lines[start:end]


# --- layout ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sample", INCIDENTS)
def test_80_columns_titles_whole_severity_whole_nothing_wider(sample):
    report = report_of(sample)
    result = invoke(str(SAMPLES / sample), env={"COLUMNS": "80"})
    text = result.stdout
    lines = text.splitlines()
    assert result.exit_code in (0, 1) and ESC not in text
    assert max(len(line) for line in lines) <= 80
    assert lines[0] == report["verdict"]["text"][: len(lines[0])]  # the verdict comes first
    assert "…" not in "".join(line[:20] for line in lines if line[:4].strip().isdigit())
    findings = report["findings"]
    if not findings:
        return
    listed = finding_list(text, len(findings))
    assert len(listed) <= 4 * len(findings)  # compact: two lines a finding, a little more for long titles
    words = " ".join(listed).split()
    for i, f in enumerate(findings, 1):
        # Number, severity (never cut), rule, then the title's words whole and in order: no mid-word split.
        seq = [str(i), f["severity"].upper(), f["rule_id"], *f["title"].split()]
        assert any(words[k:k + len(seq)] == seq for k in range(len(words))), (f["rule_id"], listed)
        assert f"{i}. {f['severity'].upper()} {f['rule_id']} {f['name']}" in text
    for sev in ("critical", "warning"):
        assert f"{sev[:-2]}…" not in text.lower()


def test_the_two_node_report_reads_well_at_80_columns():
    text = invoke(str(SAMPLES / "two-node-aicore"), env={"COLUMNS": "80"}).stdout
    lines = text.splitlines()
    # node-1's older driver starts the chain that ends in the AI Core timeout (VER001 declares it causes DEV010).
    assert lines[0].startswith("Root cause: Ascend driver version differs between nodes (VER001) on node-1")
    assert lines.index("Findings (6)") < 6  # the verdict and the list come before any detail
    listed = finding_list(text, 6)
    assert listed[0].split()[:3] == ["1", "ERROR", "VER001"]
    assert [line for line in listed if line.split()[:1] == ["2"]][0].split()[:3] == ["2", "CRITICAL", "DEV010"]
    assert any("because of DEV010" in line for line in listed)  # the cause in the list, not "← DEV010"
    assert any("because of VER001" in line for line in listed)
    assert "←" not in text and "node node-" not in text
    # Evidence wraps under its own indent: the log text never starts at the left margin.
    dev = next(i for i, line in enumerate(lines) if line.startswith("2. CRITICAL DEV010"))
    ev = lines.index("   Evidence:", dev)
    block = lines[ev + 1: lines.index("", ev)]
    assert "two-node-aicore/node-1/plog/" in block[0] and all(line.startswith("     ") for line in block)
    assert any(line.startswith("         ") for line in block)


@pytest.mark.parametrize("columns", [100, 160])
def test_columns_sets_the_width(columns):
    lines = invoke(str(SAMPLES / "two-node-aicore"), env={"COLUMNS": str(columns)}).stdout.splitlines()
    widest = max(len(line) for line in lines)
    assert columns - 10 < widest <= columns


def test_a_pipe_without_columns_is_100_wide():
    lines = invoke(str(SAMPLES / "two-node-aicore")).stdout.splitlines()
    assert 90 < max(len(line) for line in lines) <= 100


def test_counts_are_singular_and_plural():
    text = invoke(str(SAMPLES / "healthy"), env={"COLUMNS": "100"}).stdout
    assert "No problem found; 1 informational note." in text and "note(s)" not in text
    kv = invoke(str(SAMPLES / "kv-exhaustion"), env={"COLUMNS": "100"}).stdout
    assert "Unrecognised errors (no rule explains them): 1 signature\n" in kv and "signatures" not in kv
    two = invoke(str(SAMPLES / "two-node-aicore")).stdout
    assert "Read 21 files (" in two and "2 signatures" in two and "(2 throughput intervals logged)" in two
    assert "interval(s)" not in two and "seen once" not in two and "seen 5 times" in two


def test_one_file_is_one_file(tmp_path):
    log = tmp_path / "serve.log"
    log.write_text("INFO 09-03 14:19:12 [api_server.py:1] Started server process [7]\n", encoding="utf-8")
    text = invoke(str(log)).stdout
    assert "Read 1 file (1 vllm): 1 line, 0 kept raw." in text


# --- colour ------------------------------------------------------------------------------------------------

KV = str(SAMPLES / "kv-exhaustion")


@pytest.mark.parametrize("args, env, colour", [
    ((), {}, False),
    (("--color", "always"), {}, True),
    (("--color",), {}, True),  # a bare --color before the path is "always", the path stays a path
    (("--color=never",), {"FORCE_COLOR": "1"}, False),
    (("--no-color",), {"FORCE_COLOR": "1"}, False),
    ((), {"FORCE_COLOR": "1"}, True),
    ((), {"FORCE_COLOR": "0"}, False),
    ((), {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
    (("--color", "always"), {"NO_COLOR": "1"}, True),  # the flag wins over the environment
    (("--color", "auto"), {"NO_COLOR": "1"}, False),
])
def test_colour_choice(args, env, colour):
    result = invoke(*args, KV, env=env)
    assert result.exit_code == 1
    assert (ESC in result.stdout) is colour
    assert "KV001" in result.stdout


def test_colour_reaches_a_real_pipe_and_auto_does_not():
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "COLUMNS")}
    env["PYTHONPATH"] = str(ROOT)

    def run(*args):
        return subprocess.run([sys.executable, "-m", "diagnose", *args], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=120)

    forced = run("--color", "always", KV)
    assert forced.returncode == 1 and ESC in forced.stdout  # click used to strip it in a pipe
    plain = run(KV)
    assert plain.returncode == 1 and ESC not in plain.stdout and ESC not in plain.stderr
    assert "\r" not in plain.stderr  # no progress line when standard error is not a terminal


def test_a_report_file_is_coloured_only_when_asked(tmp_path):
    out = tmp_path / "report.txt"
    assert invoke(KV, "-o", str(out), env={"FORCE_COLOR": "1"}).exit_code == 1
    assert ESC not in out.read_text(encoding="utf-8")
    assert invoke(KV, "-o", str(out), "--color", "always").exit_code == 1
    assert ESC in out.read_text(encoding="utf-8")


def test_bad_colour_value_is_a_usage_error():
    result = invoke("--color=sometimes", KV)
    assert result.exit_code == 2 and "sometimes" in result.stderr


def test_preflight_takes_the_same_colour_options():
    model = str(SAMPLES / "models" / "deepseek-r1-w8a8")
    cmd = "vllm serve /models/deepseek-r1 --tensor-parallel-size 16 --quantization ascend"
    assert ESC in invoke("preflight", model, "--serve-cmd", cmd, "--color", "always").stdout
    assert ESC not in invoke("preflight", model, "--serve-cmd", cmd, "--no-color").stdout


# --- progress ----------------------------------------------------------------------------------------------


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_line_phase_bytes_percent_and_erased_at_the_end():
    from diagnose.commands.progress import LineProgress

    term, clock = FakeTerminal(), Clock()
    bar = LineProgress(term, total=300_000_000, clock=clock)
    bar.advance(120_000_000, "logs/node-0/vllm/vllm-serve-20250723.log")
    bar.draw()
    assert term.getvalue() == ""  # nothing in the first second: a short run prints nothing
    clock.now += 2
    bar.draw()
    line = term.getvalue().split("\r")[-1]
    assert line.startswith("diagnose: reading  120.0 / 300.0 MB  40%  2 s  ") and line.endswith("vllm-serve-20250723.log\x1b[K")
    bar.phase("rules")
    assert "diagnose: rules  120.0 / 300.0 MB  40%" in term.getvalue().split("\r")[-1]
    bar.close()
    assert term.getvalue().endswith("\r\x1b[K")


def test_progress_line_fits_the_terminal_and_keeps_the_file_name():
    from diagnose.commands.progress import LineProgress

    bar = LineProgress(FakeTerminal(), total=None, clock=Clock())
    bar.advance(5_000_000, "/data/incidents/2025-07-23/bundle/node-1/ascend/log/debug/plog/plog-9501_2025.log")
    line = bar.line(60)
    assert len(line) <= 59 and line.endswith("plog-9501_2025.log") and "…" in line
    assert "5.0 MB" in line and "%" not in line  # no total known: bytes only


def test_no_progress_off_a_terminal_or_when_disabled():
    from diagnose.commands.progress import progress_reporter

    with progress_reporter([KV], stream=io.StringIO()) as progress:
        assert progress is None
    with progress_reporter([KV], enabled=False, stream=FakeTerminal()) as progress:
        assert progress is None
    with progress_reporter([KV], stream=FakeTerminal()) as progress:
        assert progress is not None


class Recorder:
    def __init__(self):
        self.events: list[tuple] = []

    def phase(self, name):
        self.events.append(("phase", name))

    def advance(self, nbytes, path):
        self.events.append(("bytes", nbytes, path))


def test_the_pipeline_reports_phases_and_every_byte_chunk_by_chunk(tmp_path, monkeypatch):
    import functools

    from diagnose.ingest import lines as lines_mod
    from diagnose.pipeline import Settings, analyze, reading

    big = tmp_path / "node-0" / "vllm-serve.log"
    big.parent.mkdir()
    row = "(APIServer pid=1) INFO 09-03 14:19:12 [loggers.py:118] Engine 000: Avg prompt throughput: 1.0 tokens/s\n"
    big.write_text(row * 4000, encoding="utf-8")
    (tmp_path / "npu-smi.txt").write_text("+---+\n| npu-smi 24.1.rc3   Version: 24.1.rc3 |\n", encoding="utf-8")
    monkeypatch.setattr(reading, "iter_line_chunks", functools.partial(lines_mod.iter_line_chunks, chunk_bytes=64 * 1024))
    rec = Recorder()
    analyze([str(tmp_path)], Settings(), progress=rec)
    phases = [e[1] for e in rec.events if e[0] == "phase"]
    assert phases == ["parsing", "rules"]
    sizes = [e[1] for e in rec.events if e[0] == "bytes" and e[2] == str(big)]
    assert len(sizes) > 3 and sum(sizes) == big.stat().st_size  # chunk by chunk, every byte once
    assert sum(e[1] for e in rec.events if e[0] == "bytes") == big.stat().st_size + (tmp_path / "npu-smi.txt").stat().st_size


def test_input_total_counts_decompressed_bytes(tmp_path):
    from diagnose.commands.progress import input_total

    (tmp_path / "a.log").write_bytes(b"x" * 1000)
    with gzip.open(tmp_path / "b.log.gz", "wb") as fh:
        fh.write(b"y" * 50_000)
    with zipfile.ZipFile(tmp_path / "c.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("inner.log", "z" * 7000)
    assert input_total([str(tmp_path)]) == 1000 + 50_000 + 7000
    assert input_total([str(tmp_path / "a.log")]) == 1000
    assert input_total(["-"]) is None
    (tmp_path / "d.tar.xz").write_bytes(b"\xfd7zXZ\x00")
    assert input_total([str(tmp_path)]) is None  # xz: the size is not known before reading


def test_check_shows_progress_on_a_terminal_and_not_with_q(monkeypatch):
    import types

    import diagnose.commands.progress as progress_mod

    term = FakeTerminal()
    monkeypatch.setattr(progress_mod, "sys", types.SimpleNamespace(stderr=term))
    monkeypatch.setattr(progress_mod, "SHOW_AFTER", 0.0)
    result = invoke(str(SAMPLES / "two-node-aicore"))
    assert result.exit_code == 1 and "\r" not in result.stdout
    shown = term.getvalue()
    assert "diagnose: reading" in shown and "diagnose: report" in shown and shown.endswith("\r\x1b[K")
    term.seek(0)
    term.truncate()
    assert invoke(str(SAMPLES / "two-node-aicore"), "-q").exit_code == 1
    assert term.getvalue() == ""


def test_readme_sample_block_is_the_real_report(monkeypatch):
    """README's "What a report looks like" block is a real run of `diagnose samples/kv-exhaustion` at 100
    columns (every line it shows; "..." stands for lines left out)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("$ diagnose samples/kv-exhaustion\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(ROOT)
    real = invoke("samples/kv-exhaustion", env={"COLUMNS": "100"}).stdout
    shown = [line for line in block.splitlines() if line.strip() and line.strip() != "..."]
    for line in shown:
        assert line in real.splitlines(), line
