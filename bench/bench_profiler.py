#!/usr/bin/env python3
"""Time `diagnose` against `msprof-analyze advisor all` on the same synthetic profiler capture.

    python bench/bench_profiler.py [DIR] [--msprof CMD] [--ranks 2] [--layers 58] [--steps 200] [--repeat 3]
                                   [--msprof-repeat 1] [--trace-host] [--trace-layout line|lines] [--no-trace]

DIR is generated with bench/gen_profiler.py when it does not exist (default: a temporary folder); each rank has a
trace_view.json of its kernels (one line, about 33 MB at the defaults) unless --no-trace. The script runs
`diagnose --format json DIR` (best of --repeat runs) and, when it can be found, `msprof-analyze advisor all -d DIR -o
OUT` (best of --msprof-repeat); it prints wall and CPU seconds of both, their ratio, and whether both tools reach
the same conclusions (an AI CPU issue naming NonZero; the slow rank). msprof-analyze comes from PyPI (`pip install msprof-analyze`, best in
a venv: it pins pandas/numpy); pass its path with --msprof or put it on PATH. CPU seconds (user + system of the child)
are the fairer number on a shared machine: wall time includes waiting for other processes' CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def timed(cmd: list[str], cwd: str | None = None) -> tuple[float, float, subprocess.CompletedProcess]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc


def diagnose_conclusions(stdout: str) -> dict:
    report = json.loads(stdout)
    found = {f["rule_id"]: f["summary"] for f in report.get("findings", [])}
    aicpu = " ".join(s for r, s in found.items() if r in ("OPS001", "OPS002"))
    slow = found.get("PRF001", "")
    m = re.match(r"rank (\d+) is the slow rank", slow)
    return {"aicpu_nonzero": "NonZero" in aicpu, "slow_rank": int(m.group(1)) if m else None,
            "findings": sorted(found), "errors": report.get("errors", [])}


def msprof_conclusions(out: Path, log: str) -> dict:
    text = log
    for html in out.glob("**/*.html"):
        text += html.read_text(errors="replace")
    aicpu = re.search(r"AICPU Issues|AICPU 问题", text) is not None and "NonZero" in text
    slow = None
    m = re.search(r"Maximum computation time for rank (\d+)", text)
    if m and re.search(r"(?i)Computing\s+has some issues in the cluster", text):
        slow = int(m.group(1))
    return {"aicpu_nonzero": aicpu, "slow_rank": slow}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", nargs="?", type=Path)
    ap.add_argument("--msprof", default=shutil.which("msprof-analyze"), help="msprof-analyze executable")
    ap.add_argument("--diagnose", default=None, help="diagnose command (default: this interpreter, -m diagnose)")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--layers", type=int, default=58)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--msprof-repeat", type=int, default=1)
    ap.add_argument("--trace-host", action="store_true", help="generate host events in trace_view.json too")
    ap.add_argument("--trace-layout", default="line", choices=("line", "lines"))
    ap.add_argument("--no-trace", action="store_true", help="generate no trace_view.json")
    args = ap.parse_args()

    tmp = None
    folder = args.dir
    if folder is None:
        tmp = tempfile.mkdtemp(prefix="bench-profiler-")
        folder = Path(tmp) / "capture"
    if not folder.exists():
        gen = [sys.executable, str(HERE / "gen_profiler.py"), str(folder), "--ranks", str(args.ranks),
               "--layers", str(args.layers), "--steps", str(args.steps), "--trace-layout", args.trace_layout]
        subprocess.run(gen + (["--trace-host"] if args.trace_host else []), check=True)
        if args.no_trace:
            for p in folder.glob("**/trace_view.json"):
                p.unlink()
    kd = list(folder.glob("**/kernel_details.csv"))
    rows = sum(sum(1 for _ in p.open()) - 1 for p in kd)
    size = sum(p.stat().st_size for p in kd) / 1e6
    traces = list(folder.glob("**/trace_view.json"))
    tsize = sum(p.stat().st_size for p in traces) / 1e6
    print(f"capture: {folder} ({len(kd)} kernel_details.csv, {rows} rows, {size:.1f} MB; "
          f"{len(traces)} trace_view.json, {tsize:.1f} MB)")

    cmd = args.diagnose.split() if args.diagnose else [sys.executable, "-m", "diagnose"]
    if not args.diagnose:
        # As a wheel install does: without bytecode (an editable install under PYTHONDONTWRITEBYTECODE) every
        # run would compile the package's sources again, about 80 ms that no installed copy pays.
        import diagnose

        subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(diagnose.__file__).parent)], check=False)
    best = None
    for _ in range(max(1, args.repeat)):
        wall, cpu, proc = timed(cmd + ["--format", "json", str(folder)])
        if proc.returncode not in (0, 1):
            print(f"diagnose failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
            return 2
        if best is None or wall < best[0]:
            best = (wall, cpu, proc)
    d_wall, d_cpu, d_proc = best
    ours = diagnose_conclusions(d_proc.stdout)
    print(f"diagnose:       wall {d_wall:7.2f} s   cpu {d_cpu:7.2f} s   (best of {args.repeat})  {ours}")

    if not args.msprof or not Path(args.msprof).exists():
        print("msprof-analyze: not installed (pip install msprof-analyze, then --msprof PATH); no ratio")
        return 0
    out = Path(tempfile.mkdtemp(prefix="msprof-out-"))
    # One rank: the advisor wants the *_ascend_pt folder itself (given the parent it finds no op summary).
    ranks = sorted(folder.glob("*_ascend_pt"))
    target = ranks[0] if len(ranks) == 1 else folder
    env_cmd = [args.msprof, "advisor", "all", "-d", str(target), "-o", str(out), "-l", "en"]
    mbest = None
    for _ in range(max(1, args.msprof_repeat)):
        for old in out.iterdir():
            shutil.rmtree(old, ignore_errors=True) if old.is_dir() else old.unlink()
        m_wall, m_cpu, m_proc = timed(env_cmd, cwd=str(out))
        theirs = msprof_conclusions(out, m_proc.stdout + m_proc.stderr)
        if mbest is None or m_wall < mbest[0]:
            mbest = (m_wall, m_cpu, m_proc, theirs)
    m_wall, m_cpu, m_proc, theirs = mbest
    print(f"msprof-analyze: wall {m_wall:7.2f} s   cpu {m_cpu:7.2f} s   (exit {m_proc.returncode}, best of "
          f"{args.msprof_repeat})  {theirs}")
    print(f"ratio (msprof-analyze / diagnose): wall {m_wall / d_wall:.1f}x, cpu {m_cpu / d_cpu:.1f}x (target >= 40x)")
    same = ours["aicpu_nonzero"] == theirs["aicpu_nonzero"] and ours["slow_rank"] == theirs["slow_rank"]
    print(f"same AI CPU and slow-rank conclusions: {'yes' if same else 'NO'}")
    if tmp and not os.environ.get("KEEP"):
        shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
