#!/usr/bin/env python3
"""Speed of the message index: load time, and lookup time for distinct log lines.

    python bench/bench_index.py [--lines 500] [--repeat 5] [--seed 1] [--index PATH]

Each measurement runs in a fresh interpreter (the index is cached per process): the import of the index module,
the load (decode of the committed file), then ``lookup`` of N distinct lines. The lines are made from the index
itself, so the bench needs no log files: half are templates filled with plausible values and wrapped in the heads
real logs put before a message (a vLLM head, a traceback's class prefix, a plog head), a quarter are those cut
short, and a quarter are lines no template matches. Wall and CPU seconds are printed, best of --repeat (the CPU
time is the steadier number on a shared machine), with the share of lines that resolved.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r'''
import json, random, sys, time
t0, c0 = time.perf_counter(), time.process_time()
from diagnose.knowledge.index import message_index
from diagnose.knowledge.templates import parse
t1, c1 = time.perf_counter(), time.process_time()
idx = message_index(*( [__import__("pathlib").Path(sys.argv[3])] if sys.argv[3] else []))
t2, c2 = time.perf_counter(), time.process_time()
n, rnd = int(sys.argv[1]), random.Random(int(sys.argv[2]))
values = {"d": lambda: str(rnd.randint(0, 99999)), "f": lambda: f"{rnd.random() * 100:.2f}",
          "x": lambda: hex(rnd.randint(0, 1 << 40)), "r": lambda: repr(f"layer.{rnd.randint(0, 60)}.weight"),
          "s": lambda: rnd.choice(["rank 3", "model.layers.12", "npu:4", "Qwen3", "enable_expert_parallel"])}
heads = ["", "ValueError: ", "RuntimeError: ", "(Worker_TP0 pid=1071) ERROR 07-21 06:27:44 [multiproc_executor.py:962] ",
         "[ERROR] RUNTIME(1234,python):2025-07-15-12:45:32.997.682 [stream.cc:1160]1234 SyncStream: ",
         "ERROR 08-28 02:33:28 [core.py:634] "]
c = idx.data.columns
chosen = rnd.sample([i for i in range(len(idx)) if c.literal[i] >= 20 and "\n" not in c.template[i]], n)
lines = []
for k, i in enumerate(chosen):
    text = "".join(values[p]() if type(p) is not str else p for p in parse(c.template[i], c.holes[i]))
    if k % 4 == 2:
        text = text[: max(30, len(text) // 2)]
    elif k % 4 == 3:
        text = "".join(rnd.choice("abcdefghij klmnop") for _ in range(80))
    lines.append(rnd.choice(heads) + text + f" #{k}")
t3, c3 = time.perf_counter(), time.process_time()
sites = idx.lookup(lines)
t4, c4 = time.perf_counter(), time.process_time()
print(json.dumps({"import": [t1 - t0, c1 - c0], "load": [t2 - t1, c2 - c1], "lookup": [t4 - t3, c4 - c3],
                  "resolved": sum(s is not None for s in sites) / n, "templates": len(idx)}))
'''


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--index", default="")
    args = parser.parse_args()
    runs = []
    for _ in range(args.repeat):
        out = subprocess.run([sys.executable, "-c", CHILD, str(args.lines), str(args.seed), args.index],
                             capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout))
    best = {key: min((r[key] for r in runs), key=lambda v: v[0]) for key in ("import", "load", "lookup")}
    print(f"templates: {runs[0]['templates']}, {args.lines} distinct lines, best of {args.repeat}")
    for key, (wall, cpu) in best.items():
        print(f"  {key:<7} {wall * 1000:8.1f} ms wall  {cpu * 1000:8.1f} ms cpu")
    print(f"  resolved {runs[0]['resolved']:.0%} of the lines (half are filled templates, a quarter cut short)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
