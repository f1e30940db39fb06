"""A data-parallel vLLM bundle written by the tests: one node, many engines logging their stats every 10 s, one
engine (``slow``) that loses most of its throughput a third of the way in while its KV cache fills."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path


def write_dp_bundle(root: Path, engines: int = 12, slow: int = 7, steps: int = 90) -> Path:
    node = root / "node-0"
    node.mkdir(parents=True, exist_ok=True)
    t0 = datetime(2026, 3, 15, 3, 0, 0)
    lines = ["(APIServer pid=100) INFO 03-15 03:00:00 [api_server.py:1880] vLLM API server version 0.11.0"]
    for i in range(steps):
        for eng in range(engines):
            t = t0 + timedelta(seconds=10 * i + eng * 0.3)
            bad = eng == slow and i > steps // 3
            prompt = 200.0 if bad else 1800 + 20 * eng + (i % 5) * 10
            gen = 12.0 if bad else 150 + eng + (i % 3) * 4
            kv = 70 + (i - steps // 3) * 0.4 if bad else 20 + i * 0.3 + eng
            lines.append(
                f"(APIServer pid=100) INFO {t:%m-%d %H:%M:%S} [loggers.py:123] Engine {eng:03d}: "
                f"Avg prompt throughput: {prompt:.1f} tokens/s, Avg generation throughput: {gen:.1f} tokens/s, "
                f"Running: {10 + eng} reqs, "
                f"Waiting: {1 if bad else 0} reqs, GPU KV cache usage: {kv:.1f}%, Prefix cache hit rate: 1.0%")
    (node / "vllm-serve.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root
