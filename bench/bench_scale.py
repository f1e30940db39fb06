#!/usr/bin/env python3
"""Speed, memory and correctness of `diagnose --format json` on a bundle of real-world content, against ripgrep.

    python bench/bench_scale.py --size 100M [--size 1G --size 2G] [--seed 1] [--out /tmp/diagnose-bench]
                                [--repeat 3] [--timeout 900] [--kinds all|none|vllm,plog,...] [--no-ascii]

For each size, bench/gen_bundle.py generates a two-node DeepSeek-R1 incident bundle (vLLM with request logging,
a terminal capture with colours and CRLF, CANN plogs, MindIE, a profiler capture; see its docstring), cached under
OUT/bundle-<size>-s<seed>-g<version>/ so later runs reuse it. Then:

1. `diagnose --format json BUNDLE`, best of --repeat: wall and CPU seconds (user+system of the child, from wait4),
   MB/s (MB = 10^6 bytes), peak RSS of the child; then whether each planted incident was reported naming its nodes,
   and whether any decoy (an error message quoted inside a prompt or request body) raised a false alarm.
2. ripgrep on the same files: `rg -c` with one alternation of the planted incidents' patterns (each pattern rule's
   own regex from rules/, and the signal lines of the threshold rules), best of 3 after a warm-up read.
3. Per source kind (vllm, vllm-tty, plog, mindie, profiler): diagnose on that kind's files alone, and on an
   ASCII-only copy of the same files (every byte >= 0x80 replaced by a letter: same lines, same byte length), and
   the time ratio non-ASCII/ASCII: a content cliff (a slow path taken only for non-ASCII text) shows up as a ratio
   well above 1.

Generated data stays under --out (never in git). A run that passes --timeout is killed and reported as such.
Results are also written to OUT/results-<size>-s<seed>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
import gen_bundle  # noqa: E402
import peak  # noqa: E402

KINDS = ["vllm", "vllm-tty", "plog", "mindie", "profiler"]
_ASCII = bytes.maketrans(bytes(range(128, 256)), bytes(ord("a") + i % 26 for i in range(128)))


# --- running and timing ------------------------------------------------------------------------------------------

class Run:
    def __init__(self, wall: float, cpu: float, rss_mb: float, code: int | None, timed_out: bool, stderr: str):
        self.wall, self.cpu, self.rss_mb, self.code, self.timed_out, self.stderr = wall, cpu, rss_mb, code, timed_out, stderr


def timed(cmd: list[str], timeout: float, stdout_path: Path | None = None) -> Run:
    """Run ``cmd``; wall time, and the child's own CPU seconds and peak RSS (bench/peak.py: from wait4 of a
    small launcher, since a child's ru_maxrss starts from its parent's peak)."""
    out = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL
    err_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-scale-{os.getpid()}.stderr"
    report = err_path.with_suffix(".peak.json")
    with open(err_path, "wb") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(peak.command(report, cmd), stdout=out, stderr=err, cwd=REPO,
                                env={**os.environ, "NO_COLOR": "1"})
        killed = threading.Event()

        def kill():
            killed.set()
            proc.terminate()  # the launcher passes SIGTERM on (SIGKILL would leave the command running)

        timer = threading.Timer(timeout, kill)
        timer.start()
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if stdout_path:
        out.close()
    stderr = err_path.read_text(errors="replace")[-3000:]
    err_path.unlink(missing_ok=True)
    own = peak.read(report) or {"maxrss_mb": ru.ru_maxrss / 1024, "cpu_s": ru.ru_utime + ru.ru_stime}
    report.unlink(missing_ok=True)
    return Run(wall, own["cpu_s"], own["maxrss_mb"], proc.returncode, killed.is_set(), stderr)


def best_of(cmd: list[str], repeat: int, timeout: float, stdout_path: Path | None = None) -> tuple[Run, list[Run]]:
    runs = []
    for _ in range(repeat):
        r = timed(cmd, timeout, stdout_path)
        runs.append(r)
        if r.timed_out:
            break
    ok = [r for r in runs if not r.timed_out]
    best = min(ok, key=lambda r: r.wall) if ok else runs[0]
    best.rss_mb = max(r.rss_mb for r in runs)
    return best, runs


def diagnose_cmd(paths: list[Path], report: Path) -> list[str]:
    return [sys.executable, "-m", "diagnose", "--format", "json", "-o", str(report), *map(str, paths)]


# --- bundle --------------------------------------------------------------------------------------------------------

def bundle_root(out: Path, size: str, seed: int) -> Path:
    return out / f"bundle-{size}-s{seed}-g{gen_bundle.GEN_VERSION}"


def ensure_bundle(root: Path, size: str, seed: int) -> dict:
    manifest = root / "manifest.json"
    if manifest.exists():
        return json.loads(manifest.read_text())
    shutil.rmtree(root, ignore_errors=True)
    print(f"generating {root} ...", flush=True)
    m = gen_bundle.generate(root, gen_bundle.parse_size(size), seed)
    print(f"  generated {sum(m['bytes'].values()) / 2**20:.1f} MiB in {m['gen_seconds']} s", flush=True)
    return m


def ensure_ascii(root: Path) -> Path:
    """ROOT/bundle-ascii: every file of ROOT/bundle with bytes >= 0x80 replaced by ASCII letters."""
    src, dst = root / "bundle", root / "bundle-ascii"
    done = root / "bundle-ascii.done"
    if done.exists():
        return dst
    shutil.rmtree(dst, ignore_errors=True)
    for path in src.rglob("*"):
        if not path.is_file():
            continue
        target = dst / path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "rb") as fi, open(target, "wb") as fo:
            while block := fi.read(64 << 20):
                fo.write(block.translate(_ASCII))
    done.write_text("")
    return dst


def kind_paths(manifest: dict, base: Path) -> dict[str, list[Path]]:
    out: dict[str, list[Path]] = {k: [] for k in KINDS}
    for rel, kind in sorted(manifest["files"].items()):
        out[kind].append(base / rel)
    return out


def path_bytes(paths: list[Path]) -> int:
    n = 0
    for p in paths:
        n += sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) if p.is_dir() else p.stat().st_size
    return n


# --- checks ----------------------------------------------------------------------------------------------------------

def check(report: dict, manifest: dict) -> dict:
    by_rule: dict[str, set[str]] = {}
    evidence: dict[str, set[tuple[str, int]]] = {}
    for f in report["findings"]:
        by_rule.setdefault(f["rule_id"], set()).update(f.get("nodes") or [])
        for e in f.get("evidence", []):
            evidence.setdefault(f["rule_id"], set()).add((e["file"].split("/bundle/")[-1], e["line"]))
    planted = {}
    for rule, spec in manifest["planted"].items():
        nodes = by_rule.get(rule)
        if nodes is None:
            planted[rule] = "MISSED"
        elif not set(spec["nodes"]) <= nodes:
            planted[rule] = f"found, but not on {','.join(sorted(set(spec['nodes']) - nodes))}"
        else:
            planted[rule] = "found"
    decoys = {}
    for rule, nodes in manifest["decoys"].items():
        real = set(manifest["planted"].get(rule, {}).get("nodes", []))
        hit = sorted((by_rule.get(rule, set()) & set(nodes)) - real)
        quoted = sorted({f"{d['file']}:{d['line']}" for d in manifest["decoy_lines"]
                         if d["rule"] == rule and (d["file"], d["line"]) in evidence.get(rule, set())})
        if hit or quoted:
            decoys[rule] = "FALSE ALARM on " + ",".join(hit) + (f" (quotes {', '.join(quoted)})" if quoted else "")
        else:
            decoys[rule] = "quiet"
    others = sorted(set(by_rule) - set(manifest["planted"]) - set(manifest["decoys"]))
    first = report["findings"][0]["rule_id"] if report["findings"] else None
    caused = {f["rule_id"]: f.get("caused_by") for f in report["findings"]}
    order = [f["rule_id"] for f in report["findings"]]
    root = {"first": first, "expected": gen_bundle.ROOT_CAUSE["rule"],
            "echoes": {e: caused.get(e) for e in gen_bundle.ROOT_CAUSE["echoes"]},
            # each planted chain: linked (every consequence names the link before it) and its start ranked first
            "chains": {" -> ".join(c): all(r in caused for r in c) and [caused[r] for r in c[1:]] == c[:-1]
                       and [order.index(r) for r in c] == sorted(order.index(r) for r in c)
                       for c in gen_bundle.CHAINS}}
    return {"planted": planted, "decoys": decoys, "other_findings": others, "root_cause": root,
            "all_found": all(v == "found" for v in planted.values()),
            "no_false_alarm": all(v == "quiet" for v in decoys.values())}


# --- ripgrep ---------------------------------------------------------------------------------------------------------

def rg_patterns(manifest: dict) -> list[str]:
    pats = []
    for rule in manifest["planted"]:
        if rule in gen_bundle.RG_EXTRA:
            pats.append(gen_bundle.RG_EXTRA[rule])
            continue
        found = list((REPO / "rules").rglob(f"{rule}.*.toml"))
        spec = tomllib.loads(found[0].read_text())["match"]
        if "regex" in spec:  # a rule on a signal alone (VER001, MOE002) has no pattern of its own to search
            pats.append(spec["regex"])
    # one alternation cannot name a group twice (KV010 and QNT002 both capture `what`): names dropped
    return [re.sub(r"\(\?P<\w+>", "(?:", p) for p in pats]


def run_rg(paths: list[Path], pats: list[str], timeout: float, ascii_classes: bool = False) -> tuple[Run | None, int]:
    """``rg -c`` with one alternation of ``pats``; ``ascii_classes`` prefixes ``(?-u)``: ASCII ``\b \w \d``.
    Without it, a Unicode ``\b`` next to non-ASCII text sends ripgrep 13 off its fast DFA (its own content cliff)."""
    rg = shutil.which("rg")
    if rg is None:
        return None, 0
    alternation = ("(?-u)" if ascii_classes else "") + "|".join(f"(?:{p})" for p in pats)
    cmd = [rg, "-c", "--no-ignore", "--hidden", "--no-messages", "-e", alternation, *map(str, paths)]
    counted = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-scale-{os.getpid()}.rg"
    first = timed(cmd, timeout, counted)  # also warms the page cache
    counts = counted.read_text(errors="replace")
    counted.unlink(missing_ok=True)
    hits = sum(int(line.rsplit(":", 1)[1]) for line in counts.splitlines() if ":" in line)
    if first.timed_out:
        return first, hits
    best, _ = best_of(cmd, 3 if first.wall < 5 else 1, timeout)  # a slow pattern set is timed once more, warm
    return best, hits


# --- report ----------------------------------------------------------------------------------------------------------

def fmt_run(r: Run | None, mb: float) -> str:
    if r is None:
        return "n/a"
    if r.timed_out:
        return f">{r.wall:.0f} s (timed out)"
    return f"wall {r.wall:.2f} s, cpu {r.cpu:.2f} s, {mb / r.wall:.2f} MB/s, peak RSS {r.rss_mb:.0f} MB"


def mbps(r: Run | None, mb: float) -> str:
    if r is None:
        return "-"
    return f">{r.wall:.0f}s" if r.timed_out else f"{mb / r.wall:.2f}"


def bench_size(size: str, args) -> dict:
    root = bundle_root(args.out, size, args.seed)
    manifest = ensure_bundle(root, size, args.seed)
    bundle = root / "bundle"
    total = path_bytes([bundle])
    mb = total / 1e6
    nfiles = sum(1 for p in bundle.rglob("*") if p.is_file())
    print(f"\n== {size} (seed {args.seed}): {total / 2**20:.1f} MiB ({mb:.1f} MB) in {nfiles} files, "
          f"generated in {manifest['gen_seconds']} s; incident at {manifest['incident']['aicore_timeout']}", flush=True)
    result: dict = {"size": size, "seed": args.seed, "bytes": total, "files": nfiles, "gen_seconds": manifest["gen_seconds"]}

    pats = rg_patterns(manifest)
    rg_u, hits = run_rg([bundle], pats, args.timeout) if args.rg_as_written else (None, None)
    rg, hits_a = run_rg([bundle], pats, args.timeout, ascii_classes=True)
    report_path = root / "report.json"
    full, runs = best_of(diagnose_cmd([bundle], report_path), args.repeat, args.timeout)
    print(f"diagnose --format json: {fmt_run(full, mb)} (best of {len(runs)}; walls "
          f"{', '.join(f'{r.wall:.1f}' for r in runs)})", flush=True)
    if rg is not None:
        ratio = f"{full.wall / rg.wall:.0f}x" if not full.timed_out else f">{full.wall / rg.wall:.0f}x"
        if rg_u is not None:
            print(f"ripgrep -c, the rules' regexes as written ({len(pats)} patterns, {hits} matching lines): "
                  f"{fmt_run(rg_u, mb)}")
        print(f"ripgrep -c, same with (?-u) ASCII classes ({hits_a} matching lines): {fmt_run(rg, mb)}")
        print(f"diagnose/ripgrep(?-u): wall {ratio}, cpu {full.cpu / max(rg.cpu, 1e-3):.0f}x"
              + (f"; diagnose/ripgrep as written: wall {full.wall / rg_u.wall:.1f}x" if rg_u is not None else ""))
    result["diagnose"] = vars(full) | {"mb_s": None if full.timed_out else mb / full.wall, "walls": [r.wall for r in runs]}
    result["rg"] = None if rg is None else vars(rg) | {"hits": hits_a, "patterns": pats}
    result["rg_unicode"] = None if rg_u is None else vars(rg_u) | {"hits": hits}
    if not full.timed_out and full.code in (0, 1, 3) and report_path.exists():
        report = json.loads(report_path.read_text())
        c = check(report, manifest)
        result["check"] = c
        kinds_seen = {}
        for i in report["inputs"]:
            rel = i["path"].split("/bundle/")[-1]
            want = next((k for r, k in manifest["files"].items() if rel == r or rel.startswith(r + "/")), None)
            expected = "vllm" if want == "vllm-tty" else want
            if want and i["kind"] != expected:
                kinds_seen[rel] = i["kind"]
        result["misread_kinds"] = kinds_seen
        print("planted: " + "; ".join(f"{k} {v}" for k, v in c["planted"].items()))
        print("decoys:  " + "; ".join(f"{k} {v}" for k, v in c["decoys"].items()))
        rc = c["root_cause"]
        print(f"ranked first: {rc['first']} (planted cause {rc['expected']}); echoes attributed to: "
              + ", ".join(f"{e} -> {v}" for e, v in rc["echoes"].items()))
        print(f"every planted incident found: {'yes' if c['all_found'] else 'NO'}; no planted false alarm: "
              f"{'yes' if c['no_false_alarm'] else 'NO'}; other findings: {', '.join(c['other_findings']) or '-'}")
        for rel, kind in kinds_seen.items():
            print(f"  read as {kind!r}, not as its kind: {rel}")
        if report.get("errors"):
            print("  diagnose errors: " + "; ".join(report["errors"])[:500])
    elif not full.timed_out:
        print(f"  diagnose exited {full.code}: {full.stderr[-800:]}")

    kinds = KINDS if args.kinds == "all" else [] if args.kinds == "none" else args.kinds.split(",")
    if kinds:
        ascii_root = ensure_ascii(root) if not args.no_ascii else None
        paths, apaths = kind_paths(manifest, bundle), kind_paths(manifest, ascii_root) if ascii_root else {}
        print(f"\n{'':<18} {'-- as generated (non-ASCII) --':^39} | {'-- ASCII-only copy --':^26} | "
              f"{'non-ASCII/ASCII':^15} | {'ripgrep':^16}")
        print(f"{'kind':<9} {'MB':>8} {'wall s':>8} {'cpu s':>8} {'MB/s':>7} {'RSS MB':>7} | {'wall s':>8} {'cpu s':>8} "
              f"{'MB/s':>7} | {'wall':>7} {'cpu':>7} | {'rg s':>6} {'(?-u) s':>9}")
        result["kinds"] = {}
        for kind in kinds:
            ps = paths[kind]
            kmb = path_bytes(ps) / 1e6
            r, _ = best_of(diagnose_cmd(ps, root / f"report-{kind}.json"), args.repeat, args.timeout)
            a = None
            if apaths:
                a, _ = best_of(diagnose_cmd(apaths[kind], root / f"report-{kind}-ascii.json"), args.repeat, args.timeout)
            krg_u, _ = run_rg(ps, pats, args.timeout) if args.rg_as_written else (None, None)
            krg, _ = run_rg(ps, pats, args.timeout, ascii_classes=True)
            ok = a is not None and not a.timed_out and not r.timed_out
            ratio = f"{r.wall / a.wall:.2f}" if ok else "-"
            cratio = f"{r.cpu / a.cpu:.2f}" if ok else "-"
            print(f"{kind:<9} {kmb:8.1f} {r.wall:8.2f} {r.cpu:8.2f} {mbps(r, kmb):>7} {r.rss_mb:7.0f} | "
                  f"{(a.wall if a else float('nan')):8.2f} {(a.cpu if a else float('nan')):8.2f} {mbps(a, kmb):>7} | "
                  f"{ratio:>7} {cratio:>7} | "
                  f"{(krg_u.wall if krg_u else float('nan')):6.3f} {(krg.wall if krg else float('nan')):9.3f}", flush=True)
            result["kinds"][kind] = {"mb": kmb, "diagnose": vars(r), "ascii": vars(a) if a else None,
                                     "rg": vars(krg) if krg else None, "rg_unicode": vars(krg_u) if krg_u else None,
                                     "ratio_time_nonascii_over_ascii": ratio,
                                     "ratio_cpu_nonascii_over_ascii": cratio}
    (args.out / f"results-{size}-s{args.seed}.json").write_text(json.dumps(result, indent=1, default=str) + "\n")
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", action="append", help="bundle size (repeatable), e.g. 100M, 1G, 2G; default 100M")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "diagnose-bench",
                    help="where bundles are generated and cached (not in git)")
    ap.add_argument("--repeat", type=int, default=3, help="diagnose runs per measurement (best is reported)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds before a diagnose run is killed")
    ap.add_argument("--kinds", default="all", help="'all', 'none', or a comma list of " + ",".join(KINDS))
    ap.add_argument("--no-ascii", action="store_true", help="skip the ASCII-only variant")
    ap.add_argument("--no-rg-as-written", dest="rg_as_written", action="store_false",
                    help="skip ripgrep with the patterns as written (Unicode classes: minutes per GB)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for size in args.size or ["100M"]:
        bench_size(size, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
