#!/usr/bin/env python3
"""Write the vllm-metrics sample: two snapshots of a vLLM V1 `/metrics` endpoint taken a minute apart
(`date; curl -s localhost:8000/metrics`), for two data-parallel engines of DeepSeek-R1-W8A8. Deterministic."""

from pathlib import Path

HERE = Path(__file__).resolve().parent
MODEL = "/models/DeepSeek-R1-W8A8"


def snapshot(stamp: str, engines: list[dict]) -> str:
    out = [stamp]

    def family(name: str, kind: str, help_text: str, key: str, suffix: str = "") -> None:
        # As prometheus_client writes a counter: HELP/TYPE under the `_total` name, then its `_created` gauge.
        out.append(f"# HELP {name}{suffix} {help_text}")
        out.append(f"# TYPE {name}{suffix} {kind}")
        for i, e in enumerate(engines):
            value = e[key]
            text = f"{value:g}" if isinstance(value, float) else f"{value}.0"
            out.append(f'{name}{suffix}{{engine="{i}",model_name="{MODEL}"}} {text}')
        if kind == "counter":
            out.append(f"# HELP {name}_created {help_text}")
            out.append(f"# TYPE {name}_created gauge")
            for i, _ in enumerate(engines):
                out.append(f'{name}_created{{engine="{i}",model_name="{MODEL}"}} 1.7568634e+09')

    family("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", "running")
    family("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", "waiting")
    family("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", "kv")
    family("vllm:num_preemptions", "counter", "Cumulative number of preemption from the engine.", "preempt", "_total")
    family("vllm:prompt_tokens", "counter", "Number of prefill tokens processed.", "prompt", "_total")
    family("vllm:generation_tokens", "counter", "Number of generation tokens processed.", "gen", "_total")
    family("vllm:spec_decode_num_drafts", "counter", "Number of spec decoding drafts.", "drafts", "_total")
    family("vllm:spec_decode_num_draft_tokens", "counter", "Number of draft tokens.", "draft_tokens", "_total")
    family("vllm:spec_decode_num_accepted_tokens", "counter", "Number of accepted tokens.", "accepted", "_total")
    out.append("# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.")
    out.append("# TYPE vllm:time_to_first_token_seconds histogram")
    for i, _ in enumerate(engines):
        for le, n in (("0.5", 120), ("1.0", 410), ("5.0", 1530), ("+Inf", 1811)):
            out.append(f'vllm:time_to_first_token_seconds_bucket{{engine="{i}",le="{le}",model_name="{MODEL}"}} {n}.0')
        out.append(f'vllm:time_to_first_token_seconds_count{{engine="{i}",model_name="{MODEL}"}} 1811.0')
        out.append(f'vllm:time_to_first_token_seconds_sum{{engine="{i}",model_name="{MODEL}"}} 3904.2')
    return "\n".join(out) + "\n"


first = [dict(running=64, waiting=3, kv=0.912, preempt=112, prompt=9_120_400, gen=4_410_220, drafts=2_205_110,
              draft_tokens=2_205_110, accepted=46_307),
         dict(running=58, waiting=0, kv=0.874, preempt=97, prompt=8_870_950, gen=4_298_470, drafts=2_149_235,
              draft_tokens=2_149_235, accepted=43_015)]
second = [dict(running=64, waiting=41, kv=0.993, preempt=171, prompt=9_371_880, gen=4_526_830, drafts=2_263_415,
               draft_tokens=2_263_415, accepted=47_533),
          dict(running=61, waiting=12, kv=0.981, preempt=133, prompt=9_100_410, gen=4_410_160, drafts=2_205_080,
               draft_tokens=2_205_080, accepted=44_131)]

(HERE / "node-0").mkdir(exist_ok=True)
(HERE / "node-0" / "metrics-1.txt").write_text(snapshot("Wed Sep  3 14:20:00 CST 2025", first))
(HERE / "node-0" / "metrics-2.txt").write_text(snapshot("Wed Sep  3 14:21:00 CST 2025", second))
