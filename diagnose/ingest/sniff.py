"""Classify a file by its name and its first lines.

Each kind has a name pattern and a line-head pattern; the kind whose heads match the most of the first
lines wins, and the name breaks ties. A mixed stream (a daemon's stdout tee'd with ATB and CANN lines)
is classified by what most of it is; its parser keeps the other lines as raw records. Profiler output
(kernel_details.csv, trace_view.json, ...) is known by its name alone.
"""

from __future__ import annotations

import re

_SAMPLE_LINES = 200

# kind: (file-name pattern, line-head pattern). Names are matched against the last path component.
KINDS: dict[str, tuple[str | None, str | None]] = {
    "vllm": (
        r"(?i)vllm|serve|server|api_server|engine",
        r"(?:^|\) |\| |Z )(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[?[\w./-]+\.py:\d+\]"
        r"|^\[rank\d+\]:",  # torch's per-rank stderr prefix (tracebacks, CANN error blocks)
    ),
    "mindie": (
        r"(?i)^mindie|mindie-?service|mindieservice",
        # verbose/init/Python heads, ATB heads with a stamp, non-verbose heads, MindIE codes, ATB heads without a
        # stamp, and the daemon's own stdout lines (a tee'd mixed stream)
        r"^\[\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:[+-]\d\d:?\d\d)?\] (?:\[\d+\]"
        r"|\[(?:critical|fatal|error|warn|warning|info|debug)\] \[\d+\] \[|: \[(?:CRITICAL|ERROR|WARN|WARNING|INFO|DEBUG)\])"
        r"|\[MIE[0-9A-Z]{2}[EW][0-9A-Z]{6}\]|^\[(?:critical|fatal|error|warn|warning|info|debug)\] \[\d+\] \["
        r"|^Daemon (?:start success|is killing)",
    ),
    "mindie-config": (
        r"(?i)config[\w.-]*\.json$",
        r'"(?:BackendConfig|ModelDeployConfig|ScheduleConfig|npuDeviceIds|multiNodesInferEnabled|maxSeqLen'
        r'|maxInputTokenLen|npuMemSize|cacheBlockSize|maxPrefillTokens|modelInstanceNumber)"\s*:',
    ),
    "plog": (
        r"^(?:plog|device)-\d+_\d+\.log$",
        r"^\[(?:ERROR|WARNING|WARN|INFO|DEBUG|EVENT|TRACE)\] [A-Z][A-Z0-9_]*\(\d+,[^)]*\):\d{4}-\d\d-\d\d-\d\d:\d\d:\d\d",
    ),
    "npu-smi": (
        r"(?i)npu[-_]?smi|npu[-_]?info",
        # table header, column heads, device and chip rows, the process table, `-t board|health` key/values
        r"npu-smi \d|^\|\s*NPU\s+Name\s*\|\s*Health|^\|\s*Chip\b[^|]*\|\s*Bus-Id|^\+=+\+"
        r"|^\|\s*\d+\s+\S+\s*\|\s*(?:OK|0K|Warning|Alarm|Critical|UNKNOWN)\s*\|"
        r"|^\|\s*\d+(?:\s+\d+)?\s*\|\s*[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\w\s*\|"
        r"|^\|\s*NPU\s+Chip\s*\|\s*Process id|No running processes found in NPU"
        r"|^\s*(?:NPU ID|Software Version|Firmware Version|Compatibility|Chip Count|Faulty Chip Count|Health Status)\s+:",
    ),
    "version-info": (
        r"^(?:version\.info|ascend_toolkit_install\.info|version\.cfg|.*_install\.info)$",
        # version.info / *_install.info / version.cfg keys, ATB/MindIE version.info lines, `latest -> ../8.2.RC2/...`
        r"^\s*(?:Version|version|package_name|package_version|[Ii]nnerversion|compatible_version\w*"
        r"|\w+_(?:running|installed)_version|ascendhal_version)\s*="
        r"|^\s*(?:Ascend-cann-atb|Ascend-mindie|ATB-Models Version|mindie-(?:rt|torch|service|llm|sd))\s*:"
        r"|^l[rwx-]{9}.*\s->\s+(?:\.\./)?(?:cann-)?\d+\.\d+\.(?:RC|T)?\d"
        r"|^\s*vLLM (?:Ascend )?Version\s*:",
    ),
    "preflight": (  # facts written by `diagnose preflight --facts FILE` (diagnose/parsers/preflight.py)
        r"(?i)\.facts$",
        r"^# diagnose preflight facts",
    ),
    "profiler": (
        r"(?i)^(?:kernel_details|op_statistic|op_summary|step_trace_time|cluster_step_trace_time|communication|"
        r"cluster_communication|trace_view|profiler_info|profiler_metadata|api_statistic)[\w.-]*\.(?:csv|json)$",
        None,
    ),
    # MindIE expert-hotspot dumps: prefill/prefill_<rank>.csv, decode/decode_<rank>.csv; rows of integers only
    "expert-hotspot": (
        r"(?i)^(?:prefill|decode)_\d+\.csv$",
        r"^\d+(?:,\d+){3,}$",
    ),
    # validation runs (parsers/bench_results.py, parsers/accuracy.py): result JSON keys, console summaries
    "vllm-bench": (
        r"(?i)bench|^serving_|^latency_|^throughput_|qps",
        r'"(?:completed|request_throughput|output_throughput|p99_tpot_ms|mean_ttft_ms|avg_latency|requests_per_second'
        r'|elapsed_time)"\s*:|^=+ Serving Benchmark Result =+$|^(?:Successful requests|Failed requests'
        r"|Benchmark duration \(s\)|Request throughput \(req/s\)|Output token throughput \(tok/s\)"
        r"|(?:Mean|Median|P[\d.]+) (?:TTFT|TPOT|ITL|E2EL) \(ms\)):\s|^Throughput: [\d.]+ requests/s|^Avg latency: ",
    ),
    "aisbench": (
        r"(?i)^summary_\d|^performances?$|aisbench|ais_bench",
        r"^\|?\s*dataset\s*(?:\||,|\s{2,})\s*version\s*(?:\||,|\s{2,})\s*metric\b"
        r"|Performance Parameters\s*[,│|]\s*Stage|Common Metric\s*[│|]\s*Stage"
        r'|"(?:Benchmark Duration|Output Token Throughput|Failed Requests|Total Requests)"\s*:\s*\{'
        r"|^\s*(?:max_out_len|generation_kwargs)\s*=",
    ),
    "lm-eval": (
        r"(?i)^results[_.]|lm[_-]?eval",
        r'"(?:lm_eval_version|higher_is_better|n-samples|group_subtasks)"\s*:|^\|\s*Tasks\s*\|\s*Version\s*\|',
    ),
}

_NAME = {k: re.compile(n) for k, (n, _) in KINDS.items() if n}
_HEAD = {k: re.compile(h) for k, (_, h) in KINDS.items() if h}


def sniff(name: str, lines: list[str]) -> str:
    """Return the kind of a file: one of KINDS, or ``unknown``."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1].rsplit("!", 1)[-1]
    if base.lower().endswith(".gz"):
        base = base[:-3]
    if _NAME["profiler"].search(base):
        # Profiler output names are the profiler's own, and its CSV/JSON has no line head to weigh: the name
        # decides (and the head scan of 200 long CSV rows, 10 ms a file, is skipped).
        return "profiler"
    sample = lines[:_SAMPLE_LINES]
    scores = {kind: sum(1 for ln in sample if pat.search(ln)) for kind, pat in _HEAD.items()}
    best = max(scores.values(), default=0)
    named = [k for k, pat in _NAME.items() if pat.search(base)]
    if best == 0:
        # Content says nothing: trust a specific name (profiler, plog, versions), else unknown text.
        for kind in ("profiler", "plog", "version-info", "npu-smi", "mindie"):
            if kind in named:
                return kind
        return "unknown"
    top = [k for k, s in scores.items() if s == best]
    for kind in named:
        if kind in top:
            return kind
    return top[0]
