"""The expert-load metrics in a ``/metrics`` snapshot: vllm-ascend's EPLB hotness gauges and SGLang's per-layer
GPU count histogram, as signals (parsers/kinds/prometheus.py calls ``eplb_rows`` on each snapshot).

* vllm-ascend, registered only when the optional ``ms_service_metric`` package is importable and recorded by rank 0
  after each EPLB worker update (``vllm-project/vllm-ascend@182b75ea84ff vllm_ascend/observability/handlers.py``):
  gauges ``eplb:expert_hotness:{current_mean,current_max,update_mean,update_max}`` (labels ``rank``, ``phase="all"``)
  and ``eplb:expert_hotness:imbalance`` (labels ``rank``, ``phase`` = ``current`` | ``update``, ``layer``): the
  per-layer rank max/mean of one EPLB cycle, each expert's hotness split over its replicas (eplb_worker.py).
  The four summary gauges become the signals the log line gives (``eplb_imbalance_current_mean`` ...), the
  per-layer gauge ``eplb_layer_imbalance`` (current placement) and ``eplb_layer_imbalance_updated`` (the planned
  one), engine ``layer <n>``.
* SGLang, filled when ``SGLANG_EPLB_HEATMAP_COLLECTION_INTERVAL`` > 0, every N-th forward pass
  (``sgl-project/sglang@02295fe5ac5c python/sglang/srt/eplb/expert_distribution.py``, ``_collect_metrics_if_needed``;
  the collector in ``python/sglang/srt/metrics/collector.py``): histogram ``sglang:eplb_gpu_physical_count{layer}``
  whose bucket ``le="r"`` is GPU rank r, not a latency: the code adds a rank's count into its own bucket, and the
  exposition (prometheus_client) prints buckets cumulated, so a rank's count is its bucket minus the one before.
  The counts run from the server's start. Signals: ``eplb_gpu_physical_count`` per layer and rank (engine
  ``layer <n> rank <r>``) and ``eplb_layer_gpu_max_over_mean`` per layer (engine ``layer <n>``), since the start.
"""

from __future__ import annotations

import math
import re
from datetime import datetime

_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
_HOTNESS = {
    "eplb:expert_hotness:current_mean": "eplb_imbalance_current_mean",
    "eplb:expert_hotness:current_max": "eplb_imbalance_current_max",
    "eplb:expert_hotness:update_mean": "eplb_imbalance_updated_mean",
    "eplb:expert_hotness:update_max": "eplb_imbalance_updated_max",
}
_IMBALANCE = "eplb:expert_hotness:imbalance"
_LAYER_SIGNAL = {"current": "eplb_layer_imbalance", "update": "eplb_layer_imbalance_updated"}
_GPU_COUNT = "sglang:eplb_gpu_physical_count_bucket"
PREFIXES = ("eplb:", "sglang:eplb_")

SIGNALS: dict[str, str] = {
    "eplb_layer_imbalance": "vllm-ascend EPLB gauge `eplb:expert_hotness:imbalance{phase=current}`: one layer's rank "
    "max/mean in the last EPLB cycle, current placement; engine `layer <n>`",
    "eplb_layer_imbalance_updated": "the same gauge with `phase=update`: the layer's rank max/mean the planned placement "
    "would give",
    "eplb_gpu_physical_count": "SGLang histogram `sglang:eplb_gpu_physical_count`: expert selections one GPU rank "
    "served in one layer since the server started (a bucket minus the one before); engine `layer <n> rank <r>`",
    "eplb_layer_gpu_max_over_mean": "from that histogram: one layer's max/mean over GPU ranks since the server "
    "started; engine `layer <n>`",
}


def sample_lines(texts: list[str], first: int, last: int) -> dict[tuple[str, frozenset], int]:
    """The line (1-based) of each EPLB sample of the snapshot, by name and labels."""
    out: dict[tuple[str, frozenset], int] = {}
    for i in range(first, last):
        t = texts[i]
        if not t.startswith(PREFIXES):
            continue
        name, _, rest = t.partition("{")
        labels = frozenset(_LABEL.findall(rest.split("}", 1)[0])) if rest else frozenset()
        out.setdefault((name.split(" ", 1)[0], labels), i + 1)
    return out


def eplb_rows(families: list, lines: dict[tuple[str, frozenset], int], when: datetime | None,
              first: int) -> list[dict]:
    """Signal rows of one snapshot's EPLB families (``families`` as prometheus_client parses them)."""
    rows: list[dict] = []
    buckets: dict[str, list[tuple[float, float, int]]] = {}
    for fam in families:
        for sample in fam.samples:
            if not sample.name.startswith(PREFIXES):
                continue
            value = float(sample.value)
            ts = datetime.fromtimestamp(sample.timestamp) if sample.timestamp else when
            line = lines.get((sample.name, frozenset(sample.labels.items())), first + 1)
            if sample.name == _GPU_COUNT and "layer" in sample.labels:
                try:
                    le = float(sample.labels.get("le", "nan"))
                except ValueError:
                    continue
                if math.isfinite(le) and math.isfinite(value):
                    buckets.setdefault(sample.labels["layer"], []).append((le, value, line))
                continue
            if not math.isfinite(value):
                continue  # NaN or +-Inf is no measurement
            if sample.name in _HOTNESS:
                rows.append({"line": line, "ts": ts, "engine": "engine", "signal": _HOTNESS[sample.name],
                             "value": value})
            elif sample.name == _IMBALANCE and sample.labels.get("phase") in _LAYER_SIGNAL:
                layer = sample.labels.get("layer", "")
                if layer.isdigit():
                    rows.append({"line": line, "ts": ts, "engine": f"layer {int(layer)}",
                                 "signal": _LAYER_SIGNAL[sample.labels["phase"]], "value": value})
    for layer, got in buckets.items():
        if not layer.isdigit():
            continue
        got.sort()
        counts, before = [], 0.0
        for _le, cumulated, line in got:
            counts.append((max(cumulated - before, 0.0), line))
            before = max(before, cumulated)
        for (le, _c, _l), (count, line) in zip(got, counts):
            rows.append({"line": line, "ts": when, "engine": f"layer {int(layer)} rank {int(le)}",
                         "signal": "eplb_gpu_physical_count", "value": count})
        total = sum(c for c, _ in counts)
        if counts and total > 0:
            rows.append({"line": counts[0][1], "ts": when, "engine": f"layer {int(layer)}",
                         "signal": "eplb_layer_gpu_max_over_mean",
                         "value": max(c for c, _ in counts) / (total / len(counts))})
    return rows
