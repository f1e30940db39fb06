"""Ctrl-C exits 130 and SIGTERM 143, with one line on standard error and no traceback, whatever the run is
doing (diagnose/commands/interrupts.py, the entry point diagnose.cli.run)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLES
from diagnose import cli

KV = SAMPLES / "kv-exhaustion"

# One function per phase of a run; the signal arrives while it runs.
PHASES = {
    "reading": ("diagnose.pipeline.reading", "_parse_one"),  # opening and reading a file
    "parsing": ("diagnose.pipeline.batches", "parse_chunk"),  # the parser of a kind on small files, in batches
    "rules": ("diagnose.pipeline.stages", "run_rules"),
    "report": ("diagnose.report.text", "render"),
}


def _signal_during(monkeypatch, phase: str, signum: int) -> None:
    import importlib

    module_name, name = PHASES[phase]
    module = importlib.import_module(module_name)
    real = getattr(module, name)

    def interrupted(*args, **kwargs):
        os.kill(os.getpid(), signum)
        time.sleep(1)  # the handler runs at the next bytecode: it raises here
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, interrupted)


@pytest.mark.parametrize("signum, code, word", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
@pytest.mark.parametrize("phase", list(PHASES))
def test_a_signal_in_any_phase_exits_with_its_code_and_one_line(monkeypatch, capsys, tmp_path, phase, signum, code,
                                                                word):
    _signal_during(monkeypatch, phase, signum)
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    out = tmp_path / "report.json"
    with pytest.raises(SystemExit) as exc:
        cli.run([str(KV), "--no-color", "--json", str(out)])
    assert exc.value.code == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"diagnose: {word} (") and "Traceback" not in err
    assert not out.exists() and list(tmp_path.iterdir()) == []  # no partial output
    assert {s: signal.getsignal(s) for s in before} == before  # the caller's handlers are back


def test_a_normal_run_through_the_entry_point_keeps_its_exit_code():
    with pytest.raises(SystemExit) as exc:
        cli.run([str(KV), "-q"])
    assert exc.value.code == 1


def _handlers_installed(pid: int) -> bool:
    """SIGTERM is caught once diagnose's handlers are in place (Python itself catches only SIGINT)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return bool(caught & (1 << (signal.SIGTERM - 1)))


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc to see the handlers")
@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_real_process_waiting_on_its_input(signum, code):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "diagnose", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + 60
        while not _handlers_installed(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # now reading standard input, which never ends
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == code, err.decode(errors="replace")[-2000:]
    assert out == b"" and err.decode().count("\n") == 1 and b"Traceback" not in err


def test_the_stop_line_speaks_the_language_of_the_run(monkeypatch, capsys):
    _signal_during(monkeypatch, "rules", signal.SIGINT)
    with pytest.raises(SystemExit) as exc:
        cli.run([str(KV), "--no-color", "--lang", "zh"])
    assert exc.value.code == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("diagnose：已中断（SIGINT, Ctrl-C）")
