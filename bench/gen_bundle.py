"""Generate a realistic multi-node incident bundle of a chosen size, with known incidents planted.

    python bench/gen_bundle.py OUT_DIR --size 1G [--nodes 2] [--seed 1]

Layout: node-<n>/vllm-serve-<date>.log (vllm-ascend server, mostly healthy traffic: throughput lines, spec
decoding metrics, uvicorn access lines, occasional warnings), node-<n>/mindie/mindie-server_<pid>.log,
node-<n>/plog/plog-<pid>_<ts>.log (one per rank, HCCL/RUNTIME INFO noise), node-<n>/npu-smi.txt.
Planted incidents (and the rule each must raise) are written to OUT_DIR/planted.json.
"""

from __future__ import annotations

import argparse
import json
import random
from datetime import datetime, timedelta
from pathlib import Path

START = datetime(2025, 9, 3, 0, 0, 0)

PLANTED = {
    "KV001": "node-1 Engine 000 KV cache saturated with a growing queue (hour 3)",
    "MEM001": "node-0 Worker_TP3 NPU out of memory while serving (hour 5)",
    "MTP001": "node-0 speculative acceptance collapses (last 30 minutes)",
    "ENG001": "node-0 EngineDeadError after the OOM",
}


def _size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("B")
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


def vllm_lines(rng: random.Random, node: int, budget: int, plant: bool):
    """Yield lines of one node's server log until ``budget`` bytes were produced."""
    t = START
    api = f"(APIServer pid={3280921 + node})"
    written = 0
    i = 0
    hour = lambda: (t - START).total_seconds() / 3600  # noqa: E731
    saturated = False
    while written < budget:
        t += timedelta(seconds=10)
        i += 1
        block = []
        for _ in range(rng.randint(6, 14)):
            ip = f"10.{node}.{rng.randint(0, 9)}.{rng.randint(2, 250)}"
            block.append(f'{api} INFO:     {ip}:{rng.randint(30000, 60000)} - "POST /v1/chat/completions HTTP/1.1" 200 OK')
        kv, waiting = 30 + 25 * rng.random(), 0
        if plant and node == 1 and 3.0 <= hour() < 3.5:
            kv, waiting, saturated = 99.0 + rng.random() * 0.9, int((hour() - 3.0) * 400) + 1, True
        block.append(
            f"{api} INFO {t:%m-%d %H:%M:%S} [loggers.py:118] Engine 000: Avg prompt throughput: {1500 + rng.random() * 900:.1f} tokens/s, "
            f"Avg generation throughput: {1200 + rng.random() * 300:.1f} tokens/s, Running: {rng.randint(20, 60)} reqs, "
            f"Waiting: {waiting} reqs, GPU KV cache usage: {kv:.1f}%, Prefix cache hit rate: {10 + rng.random() * 5:.1f}%"
        )
        rate = 78 + rng.random() * 6
        if plant and node == 0 and budget - written < budget * 0.06:
            rate = rng.random() * 1.5
        drafted = rng.randint(900, 1300)
        block.append(
            f"{api} INFO {t:%m-%d %H:%M:%S} [metrics.py:86] SpecDecoding metrics: Mean acceptance length: {1 + rate / 100:.2f}, "
            f"Accepted throughput: {rate:.2f} tokens/s, Drafted throughput: 100.0 tokens/s, Accepted: {int(drafted * rate / 100)} tokens, "
            f"Drafted: {drafted} tokens, Per-position acceptance rate: {rate / 100:.3f}, Avg Draft acceptance rate: {rate:.1f}%"
        )
        if i % 997 == 0:
            block.append(f"{api} WARNING {t:%m-%d %H:%M:%S} [protocol.py:60] The following fields were present in the request but ignored: {{'stream_options'}}")
        if plant and node == 0 and i == 1800:
            w = "(EngineCore_DP0 pid=3281207) (Worker_TP3_EP3 pid=3281220)"
            block += [
                f"{w} ERROR {t:%m-%d %H:%M:%S} [multiproc_executor.py:585] Traceback (most recent call last):",
                f"{w} ERROR {t:%m-%d %H:%M:%S} [multiproc_executor.py:585]   File \"/vllm-workspace/vllm-ascend/vllm_ascend/worker/model_runner_v1.py\", line 1880, in execute_model",
                f"{w} ERROR {t:%m-%d %H:%M:%S} [multiproc_executor.py:585] torch.OutOfMemoryError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 3; 60.96 GiB total capacity; 57.10 GiB already allocated; 57.10 GiB current active; 1.02 GiB free; 58.30 GiB reserved in total by PyTorch)",
                f"{api} ERROR {t + timedelta(seconds=2):%m-%d %H:%M:%S} [async_llm.py:420] AsyncLLM output_handler failed.",
                f"{api} ERROR {t + timedelta(seconds=2):%m-%d %H:%M:%S} [async_llm.py:420] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.",
            ]
        text = "\n".join(block) + "\n"
        written += len(text)
        yield text
    del saturated


def plog_lines(rng: random.Random, pid: int, rank: int, budget: int):
    t = START
    written = 0
    modules = ["HCCL", "RUNTIME", "GE", "ASCENDCL"]
    while written < budget:
        t += timedelta(milliseconds=rng.randint(5, 400))
        mod = rng.choice(modules)
        stamp = f"{t:%Y-%m-%d-%H:%M:%S}.{t.microsecond // 1000:03d}.{rng.randint(0, 999):03d}"
        line = (f"[INFO] {mod}({pid},python3):{stamp} [hccl_communicator.cc:{rng.randint(100, 9000)}][{pid + 7}]"
                f" rank[{rank}] op AllReduce tag[{rng.getrandbits(32):08x}] count {rng.randint(1, 1 << 20)} done\n")
        written += len(line)
        yield line


def mindie_lines(rng: random.Random, budget: int):
    t = START
    written = 0
    while written < budget:
        t += timedelta(milliseconds=rng.randint(50, 900))
        line = (f"[{t:%Y-%m-%d %H:%M:%S}.{t.microsecond // 1000:03d}+08:00] [64884] [64886] [mindie-server] [INFO] "
                f"[infer_instances.cpp:{rng.randint(100, 900)}] : [endpoint] request {rng.getrandbits(48):012x} finished, "
                f"input {rng.randint(100, 4000)} output {rng.randint(10, 2000)} tokens\n")
        written += len(line)
        yield line


NPU_SMI = """+------------------------------------------------------------------------------------------------+
| npu-smi 24.1.rc3                 Version: 24.1.rc3                                             |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
{rows}+===========================+===============+====================================================+
"""


def npu_smi(node: int) -> str:
    rows = []
    for d in range(8):
        rows.append(f"| {d:<5} 910B3               | OK            | 95.{d}        4{d}                0    / 0             |\n")
        rows.append(f"| 0                         | 0000:C{d}:00.0  | 0           0    / 0          56000/ 65536         |\n")
        rows.append("+===========================+===============+====================================================+\n")
    return NPU_SMI.format(rows="".join(rows[:-1]))


def write(path: Path, chunks) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        batch = []
        for chunk in chunks:
            batch.append(chunk)
            if len(batch) >= 2000:
                text = "".join(batch)
                fh.write(text)
                n += len(text)
                batch = []
        text = "".join(batch)
        fh.write(text)
        n += len(text)
    return n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--size", default="200M", help="total size, e.g. 200M, 1G, 2G")
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--ranks", type=int, default=8, help="ranks (plog files) per node")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    total = _size(args.size)
    rng = random.Random(args.seed)
    # Shares of the bundle: server logs 60%, plogs 30%, MindIE 10%.
    per_node = total // args.nodes
    written = 0
    for node in range(args.nodes):
        base = args.out / f"node-{node}"
        written += write(base / "vllm-serve-20250903.log", vllm_lines(rng, node, int(per_node * 0.6), plant=True))
        for r in range(args.ranks):
            pid = 100000 + node * 100 + r
            rank = node * args.ranks + r
            written += write(base / "plog" / f"plog-{pid}_20250903000000000.log",
                             plog_lines(rng, pid, rank, int(per_node * 0.3 / args.ranks)))
        written += write(base / "mindie" / "mindie-server_64884_202509030000.log", mindie_lines(rng, int(per_node * 0.1)))
        (base / "npu-smi.txt").write_text(npu_smi(node))
    (args.out / "planted.json").write_text(json.dumps(PLANTED, indent=2) + "\n")
    print(f"wrote {written / 1e6:.0f} MB to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
