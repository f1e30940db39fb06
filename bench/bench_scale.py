"""Speed and memory at scale: `diagnose --format json` against ripgrep on the same generated bundle.

    python bench/bench_scale.py --size 200M [--size 1G --size 2G] [--dir /tmp/diagnose-bench] [--keep]

For each size: generate a bundle with bench/gen_bundle.py (reused if present), run diagnose once (wall time,
peak RSS of the process, findings found vs planted), run `rg` (Debian package `ripgrep`) for the literal and
regex signatures of the planted incidents on the same files, and print one table row. The page cache is warmed
by a first `rg` pass so both tools read from memory.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# What a person would grep for, one alternation per planted incident (see gen_bundle.PLANTED).
SIGNATURES = [
    r"GPU KV cache usage: 9[5-9]\.\d%",  # KV001
    r"NPU out of memory",  # MEM001
    r"Avg Draft acceptance rate: [0-9]\.\d%",  # MTP001
    r"EngineDeadError",  # ENG001
]


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def run_diagnose(bundle: Path) -> tuple[float, int, dict]:
    out = bundle.parent / f"{bundle.name}.report.json"
    cmd = [sys.executable, "-m", "diagnose", "--format", "json", "-o", str(out), str(bundle)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=HERE.parent)
    wall = time.perf_counter() - start
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if proc.returncode not in (0, 1):
        raise SystemExit(f"diagnose failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return wall, max(peak_kb, before), json.loads(out.read_text())


def run_rg(bundle: Path) -> float:
    rg = shutil.which("rg")
    if rg is None:
        return float("nan")
    cmd = [rg, "-c", "|".join(f"(?:{s})" for s in SIGNATURES), str(bundle)]
    subprocess.run(cmd, capture_output=True)  # warm the page cache
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", action="append", help="bundle size (repeatable), e.g. 200M, 1G, 2G")
    ap.add_argument("--dir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "diagnose-bench")
    ap.add_argument("--keep", action="store_true", help="keep the generated bundles")
    args = ap.parse_args()
    sizes = args.size or ["200M"]
    print(f"{'size':>6} {'MB':>7} {'wall s':>7} {'MB/s':>7} {'peak RSS MB':>11} {'found/planted':>13} "
          f"{'rg s':>6} {'rg/diagnose':>11}")
    for size in sizes:
        bundle = args.dir / f"bundle-{size}"
        if not (bundle / "planted.json").exists():
            subprocess.run([sys.executable, str(HERE / "gen_bundle.py"), str(bundle), "--size", size], check=True,
                           capture_output=True)
        planted = json.loads((bundle / "planted.json").read_text())
        mb = _du(bundle) / 1e6
        rg = run_rg(bundle)
        wall, peak_kb, report = run_diagnose(bundle)
        found = {f["rule_id"] for f in report["findings"]} & set(planted)
        print(f"{size:>6} {mb:7.0f} {wall:7.2f} {mb / wall:7.1f} {peak_kb / 1024:11.0f} "
              f"{len(found):>6}/{len(planted):<6} {rg:6.3f} {rg / wall:11.3f}")
        missing = set(planted) - found
        if missing:
            print(f"       missed: {', '.join(sorted(missing))}")
        if not args.keep:
            shutil.rmtree(bundle, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
