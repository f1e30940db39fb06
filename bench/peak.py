#!/usr/bin/env python3
"""Run a command and report its own peak resident memory, whatever the memory of the process that started it.

    python bench/peak.py REPORT.json -- CMD [ARGS...]

Linux carries a process's peak RSS across ``execve``: a child that a 700 MB pytest process starts with
``subprocess`` reports ``ru_maxrss`` of at least 700 MB, from ``getrusage`` or ``wait4`` alike, because the
kernel records the pre-exec memory (the parent's, shared under vfork or copied by fork) as the child's high-water
mark. Only a process forked from a small one starts from a small mark. This launcher is that small process: it
forks, the child execs ``CMD``, and the launcher writes the child's ``wait4`` figures (its own peak and CPU
seconds, its children included) to REPORT.json, then exits with the child's exit code. A signal that ends the
launcher (a benchmark's timeout) is passed on to the command.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve()


def command(report: Path, cmd: list[str]) -> list[str]:
    """``cmd`` wrapped so that its own peak RSS is written to ``report`` (read it with :func:`read`)."""
    return [sys.executable, str(HERE), str(report), "--", *cmd]


def read(report: Path) -> dict | None:
    """The figures :func:`command` wrote: ``maxrss_mb``, ``cpu_s``, ``code``; None when the launcher died first."""
    try:
        return json.loads(report.read_text())
    except (OSError, ValueError):
        return None


def run(cmd: list[str], **popen) -> tuple[subprocess.CompletedProcess, dict | None]:
    """``subprocess.run(cmd)`` with the child's own figures."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "peak.json"
        proc = subprocess.run(command(report, cmd), **popen)
        return proc, read(report)


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    report, cmd = Path(argv[0]), argv[2:]
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)

    def forward(signum, _frame):
        os.kill(pid, signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)
    while True:
        try:
            _, status, usage = os.wait4(pid, 0)
            break
        except InterruptedError:
            continue
    code = os.waitstatus_to_exitcode(status)
    report.write_text(json.dumps({"maxrss_mb": usage.ru_maxrss / 1024, "cpu_s": usage.ru_utime + usage.ru_stime,
                                  "code": code}))
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
