#!/usr/bin/env python3
"""Fleet mode's numbers: extraction speed against ripgrep, and the fleet step over 100 nodes' week.

    python bench/bench_fleet.py extract --size 2G      # one node of a 2 GiB two-node bundle (about 1 GiB a node)
    python bench/bench_fleet.py fleet --nodes 100 --days 7

``extract``: `diagnose extract NODE --out DATASET` against `rg -c` with the planted incidents' patterns ((?-u)
ASCII classes, as bench_scale.py) on the same node's files, run back to back, best of --repeat: wall, CPU, MB/s,
peak RSS (bench/peak.py), and ripgrep's time over diagnose's (the issue's ratio: 1.0 would be as fast as ripgrep).

``fleet``: 20 nodes of bench/gen_fleet.py are extracted, then copied to --nodes nodes x --days daily partitions
(each copy renamed: its node, its file paths, its times shifted by the day), and `diagnose fleet DATASET --format
json` is timed over all of them: wall, CPU, peak RSS, and the dataset's size on disk. The machine has 2 shared
cores: run the two back to back and compare ratios rather than absolute times.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from datetime import date, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_scale as S  # noqa: E402
import gen_fleet  # noqa: E402


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "diagnose", *args]


def bench_extract(args) -> dict:
    root = S.bundle_root(args.out, args.size, 1)
    manifest = S.ensure_bundle(root, args.size, 1)
    node = root / "bundle" / "node-0"
    mb = S.path_bytes([node]) / 1e6
    dataset = args.out / "extract-ds"
    shutil.rmtree(dataset, ignore_errors=True)
    run, walls = S.best_of(cli("extract", str(node), "--out", str(dataset), "-q", "--no-config"), args.repeat,
                           args.timeout)
    bad = [r.code for r in walls if r.code != 0]
    if bad:
        raise SystemExit(f"diagnose extract failed (exit {bad[0]}): nothing measured\n{walls[-1].stderr[-2000:]}")
    rg, hits = S.run_rg([node], S.rg_patterns(manifest), args.timeout, ascii_classes=True)
    print(f"== extract node-0 of the {args.size} bundle: {mb:.1f} MB")
    print(f"diagnose extract: {S.fmt_run(run, mb)} (best of {args.repeat}; walls {', '.join(f'{r.wall:.1f}' for r in walls)})")
    if rg is not None:
        print(f"ripgrep -c (?-u), {hits} matching lines: {S.fmt_run(rg, mb)}")
        print(f"ripgrep/diagnose: wall {rg.wall / run.wall:.3f} (goal 0.25), cpu {rg.cpu / max(run.cpu, 1e-3):.3f}")
    return {"mb": mb, "extract": vars(run), "rg": vars(rg) if rg else None}


def _copy(src: Path, dst: Path, node: str, day_shift: int, source_node: str) -> None:
    """One partition copied as another node's on another day: node, file paths and times rewritten."""
    import polars as pl

    dst.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((src / "_manifest.json").read_text())
    shift = pl.duration(days=day_shift)
    for entry in manifest["tables"].values():
        frame = pl.read_parquet(src / entry["file"])
        cols = []
        for name, dtype in frame.schema.items():
            if name == "node":
                cols.append(pl.when(pl.col(name).is_not_null()).then(pl.lit(node)).alias(name))
            elif name in ("file", "path") and dtype == pl.String:
                cols.append(pl.col(name).str.replace(f"/{source_node}/", f"/{node}/", literal=True))
            elif isinstance(dtype, pl.Datetime):
                cols.append(pl.col(name) + shift)
        frame.with_columns(cols).write_parquet(dst / entry["file"], compression="zstd")
    manifest.update(node=node, first_path=manifest["first_path"].replace(f"/{source_node}/", f"/{node}/"),
                    roots=[r.replace(source_node, node) for r in manifest["roots"]])
    (dst / "_manifest.json").write_text(json.dumps(manifest))


def _current(dataset: Path) -> bool:
    """A dataset left by an earlier run is reused only when this diagnose reads it (its schema version): one of
    another version is refused by `diagnose fleet`, and timing the refusal measures nothing."""
    from diagnose.fleet.schema import SCHEMA_VERSION

    try:
        return json.loads((dataset / "_dataset.json").read_text()).get("schema_version") == SCHEMA_VERSION
    except (OSError, ValueError):
        return False


def bench_fleet(args) -> dict:
    base = args.out / f"fleet-src-{args.pair_size}"
    bundle = base / "bundle"
    if not bundle.is_dir():
        gen_fleet.generate(base, 20, args.pair_size, expert_load=True)
    src = base / "ds"
    if not _current(src):
        shutil.rmtree(src, ignore_errors=True)
        for i in range(20):
            code = S.timed(cli("extract", str(bundle / f"node-{i}"), "--out", str(src), "-q", "--no-config"),
                           args.timeout).code
            assert code == 0, f"extract node-{i} failed"
    parts = sorted(p for p in src.glob("date=*/cluster=*/node=*"))
    dataset = args.out / f"fleet-{args.nodes}x{args.days}"
    if not _current(dataset) or (dataset / "_dataset.json").stat().st_mtime < (src / "_dataset.json").stat().st_mtime:
        shutil.rmtree(dataset, ignore_errors=True)
        dataset.mkdir(parents=True)
        shutil.copyfile(src / "_dataset.json", dataset / "_dataset.json")
        for k in range(args.nodes):
            part = parts[k % len(parts)]
            day0 = date.fromisoformat(part.parent.parent.name.split("=", 1)[1])
            source_node = part.name.split("=", 1)[1]
            for d in range(args.days):
                day = day0 + timedelta(days=d)
                _copy(part, dataset / f"date={day}/cluster=prod/node=node-{k}", f"node-{k}", d, source_node)
    size = sum(p.stat().st_size for p in dataset.rglob("*") if p.is_file()) / 1e6
    report = args.out / "fleet.json"
    report.unlink(missing_ok=True)  # never read an earlier run's report
    run, walls = S.best_of(cli("fleet", str(dataset), "--format", "json", "-o", str(report), "-q", "--no-config"),
                           args.repeat, args.timeout)
    bad = [r.code for r in walls if r.code not in (0, 1)]  # 1: findings, as this incident must give
    if bad or not report.exists():
        raise SystemExit(f"diagnose fleet failed (exit {bad or walls[-1].code}): nothing measured")
    got = json.loads(report.read_text())
    print(f"== fleet: {args.nodes} nodes x {args.days} days, {len(list(dataset.glob('date=*/cluster=*/node=*')))} "
          f"partitions, {size:.1f} MB of Parquet")
    print(f"diagnose fleet --format json: wall {run.wall:.2f} s, cpu {run.cpu:.2f} s, peak RSS {run.rss_mb:.0f} MB "
          f"(best of {args.repeat}; walls {', '.join(f'{r.wall:.1f}' for r in walls)}); "
          f"{got['coverage']['files_read']} files, {len(got['findings'])} findings, first {got['findings'][0]['rule_id']}")
    return {"fleet": vars(run), "parquet_mb": size}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["extract", "fleet"])
    ap.add_argument("--size", default="2G", help="extract: the two-node bundle's size")
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--pair-size", default="4M", help="fleet: the size of each generated two-node bundle")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--out", type=Path, default=Path("/tmp/diagnose-bench"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    (bench_extract if args.what == "extract" else bench_fleet)(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
