"""Build samples/ci-artifact/nightly-bench-logs.tgz: the log artifact of a failed nightly benchmark job.

A small DeepSeek-R1 incident written for this project: a remote Ray worker of node-1's instance (on
10.20.30.43) runs out of NPU memory while serving and the engine dies; node-2 (shipped as a nested archive, as some collectors do) saturates its KV cache.
The logs carry IP addresses, host names, home paths and a token so that ``--redact`` has something to mask.

The archive is deterministic: fixed member order, times, owners and modes; gzip without a name or time.
Run ``python samples/ci-artifact/make.py`` to rebuild it; the bytes do not change between runs.
"""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "nightly-bench-logs.tgz"
MTIME = 1751360400  # 2025-07-01 09:00:00 UTC

NODE1_SERVE = """\
INFO 07-01 09:00:02 [__init__.py:239] Automatically detected platform npu.
(APIServer pid=880) INFO 07-01 09:00:05 [api_server.py:1805] vLLM API server version 0.9.1
(APIServer pid=880) INFO 07-01 09:00:05 [utils.py:326] non-default args: {'model': '/home/alice/models/DeepSeek-R1-W8A8', 'host': '10.20.30.41', 'port': 8000, 'tensor_parallel_size': 16, 'quantization': 'ascend', 'max_model_len': 32768}
(APIServer pid=880) INFO 07-01 09:00:06 [config.py:1604] Using max model len 32768
(EngineCore_DP0 pid=901) INFO 07-01 09:00:40 [parallel_state.py:1076] rank 0 in world size 16 is assigned as DP rank 0, PP rank 0, TP rank 0 (tcp://10.20.30.41:29500)
(EngineCore_DP0 pid=901) INFO 07-01 09:02:10 [model_runner_v1.py:2050] Loading model weights took 42.8713 GB
(EngineCore_DP0 pid=901) INFO 07-01 09:03:01 [kv_cache_utils.py:1087] GPU KV cache size: 418,560 tokens
(EngineCore_DP0 pid=901) INFO 07-01 09:03:01 [kv_cache_utils.py:1091] Maximum concurrency for 32,768 tokens per request: 12.77x
(APIServer pid=880) INFO 07-01 09:03:20 [launcher.py:29] Available routes are:
(APIServer pid=880) INFO:     10.20.30.99:51234 - "POST /v1/chat/completions HTTP/1.1" 200 OK
(APIServer pid=880) INFO 07-01 09:05:20 [loggers.py:123] Engine 000: Avg prompt throughput: 6120.4 tokens/s, Avg generation throughput: 1402.3 tokens/s, Running: 48 reqs, Waiting: 0 reqs, GPU KV cache usage: 71.5%, Prefix cache hit rate: 10.0%
(RayWorkerWrapper pid=2210, ip=10.20.30.43) ERROR 07-01 09:06:02 [worker_base.py:620] Traceback (most recent call last):
(RayWorkerWrapper pid=2210, ip=10.20.30.43) ERROR 07-01 09:06:02 [worker_base.py:620]   File "/home/alice/vllm-ascend/vllm_ascend/worker/model_runner_v1.py", line 1880, in execute_model
(RayWorkerWrapper pid=2210, ip=10.20.30.43) ERROR 07-01 09:06:02 [worker_base.py:620]     hidden_states = self._generate_process_reqs_hidden_states(
(RayWorkerWrapper pid=2210, ip=10.20.30.43) ERROR 07-01 09:06:02 [worker_base.py:620] torch.OutOfMemoryError: NPU out of memory. Tried to allocate 172.00 MiB (NPU 0; 60.96 GiB total capacity; 60.41 GiB already allocated; 60.41 GiB current active; 98.25 MiB free; 60.50 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.
(EngineCore_DP0 pid=901) ERROR 07-01 09:06:03 [core.py:700] EngineCore encountered a fatal error.
(APIServer pid=880) ERROR 07-01 09:06:09 [async_llm.py:707] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.
(APIServer pid=880) INFO:     10.20.30.99:51240 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error
"""

NODE2_SERVE = """\
INFO 07-01 09:00:03 [__init__.py:239] Automatically detected platform npu.
(APIServer pid=311) INFO 07-01 09:00:05 [utils.py:326] non-default args: {'model': '/root/models/DeepSeek-R1-W8A8', 'host': '10.20.30.42', 'port': 8000, 'tensor_parallel_size': 16}
(RayWorkerWrapper pid=4411, ip=10.20.30.42) INFO 07-01 09:00:41 [parallel_state.py:1076] rank 8 in world size 16 is assigned as DP rank 0, PP rank 0, TP rank 8
(APIServer pid=311) INFO 07-01 09:05:05 [loggers.py:123] Engine 000: Avg prompt throughput: 8120.4 tokens/s, Avg generation throughput: 1502.3 tokens/s, Running: 64 reqs, Waiting: 0 reqs, GPU KV cache usage: 88.1%, Prefix cache hit rate: 12.0%
(APIServer pid=311) INFO 07-01 09:05:15 [loggers.py:123] Engine 000: Avg prompt throughput: 2051.0 tokens/s, Avg generation throughput: 1210.7 tokens/s, Running: 71 reqs, Waiting: 3 reqs, GPU KV cache usage: 97.2%, Prefix cache hit rate: 11.8%
(APIServer pid=311) INFO 07-01 09:05:25 [loggers.py:123] Engine 000: Avg prompt throughput: 410.2 tokens/s, Avg generation throughput: 803.4 tokens/s, Running: 70 reqs, Waiting: 18 reqs, GPU KV cache usage: 99.1%, Prefix cache hit rate: 11.5%
(APIServer pid=311) INFO 07-01 09:05:35 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 612.9 tokens/s, Running: 69 reqs, Waiting: 41 reqs, GPU KV cache usage: 99.6%, Prefix cache hit rate: 11.5%
(APIServer pid=311) INFO 07-01 09:05:45 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 598.1 tokens/s, Running: 69 reqs, Waiting: 57 reqs, GPU KV cache usage: 99.7%, Prefix cache hit rate: 11.4%
"""

JOB_ENV = """\
# environment of the benchmark job (secrets must never end up in a public ticket)
HOSTNAME=dsr1-node-1
MASTER_ADDR=10.20.30.41
HF_TOKEN=hf_QxZ7mP2kL9vR4tN8bW3yC6dF1gH5jK0sAe
OPENAI_API_KEY=sk-proj-4fG7hJ2kL9mN3pQ6rS8tV1wX5yZ0aB
BENCH_AUTH=Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.c2FtcGxl.dGVzdA
HCCL_IF_IP=10.20.30.41
VLLM_HOST_IP=fe80::1c2d:3eff:fe4f:5a6b
"""


def _tar(members: list[tuple[str, bytes]], compress: bool) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = MTIME
            info.mode = 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            tar.addfile(info, io.BytesIO(data))
    if not compress:
        return raw.getvalue()
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=9) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def build() -> bytes:
    node2 = _tar([("node-2/vllm-serve.log", NODE2_SERVE.encode())], compress=True)
    return _tar(
        [
            ("nightly-bench/node-1/vllm-serve.log", NODE1_SERVE.encode()),
            ("nightly-bench/node-1/job.env", JOB_ENV.encode()),
            ("nightly-bench/node-2.tar.gz", node2),
        ],
        compress=True,
    )


if __name__ == "__main__":
    OUT.write_bytes(build())
    print(f"wrote {OUT.name} ({OUT.stat().st_size} bytes)")
