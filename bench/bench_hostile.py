#!/usr/bin/env python3
"""Time and peak memory of every hostile input in bench/attacks.py (crash, hang, leak, exhaust).

    python bench/bench_hostile.py                      # every attack at full size
    python bench/bench_hostile.py --scale 0.1 --group archive --attack trace-deep-array
    python bench/bench_hostile.py --code /tmp/old-checkout   # the same attacks on another copy of the code

Each attack is made in a temporary folder and run as ``diagnose --format json -o OUT ARGS`` in a subprocess
started through bench/peak.py (the CLI's own peak RSS). A watchdog kills a run whose process group passes
``--kill-rss`` (default 4 GB) or ``--kill-after`` seconds, so measuring the code before a fix cannot take the
machine with it; such a run is reported as killed, with the memory and time it had reached. A row is ``ok`` when
the run ended by itself without a traceback, with one of the attack's exit codes, saying what it must say (in
standard error or the JSON report), under ``--max-rss`` MB.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import attacks  # bench/attacks.py, beside this file
import peak  # bench/peak.py

ROOT = Path(__file__).resolve().parent.parent


def _group_rss_mb(pgid: int) -> float:
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid:  # field 5: process group
                total += int(fields[21])  # field 24: resident pages
        except (OSError, IndexError, ValueError):
            continue
    return total * os.sysconf("SC_PAGE_SIZE") / 1e6


def run(name: str, folder: Path, scale: float = 1.0, code: Path = ROOT, kill_rss: float = 4000,
        kill_after: float | None = None) -> dict:
    """Make attack ``name`` under ``folder`` and run the CLI of ``code`` on it; the row of figures."""
    spec = attacks.ATTACKS[name]
    folder.mkdir(parents=True, exist_ok=True)
    case = spec.make(folder / "input", scale)
    out, report = folder / "out.json", folder / "peak.json"
    cmd = [sys.executable, "-m", "diagnose", "--format", "json", "-o", str(out), *case.args]
    path = os.pathsep.join(p for p in (case.env.get("PYTHONPATH"), str(code)) if p)
    env = {**os.environ, **case.env, "PYTHONPATH": path}
    env.setdefault("DIAGNOSE_CACHE_DIR", str(folder / "cache"))
    limit = kill_after or spec.timeout
    stdin = open(case.stdin, "rb") if case.stdin else subprocess.DEVNULL
    start = time.monotonic()
    proc = subprocess.Popen(peak.command(report, cmd), stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, cwd=case.cwd or folder, start_new_session=True)
    if case.during is not None:
        threading.Thread(target=case.during, daemon=True).start()
    killed, top = None, 0.0
    chunks: dict[str, bytes] = {}
    readers = [threading.Thread(target=lambda k=k, f=f: chunks.__setitem__(k, f.read()), daemon=True)
               for k, f in (("stdout", proc.stdout), ("stderr", proc.stderr))]
    for t in readers:
        t.start()
    while proc.poll() is None:
        top = max(top, _group_rss_mb(proc.pid))
        elapsed = time.monotonic() - start
        if top > kill_rss or elapsed > limit:
            killed = f"killed at {top:.0f} MB" if top > kill_rss else f"killed after {elapsed:.0f} s"
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            break
        time.sleep(0.2)
    seconds = time.monotonic() - start
    for t in readers:
        t.join(5)
    if case.stdin:
        stdin.close()
    stderr = chunks.get("stderr", b"").decode("utf-8", "replace")
    own = peak.read(report)
    said = stderr
    if out.exists():
        try:
            said += json.dumps(json.loads(out.read_text(encoding="utf-8")), ensure_ascii=False)
        except ValueError:
            said += out.read_text(encoding="utf-8", errors="replace")
    rss = round(own["maxrss_mb"]) if own else round(top)
    row = {"attack": name, "group": spec.group, "exit": None if killed else proc.returncode,
           "seconds": round(seconds, 1), "peak_rss_mb": rss, "killed": killed,
           "traceback": "Traceback" in stderr, "said": spec.said in said, "stderr": stderr.strip()[-300:]}
    row["ok"] = (not killed and not row["traceback"] and row["said"] and proc.returncode in spec.codes
                 and rss is not None and rss < spec.max_rss_mb)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0, help="size of each input against the size it was found at")
    ap.add_argument("--attack", action="append", choices=sorted(attacks.ATTACKS), help="only these (repeatable)")
    ap.add_argument("--group", action="append", help="only the attacks of these groups (repeatable)")
    ap.add_argument("--code", type=Path, default=ROOT, help="the copy of the project to run (default: this one)")
    ap.add_argument("--kill-rss", type=float, default=4000, help="kill a run past this many MB (default 4000)")
    ap.add_argument("--kill-after", type=float, help="kill a run after this many seconds (default: each attack's)")
    ap.add_argument("--json", type=Path, help="write the rows here too")
    args = ap.parse_args()
    if args.attack or args.group:  # the attacks named and those of the groups named
        names = [n for n in attacks.ATTACKS if n in (args.attack or []) or attacks.ATTACKS[n].group in (args.group or [])]
    else:
        names = list(attacks.ATTACKS)
    rows, failed = [], 0
    for name in names:
        with tempfile.TemporaryDirectory(prefix="diagnose-attack-") as tmp:
            row = run(name, Path(tmp), args.scale, args.code, args.kill_rss, args.kill_after)
        rows.append(row)
        failed += not row["ok"]
        ended = row["killed"] or f"exit {row['exit']}"
        print(f"{'ok  ' if row['ok'] else 'FAIL'} {name:34} {ended:18} {row['seconds']:7.1f} s  "
              f"peak {row['peak_rss_mb']:>6} MB  {'traceback ' if row['traceback'] else ''}"
              f"{'' if row['said'] else 'did not say: ' + attacks.ATTACKS[name].said}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, ensure_ascii=False))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
