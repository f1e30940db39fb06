"""Numbers from torch_npu's out-of-memory message, for any parser whose logs can carry it.

``NPU out of memory. Tried to allocate 450.00 MiB (NPU 4; 60.97 GiB total capacity; 14.67 GiB already allocated;
14.67 GiB current active; 22.66 MiB free; 14.71 GiB reserved in total by PyTorch)`` gives, per event (a message
repeated in its own traceback counts once), in GiB and with ``engine`` = ``NPU <n>``:

npu_oom_request_gib, npu_oom_total_gib, npu_oom_allocated_gib, npu_oom_reserved_gib, npu_oom_free_gib, and
npu_oom_held_elsewhere_gib = total − reserved (allocated when reserved is not printed) − free: HBM that this
process's allocator does not account for (another process, a stale run, HCCL buffers, the runtime).
"""

from __future__ import annotations

import polars as pl

from diagnose.model import conform_signals, empty_signals

_SIZE = r"([0-9][0-9,]*(?:\.[0-9]+)?) ?([KMGT]i?B|B|bytes)"

_FIELDS: list[tuple[str, str]] = [
    ("npu_oom_request_gib", r"Tried to allocate " + _SIZE),
    ("npu_oom_total_gib", _SIZE + r" total capacity"),
    ("npu_oom_allocated_gib", _SIZE + r" already allocated"),
    ("npu_oom_free_gib", _SIZE + r" free"),
    ("npu_oom_reserved_gib", _SIZE + r" reserved in total"),
]

_UNIT_GIB = {"B": 1 / 2**30, "bytes": 1 / 2**30, "KiB": 1 / 2**20, "KB": 1 / 2**20, "MiB": 1 / 2**10,
             "MB": 1 / 2**10, "GiB": 1.0, "GB": 1.0, "TiB": 2**10, "TB": 2**10}

SIGNAL_NAMES = [name for name, _ in _FIELDS] + ["npu_oom_held_elsewhere_gib"]

SIGNALS: dict[str, str] = {
    "npu_oom_request_gib": "allocation that failed (`Tried to allocate`), GiB; `engine` is `NPU <n>`",
    "npu_oom_total_gib": "NPU HBM total capacity printed with the OOM, GiB",
    "npu_oom_allocated_gib": "memory already allocated by this process's PyTorch allocator at the OOM, GiB",
    "npu_oom_reserved_gib": "memory reserved by this process's PyTorch allocator at the OOM, GiB",
    "npu_oom_free_gib": "free HBM at the OOM, GiB",
    "npu_oom_held_elsewhere_gib": "total − reserved (or allocated) − free at the OOM: HBM held outside this process, GiB",
}


def _gib(pattern: str) -> pl.Expr:
    groups = pl.col("message").str.extract_groups(pattern)
    number = groups.struct.field("1").str.replace_all(",", "").cast(pl.Float64, strict=False)
    scale = groups.struct.field("2").replace_strict(_UNIT_GIB, default=None, return_dtype=pl.Float64)
    return number * scale


def oom_signals(records: pl.DataFrame) -> pl.DataFrame:
    """Signals from every `NPU out of memory. Tried to allocate` record (first line of each event)."""
    base = records.filter(pl.col("message").str.contains(r"out of memory\. Tried to allocate"))
    if base.height == 0:
        return empty_signals()
    base = base.unique(subset=["file", "event"], keep="first", maintain_order=True)
    npu = pl.col("message").str.extract(r"\((?:NPU|GPU) (\d+);", 1)
    wide = base.select(
        "file", "line", "source", "node", "ts",
        engine=pl.when(npu.is_not_null()).then(pl.format("NPU {}", npu)).otherwise(pl.lit("NPU ?")),
        **{name: _gib(pattern) for name, pattern in _FIELDS},
    )
    held = pl.col("npu_oom_total_gib") - pl.coalesce("npu_oom_reserved_gib", "npu_oom_allocated_gib") - pl.col(
        "npu_oom_free_gib"
    )
    wide = wide.with_columns(npu_oom_held_elsewhere_gib=held.clip(lower_bound=0.0))
    long = wide.unpivot(
        index=["file", "line", "source", "node", "ts", "engine"], on=SIGNAL_NAMES, variable_name="signal",
        value_name="value",
    ).filter(pl.col("value").is_not_null())
    return conform_signals(long.with_columns(text=pl.lit(None, pl.String)).sort("line", maintain_order=True))
