#!/usr/bin/env python3
"""Generate a two-node DeepSeek-R1 incident bundle of the content real deployments write, at a chosen size.

    python bench/gen_bundle.py ROOT --size 100M [--seed 1]      (writes ROOT/bundle/ and ROOT/manifest.json)

Deterministic for a (size, seed): the same bytes every time. Sizes are binary (100M = 100 MiB); the bundle comes
out within a few percent of the size asked. Layout of ROOT/bundle (two nodes, 8 NPUs each; vLLM 0.11 +
vllm-ascend, DP4 x TP4 with expert parallelism over 16 ranks, DP0/DP1 on node-0, DP2/DP3 on node-1, global rank =
EP index):

  node-N/vllm/vllm-serve-20250723.log          the serving run, request logging on (~41% of the bytes):
        `Received request chatcmpl-...: prompt: '<｜begin▁of▁sentence｜>...<｜User｜>...<｜Assistant｜><think>\\n',
        params: SamplingParams(...), prompt_token_ids: [...], lora_request: None, prompt_adapter_request: None.`
        (half the prompts Chinese, 200-4000 characters; multi-turn, code), Added/Finished request lines, uvicorn
        access lines, /metrics and /health probes, the Engine throughput and SpecDecoding lines of each DP engine
        every 10 s, start-up config dumps of several KB, tracebacks with the prefix on every line (CR before LF)
  node-N/vllm/vllm-serve-20250722-tty.log      the day before, run in a terminal (~10%): ANSI colours around the
        process prefix, level, time and [file:line]; CRLF line ends
  node-N/ascend/log/debug/plog/plog-<pid>_<ts>.log, device-<id>/device-<pid>_<ts>.log   CANN logs of the 8
        worker processes (36%: 18 MB per node at 100M), log level INFO: HCCL/RUNTIME/GE/ASCENDCL/HCCP/ATRACE/
        PROFILING/TDT/DRV lines, about 3% WARNING and 2.5% ERROR noise, paths with Chinese names
  node-N/mindie/log/debug/mindie-server_<pid>_<ts>.log, mindie-llm_<pid>_<ts>.log   a MindIE trial two days
        before (10%): the documented line variants (+08:00, +0800 with TAB, microseconds, ATB lowercase, Python
        `,mmm [file.py-NN]`), request bodies with Chinese text
  node-N/profiling/<host>_<pid>_<ts>_ascend_pt/ASCEND_PROFILER_OUTPUT/{kernel_details.csv, op_statistic.csv,
        trace_view.json (one line)}   a decode capture of one rank per node (3%)

PLANTED: incidents that must be found, by the rule that must report them and the nodes it must name.
DECOYS: error messages quoted inside prompts and request bodies; a finding of that rule naming that node is a
false alarm. ROOT/manifest.json records both, with the file and line of each decoy, and each file's kind.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import genpool as P  # noqa: E402

GEN_VERSION = 4  # bump when the output changes: cached bundles are keyed by (size, seed, version)

# Rule id -> what is planted and which nodes the finding must name.
PLANTED = {
    "DEV010": {"nodes": ["node-1"], "what": "aicore timeout (507014, retCode=0x25) in MoeDistributeCombineV2 on rank 13 "
               "(node-1, NPU 5): plog RUNTIME block and the worker's ACL stream synchronize error"},
    "COMM003": {"nodes": ["node-0", "node-1"], "what": "EI0002 notify wait timeouts (HCCL_EXEC_TIMEOUT 300 s) on the 15 "
                "waiting ranks, plog and worker output, naming rank 13 as the stuck location"},
    "ENG001": {"nodes": ["node-0", "node-1"], "what": "EngineCore fatal error and EngineDeadError on both API servers "
               "after the timeouts"},
    "KV001": {"nodes": ["node-0"], "what": "Engine 000 KV cache at 96-99.9% with the queue growing to ~150 waiting "
              "requests (node-0, 30-36% into the run)"},
    "MTP001": {"nodes": ["node-1"], "what": "MTP acceptance collapses to 0-3% on Engine 002/003 for the last 15% of the "
               "node-1 terminal session (vllm-serve-20250722-tty.log)"},
    "KV010": {"nodes": ["node-0"], "what": "MindIE LLM 'out of memory, need block' burst on node-0 (40% into the trial)"},
    "OPS001": {"nodes": ["node-0"], "what": "aclnnIndexPutImpl_IndexPutAiCpu_IndexPut on the AI CPU in node-0's profiler "
               "capture"},
    "VER001": {"nodes": ["node-1"], "what": "node-1's npu-smi shows driver 24.1.rc2.2, node-0's 25.0.rc1.1"},
    "PRF001": {"nodes": ["node-1"], "what": "rank 13 computes 1.7x the median in msprof-analyze's cluster step trace"},
    "MOE002": {"nodes": ["node-1"], "what": "EPLB reports a current max/mean above 2.3 on node-1's terminal session from "
               "78% on, before the MTP collapse"},
    "QNT002": {"nodes": ["node-0"], "what": "node-0 restarted after the incident without --quantization: loaded as float"},
    "MEM001": {"nodes": ["node-0"], "what": "the restart runs out of NPU memory in load_model on four workers"},
}

# The cause chains the rules declare ([[causes]], [[caused_by]]): each chain's start ranks first among its chain,
# every later link's JSON `caused_by` names the one before it, and the first chain's start is the first finding.
CHAINS = [["VER001", "PRF001", "DEV010"],   # node-1's older driver -> rank 13 slow -> its MoE kernel times out
          ["MOE002", "MTP001"],             # EPLB reports a hot rank on node-1 -> MTP acceptance collapses
          ["QNT002", "MEM001"]]             # node-0 restarted as float (BF16) -> out of memory while loading

# The report should rank the planted cause first and attribute the echoes to the failure (JSON `caused_by`).
ROOT_CAUSE = {"rule": "VER001", "echoes": ["COMM003", "ENG001"], "failure": "DEV010"}

# Rule id -> nodes where the rule's text appears only inside prompts or request bodies.
DECOYS = {
    "MEM001": ["node-0", "node-1"],
    "COMM002": ["node-0", "node-1"],
    "COMM004": ["node-1"],
    "DEV011": ["node-0"],
    "QNT001": ["node-1"],
    "DEV010": ["node-0"],  # real only on node-1
    "MTP001": ["node-0"],  # three retried prompts quoting a 0% SpecDecoding line within one interval
    "KV001": ["node-1"],   # three retried prompts quoting a saturated Engine 000 line with a growing queue
}

# What ripgrep looks for per planted rule: the rule's own regex (read from rules/), or for a threshold rule the
# line that carries the signal in the planted state, or for OPS001 the kernel_details cell.
RG_EXTRA = {
    "KV001": r"GPU KV cache usage: (?:9[5-9]|100)\.\d%",
    "MTP001": r"Avg Draft acceptance rate: \d\.\d%",
    "OPS001": r",AI_CPU,",
}

KIND_SHARE = {"vllm": 0.41, "vllm-tty": 0.10, "plog": 0.36, "mindie": 0.10, "profiler": 0.03}

NODES = 2
TP = 4
DP_PER_NODE = 2
HOST_IP = ["192.168.10.11", "192.168.10.12"]
DEV_IP = ["10.20.0.{}", "10.20.1.{}"]
STUCK_RANK = 13  # node-1, DP3 TP1, NPU 5
HCCL_EXEC_TIMEOUT = 300

SERVE_START = 1753236000  # 2025-07-23 02:00:00 (the nodes' wall clock, read as UTC here)
TTY_START = 1753164000    # 2025-07-22 06:00:00
MINDIE_START = 1753077600  # 2025-07-21 06:00:00
US = 1_000_000

BOS, EOS, USER, ASSIST = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>"


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    return int(float(t[:-1]) * units[t[-1]]) if t[-1] in units else int(t)


# --- time formats ------------------------------------------------------------------------------------------------

_SEC_CACHE: dict[tuple[int, str], str] = {}


def _sec(sec: int, fmt: str) -> str:
    key = (sec, fmt)
    s = _SEC_CACHE.get(key)
    if s is None:
        if len(_SEC_CACHE) > 200_000:
            _SEC_CACHE.clear()
        s = _SEC_CACHE[key] = time.strftime(fmt, time.gmtime(sec))
    return s


def vts(t: int) -> str:  # vLLM: 07-23 02:00:01
    return _sec(t // US, "%m-%d %H:%M:%S")


def pts(t: int) -> str:  # CANN: 2025-07-23-02:00:01.123.456
    us = t % US
    return f"{_sec(t // US, '%Y-%m-%d-%H:%M:%S')}.{us // 1000:03d}.{us % 1000:03d}"


def fts(t: int, fmt: str = "%Y%m%d%H%M%S") -> str:  # file names
    return _sec(t // US, fmt) + f"{(t % US) // 1000:03d}"


# --- prompts -----------------------------------------------------------------------------------------------------

class Prompts:
    def __init__(self, rng: random.Random):
        self.rng = rng
        self.tokpool = [str(rng.randrange(100, 128000)) for _ in range(1 << 16)]

    def _fill(self, pool: list[str], target: int, sep: str) -> str:
        r = self.rng
        parts, n = [], 0
        while n < target:
            s = r.choice(pool)
            if r.random() < 0.12:
                s += "\n\n"
            parts.append(s)
            n += len(s) + len(sep)
        return sep.join(parts)

    def question(self) -> str:
        r = self.rng
        x = r.random()
        if x < 0.55:  # Chinese, 200-4000 characters, skewed to the short end
            return self._fill(P.ZH, int(200 + 3800 * r.random() ** 2), "")
        if x < 0.82:
            return self._fill(P.EN, int(100 + 2900 * r.random() ** 2), " ")
        if x < 0.97:
            lead = r.choice(P.ZH if r.random() < 0.6 else P.EN)
            return f"{lead}\n```python\n{r.choice(P.CODE)}{r.choice(P.CODE)}```\n{r.choice(P.ZH)}"
        return f"{r.choice(P.ZH)}\n```\n{r.choice(P.PASTED_BENIGN)}\n```"

    def chat(self, question: str | None = None) -> str:
        r = self.rng
        sysmsg = r.choice(P.SYSTEM)
        turns = ""
        if r.random() < 0.2:
            for _ in range(r.randint(1, 3)):
                turns += f"{USER}{self._fill(P.ZH, r.randint(40, 400), '')}{ASSIST}{self._fill(P.ASSISTANT, r.randint(100, 900), '')}{EOS}"
        q = question if question is not None else self.question()
        return f"{BOS}{sysmsg}{turns}{USER}{q}{ASSIST}<think>\n"

    def token_ids(self, text: str) -> tuple[str, int]:
        wide = (len(text.encode()) - len(text)) // 2  # about the number of CJK characters
        n = max(8, int(wide * 0.72 + (len(text) - wide) * 0.27))
        o = self.rng.randrange(0, len(self.tokpool) - min(n, len(self.tokpool) - 1))
        body = ", ".join(self.tokpool[o:o + n])
        return f"0, 128803, {body}, 128804, 128798, 201", n + 6

    def params(self) -> str:
        r = self.rng
        temp = r.choice([0.6, 0.6, 0.6, 0.7, 1.0, 0.0])
        top_p = r.choice([0.95, 0.95, 1.0, 0.9])
        mx = r.choice([2048, 4096, 8192, 8192, 16384, 32000])
        seed = r.choice(["None", "None", "None", str(r.randrange(1 << 31))])
        return (f"SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, repetition_penalty=1.0, "
                f"temperature={temp}, top_p={top_p}, top_k=0, min_p=0.0, seed={seed}, stop=[], stop_token_ids=[], "
                f"bad_words=[], include_stop_str_in_output=False, ignore_eos=False, max_tokens={mx}, min_tokens=0, "
                f"logprobs=None, prompt_logprobs=None, skip_special_tokens=True, spaces_between_special_tokens=True, "
                f"truncate_prompt_tokens=None, guided_decoding=None, extra_args=None)")


# --- vLLM server ---------------------------------------------------------------------------------------------------

COLOR = {"DEBUG": "\x1b[37m", "INFO": "\x1b[32m", "WARNING": "\x1b[33m", "ERROR": "\x1b[31m", "CRITICAL": "\x1b[35m"}
CAPTURE = [1, 2, 4, 8] + list(range(16, 513, 8))


class Server:
    """One API server with its two DP engines and eight workers, writing one log file."""

    def __init__(self, node: int, rng: random.Random, prompts: Prompts, tty: bool, t0: int, pid_base: int,
                 path: Path, rel: str):
        self.node, self.rng, self.pr, self.tty = node, rng, prompts, tty
        self.dps = [node * DP_PER_NODE + i for i in range(DP_PER_NODE)]
        self.api_pid = pid_base
        self.api = f"(APIServer pid={pid_base})"
        self.engine = {dp: f"(EngineCore_DP{dp} pid={pid_base + 300 + dp})" for dp in self.dps}
        self.worker_pid = {}
        for dp in self.dps:
            for tp in range(TP):
                self.worker_pid[dp, tp] = pid_base + 500 + dp * 40 + tp * 9
        self.rel = rel
        self.fh = open(path, "wb")
        self.eol = "\r\n" if tty else "\n"
        self.bytes = 0
        self.lines = 0
        self.t = t0
        self.pending: list = []  # (t_done, seq, rid, dp, tokens, client)
        self.seq = 0
        self.running = {dp: 0 for dp in self.dps}
        self.tokens = {dp: 0 for dp in self.dps}
        self.prompt_tok = {dp: 0 for dp in self.dps}
        self.kv_force: dict | None = None  # {"dp": .., "step": ..} while saturation is planted
        self.spec_force = False
        self.rate = 1.0
        self.decoys: list[dict] = []
        self.events: list = []
        self.hung = False
        self.eplb: str | None = None  # "balanced" or "hot": EPLB imbalance lines (node-1's terminal session)
        self.hot_reports = 0

    # formatting
    def proc_worker(self, dp: int, tp: int) -> str:
        return f"(Worker_DP{dp}_TP{tp}_EP{dp * TP + tp} pid={self.worker_pid[dp, tp]})"

    def head(self, proc: str, lvl: str, t: int, loc: str) -> str:
        if self.tty:
            return (f"\x1b[1;36m{proc}\x1b[0;0m {COLOR[lvl]}{lvl}\x1b[0m \x1b[90m{vts(t)}\x1b[0m "
                    f"\x1b[90m[{loc}]\x1b[0m ")
        return f"{proc} {lvl} {vts(t)} [{loc}] "

    def line(self, t: int, proc: str, lvl: str, loc: str, msg: str, tag: dict | None = None) -> None:
        head = self.head(proc, lvl, t, loc)
        if "\n" in msg:  # NewLineFormatter: CR LF and the prefix again on every line
            join = ("\r\r\n" if self.tty else "\r\n") + head
            msg = msg.replace("\n", join)
        self.events.append((t, self.seq, head + msg, tag))
        self.seq += 1

    def access(self, t: int, client: str, method: str, path: str, status: str) -> None:
        if self.tty:
            col = "\x1b[32m" if status.startswith("2") else "\x1b[31m"
            text = (f"\x1b[1;36m{self.api}\x1b[0;0m \x1b[32mINFO\x1b[0m:     {client} - \"\x1b[1m{method} {path} "
                    f"HTTP/1.1\x1b[0m\" {col}{status}\x1b[0m")
        else:
            text = f"{self.api} INFO:     {client} - \"{method} {path} HTTP/1.1\" {status}"
        self.events.append((t, self.seq, text, None))
        self.seq += 1

    def flush(self) -> None:
        self.events.sort(key=lambda e: (e[0], e[1]))
        out = []
        n = self.lines
        for _, _, text, tag in self.events:
            n += 1
            if tag is not None:
                self.decoys.append({**tag, "file": self.rel, "line": n})
            n += text.count("\n")
            out.append(text)
        self.events.clear()
        if not out:
            return
        data = (self.eol.join(out) + self.eol).encode()
        self.fh.write(data)
        self.bytes += len(data)
        self.lines = n

    def close(self) -> None:
        self.flush()
        self.fh.close()

    # content
    def startup(self) -> None:
        r, t = self.rng, self.t
        api = self.api
        model = "/data/models/DeepSeek-R1-W8A8"
        self.line(t, api, "INFO", "api_server.py:1839", "vLLM API server version 0.11.0")
        args = {
            "model_tag": model, "host": "0.0.0.0", "port": 8000, "enable_log_requests": True,
            "model": model, "trust_remote_code": True, "max_model_len": 32768, "served_model_name": ["deepseek-r1"],
            "quantization": "ascend", "data_parallel_size": 4, "data_parallel_size_local": 2,
            "data_parallel_address": HOST_IP[0], "data_parallel_rpc_port": 13389, "data_parallel_start_rank": 2 * self.node,
            "tensor_parallel_size": TP, "enable_expert_parallel": True, "gpu_memory_utilization": 0.92,
            "max_num_seqs": 64, "max_num_batched_tokens": 8192, "enable_prefix_caching": True,
            "speculative_config": {"method": "deepseek_mtp", "num_speculative_tokens": 1},
            "additional_config": {"ascend_scheduler_config": {"enabled": False}, "torchair_graph_config":
                                  {"enabled": True, "graph_batch_sizes": CAPTURE[:40], "enable_multistream_moe": True},
                                  "expert_map_path": None, "chunked_prefill_for_mla": True},
            "compilation_config": {"level": 3, "cudagraph_capture_sizes": CAPTURE, "cudagraph_mode": "FULL_DECODE_ONLY"},
        }
        self.line(t, api, "INFO", "utils.py:233", f"non-default args: {args!r}")
        self.line(t, api, "INFO", "__init__.py:36", "Available plugins for group vllm.platform_plugins:")
        self.line(t, api, "INFO", "__init__.py:38", "- ascend -> vllm_ascend:register")
        self.line(t, api, "INFO", "__init__.py:232", "Platform plugin ascend is activated")
        t += 3 * US
        for dp in self.dps:
            eng = self.engine[dp]
            cfg = (f"Initializing a V1 LLM engine (v0.11.0) with config: model='{model}', speculative_config="
                   f"SpeculativeConfig(method='deepseek_mtp', model='{model}', num_spec_tokens=1), tokenizer='{model}', "
                   "skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, tokenizer_revision=None, "
                   "trust_remote_code=True, dtype=torch.bfloat16, max_seq_len=32768, download_dir=None, load_format=auto, "
                   "tensor_parallel_size=4, pipeline_parallel_size=1, data_parallel_size=4, disable_custom_all_reduce=True, "
                   "quantization=ascend, enforce_eager=False, kv_cache_dtype=auto, device_config=npu, "
                   "decoding_config=DecodingConfig(backend='auto', disable_fallback=False, disable_any_whitespace=False, "
                   "disable_additional_properties=False, reasoning_backend='deepseek_r1'), observability_config="
                   "ObservabilityConfig(show_hidden_metrics_for_version=None, otlp_traces_endpoint=None, "
                   "collect_detailed_traces=None), seed=0, served_model_name=deepseek-r1, enable_prefix_caching=True, "
                   "chunked_prefill_enabled=True, use_async_output_proc=True, pooler_config=None, compilation_config="
                   + json.dumps({"level": 3, "debug_dump_path": "", "cache_dir": "", "backend": "",
                                 "custom_ops": ["all"], "splitting_ops": ["vllm.unified_ascend_attention_with_output",
                                                                          "vllm.mla_forward"],
                                 "use_inductor": False, "compile_sizes": [], "inductor_compile_config":
                                 {"enable_auto_functionalized_v2": False}, "use_cudagraph": True,
                                 "cudagraph_num_of_warmups": 1, "cudagraph_capture_sizes": CAPTURE[::-1],
                                 "cudagraph_copy_inputs": False, "full_cuda_graph": False, "max_capture_size": 512,
                                 "local_cache_dir": None}))
            self.line(t, eng, "INFO", "core.py:77", cfg)
            for tp in range(TP):
                w = self.proc_worker(dp, tp)
                self.line(t + US, w, "INFO", "parallel_state.py:1208",
                          f"rank {dp * TP + tp} in world size 16 is assigned as DP rank {dp}, PP rank 0, TP rank {tp}, EP rank {dp * TP + tp}")
                self.line(t + 20 * US, w, "INFO", "model_runner_v1.py:2301", "Starting to load model /data/models/DeepSeek-R1-W8A8...")
                self.line(t + 21 * US, w, "INFO", "model_runner_v1.py:2316", "Loading drafter model...")
                self.line(t + 200 * US, w, "INFO", "default_loader.py:267",
                          f"Loading weights took {180 + r.random() * 20:.2f} seconds")
                self.line(t + 201 * US, w, "INFO", "model_runner_v1.py:2335",
                          f"Loading model weights took {40.6 + r.random() * 0.4:.4f} GB")
                self.line(t + 260 * US, w, "INFO", "worker_v1.py:241", f"Available KV cache memory: {9.8 + r.random():.2f} GiB")
                self.line(t + 300 * US, w, "WARNING", "utils.py:373",
                          "Graph capture sizes are not multiples of num_speculative_tokens + 1; rounding them up.")
            self.line(t + 262 * US, eng, "INFO", "kv_cache_utils.py:1087", "GPU KV cache size: 2,367,872 tokens")
            self.line(t + 262 * US, eng, "INFO", "kv_cache_utils.py:1091",
                      "Maximum concurrency for 32,768 tokens per request: 72.26x")
            self.line(t + 330 * US, eng, "INFO", "core.py:210", "init engine (profile, create kv cache, warmup model) took 141.31 seconds")
        t += 340 * US
        for rt in ("/openapi.json", "/docs", "/health", "/tokenize", "/v1/models", "/v1/chat/completions", "/v1/completions", "/metrics"):
            self.line(t, api, "INFO", "launcher.py:37", f"Route: {rt}, Methods: {'GET' if rt in ('/health', '/metrics', '/docs', '/v1/models', '/openapi.json') else 'POST'}")
        self.line(t, api, "INFO", "api_server.py:1971", "Starting vLLM API server 0 on http://0.0.0.0:8000")
        self.access(t + US, "127.0.0.1:50122", "GET", "/health", "200 OK")
        self.t = t + 10 * US
        self.flush()

    def client(self) -> str:
        r = self.rng
        return f"10.0.{2 + self.node}.{r.randint(2, 250)}:{r.randint(30000, 62000)}"

    def request(self, t: int, text: str | None = None, tag: dict | None = None, dp: int | None = None) -> None:
        r = self.rng
        rid = f"chatcmpl-{r.getrandbits(128):032x}"
        chat = self.pr.chat(text)
        ids, ntok = self.pr.token_ids(chat)
        msg = (f"Received request {rid}: prompt: {chat!r}, params: {self.pr.params()}, prompt_token_ids: [{ids}], "
               f"lora_request: None, prompt_adapter_request: None.")
        self.line(t, self.api, "INFO", "logger.py:43", msg, tag)
        self.line(t, self.api, "INFO", "async_llm.py:345", f"Added request {rid}.")
        dp = self.rng.choice(self.dps) if dp is None else dp
        self.running[dp] += 1
        self.tokens[dp] += ntok
        self.prompt_tok[dp] += ntok
        done = t + int((4 + r.expovariate(1 / 35)) * US)
        heapq.heappush(self.pending, (done, self.seq, rid, dp, ntok, self.client()))

    def tick(self) -> None:
        """Ten seconds of serving."""
        r, t0 = self.rng, self.t
        t1 = t0 + 10 * US
        n = int(r.expovariate(1 / (8 * self.rate)) + 0.5) if not self.hung else (1 if r.random() < 0.3 else 0)
        for _ in range(n):
            self.request(t0 + r.randrange(10 * US))
        while self.pending and self.pending[0][0] < t1 and not self.hung:
            done, _, rid, dp, ntok, client = heapq.heappop(self.pending)
            if self.kv_force and dp == self.kv_force["dp"] and r.random() < 0.6:
                heapq.heappush(self.pending, (done + 10 * US, self.seq, rid, dp, ntok, client))  # slowed down
                self.seq += 1
                continue
            self.running[dp] -= 1
            self.tokens[dp] -= ntok
            self.line(done, self.api, "INFO", "async_llm.py:402", f"Finished request {rid}.")
            self.access(done, client, "POST", "/v1/chat/completions", "200 OK")
        self.access(t0 + 3 * US, f"10.0.9.{10 + self.node}:{r.randint(40000, 60000)}", "GET", "/health", "200 OK")
        if (t0 // US) % 15 < 10:
            self.access(t0 + 6 * US, f"10.0.9.3:{r.randint(40000, 60000)}", "GET", "/metrics", "200 OK")
        if r.random() < 0.02:
            self.line(t0 + 5 * US, self.api, "WARNING", "protocol.py:81",
                      "The following fields were present in the request but ignored: {'stream_options'}")
        if r.random() < 0.004:
            dp, tp = r.choice(self.dps), r.randrange(TP)
            self.line(t0 + 7 * US, self.proc_worker(dp, tp), "WARNING", "model_runner_v1.py:1408",
                      f"Padded batch size {r.choice(CAPTURE[4:])} exceeds graph capture sizes, running this step eagerly.")
        if not self.hung:
            self.metrics(t1)
        if self.eplb is not None and (t0 // US) % 60 < 10:  # vllm-ascend's EPLB worker, once a minute
            hot = self.eplb == "hot"
            self.hot_reports += hot
            mean, mx = (1.31 + r.random() * 0.1, 2.3 + r.random() * 0.3) if hot else (1.02 + r.random() * 0.02, 1.08 + r.random() * 0.05)
            dp = self.dps[0]
            self.line(t0 + 8 * US, self.proc_worker(dp, 0), "INFO", "eplb_worker.py:318",
                      f"[eplb/worker] Expert hotness imbalance, current: mean={mean:.3f} max={mx:.3f}, updated: "
                      f"mean={1.03 + r.random() * 0.02:.3f} max={1.1 + r.random() * 0.04:.3f}")
        self.t = t1
        self.flush()

    def metrics(self, t: int) -> None:
        r = self.rng
        for dp in self.dps:
            running = min(self.running[dp], 64)
            waiting = max(0, self.running[dp] - 64)
            kv = min(95.0, 100.0 * self.tokens[dp] / 2_367_872 * 6 + 8 + r.random() * 3)
            gen = running * (17 + r.random() * 3)
            prompt_tps = self.prompt_tok[dp] / 10
            self.prompt_tok[dp] = 0
            if self.kv_force and dp == self.kv_force["dp"]:
                step = self.kv_force["step"]
                self.kv_force["step"] += 1
                kv = min(99.9, 96.0 + step * 0.4 + r.random() * 0.3)
                waiting = 1 + step * 5 + r.randint(0, 4)
                running = 64
                gen = 310 + r.random() * 60
                prompt_tps = r.random() * 200
            self.line(t, self.api, "INFO", "loggers.py:123",
                      f"Engine {dp:03d}: Avg prompt throughput: {prompt_tps:.1f} tokens/s, Avg generation throughput: "
                      f"{gen:.1f} tokens/s, Running: {running} reqs, Waiting: {waiting} reqs, GPU KV cache usage: {kv:.1f}%, "
                      f"Prefix cache hit rate: {8 + r.random() * 6:.1f}%")
            acc = 0.78 + r.random() * 0.06
            if self.spec_force:
                acc = r.random() * 0.03
            drafted = max(1, int(gen * 10 / (1 + acc)))
            accepted = int(drafted * acc)
            self.line(t, self.api, "INFO", "metrics.py:96",
                      f"SpecDecoding metrics: Mean acceptance length: {1 + acc:.2f}, Accepted throughput: "
                      f"{accepted / 10:.2f} tokens/s, Drafted throughput: {drafted / 10:.2f} tokens/s, Accepted: {accepted} "
                      f"tokens, Drafted: {drafted} tokens, Per-position acceptance rate: {acc:.3f}, Avg Draft acceptance "
                      f"rate: {acc * 100:.1f}%")

    def decoy_prompt(self, rule: str, text: str) -> None:
        self.request(self.t + 2 * US, text, {"rule": rule, "node": f"node-{self.node}"})

    def decoy_burst(self, rule: str, texts: list[str]) -> None:
        for i, text in enumerate(texts):  # a client retrying within one interval, after the metric lines
            self.request(self.t + (2 + i) * US, text, {"rule": rule, "node": f"node-{self.node}"})

    # the incident
    def worker_traceback(self, t: int, dp: int, tp: int, err: str, extra: list[str]) -> None:
        w = self.proc_worker(dp, tp)
        loc = "multiproc_executor.py:671"
        tb = ["WorkerProc hit an exception.", "Traceback (most recent call last):",
              '  File "/vllm-workspace/vllm/vllm/v1/executor/multiproc_executor.py", line 666, in worker_busy_loop',
              "    output = func(*args, **kwargs)",
              '  File "/vllm-workspace/vllm-ascend/vllm_ascend/worker/worker_v1.py", line 276, in execute_model',
              "    output = self.model_runner.execute_model(scheduler_output,",
              '  File "/vllm-workspace/vllm-ascend/vllm_ascend/worker/model_runner_v1.py", line 2012, in execute_model',
              "    valid_sampled_token_ids = sampled_token_ids.tolist()",
              err, *extra]
        self.line(t, w, "ERROR", loc, "\n".join(tb))

    def stuck_rank(self, t: int) -> None:
        dp, tp = divmod(STUCK_RANK, TP)
        pid = self.worker_pid[dp, tp]
        self.worker_traceback(t, dp, tp, "RuntimeError: ACL stream synchronize failed, error code:507014", [
            f"[ERROR] {pts(t)[:19]} (PID:{pid}, Device:{STUCK_RANK % 8}, RankID:{STUCK_RANK}) ERR00100 PTA call acl api failed"])

    def waiting_ranks(self, t: int) -> None:
        r = self.rng
        for dp in self.dps:
            for tp in range(TP):
                rank = dp * TP + tp
                if rank == STUCK_RANK:
                    continue
                pid = self.worker_pid[dp, tp]
                tt = t + r.randrange(2 * US)
                self.worker_traceback(tt, dp, tp, "RuntimeError: ACL stream synchronize failed, error code:507048", [
                    f"[ERROR] {pts(tt)[:19]} (PID:{pid}, Device:{rank % 8}, RankID:{rank}) ERR00100 PTA call acl api failed",
                    f"EI0002: [PID: {pid}] {pts(tt)} The wait execution of the Notify register times out. Reason: The "
                    f"Notify register has not received the Notify record from remote rank [{STUCK_RANK}].",
                    f"        Possible Cause: 1. An exception occurs during the execution on some NPUs in the cluster. As a "
                    f"result, collective communication operation failed.2. The execution speed on some NPU in the cluster "
                    f"is too slow to complete a communication operation within the timeout interval. (default {HCCL_EXEC_TIMEOUT}s, "
                    f"set by HCCL_EXEC_TIMEOUT)"])

    def engine_dead(self, t: int) -> None:
        for dp in self.dps:
            eng = self.engine[dp]
            self.line(t, eng, "ERROR", "core.py:710", "\n".join([
                "EngineCore encountered a fatal error.", "Traceback (most recent call last):",
                '  File "/vllm-workspace/vllm/vllm/v1/engine/core.py", line 701, in run_engine_core',
                "    engine_core.run_busy_loop()",
                '  File "/vllm-workspace/vllm/vllm/v1/executor/multiproc_executor.py", line 264, in get_response',
                "    raise RuntimeError(",
                "RuntimeError: Worker failed with error 'ACL stream synchronize failed, error code:507048', please check "
                "the stack trace above for the root cause"]))
        t += US
        self.line(t, self.api, "ERROR", "async_llm.py:480", "\n".join([
            "AsyncLLM output_handler failed.", "Traceback (most recent call last):",
            '  File "/vllm-workspace/vllm/vllm/v1/engine/async_llm.py", line 439, in output_handler',
            "    outputs = await engine_core.get_output_async()",
            '  File "/vllm-workspace/vllm/vllm/v1/engine/core_client.py", line 846, in get_output_async',
            "    raise self._format_exception(outputs) from None",
            "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the "
            "root cause."]))
        while self.pending:
            _, _, rid, dp, ntok, client = heapq.heappop(self.pending)
            self.access(t + US, client, "POST", "/v1/chat/completions", "500 Internal Server Error")
        self.line(t + 2 * US, self.api, "INFO", "launcher.py:99", "Shutting down FastAPI HTTP server.")

    def hang_warning(self, t: int) -> None:
        for dp in self.dps:
            self.line(t, self.engine[dp], "WARNING", "shm_broadcast.py:466",
                      "No available shared memory broadcast block found in 60 seconds. This typically happens when some "
                      "processes are hanging or doing some time-consuming work (e.g. compilation, weight/kv cache quantization).")

    def shutdown(self) -> None:
        t = self.t + 2 * US
        self.line(t, self.api, "INFO", "launcher.py:99", "Shutting down FastAPI HTTP server.")
        pre = f"\x1b[1;36m{self.api}\x1b[0;0m \x1b[32mINFO\x1b[0m:     " if self.tty else f"{self.api} INFO:     "
        for text in ("Shutting down", "Waiting for application shutdown.", "Application shutdown complete."):
            self.events.append((t, self.seq, pre + text, None))
            self.seq += 1


def gen_vllm(out: Path, seed: int, budget_plain: int, budget_tty: int, manifest: dict) -> dict:
    """Both nodes' serving logs in lock step (the incident spans them), then the terminal sessions."""
    rng = random.Random(f"{seed}-vllm")
    prompts = Prompts(random.Random(f"{seed}-prompts"))
    per_node = budget_plain // NODES
    servers = []
    for n in range(NODES):
        rel = f"node-{n}/vllm/vllm-serve-20250723.log"
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        s = Server(n, random.Random(f"{seed}-vllm-{n}"), prompts, False, SERVE_START * US, 3280921 + n * 7000, out / rel, rel)
        s.startup()
        servers.append(s)
    s0, s1 = servers
    decoys0 = {0.12: ("MEM001", P.ASK_ABOUT_ERRORS["MEM001"][0]), 0.45: ("COMM002", P.ASK_ABOUT_ERRORS["COMM002"][0]),
               0.50: ("DEV011", P.ASK_ABOUT_ERRORS["DEV011"][0]), 0.60: ("DEV010", P.ASK_ABOUT_ERRORS["DEV010"][0])}
    decoys1 = {0.20: ("COMM002", P.ASK_ABOUT_ERRORS["COMM002"][1]), 0.40: ("COMM004", P.ASK_ABOUT_ERRORS["COMM004"][0]),
               0.55: ("QNT001", P.ASK_ABOUT_ERRORS["QNT001"][0]), 0.75: ("MEM001", P.ASK_ABOUT_ERRORS["MEM001"][1])}
    bursts_done = set()
    kv_window = (0.30, 0.36)
    trigger = 0.97  # the rest of the budget is the hang and the failure
    incident = None
    while True:
        f0, f1 = s0.bytes / per_node, s1.bytes / per_node
        for s, f, decoys in ((s0, f0, decoys0), (s1, f1, decoys1)):
            for at in [a for a in decoys if f >= a]:
                rule, text = decoys.pop(at)
                s.decoy_prompt(rule, text)
        if f0 >= kv_window[0] and "kv-real" not in bursts_done:
            bursts_done.add("kv-real")
            s0.kv_force = {"dp": 0, "step": 0}
        elif s0.kv_force and f0 >= kv_window[1] and s0.kv_force["step"] >= 12:  # at least two minutes
            s0.kv_force = None
        if f0 >= 0.70 and "mtp" not in bursts_done:
            bursts_done.add("mtp")
            s0.decoy_burst("MTP001", [P.PASTED_SPEC.format(drafted_tps=60.0 + i, drafted=600 + i) for i in range(3)])
        if f1 >= 0.65 and "kv" not in bursts_done:
            bursts_done.add("kv")
            s1.decoy_burst("KV001", [P.PASTED_KV.format(waiting=w, kv=k) for w, k in ((8, 99.1), (23, 99.5), (57, 99.8))])
        if (f0 + f1) / 2 >= trigger:
            incident = s0.t
            break
        s0.tick()
        s1.tick()
    # the incident: rank 13 stops in an aicore timeout; everyone else hangs in the collective until HCCL_EXEC_TIMEOUT
    s1.stuck_rank(incident + 3 * US)
    for s in servers:
        s.hung = True
    t_timeout = incident + HCCL_EXEC_TIMEOUT * US
    k = 0
    while s0.t < t_timeout:
        for s in servers:
            if k % 6 == 5:
                s.hang_warning(s.t)
            s.tick()
        k += 1
    for s in servers:
        s.waiting_ranks(t_timeout + 2 * US)
        s.engine_dead(t_timeout + 5 * US)
        s.close()
    manifest["incident"] = {"aicore_timeout": pts(incident + 3 * US), "hccl_timeout": pts(t_timeout + 2 * US),
                            "end": pts(t_timeout + 8 * US)}
    files = {s.rel: "vllm" for s in servers}
    decoys = [d for s in servers for d in s.decoys]
    # terminal sessions of the day before (node-1's ends with the MTP collapse)
    per_tty = budget_tty // NODES
    for n in range(NODES):
        rel = f"node-{n}/vllm/vllm-serve-20250722-tty.log"
        s = Server(n, random.Random(f"{seed}-tty-{n}"), prompts, True, TTY_START * US, 2710433 + n * 5000, out / rel, rel)
        s.startup()
        s.rate = 0.8
        tty_decoy = n == 0
        collapsed = 0
        while s.bytes < per_tty or (n == 1 and collapsed < 8):  # the collapse lasts 80 s at least
            f = s.bytes / per_tty
            if n == 1:  # EPLB reports balanced experts, then a hot rank from 78% on; acceptance collapses at 85%
                s.eplb = "hot" if f >= 0.78 else "balanced"
            if n == 1 and f >= 0.85 and s.hot_reports >= 2:  # the imbalance is reported before the collapse
                s.spec_force = True
                collapsed += 1
            if tty_decoy and f >= 0.5:
                tty_decoy = False
                s.decoy_prompt("MEM001", P.ASK_ABOUT_ERRORS["MEM001"][1])
            s.tick()
        s.shutdown()
        s.close()
        files[rel] = "vllm-tty"
        decoys += s.decoys
    manifest["decoy_lines"] = manifest.get("decoy_lines", []) + decoys
    return {"files": files, "t_end": t_timeout + 8 * US, "incident": incident, "servers": servers}


# --- CANN plog and device logs -----------------------------------------------------------------------------------

def _hex(r: random.Random, bits: int = 44) -> str:
    return f"0x{r.getrandbits(bits) | (1 << (bits - 1)):x}"


def plog_templates(ctx: dict):
    """(weight, level, module, function(rng, ctx) -> the text after the timestamp) for one rank's plog."""
    pid, rank, dev, ip = ctx["pid"], ctx["rank"], ctx["dev"], ctx["ip"]

    def tid(r):
        return pid + r.choice((0, 0, 0, 17, 23, 31, 96))

    def entry(r):
        op = r.choice(("HcclAllReduce", "HcclAllGather", "HcclReduceScatter", "HcclAlltoAllV", "HcclBroadcast"))
        return (f"[hccl_communicator.cc:{r.choice((1833, 1902, 2177))}] [{tid(r)}]Entry-{op}: tag[{op[4:]}_{ip}%enp189s0f{dev % 2}"
                f"_60000_0_{r.getrandbits(40)}], sendBuf[{_hex(r)}], recvBuf[{_hex(r)}], count[{r.randint(1, 1 << 22)}], "
                f"dataType[bfp16], op[sum], localRank[{rank % 8}], streamId[{r.randint(2, 60)}],comm[{_hex(r)}], "
                f"deviceLogicId[{dev}]")

    def take_time(r):
        return (f"[op_base.cc:{r.choice((1402, 1455))}] [{tid(r)}][HcclAllGatherV] opTag[{_hex(r, 32)}] rankSize[16] "
                f"count[{r.randint(1, 1 << 20)}] dataType[bfp16] take time [{r.randint(20, 4000)}]us")

    def launch(r):
        return (f"[dispatcher_pub.cc:{r.randint(300, 900)}] [{tid(r)}]LaunchTask: stream[{r.randint(2, 60)}] "
                f"task[{r.randint(1, 65535)}] type[notify_wait] remoteRank[{r.randrange(16)}]")

    def rt_sync(r):
        return (f"[stream.cc:{r.choice((1087, 1120))}]{tid(r)} StreamSynchronize: device_id={dev}, stream_id="
                f"{r.randint(2, 60)}, timeout=-1ms, task_id={r.randint(1, 65535)}")

    def rt_report(r):
        return (f"[engine.cc:{r.choice((733, 811, 902))}]{tid(r)} ReportTask: device_id={dev}, stream_id={r.randint(2, 60)}, "
                f"task_id={r.randint(1, 65535)}, task_type={r.choice(('0(kernel)', '2(event_record)', '24(notify_wait)'))}, "
                f"sqe_id={r.randint(0, 2047)}")

    def ge_run(r):
        return (f"[graph_manager.cc:{r.choice((1204, 1299, 3471))}]{tid(r)} RunGraphAsync: session_id 0, graph_id "
                f"{r.randint(1, 64)}, input num {r.randint(1, 12)}, iteration {r.randint(1, 1 << 20)}")

    def acl_exec(r):
        return (f"[model.cpp:{r.choice((1412, 1530))}]{tid(r)} aclmdlExecuteAsync: modelId={r.randint(1, 40)}, "
                f"stream={_hex(r)}, cost {r.randint(5, 900)}us")

    def prof(r):
        return f"[msprof_callback_impl.cpp:79] >>> (tid:{tid(r)}) MsprofCtrlCallback called, type: {r.choice((255, 1, 2))}"

    def tdt(r):
        return (f"[process_mode_manager.cpp:{r.choice((103, 188))}][OpenProcess][tid:{tid(r)}] [ProcessModeManager] "
                f"deviceId={dev}, hostPid={pid}, qs process already running")

    def atrace(r):
        return f"[awatchdog_monitor.c:149](tid:{tid(r)}) watchdog check pass, moduleId {r.choice((3, 7, 22))}, timeout : 300s"

    def hccp(r):
        return (f"[ra_host.c:{r.choice((680, 911))}]tid:{tid(r)},ra_send_wrlist({r.randint(900, 999)}) : [send][ra_rdma]"
                f"qpn[{r.randint(100, 4000)}] post send wr num[{r.randint(1, 64)}] ok")

    def w_rt(r):
        return (f"[device.cc:{r.choice((1501, 1622))}]{tid(r)} GetDevMsg: device_id={dev}, msg type "
                f"{r.choice((6, 9))} is not supported by this driver, skip.")

    def w_hccl(r):
        return (f"[hccl_impl.cc:{r.randint(400, 700)}] [{tid(r)}][Config] env HCCL_OP_EXPANSION_MODE is not set, use "
                f"default value [{r.choice(('HOST', 'AIV'))}]")

    def w_ge(r):
        d = r.choice(P.PATH_DIRS)
        return (f"[model_cache.cc:{r.randint(200, 400)}]{tid(r)} LoadCache: cache dir {d}/kernel_meta_{rank} is not "
                f"writable, use {r.choice(('/root/atc_data', '/tmp/kernel_meta'))} instead")

    def e_drv(r):
        return (f"[ascend_hal.c:{r.randint(300, 900)}][tid:{tid(r)}] halGetDeviceInfo: device_id={dev}, module_type="
                f"{r.choice((0, 6))}, info_type={r.choice((27, 40))}, ret=0x{r.choice(('b', 'd'))}")

    def e_prof(r):
        return (f"[prof_acl_mgr.cpp:{r.randint(100, 300)}] >>> (tid:{tid(r)}) Profiling config is empty, skip "
                f"starting the device {dev} task")

    def e_rt(r):
        return (f"[api_c.cc:{r.choice((2311, 2419))}]{tid(r)} rtGetDevMsg: ErrCode={r.choice((207000, 107000))}, "
                f"desc=[feature not support], InnerCode=0x{r.getrandbits(28):07x}")

    def e_hccp(r):
        return (f"[ra_peer.c:{r.randint(100, 400)}]tid:{tid(r)},ra_peer_get_ifaddrs({r.randint(100, 400)}) : [get][ifaddrs]"
                f"interface {r.choice(('docker0', 'virbr0'))} has no rdma capability, skip")

    def e_path(r):
        d = r.choice(P.PATH_DIRS)
        return (f"[dump_manager.cc:{r.randint(100, 300)}]{tid(r)} Open dump file {d}/dump/{rank}/op_{r.getrandbits(24):x}.bin "
                f"failed, errno 13 (Permission denied)")

    return [
        (22, "INFO", "HCCL", entry), (10, "INFO", "HCCL", take_time), (8, "INFO", "HCCL", launch),
        (12, "INFO", "RUNTIME", rt_sync), (12, "INFO", "RUNTIME", rt_report), (6, "INFO", "GE", ge_run),
        (6, "INFO", "ASCENDCL", acl_exec), (4, "INFO", "HCCP", hccp), (3, "INFO", "ATRACE", atrace),
        (5, "EVENT", "PROFILING", prof), (3, "EVENT", "TDT", tdt),
        (1.6, "WARNING", "RUNTIME", w_rt), (1.2, "WARNING", "HCCL", w_hccl), (0.8, "WARNING", "GE", w_ge),
        (0.6, "ERROR", "DRV", e_drv), (0.5, "ERROR", "PROFILING", e_prof), (0.6, "ERROR", "RUNTIME", e_rt),
        (0.5, "ERROR", "HCCP", e_hccp), (0.4, "ERROR", "GE", e_path),
    ]


def device_templates(ctx: dict):
    dev, apid = ctx["dev"], ctx["aicpu_pid"]

    def sched(r):
        return (f"[aicpusd_event_process.cpp:{r.randint(100, 900)}][tid:{apid + r.randint(1, 6)}] Process task, "
                f"stream_id={r.randint(2, 60)}, task_id={r.randint(1, 65535)}, kernel_type={r.choice(('CPU_KERNEL', 'KFC'))}")

    def so(r):
        return (f"[ae_so_manager.cc:{r.randint(100, 300)}][tid:{apid + r.randint(1, 6)}] Load so "
                f"{r.choice(('libcpu_kernels.so', 'libpt_kernels.so', 'libccl_kernel.so'))} success, cost {r.randint(1, 90)}us")

    def drv(r):
        return f"[devdrv_manager.c:{r.randint(1000, 3000)}][tid:{apid}] heartbeat ok, device_id={dev}, count={r.randint(1, 1 << 24)}"

    def ts(r):
        return (f"[tsch_stream.c:{r.randint(100, 900)}][tid:{apid + 40}] sq {r.randint(0, 2047)} head {r.randint(0, 1023)} "
                f"tail {r.randint(0, 1023)}")

    def w(r):
        return (f"[tdt_server.cpp:{r.randint(100, 600)}][tid:{apid + 2}] queue {r.randint(1, 32)} is full, "
                f"wait {r.randint(1, 20)}ms")

    def e(r):
        d = r.choice(P.PATH_DIRS)
        return f"[aicpu_sharder.cc:{r.randint(100, 300)}][tid:{apid + 3}] load config {d}/aicpu_config.json failed, use default"

    return [(40, "INFO", "AICPU", sched), (12, "INFO", "AICPU", so), (18, "INFO", "DRV", drv), (20, "INFO", "TS", ts),
            (3, "WARNING", "AICPU", w), (1.5, "ERROR", "AICPU", e)]


def write_cann_file(path: Path, rng: random.Random, templates, pname: str, pid: int, t0: int, t1: int, budget: int,
                    head_lines: list[tuple[str, str, str]], specials: list[tuple[int, list[tuple[str, str, str]]]]) -> int:
    """Noise from ``templates`` over [t0, t1] up to ``budget`` bytes; ``specials`` (time, [(level, module, body)])
    are written when the clock passes their time (or at the end)."""
    weights = [w for w, *_ in templates]
    picks = [(lvl, mod, fn) for _, lvl, mod, fn in templates]
    sample = [f"[{lvl}] {mod}({pid},{pname}):{pts(t0)} " + fn(rng) for lvl, mod, fn in
              (picks[i] for i in rng.choices(range(len(picks)), weights, k=500))]
    avg = sum(len(s) + 1 for s in sample) / len(sample)
    gap = max(1, int((t1 - t0) / max(1, budget / avg)))
    specials = sorted(specials, key=lambda s: s[0])
    out, size, t = [], 0, t0
    with open(path, "wb") as fh:
        for lvl, mod, body in head_lines:
            out.append(f"[{lvl}] {mod}({pid},{pname}):{pts(t)} {body}")
            t += rng.randrange(200)
        while size < budget:
            batch = max(16, min(4096, int((budget - size) / avg)))
            idx = rng.choices(range(len(picks)), weights, k=batch)
            for i in idx:
                t += int(gap * (0.2 + 1.6 * rng.random()))
                while specials and specials[0][0] <= t:
                    st, lines = specials.pop(0)
                    for j, (l2, m2, b2) in enumerate(lines):
                        out.append(f"[{l2}] {m2}({pid},{pname}):{pts(st + j * 37)} {b2}")
                lvl, mod, fn = picks[i]
                out.append(f"[{lvl}] {mod}({pid},{pname}):{pts(t)} {fn(rng)}")
            data = ("\n".join(out) + "\n").encode()
            out.clear()
            fh.write(data)
            size += len(data)
        for st, lines in specials:
            for j, (l2, m2, b2) in enumerate(lines):
                out.append(f"[{l2}] {m2}({pid},{pname}):{pts(max(st, t) + j * 37)} {b2}")
        if out:
            data = ("\n".join(out) + "\n").encode()
            fh.write(data)
            size += len(data)
    return size


def gen_cann(out: Path, seed: int, budget: int, vl: dict) -> dict:
    files = {}
    per_node = budget // NODES
    incident, t_end = vl["incident"], vl["t_end"]
    t_stuck = incident + 3 * US - 900_000
    t_timeout = incident + HCCL_EXEC_TIMEOUT * US
    for s in vl["servers"]:
        n = s.node
        for (dp, tp), pid in sorted(s.worker_pid.items()):
            rank = dp * TP + tp
            dev = rank % 8
            ip = DEV_IP[n].format(11 + dev)
            rng = random.Random(f"{seed}-plog-{rank}")
            t0 = SERVE_START * US + 2 * US + rank * 1117
            stamp = fts(t0)
            ctx = {"pid": pid, "rank": rank, "dev": dev, "ip": ip, "aicpu_pid": 1200 + dev * 11}
            head = [
                ("INFO", "HCCL", f"[externalinput.cc:372] [{pid}]HCCL_CONNECT_TIMEOUT set by default to [120]s"),
                ("INFO", "HCCL", f"[externalinput.cc:333] [{pid}]HCCL_EXEC_TIMEOUT set by environment to [{HCCL_EXEC_TIMEOUT}]s"),
                ("INFO", "HCCL", f"[externalinput.cc:401] [{pid}]HCCL_RDMA_TIMEOUT set by default to [20]"),
                ("INFO", "HCCL", f"[externalinput.cc:219] [{pid}]HCCL_BUFFSIZE set by environment to [200]MB"),
                ("INFO", "HCCL", f"[op_base.cc:612] [{pid}]CannVersion[8.2.RC1], rankTable[/etc/hccl_16p.json] rank[{rank}] rankSize[16] "
                                 f"deviceLogicId[{dev}] deviceIp[{ip}] hostIp[{HOST_IP[n]}]"),
                ("INFO", "RUNTIME", f"[api_impl.cc:211]{pid} SetDevice: device_id={dev}, ts_id=0, driver version 24.1.rc3.7"),
            ]
            specials = []
            if rank == STUCK_RANK:
                k = "MoeDistributeCombineV2_ND_ND_BF16_INT8_high_performance_2000001002"
                tid = pid + 96
                specials.append((t_stuck, [
                    ("ERROR", "RUNTIME", f"[stars_engine.cc:1548]{tid} ProcLogicCqReport:Task run failed, device_id={dev}, "
                                         "stream_id=62, task_id=41877, sqe_type=0(ffts), errType=0x1(task exception), sqSwStatus=0x2110"),
                    ("ERROR", "RUNTIME", f"[device_error_proc.cc:1412]{tid} ProcessStarsCoreErrorInfo:Kernel task happen error, "
                                         "retCode=0x25, [aicore timeout]."),
                    ("ERROR", "RUNTIME", f"[davinci_kernel_task.cc:1306]{tid} PrintErrorInfo:Aicore kernel execute failed, "
                                         f"device_id={dev}, stream_id=62, report_stream_id=62, task_id=41877, flip_num=3, fault "
                                         f"kernel_name={k}, fault kernel info ext=none, program id=187, hash=7741093011218356402."),
                    ("ERROR", "RUNTIME", f"[stream.cc:1097]{tid} GetError: Stream Synchronize failed, stream_id=62, "
                                         "retCode=0x25, [aicore timeout]."),
                    ("ERROR", "RUNTIME", f"[api_c.cc:2402]{tid} rtStreamSynchronizeWithTimeout: ErrCode=507014, "
                                         "desc=[aicore timeout], InnerCode=0x7150050"),
                    ("ERROR", "ASCENDCL", f"[stream.cpp:231]{tid} aclrtSynchronizeStreamWithTimeout: synchronize stream "
                                          "failed, runtime result = 507014"),
                ]))
            else:
                tid = pid + 96
                tt = t_timeout + rng.randrange(2 * US)
                arrival = time.strftime("%a %b %d %H:%M:%S %Y", time.gmtime((t_stuck // US) - 1))
                specials.append((tt, [
                    ("ERROR", "HCCL", f"[task_exception_handler.cc:740] [{tid}][TaskExceptionHandler]The error from device"
                                      f"(chipId:{dev}, dieId:0), serial number is {rng.randint(1, 9)}, notify wait timeout "
                                      f"occurred during task execution, stream_id:{rng.randint(40, 90)}, sq_id:{rng.randint(40, 90)}, "
                                      f"task_id:{rng.randint(1, 65535)}, notify_id={rng.randint(100, 900)}, timeout={HCCL_EXEC_TIMEOUT}s."),
                    ("ERROR", "HCCL", f"[task_exception_handler.cc:812] [{tid}]        Cluster Exception Location[IP/ID]:"
                                      f"[{DEV_IP[1].format(11 + STUCK_RANK % 8)}/{STUCK_RANK}], Arrival Time:[{arrival}], "
                                      "ExceptionType:[Stuck Occurred], Possible Reason:1.Host process is stuck, 2.Device task is stuck"),
                    ("ERROR", "HCCL", f"[task_exception_handler.cc:823] [{tid}][TaskExceptionHandler]tag[AlltoAllV_{ip}"
                                      f"%enp189s0f0_60000_0_1753236331], remote rank[{STUCK_RANK}], opIndex[{rng.randint(1, 1 << 20)}]"),
                ]))
            rel = f"node-{n}/ascend/log/debug/plog/plog-{pid}_{stamp}.log"
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            write_cann_file(out / rel, rng, plog_templates(ctx), "python3", pid, t0, t_end, int(per_node / 8 * 0.75),
                            head, specials)
            files[rel] = "plog"
            rel = f"node-{n}/ascend/log/debug/device-{dev}/device-{pid}_{stamp}.log"
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            write_cann_file(out / rel, rng, device_templates(ctx), "aicpu_scheduler", ctx["aicpu_pid"], t0, t_end,
                            int(per_node / 8 * 0.25), [("INFO", "AICPU", f"[aicpusd_main.cpp:301][tid:{ctx['aicpu_pid']}] "
                                                                          f"aicpu scheduler start, device_id={dev}, host_pid={pid}")], [])
            files[rel] = "plog"
    return files


# --- MindIE ------------------------------------------------------------------------------------------------------

def gen_mindie(out: Path, seed: int, budget: int, manifest: dict) -> dict:
    files = {}
    per_node = budget // NODES
    for n in range(NODES):
        rng = random.Random(f"{seed}-mindie-{n}")
        pr = Prompts(random.Random(f"{seed}-mindie-prompts-{n}"))
        spid, llm_pid = 64884 + n * 1000, 64924 + n * 1000
        t0 = MINDIE_START * US + n * 7 * US
        stamp = fts(t0, "%Y%m%d%H%M%S")
        d = f"node-{n}/mindie/log/debug"
        (out / d).mkdir(parents=True, exist_ok=True)
        srel, lrel = f"{d}/mindie-server_{spid}_{stamp}.log", f"{d}/mindie-llm_{llm_pid}_{stamp}.log"
        day = time.gmtime(t0 // US).tm_mday

        def s_ts(t):  # C++ server: .mmm+08:00
            return f"[{_sec(t // US, '%Y-%m-%d %H:%M:%S')}.{(t % US) // 1000:03d}+08:00]"

        def srv(t, lvl, loc, sub, msg):
            return f"{s_ts(t)} [{spid}] [{spid + 2}] [mindie-server] [{lvl}] [{loc}] : [{sub}] {msg}"

        def model(t, lvl, loc, msg):  # Python model wrapper: +0800, "milliseconds" = day of month, TAB after [Model]
            return (f"[{_sec(t // US, '%Y-%m-%d %H:%M:%S')}.{day:03d}+0800] [{llm_pid}] [281465078149472] [mindie-server] "
                    f"[{lvl}] [{loc}] : [Model]\t>>> {msg}")

        def llm_cpp(t, lvl, loc, msg):
            return f"[{_sec(t // US, '%Y-%m-%d %H:%M:%S')}.{t % US:06d}] [{llm_pid}] [281464256065888] [llm] [{lvl}] [{loc}] {msg}"

        def llm_py(t, lvl, loc, msg):
            return f"[{_sec(t // US, '%Y-%m-%d %H:%M:%S')},{(t % US) // 1000:03d}] [{llm_pid}] [281473111111111] [llm] [{lvl}] [{loc}] : {msg}"

        def atb(t, lvl, loc, msg):
            return f"[{_sec(t // US, '%Y-%m-%d %H:%M:%S')}.{(t % US) // 10:05d}] [{lvl}] [{llm_pid + 108}] [{loc}] {msg}"

        slines = [f"{s_ts(t0)} [{spid}] [{spid + 2}] [mindie-server] ===init log===", f"{s_ts(t0)} [{spid}] ===init log===",
                  srv(t0, "INFO", "config_manager.cpp:211", "config", "Start to parse ranktable file"),
                  srv(t0, "INFO", "config_manager.cpp:260", "config", "Finished parsing ranktable file."),
                  srv(t0, "INFO", "config_manager.cpp:301", "config", "Update worldSize and npuDeviceIds of backend config "
                      "successfully for Multi Nodes Inference."),
                  srv(t0 + 90 * US, "INFO", "llm_daemon.cpp:120", "daemon", "Daemon start success!")]
        llines = [model(t0 + 60 * US, "INFO", "model.py:88", "init model success, npuBlockNum: 1747, cpuBlockNum: 512"),
                  llm_py(t0 + 61 * US, "INFO", "kvcache_settings.py-88", "CpuBlockNum:512; NpuBlockNum: 1747")]
        sbytes = lbytes = 0
        sfh, lfh = open(out / srel, "wb"), open(out / lrel, "wb")
        sline_no = lline_no = 0
        t = t0 + 100 * US
        planted = n == 0
        decoy = n == 1
        req = 0
        sb = per_node * 0.85  # the server's share, about what the content gives
        done: list = []  # (time, order, line) of requests still running
        while sbytes + lbytes < per_node:
            for _ in range(200):
                t += int(rng.expovariate(1 / 1.2) * US)
                req += 1
                rid = f"{rng.getrandbits(64):016x}"
                client = f"10.0.{4 + n}.{rng.randint(2, 250)}:{rng.randint(30000, 62000)}"
                while done and done[0][0] <= t:  # finished requests, in time order
                    slines.append(heapq.heappop(done)[2])
                slines.append(srv(t, "INFO", "http_handler.cpp:412", "endpoint",
                                  f"Receive request, requestId: {rid}, path: /v1/chat/completions, remote: {client}"))
                if rng.random() < 0.35 or (decoy and sbytes > sb * 0.5):
                    q = pr.question()
                    tag = None
                    if decoy and sbytes > sb * 0.5:
                        q, tag, decoy = P.ASK_ABOUT_ERRORS["MEM001"][0], True, False
                    body = json.dumps({"model": "deepseek-r1", "messages": [{"role": "user", "content": q[:2000]}],
                                       "stream": True, "max_tokens": rng.choice((1024, 2048, 4096))}, ensure_ascii=False)
                    slines.append(srv(t, "INFO", "http_handler.cpp:436", "endpoint", f"Request body: {body}"))
                    if tag:
                        manifest["decoy_lines"].append({"rule": "MEM001", "node": f"node-{n}", "file": srel,
                                                        "line": sline_no + len(slines)})
                inl, outl = rng.randint(100, 4000), rng.randint(10, 2000)
                ttft, tpot = rng.randint(80, 2500), rng.randint(30, 90)
                td = t + (ttft + tpot * outl) * 1000
                heapq.heappush(done, (td, req, srv(td, "INFO", "single_req_infer_interface_base.cpp:603", "endpoint",
                               f"requestId: {rid} infer finished, inputLen: {inl}, outputLen: {outl}, firstTokenCost: "
                               f"{ttft}ms, decodeTime: {tpot}ms")))
                if rng.random() < 0.05:
                    heapq.heappush(done, (td - 5000, -req, srv(td - 5000, "WARN", "single_req_infer_interface_base.cpp:660",
                                   "endpoint", f"requestId: {rid} stream closed by client before finished")))
                if rng.random() < 0.04:  # a client gone before its response: one line per request, by its ids
                    conn = rng.randint(1000, 99999)
                    heapq.heappush(done, (td + 2000, -req, srv(td + 2000, "ERROR", "http_handler.cpp:588", "endpoint",
                                   f"Failed to send response, reqId: endpoint_common_{req}, connId: {conn}, ret: -32")))
                    heapq.heappush(done, (td + 3000, -req, srv(td + 3000, "WARN", "endpoint_manager.cpp:233", "endpoint",
                                   f"Connection {conn} closed by peer while reqId: endpoint_common_{req} was streaming")))
                if req % 8 == 0:
                    llines.append(llm_cpp(t, "INFO", "llm_manager_impl.cpp:520",
                                          f"prefill batch size: {rng.randint(0, 8)}, decode batch size: {rng.randint(20, 120)}, "
                                          f"waiting: {rng.randint(0, 3)}, free npu blocks: {rng.randint(300, 1500)}"))
                    llines.append(llm_py(t, "INFO", "generate.py-388", f"batch {req // 8}: {rng.randint(20, 120)} sequences, "
                                         f"{rng.randint(2000, 90000)} tokens in flight"))
                if rng.random() < 0.15:
                    llines.append(atb(t, "info", "operation_base.cpp:415",
                                      f"{rng.choice(('MlaPreprocessOperation', 'GroupedMatmulOperation', 'PagedAttentionOperation'))}"
                                      f"_{rng.randint(0, 60)} setup success, workspace size {rng.randint(1, 1 << 26)}"))
                if rng.random() < 0.01:
                    llines.append(model(t, "WARN", "model.py:131", f"输入长度 {inl} 超过 maxInputTokenLen，已截断"))
                if rng.random() < 0.003:
                    llines.append(atb(t, "warn", "hccl_runner.cpp:201", f"AllReduceHcclRunner:{rng.randint(0, 9)} "
                                      f"hccl comm reuse, rank:{rng.randrange(16)}, rankSize:16"))
            if planted and sbytes + lbytes > per_node * 0.4:
                planted = False
                for i in range(20):
                    llines.append(llm_py(t + i * 30_000, "WARN", "generate.py-402",
                                         f"req: {req + i} out of memory, need block:{rng.randint(6, 30)} free block:0"))
            data = ("\n".join(slines) + "\n").encode()
            sline_no += len(slines)
            sfh.write(data)
            sbytes += len(data)
            data = ("\n".join(llines) + "\n").encode()
            lline_no += len(llines)
            lfh.write(data)
            lbytes += len(data)
            slines, llines = [], []
        sfh.close()
        lfh.close()
        files[srel] = files[lrel] = "mindie"
    return files


# --- profiler ----------------------------------------------------------------------------------------------------

def gen_profiler(out: Path, seed: int, budget: int) -> dict:
    import polars as pl

    files = {}
    per_node = budget // NODES
    for n in range(NODES):
        rank = n * 8
        rng = random.Random(f"{seed}-prof-{n}")
        pid = 3281400 + n * 7000
        folder = f"node-{n}/profiling/ascend{n:02d}_{pid}_20250723031502{rank:03d}_ascend_pt"
        prof = out / folder / "ASCEND_PROFILER_OUTPUT"
        prof.mkdir(parents=True, exist_ok=True)
        kernels = [
            ("aclnnRmsNorm_RmsNormAiCore_RmsNorm", "RmsNorm", "AI_VECTOR_CORE", 8.1, "64,7168;7168", "DT_BF16;DT_BF16"),
            ("aclnnDynamicQuant_DynamicQuant_DynamicQuant", "DynamicQuant", "AI_VECTOR_CORE", 6.2, "64,7168", "DT_BF16"),
            ("aclnnQuantMatmulV4_QuantBatchMatmulV3_QuantBatchMatmulV3", "QuantBatchMatmulV3", "AI_CORE", 27.5,
             "64,7168;7168,2112;2112", "INT8;INT8;FLOAT"),
            ("aclnnFusedInferAttentionScoreV3_FusedInferAttentionScore_FusedInferAttentionScore", "FusedInferAttentionScore",
             "MIX_AIC", 54.0, "64,1,128,512;8192,128,512", "DT_BF16;DT_BF16"),
            ("aclnnMoeGatingTopK_MoeGatingTopK_MoeGatingTopK", "MoeGatingTopK", "AI_VECTOR_CORE", 7.3, "64,256;256", "DT_BF16;FLOAT"),
            ("MoeDistributeDispatchV2Aicpu", "MoeDistributeDispatchV2", "AI_CPU", 41.0, "", ""),
            ("aclnnGroupedMatmul_GroupedMatmul_GroupedMatmul", "GroupedMatmul", "MIX_AIC", 93.0, "512,7168;8,7168,4096;8",
             "INT8;INT8;INT64"),
            ("MoeDistributeCombineV2Aicpu", "MoeDistributeCombineV2", "AI_CPU", 39.0, "", ""),
            ("aclnnAddRmsNorm_AddRmsNorm_AddRmsNorm", "AddRmsNorm", "AI_VECTOR_CORE", 9.0, "64,7168;64,7168;7168",
             "DT_BF16;DT_BF16;DT_BF16"),
        ]
        proto = []
        for layer in range(61):
            for k in kernels:
                proto.append((layer, *k))
            if layer == 0 and n == 0:  # the planted AI CPU operator
                proto.append((0, "aclnnIndexPutImpl_IndexPutAiCpu_IndexPut", "IndexPut", "AI_CPU", 212.0, "64,7168;64;64,7168",
                              "DT_BF16;INT64;DT_BF16"))
        base = pl.DataFrame(proto, orient="row", schema=["layer", "Name", "Type", "core", "dur", "shape", "dtype"]).with_row_index("k")
        row_bytes = 330
        steps = max(2, int(per_node * 0.5 / row_bytes / base.height))
        f = pl.DataFrame({"step": list(range(1, steps + 1))}).join(base, how="cross")
        jitter = ((pl.col("k") * 7919 + pl.col("step") * 104729 + rank * 31 + seed) % 97).cast(pl.Float64) / 970.0
        f = f.with_columns(dur=(pl.col("dur") * (1 + jitter)).round(3))
        t0 = 1753240502000000.0 + n * 3.0
        f = f.with_columns(start=t0 + (pl.col("step") - 1) * 62000.0 + pl.col("dur").cum_sum().over("step") * 1.04)
        q = lambda c: pl.when(pl.col(c) == "").then(pl.lit("N/A")).otherwise(pl.format('"{}"', pl.col(c)))  # noqa: E731
        kd = f.select(
            pl.col("step").alias("Step Id"), pl.lit(4294967295).alias("Model ID"),
            (pl.col("k") + (pl.col("step") - 1) * base.height).alias("Task ID"), pl.lit(2).alias("Stream ID"),
            "Name", "Type", pl.lit("static").alias("OP State"), pl.col("core").alias("Accelerator Core"),
            pl.format("{}\t", pl.col("start").round(3)).alias("Start Time(us)"), pl.col("dur").alias("Duration(us)"),
            pl.lit(0.6).alias("Wait Time(us)"), pl.lit(24).alias("Block Num"),
            pl.when(pl.col("core") == "MIX_AIC").then(48).otherwise(0).alias("Mix Block Num"), pl.lit("NO").alias("HF32 Eligible"),
            q("shape").alias("Input Shapes"),
            pl.when(pl.col("dtype") == "").then(pl.lit("N/A")).otherwise(pl.col("dtype")).alias("Input Data Types"),
            pl.when(pl.col("dtype") == "").then(pl.lit("N/A")).otherwise(pl.lit("ND")).alias("Input Formats"),
            pl.lit('"64,7168"').alias("Output Shapes"), pl.lit("DT_BF16").alias("Output Data Types"),
            pl.lit("ND").alias("Output Formats"), pl.lit("N/A").alias("Context ID"),
            (pl.col("dur") * 0.93).round(3).alias("aicore_time(us)"), (pl.col("dur") * 1850).cast(pl.Int64).alias("aic_total_cycles"),
            pl.lit(0.41).alias("aic_mac_ratio"), pl.lit(0.22).alias("aic_scalar_ratio"), pl.lit(0.37).alias("aic_mte2_ratio"),
        )
        kd.write_csv(prof / "kernel_details.csv", quote_style="necessary")
        stat = (kd.group_by("Type", "Accelerator Core").agg(
            Count=pl.len(), total=pl.col("Duration(us)").sum(), mn=pl.col("Duration(us)").min(),
            avg=pl.col("Duration(us)").mean(), mx=pl.col("Duration(us)").max())
            .with_columns(ratio=(pl.col("total") / pl.col("total").sum() * 100).round(3)).sort("total", descending=True)
            .select(pl.lit(rank).alias("Device_id"), pl.col("Type").alias("OP Type"), pl.col("Accelerator Core").alias("Core Type"),
                    "Count", pl.col("total").round(3).alias("Total Time(us)"), pl.col("mn").alias("Min Time(us)"),
                    pl.col("avg").round(3).alias("Avg Time(us)"), pl.col("mx").alias("Max Time(us)"), pl.col("ratio").alias("Ratio(%)")))
        stat.write_csv(prof / "op_statistic.csv")
        # trace_view.json: one line, as torch_npu writes it; CPU ops carry call stacks (home folders with Chinese names)
        events = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "Python"}},
                  {"ph": "M", "name": "process_name", "pid": 800, "tid": 0, "args": {"name": "Ascend Hardware"}},
                  {"ph": "M", "name": "process_name", "pid": 900, "tid": 0, "args": {"name": "Overlap Analysis"}}]
        target = per_node * 0.45
        size = 0
        rows = kd.head(200_000).select("Name", "Type", "Accelerator Core", "Start Time(us)", "Duration(us)").rows()
        cs = rng.choice(P.CALL_STACK_DIRS)
        for i, (name, typ, core, start, dur) in enumerate(rows):
            ts = float(start.strip())
            ev = {"name": name, "pid": 800, "tid": 2, "ts": f"{ts:.3f}", "dur": dur, "args": {
                "Model Id": 4294967295, "Task Type": core, "Stream Id": 2, "Task Id": i, "Batch Id": 0,
                "Subtask Id": 4294967295, "connection_id": i}, "ph": "X"}
            cpu = {"ph": "X", "name": f"aten::{typ.lower()}" if not typ.startswith("Moe") else "npu::moe_dispatch",
                   "pid": pid, "tid": pid, "ts": f"{ts - 40:.3f}", "dur": 12.4, "cat": "cpu_op",
                   "args": {"Sequence number": -1, "Fwd thread id": 0, "Call stack":
                            f"{cs}/run_r1.py(88): main;{cs}/engine/step.py({100 + i % 50}): decode_step;"
                            "/vllm-workspace/vllm-ascend/vllm_ascend/models/deepseek_v2.py(733): forward"}}
            events += (cpu, ev)
            size += 560
            if size >= target:
                break
        (prof / "trace_view.json").write_text(json.dumps(events, ensure_ascii=False), encoding="utf-8")
        (out / folder / f"profiler_info_{rank}.json").write_text(json.dumps({
            "config": {"common_config": {"activities": ["ProfilerActivity.CPU", "ProfilerActivity.NPU"], "with_stack": True},
                       "experimental_config": {"_profiler_level": "Level1", "_aic_metrics": "PipeUtilization"}},
            "rank_id": rank, "torch_npu_version": "2.7.1.post1", "cann_version": "8.2.RC1"}, indent=1))
        files[folder] = "profiler"
    return files


# --- the cause chains -----------------------------------------------------------------------------------------------

DRIVERS = ["25.0.rc1.1", "24.1.rc2.2"]  # node-1 runs the older driver


def gen_chains(out: Path, seed: int, t_end: int) -> dict:
    """What starts the planted cause chains (see CHAINS): each node's `npu-smi info` as collected after the crash
    (node-1 on an older driver), msprof-analyze's cluster step trace of the decode capture (rank 13, on node-1,
    is the slow rank) and node-0's restart after the incident without `--quantization ascend` (the W8A8 weights
    created as BF16 run the NPUs out of memory while loading)."""
    rng = random.Random(f"{seed}-chains")
    files = {}
    for n in range(NODES):
        rel = f"node-{n}/npu-smi-info.txt"
        rows = ["+------------------------------------------------------------------------------------------------+",
                f"| npu-smi {DRIVERS[n]:<24} Version: {DRIVERS[n]:<53}|",
                "+---------------------------+---------------+----------------------------------------------------+",
                "| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|",
                "| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |",
                "+===========================+===============+====================================================+"]
        for npu in range(8):
            rows += [f"| {npu:<5} 910B2C              | OK            | {90 + rng.random() * 8:<11.1f} {35 + rng.randrange(5):<17} "
                     f"0    / 0             |",
                     f"| 0                         | 0000:{0x5A + npu * 0x10:02X}:00.0  | 0           0    / 0          "
                     f"{3380 + rng.randrange(40):<4} / 65536         |",
                     "+===========================+===============+====================================================+"]
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text("\n".join(rows) + "\n")
        files[rel] = "npu-smi"
    rel = "node-1/profiling/cluster_analysis_output/cluster_step_trace_time.csv"
    head = ("Step,Type,Index,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,"
            "Communication(Not Overlapped and Exclude Receive),Preparing")
    rows = [head]
    for rank in range(NODES * 8):
        comp = 88_400.0 + rng.random() * 900 if rank == STUCK_RANK else 52_000.0 + rng.random() * 600
        free = 1_180.0 + rng.random() * 80
        wait = 2_300.0 + rng.random() * 200 if rank == STUCK_RANK else 88_900.0 - comp + rng.random() * 300
        rows.append(f",rank,{rank},{comp:.1f},{wait:.1f},3305.0,{wait + 3305:.1f},{free:.1f},{comp + wait + free:.1f},0.0,{wait:.1f},0.0")
    (out / rel).parent.mkdir(parents=True, exist_ok=True)
    (out / rel).write_text("\n".join(rows) + "\n")
    files[rel] = "profiler"
    rel = "node-0/vllm/vllm-serve-20250723-restart.log"
    t = t_end + 600 * US
    api = "(APIServer pid=3301877)"
    model = "/data/models/DeepSeek-R1-W8A8"
    lines = [f"{api} INFO {vts(t)} [api_server.py:1839] vLLM API server version 0.11.0",
             f"{api} INFO {vts(t)} [utils.py:233] non-default args: {{'model_tag': '{model}', 'host': '0.0.0.0', "
             f"'port': 8000, 'model': '{model}', 'trust_remote_code': True, 'max_model_len': 32768, "
             "'served_model_name': ['deepseek-r1'], 'data_parallel_size': 4, 'data_parallel_size_local': 2, "
             "'tensor_parallel_size': 4, 'enable_expert_parallel': True, 'gpu_memory_utilization': 0.92}",
             f'{api} INFO {vts(t + 3 * US)} [utils.py:88] No quantization signature detected from model files for "{model}". '
             "The model will be loaded as float. To use a quantized model, pass '--quantization <method>' explicitly."]
    t += 30 * US
    for tp in range(TP):
        w = f"(Worker_DP0_TP{tp}_EP{tp} pid={3302400 + tp * 9})"
        lines.append(f"{w} INFO {vts(t)} [model_runner_v1.py:2301] Starting to load model {model}...")
    t += 140 * US
    loc = "multiproc_executor.py:585"
    for tp in range(TP):
        w = f"(Worker_DP0_TP{tp}_EP{tp} pid={3302400 + tp * 9}) ERROR {vts(t + tp * US)} [{loc}]"
        used = 60.3 + rng.random() * 0.3
        lines += [f"{w} WorkerProc failed to start.", f"{w} Traceback (most recent call last):",
                  f'{w}   File "/vllm-workspace/vllm-ascend/vllm_ascend/worker/worker_v1.py", line 212, in load_model',
                  f"{w}     self.model_runner.load_model()",
                  f"{w} torch.OutOfMemoryError: NPU out of memory. Tried to allocate 224.00 MiB (NPU {tp}; 60.96 GiB total "
                  f"capacity; {used:.2f} GiB already allocated; {used:.2f} GiB current active; {rng.randrange(12, 60)}.25 MiB "
                  f"free; {used + 0.2:.2f} GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try "
                  "setting max_split_size_mb to avoid fragmentation."]
    lines.append(f"{api} ERROR {vts(t + 6 * US)} [core.py:719] EngineCore failed to start.")
    (out / rel).write_text("\n".join(lines) + "\n")
    files[rel] = "vllm"
    return files


# --- driver --------------------------------------------------------------------------------------------------------

def generate(root: Path, size: int, seed: int = 1) -> dict:
    """Write the bundle to ROOT/bundle and its manifest to ROOT/manifest.json (outside the bundle: its texts
    name the incidents, and a tool run on the bundle must not read them)."""
    out = root / "bundle"
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    manifest: dict = {"gen_version": GEN_VERSION, "size_requested": size, "seed": seed, "planted": PLANTED,
                      "decoys": DECOYS, "decoy_lines": [], "files": {}}
    budget = {k: int(size * v) for k, v in KIND_SHARE.items()}
    vl = gen_vllm(out, seed, budget["vllm"], budget["vllm-tty"], manifest)
    manifest["files"].update(vl["files"])
    manifest["files"].update(gen_cann(out, seed, budget["plog"], vl))
    manifest["files"].update(gen_mindie(out, seed, budget["mindie"], manifest))
    manifest["files"].update(gen_profiler(out, seed, budget["profiler"]))
    manifest["files"].update(gen_chains(out, seed, vl["t_end"]))
    kinds: dict[str, int] = {}
    for rel, kind in manifest["files"].items():
        p = out / rel
        n = sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) if p.is_dir() else p.stat().st_size
        kinds[kind] = kinds.get(kind, 0) + n
    manifest["bytes"] = kinds
    manifest["gen_seconds"] = round(time.perf_counter() - started, 2)
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    return manifest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--size", default="100M", help="total size, e.g. 100M, 1G, 2G (binary units)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    m = generate(args.out, parse_size(args.size), args.seed)
    total = sum(m["bytes"].values())
    print(f"wrote {total / 2**20:.1f} MiB to {args.out} in {m['gen_seconds']} s: "
          + ", ".join(f"{k} {v / 2**20:.1f}" for k, v in m["bytes"].items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
