"""One module per source kind. A parser maps a lines frame to (records, signals); see diagnose.model."""

from __future__ import annotations

from typing import Callable

import polars as pl

from diagnose.parsers import generic, profiling, vllm
from diagnose.parsers import mindie, mindie_config
from diagnose.parsers import plog
from diagnose.parsers import npusmi, versions
from diagnose.parsers import expert_hotspot
from diagnose.parsers import accuracy, bench_results, comparison
from diagnose.parsers import preflight
from diagnose.parsers import cann
from diagnose.parsers.common import FileContext

Parser = Callable[[pl.DataFrame, FileContext], tuple[pl.DataFrame, pl.DataFrame]]

PARSERS: dict[str, Parser] = {
    vllm.KIND: vllm.parse,
    profiling.KIND: profiling.parse,
    mindie.KIND: mindie.parse,
    mindie_config.KIND: mindie_config.parse,
    plog.KIND: plog.parse,
    npusmi.KIND: npusmi.parse,
    versions.KIND: versions.parse,
    expert_hotspot.KIND: expert_hotspot.parse,
    bench_results.KIND: bench_results.parse,  # vllm bench serve/latency/throughput results
    accuracy.AISBENCH: accuracy.parse,  # AISBench accuracy summaries, perf results, model config
    accuracy.LMEVAL: accuracy.parse,  # lm-evaluation-harness results
    comparison.KIND: comparison.parse,  # validation facts written by diagnose/compare.py
    preflight.KIND: preflight.parse,
}


def parser_for(kind: str) -> Parser:
    return PARSERS.get(kind, generic.parse)


# Line-oriented kinds: (a pattern every well-formed line of the kind matches, the lines its parser needs
# beyond warnings, errors and rule matches). The pipeline parses only what these and the rules select.
# The head patterns are simplified forms of the parsers' HEAD (no captures, no message part): a line they
# miss is parsed anyway, so they only need to be right about the common well-formed lines.
PREFILTERS: dict[str, tuple[str, str]] = {
    vllm.KIND: (
        r"^(?:\d{4}-\d\d-\d\d[T ][\d:.]+Z?\s+(?:\|\s+)?)?(?:[\w.-]+\s+\|\s+)?(?:\([^()]*\)\s*)*(?:\[rank\d+\]:\s*)?"
        r"(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):\s\s)",
        vllm._PREFILTER + "|" + cann._PREFILTER + "|out of memory",
    ),
    mindie.KIND: (
        r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[.,]\d+(?:[+-]\d\d:?\d\d)?\] \[\d+\]|^\[(?:error|warn|info|debug)\] \[\d+\] \[",
        mindie._PREFILTER + "|" + cann._PREFILTER + "|out of memory",
    ),
    plog.KIND: (
        r"^\[(?:ERROR|WARNING|WARN|INFO|DEBUG|EVENT|TRACE)\]\s+[A-Z][A-Z0-9_]*\(\d+,[^)]*\):\d{4}-",
        cann._PREFILTER + r"|HcclCommInitRootInfo|RankID|userRank|localRank|user_rank|device_id|deviceLogicId|"
        r"device\[|dev[Ii]d\[",
    ),
}
