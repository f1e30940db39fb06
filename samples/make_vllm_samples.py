"""Write the vllm-ascend incident samples (healthy, mtp-ineffective, kv-exhaustion) deterministically.

Run from the repository root: ``python samples/make_vllm_samples.py``. The output is committed; this script
documents how it was made and regenerates it byte for byte.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
START = datetime(2025, 9, 3, 14, 0, 0)
MODEL = "/models/DeepSeek-R1-W8A8"


def stamp(t: datetime) -> str:
    return t.strftime("%m-%d %H:%M:%S")


def startup(t: datetime, api_pid: int, core_pid: int, mtp: bool, kv_tokens: int) -> tuple[list[str], datetime]:
    spec = "'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 1}, " if mtp else ""
    spec_cfg = "SpeculativeConfig(method='mtp', model='" + MODEL + "', num_spec_tokens=1)" if mtp else "None"
    api = f"(APIServer pid={api_pid})"
    core = f"(EngineCore_DP0 pid={core_pid})"
    out = [
        f"INFO {stamp(t)} [__init__.py:36] Available plugins for group vllm.platform_plugins:",
        f"INFO {stamp(t)} [__init__.py:38] - ascend -> vllm_ascend:register",
        f"INFO {stamp(t)} [__init__.py:232] Platform plugin ascend is activated",
        f"WARNING {stamp(t)} [_custom_ops.py:20] Failed to import from vllm._C with ModuleNotFoundError(\"No module named 'vllm._C'\")",
        f"{api} INFO {stamp(t)} [api_server.py:1805] vLLM API server version 0.9.1",
        f"{api} INFO {stamp(t)} [utils.py:326] non-default args: {{'model': '{MODEL}', 'served_model_name': ['deepseek-r1'], "
        f"'trust_remote_code': True, 'max_model_len': 32768, 'tensor_parallel_size': 16, 'enable_expert_parallel': True, "
        f"'gpu_memory_utilization': 0.92, 'max_num_seqs': 64, 'quantization': 'ascend', {spec}'port': 8000}}",
        f"{api} INFO {stamp(t)} [config.py:1470] Using max model len 32768",
        f"{core} INFO {stamp(t)} [core.py:69] Initializing a V1 LLM engine (v0.9.1) with config: model='{MODEL}', "
        f"speculative_config={spec_cfg}, tokenizer='{MODEL}', dtype=torch.bfloat16, max_seq_len=32768, "
        f"tensor_parallel_size=16, pipeline_parallel_size=1, quantization=ascend, enforce_eager=False",
    ]
    t += timedelta(seconds=6)
    for tp in range(0, 16):
        w = f"({'Worker_TP%d_EP%d' % (tp, tp)} pid={core_pid + 10 + tp})"
        out.append(f"{core} {w} INFO {stamp(t)} [model_runner_v1.py:1980] Starting to load model {MODEL}...")
    out.append(f"{core} INFO {stamp(t)} [quantizer.py:88] Using the vLLM Ascend Quantizer version now!")
    t += timedelta(seconds=95)
    for tp in range(0, 16):
        w = f"({'Worker_TP%d_EP%d' % (tp, tp)} pid={core_pid + 10 + tp})"
        out.append(f"{core} {w} INFO {stamp(t)} [model_runner_v1.py:2011] Loading model weights took 40.8213 GB")
    if mtp:
        out.append(f"{core} (Worker_TP0_EP0 pid={core_pid + 10}) INFO {stamp(t)} [model_runner_v1.py:2030] Loading drafter model...")
    t += timedelta(seconds=20)
    out += [
        f"{core} INFO {stamp(t)} [worker_v1.py:188] Available memory: 14562738176, total memory: 65452113920",
        f"{core} INFO {stamp(t)} [kv_cache_utils.py:716] GPU KV cache size: {kv_tokens:,} tokens",
        f"{core} INFO {stamp(t)} [kv_cache_utils.py:720] Maximum concurrency for 32,768 tokens per request: "
        f"{kv_tokens / 32768:.2f}x",
    ]
    t += timedelta(seconds=41)
    out += [
        f"{core} INFO {stamp(t)} [core.py:172] init engine (profile, create kv cache, warmup model) took 61.38 seconds",
        f"{api} INFO {stamp(t)} [api_server.py:1857] Starting vLLM API server 0 on http://0.0.0.0:8000",
        f"{api} INFO {stamp(t)} [launcher.py:29] Available routes are:",
        f"{api} INFO:     Started server process [{api_pid}]",
        f"{api} INFO:     Waiting for application startup.",
        f"{api} INFO:     Application startup complete.",
    ]
    return out, t


def throughput(t, api_pid, prompt, gen, running, waiting, kv, hit):
    return (
        f"(APIServer pid={api_pid}) INFO {stamp(t)} [loggers.py:118] Engine 000: Avg prompt throughput: {prompt:.1f} tokens/s, "
        f"Avg generation throughput: {gen:.1f} tokens/s, Running: {running} reqs, Waiting: {waiting} reqs, "
        f"GPU KV cache usage: {kv:.1f}%, Prefix cache hit rate: {hit:.1f}%"
    )


def spec(t, api_pid, rate, drafted):
    accepted = int(round(drafted * rate / 100))
    mean_len = 1 + accepted / max(drafted, 1)
    return (
        f"(APIServer pid={api_pid}) INFO {stamp(t)} [metrics.py:86] SpecDecoding metrics: Draft acceptance rate: {rate:.1f}%, "
        f"Mean acceptance length: {mean_len:.2f}, Accepted: {accepted} tokens, Drafted: {drafted} tokens, "
        f"Per-position acceptance rate: {rate / 100:.3f}"
    )


def access(api_pid, rng, status=200):
    ip = f"10.20.{rng.randint(1, 9)}.{rng.randint(2, 250)}"
    return f'(APIServer pid={api_pid}) INFO:     {ip}:{rng.randint(30000, 60000)} - "POST /v1/chat/completions HTTP/1.1" {status} OK'


def serving(kind: str, seed: int) -> list[str]:
    rng = random.Random(seed)
    api_pid, core_pid = 3280921, 3281207
    mtp = kind in ("healthy", "mtp-ineffective")
    # The KV-exhaustion run was sized for fewer long requests than it admits (--max-num-seqs 64).
    kv_tokens = 318_976 if kind == "kv-exhaustion" else 2_228_224
    lines, t = startup(START, api_pid, core_pid, mtp, kv_tokens)
    intervals = 180
    for i in range(intervals):
        t += timedelta(seconds=10)
        for _ in range(rng.randint(1, 3)):
            lines.append(access(api_pid, rng))
        if kind == "kv-exhaustion" and i >= 90:
            # Traffic keeps arriving; the cache fills, the queue grows, throughput collapses.
            k = i - 90
            kv = min(99.8, 88.0 + k * 0.9 + rng.random() * 0.3)
            waiting = 0 if kv < 95 else int((k - 7) * 2.4 + rng.randint(0, 3))
            running = 64 if kv < 95 else max(38, 64 - k // 4)
            gen = 1480.0 - (0 if kv < 95 else min(1050.0, (k - 7) * 14.0)) + rng.random() * 20
            prompt = 2100.0 * (1 if kv < 95 else 0.15) + rng.random() * 40
        else:
            kv = 38.0 + 20.0 * (i % 30) / 30 + rng.random() * 3
            waiting, running = 0, rng.randint(24, 48)
            gen = 1310.0 + rng.random() * 180 if kind != "mtp-ineffective" else 742.0 + rng.random() * 60
            prompt = 1800.0 + rng.random() * 600
        lines.append(throughput(t, api_pid, prompt, gen, running, waiting, kv, 11.0 + rng.random() * 4))
        if mtp:
            rate = 80.0 + rng.random() * 4 if kind == "healthy" else rng.random() * 1.2
            lines.append(spec(t, api_pid, rate, rng.randint(900, 1300)))
    if kind == "kv-exhaustion":
        lines.append(f"(APIServer pid={api_pid}) WARNING {stamp(t)} [serving_chat.py:210] Request chatcmpl-5d1f0a is waiting for more than 120 s in the queue")
    return lines


def main() -> None:
    readmes = {
        "healthy": "A healthy DeepSeek-R1-W8A8 deployment on 16 NPUs (vllm-ascend 0.9.1, MTP with one speculative token, "
        "about 81% acceptance, KV usage under 62%). `diagnose samples/healthy` must report no warning and exit 0.\n",
        "mtp-ineffective": "DeepSeek-R1-W8A8 served with `--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":1}'` "
        "from a quantized checkpoint without the MTP layer: the server starts normally, only the SpecDecoding metrics "
        "show acceptance near 0%. Expected first finding: MTP001 speculative-acceptance-low (error); exit 1.\n",
        "kv-exhaustion": "DeepSeek-R1-W8A8 on 16 NPUs under growing traffic: after 15 minutes the KV cache sits at 95-99.8% while "
        "the queue grows and generation throughput collapses (vLLM V1 preempts silently). Expected first finding: "
        "KV001 kv-cache-saturated (error); exit 1.\n",
    }
    for seed, kind in enumerate(readmes):
        folder = HERE / kind / "node-0"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "vllm-serve-20250903.log").write_text("\n".join(serving(kind, seed)) + "\n", encoding="utf-8")
        (HERE / kind / "README.md").write_text(readmes[kind], encoding="utf-8")


if __name__ == "__main__":
    main()
