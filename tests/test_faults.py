"""Faults while reading and writing: a device that fails in the middle of a file, a file cut or replaced while it
is read, a full disk and a missing folder for the outputs, SIGINT/SIGTERM in each phase of the run. Each ends
with a clear message, a documented exit code, no traceback and nothing half-written."""

from __future__ import annotations

import errno
import gzip
import io
import os
import signal
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import pytest

import hostile
from conftest import ROOT, SAMPLES, run_cli, run_json
from diagnose.ingest import walk


class _Failing(io.RawIOBase):
    """A file that reads normally up to ``after`` bytes, then does ``fault`` (raise EIO, cut the file, replace it)."""

    def __init__(self, path, after: int, fault):
        self._fh = open(path, "rb")  # noqa: SIM115 - closed in close()
        self._path, self._after, self._fault, self._done = path, after, fault, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._fault is not None and self._done >= self._after:
            fault = self._fault
            if fault is not _eio:  # a failing device keeps failing; a cut or a replacement happens once
                self._fault = None
            fault(self._path)
        want = len(buffer) if self._fault is None else min(len(buffer), self._after - self._done)
        n = self._fh.readinto(memoryview(buffer)[:want])
        self._done += n
        return n

    def close(self) -> None:
        self._fh.close()
        super().close()


def _eio(_path) -> None:
    raise OSError(errno.EIO, os.strerror(errno.EIO))


def _faulty_open(monkeypatch, target: Path, after: int, fault) -> None:
    """The file the walk opens (a plain file, an archive, a .gz) fails as ``fault`` says; other files do not."""
    real_opened = walk.opened

    def fake_opened(path, seen, follow):
        if str(path) == str(target):
            return _Failing(path, after, fault)
        return real_opened(path, seen, follow)

    monkeypatch.setattr(walk, "opened", fake_opened)


def _log(path: Path, good: int = 2000) -> Path:
    """An OOM near the top, then many ordinary lines: a fault later in the file must not cost the OOM."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(hostile.GOOD * 3 + hostile.OOM + hostile.GOOD * good)
    return path


def test_a_read_error_in_the_middle_of_a_file_keeps_what_came_before(tmp_path, monkeypatch):
    log = _log(tmp_path / "node-0" / "serve.log")
    _faulty_open(monkeypatch, log, after=64 * 1024, fault=_eio)
    code, data = run_json(str(tmp_path))
    assert code == 1  # the OOM before the error is found
    (one,) = data["inputs"]
    assert "read error after" in one["note"] and "Input/output error" in one["note"]
    assert 3 < one["lines"] < 2004
    assert any(f["rule_id"] == "MEM001" for f in data["findings"])


def test_a_read_error_inside_a_compressed_file_and_an_archive(tmp_path, monkeypatch):
    gz = tmp_path / "serve.log.gz"
    gz.write_bytes(gzip.compress((hostile.OOM + hostile.GOOD * 5000).encode(), 1))
    _faulty_open(monkeypatch, gz, after=2048, fault=_eio)
    code, data = run_json(str(gz))
    assert code == 1 and "Input/output error" in data["inputs"][0]["note"]

    tgz = tmp_path / "bundle.tgz"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in (("node-0/oom.log", hostile.OOM), ("node-0/noise.log", hostile.GOOD * 20000)):
            info = tarfile.TarInfo(name)
            info.size = len(text)
            tar.addfile(info, io.BytesIO(text.encode()))
    tgz.write_bytes(buf.getvalue())
    _faulty_open(monkeypatch, tgz, after=len(buf.getvalue()) // 2, fault=_eio)
    code, data = run_json(str(tgz))
    assert code == 1  # the member before the error is read
    said = [i["note"] or "" for i in data["inputs"]] + [s["reason"] for s in data["skipped"]]
    assert any("Input/output error" in s for s in said), said


def test_a_file_cut_while_it_is_read(tmp_path, monkeypatch):
    log = _log(tmp_path / "serve.log")
    _faulty_open(monkeypatch, log, after=32 * 1024, fault=lambda p: os.truncate(p, 40 * 1024))
    code, data = run_json(str(log))
    assert code == 1 and data["errors"] == []
    assert 3 < data["inputs"][0]["lines"] < 2004  # what was there, up to the cut


def test_a_compressed_file_cut_while_it_is_read(tmp_path, monkeypatch):
    gz = tmp_path / "serve.log.gz"
    gz.write_bytes(gzip.compress((hostile.OOM + hostile.GOOD * 5000).encode(), 1))
    _faulty_open(monkeypatch, gz, after=4096, fault=lambda p: os.truncate(p, 8192))
    code, data = run_json(str(gz))
    assert code == 1 and "truncated" in data["inputs"][0]["note"]


def test_a_file_replaced_while_it_is_read_is_read_as_it_was_opened(tmp_path, monkeypatch):
    log = _log(tmp_path / "serve.log")
    lines = log.read_text().count("\n")

    def replace(path) -> None:
        new = tmp_path / "new.log"
        new.write_text("short\n")
        os.replace(new, path)  # log rotation: the open file keeps its contents

    _faulty_open(monkeypatch, log, after=16 * 1024, fault=replace)
    code, data = run_json(str(log))
    assert code == 1 and data["inputs"][0]["lines"] == lines


# --- outputs ---------------------------------------------------------------------------------------------------

def _run(*args: str, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    kwargs.setdefault("stdout", subprocess.PIPE)
    return subprocess.run([sys.executable, "-m", "diagnose", *args], stderr=subprocess.PIPE, text=True, env=env,
                          timeout=300, **kwargs)


class _FullDisk(io.StringIO):
    def write(self, text):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize("option", ["-o", "--json", "--sarif", "--junit", "--markdown", "--html"])
def test_a_full_disk_on_output_ends_with_one_clean_message(tmp_path, monkeypatch, option):
    from diagnose import writer

    real_fdopen = os.fdopen

    def full(fd, *args, **kwargs):  # the temporary file beside the target: the disk is full
        real_fdopen(fd).close()
        return _FullDisk()

    monkeypatch.setattr(writer.os, "fdopen", full)
    target = tmp_path / "report.out"
    result = run_cli("--format", "json", option, str(target), str(SAMPLES / "healthy"))
    assert result.exit_code == 6  # an output could not be written (diagnose/commands/exitcodes.py)
    said = [line for line in result.stderr.splitlines() if "No space left on device" in line]
    assert said == [f"diagnose: error: cannot write {option} {target}: No space left on device"]
    assert list(tmp_path.iterdir()) == []  # nothing half-written, no temporary file left


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (a device that is always full)")
def test_a_full_standard_output_ends_with_one_clean_message():
    with open("/dev/full", "w") as full:
        proc = _run("--format", "json", str(SAMPLES / "healthy"), stdout=full)
    assert proc.returncode == 6, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == ("diagnose: error: cannot write the report to standard output: "
                                                    "No space left on device")


def test_an_output_that_is_no_regular_file_is_written_in_place(tmp_path):
    """A FIFO (as /dev/null or /dev/stdout): written into, never renamed over (root could replace a device)."""
    import stat
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text(encoding="utf-8")))
    reader.start()
    proc = _run("--format", "json", "-o", str(fifo), str(SAMPLES / "healthy"))
    reader.join(timeout=60)
    assert proc.returncode in (0, 1), proc.stderr
    assert stat.S_ISFIFO(fifo.stat().st_mode) and '"inputs"' in got[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]


@pytest.mark.parametrize("target", ["missing-folder/report.json", "a-file/report.json"])
def test_an_output_folder_that_cannot_be_written(tmp_path, target):
    (tmp_path / "a-file").write_text("not a folder")
    out = tmp_path / target
    for option in ("-o", "--json", "--sarif", "--junit", "--markdown"):
        result = run_cli("--format", "json", option, str(out), str(SAMPLES / "healthy"))
        assert result.exit_code == 6
        assert f"diagnose: error: cannot write {option} {out}: " in result.stderr
        assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]  # nothing left behind


def test_a_reader_that_goes_away_is_not_an_error():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "diagnose", "--format", "json", str(SAMPLES / "two-node-aicore")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    proc.stdout.read(10)
    proc.stdout.close()  # as `| head -c 10` does
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=300) in (0, 1) and "Traceback" not in stderr and "Broken pipe" not in stderr


# --- signals ---------------------------------------------------------------------------------------------------

# Where each phase is entered: the hook sends the signal to the run itself there, so the phase is certain.
PHASES = {
    "reading": ("diagnose.pipeline.reading", "_parse_one"),
    "parsing": ("diagnose.pipeline.batches", "parse_chunk"),  # the sample's files are small: parsed in batches
    "rules": ("diagnose.pipeline.stages", "run_rules"),
    "report": ("diagnose.report", "render"),
}
HOOK = textwrap.dedent("""
    import importlib, os, signal, sys
    module, name, signum = sys.argv[1], sys.argv[2], int(sys.argv[3])
    target = importlib.import_module(module)
    real = getattr(target, name)
    def hooked(*args, **kwargs):
        os.kill(os.getpid(), signum)
        return real(*args, **kwargs)
    setattr(target, name, hooked)
    sys.argv = ["diagnose", *sys.argv[4:]]
    from diagnose.cli import run
    run()
""")


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("phase", sorted(PHASES))
def test_a_signal_in_each_phase_ends_the_run_cleanly(tmp_path, phase, signame):
    module, name = PHASES[phase]
    signum = getattr(signal, signame)
    out = tmp_path / "out"
    out.mkdir()
    args = ["--format", "json", "-o", str(out / "report.json"), "--sarif", str(out / "report.sarif"),
            str(SAMPLES / "healthy")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", HOOK, module, name, str(int(signum)), *args], capture_output=True,
                          text=True, env=env, timeout=300)
    assert "Traceback" not in proc.stderr
    assert list(out.iterdir()) == []  # nothing half-written, no temporary file left behind
    assert proc.returncode == (130 if signame == "SIGINT" else 143), proc.stderr
    said = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(said) == 1 and said[0].startswith(f"diagnose: {'interrupted' if signame == 'SIGINT' else 'terminated'}")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (a device that is always full)")
def test_a_full_standard_output_is_said_in_the_language_of_the_run():
    with open("/dev/full", "w") as full:
        proc = _run("--format", "json", "--lang", "zh", str(SAMPLES / "healthy"), stdout=full)
    assert proc.returncode == 6, proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("diagnose：错误：无法将报告写入标准输出：")
