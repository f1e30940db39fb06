#!/usr/bin/env python3
"""Generate an N-node DeepSeek-R1 incident for fleet mode, from the project's two-node bundle generator.

    python bench/gen_fleet.py ROOT --nodes 20 --size 1M       (writes ROOT/bundle/node-0 ... node-19)

Each pair of nodes is one two-node bundle of gen_bundle.py (seed = pair index + 1) with its nodes renamed
node-2i and node-2i+1: every pair carries the planted incident (rank 13's aicore timeout, the HCCL timeouts it
causes, the engine deaths, the KV saturation, ...) at its own times, so the fleet has the same fault on many
nodes, a first failing node to find, and decoys on half of them. With ``--expert-load``, the expert-load week
of samples/expert-load-week is split between node-0 (ranks 0-7) and node-1 (ranks 8-15), with the expert map on
node-0, as two 8-NPU servers would hold it. Same bytes for the same arguments.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_bundle  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
WEEK = REPO / "samples" / "expert-load-week" / "dumps"
_RANK = re.compile(r"_(\d+)(?:_bak)?\.csv$")


def generate(root: Path, nodes: int = 20, size: str = "1M", expert_load: bool = False) -> Path:
    """Write ROOT/bundle/node-0 ... node-(nodes-1); returns ROOT/bundle."""
    bundle = root / "bundle"
    if bundle.exists():
        shutil.rmtree(bundle)
    bundle.mkdir(parents=True)
    for pair in range((nodes + 1) // 2):
        work = root / f".pair-{pair}"
        gen_bundle.generate(work, gen_bundle.parse_size(size), pair + 1)
        for i in (0, 1):
            k = 2 * pair + i
            if k < nodes:
                shutil.move(str(work / "bundle" / f"node-{i}"), str(bundle / f"node-{k}"))
        shutil.rmtree(work)
    if expert_load:
        for dump in sorted(WEEK.rglob("*.csv")):
            rank = int(_RANK.search(dump.name).group(1))
            node = bundle / f"node-{rank // 8}" / "hotspot" / dump.relative_to(WEEK)
            node.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(dump, node)
        shutil.copyfile(WEEK / "expert_map.json", bundle / "node-0" / "hotspot" / "expert_map.json")
    return bundle


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--nodes", type=int, default=20)
    ap.add_argument("--size", default="1M", help="size of each two-node bundle (binary units)")
    ap.add_argument("--expert-load", action="store_true", help="add the expert-load week to node-0 and node-1")
    args = ap.parse_args()
    print(generate(args.out, args.nodes, args.size, args.expert_load))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
