"""Classify a file by its name and its first lines.

Each kind has a name pattern and a line-head pattern; the kind whose heads match the most of the first
lines wins, and the name breaks ties. A mixed stream (a daemon's stdout tee'd with ATB and CANN lines)
is classified by what most of it is; its parser keeps the other lines as raw records.
"""

from __future__ import annotations

import regex

_SAMPLE_LINES = 200

# kind: (file-name pattern, line-head pattern). Names are matched against the last path component.
KINDS: dict[str, tuple[str | None, str | None]] = {
    "vllm": (
        r"(?i)vllm|serve|server|api_server|engine",
        r"(?:^|\) |\| |Z )(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[?[\w./-]+\.py:\d+\]",
    ),
    "mindie": (
        r"(?i)^mindie|mindie-?service|mindieservice",
        r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[.,]\d+(?:[+-]\d\d:?\d\d)?\] \[\d+\]|\[MIE\d\d[EW]|^\[(?:error|info|warn|debug)\] \[\d+\] \[",
    ),
    "plog": (
        r"^(?:plog|device)-\d+_\d+\.log$",
        r"^\[(?:ERROR|WARNING|INFO|DEBUG|EVENT|TRACE)\] [A-Z][A-Z0-9_]*\(\d+,[^)]*\):\d{4}-\d\d-\d\d-\d\d:\d\d:\d\d",
    ),
    "npu-smi": (
        r"(?i)npu[-_]?smi",
        r"npu-smi \d|^\| NPU\s+Name\s+\|\s+Health|^\| Chip\s+(?:Phy-ID\s+)?\| Bus-Id|^\+=+\+",
    ),
    "version-info": (
        r"^(?:version\.info|ascend_toolkit_install\.info|version\.cfg|.*_install\.info)$",
        r"^(?:Version|version|package_name|runtime_running_version|innerversion)\s*=",
    ),
    "profiler": (
        r"(?i)^(?:kernel_details|op_statistic|op_summary|step_trace_time|cluster_step_trace_time|communication|"
        r"cluster_communication|trace_view|profiler_info|profiler_metadata|api_statistic)[\w.-]*\.(?:csv|json)$",
        None,
    ),
}

_NAME = {k: regex.compile(n) for k, (n, _) in KINDS.items() if n}
_HEAD = {k: regex.compile(h) for k, (_, h) in KINDS.items() if h}


def sniff(name: str, lines: list[str]) -> str:
    """Return the kind of a file: one of KINDS, or ``unknown``."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1].rsplit("!", 1)[-1]
    if base.lower().endswith(".gz"):
        base = base[:-3]
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
