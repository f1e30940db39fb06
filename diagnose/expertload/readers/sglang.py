"""SGLang expert-distribution recorder dumps, read without unpickling (torchfile.py).

Source: ``sgl-project/sglang@02295fe5ac5c python/sglang/srt/eplb/expert_distribution.py`` (reference
profiling-and-expert-load.md §D7). ``/dump_expert_distribution_record`` writes one file and resets the recorder,
so each dump holds the passes since the previous dump (or since recording started): a window of its own.

* ``stat`` mode: rank 0 writes ``expert_distribution_recorder_<time.time()>.pt``, a dict with ``logical_count``,
  int32 ``[buffer rows, layers, logical experts]``, already summed over ranks. The buffer is circular: unfilled
  rows are zeros, and a buffer with no zero row may have wrapped (older passes overwritten), which the report
  notes. The load of the dump is the sum over rows.
* ``per_pass`` / ``per_token`` modes: every rank writes ``..._<time>_<rank>.pt`` with ``records`` (each a
  ``global_physical_count`` ``[layers, physical experts]`` of that rank's tokens in one pass) and
  ``last_physical_to_logical_map`` ``[layers, physical]``. The load is the records summed and mapped to logical
  experts; the ranks' files add up.

The day is the dump's ``time.time()`` in its name, as a UTC date (else a date in the path, else the mtime).
"""

from __future__ import annotations

from datetime import date, datetime, timezone

import polars as pl
import regex

from diagnose.expertload.readers.base import MAX_EXPERTS, MAX_LAYERS, count_ok, refuse
from diagnose.expertload.readers.torchfile import PtFile, PtRefused, TensorRef
from diagnose.ingest.metered import SourceFile
from diagnose.model.expertload import Refused

NAME = regex.compile(r"(?:^|[/!\\])expert_distribution_recorder_(\d{9,11}(?:\.\d+)?)(?:_(\d+))?\.pt$")
MAX_ROWS = 1 << 20


def day_of_name(path: str) -> date | None:
    m = NAME.search(path.replace("\\", "/"))
    if not m:
        return None
    try:
        return datetime.fromtimestamp(float(m.group(1)), tz=timezone.utc).date()
    except (ValueError, OverflowError, OSError):
        return None


def _check_counts(series: pl.Series, path: str) -> Refused | None:
    low = series.min()
    return refuse(path, "negative", line="-", text=str(low), width="-") if low is not None and low < 0 else None


def _stat(pt: PtFile, t: TensorRef, path: str) -> tuple[pl.DataFrame | Refused, int, int]:
    """(layer, expert, tokens) summed over the buffer rows; the rows, and how many held a pass."""
    if len(t.shape) != 3 or not (0 < t.shape[1] <= MAX_LAYERS and 0 < t.shape[2] <= MAX_EXPERTS and t.shape[0] <= MAX_ROWS):
        return refuse(path, "pt_shape", shape="x".join(map(str, t.shape))), 0, 0
    rows, n_layers, n_exp = t.shape
    cells = n_layers * n_exp
    total: pl.Series | None = None
    filled = 0
    for part in pt.values(t, chunk=max(cells, (1 << 20) // cells * cells)):
        bad = _check_counts(part, path)
        if bad:
            return bad, 0, 0
        k = part.len() // cells
        frame = pl.DataFrame({"v": part}).with_row_index("i").with_columns(row=pl.col("i") // cells,
                                                                              cell=pl.col("i") % cells)
        filled += frame.group_by("row").agg(pl.col("v").sum()).filter(pl.col("v") > 0).height
        summed = frame.group_by("cell").agg(pl.col("v").sum()).sort("cell")["v"]
        total = summed if total is None else total + summed
        assert k > 0
    if total is None:
        total = pl.Series("v", [0] * cells, dtype=pl.Int64)
    out = pl.DataFrame({"tokens": total}).with_row_index("i").select(
        layer=(pl.col("i") // n_exp).cast(pl.Int32), expert=(pl.col("i") % n_exp).cast(pl.Int32),
        tokens=pl.col("tokens").cast(pl.Int64))
    return out, rows, filled


def _per_pass(pt: PtFile, obj: dict, path: str) -> pl.DataFrame | Refused:
    """Records of one rank summed and mapped to logical experts through ``last_physical_to_logical_map``."""
    phys_map = obj.get("last_physical_to_logical_map")
    records = obj.get("records")
    if not isinstance(phys_map, TensorRef) or len(phys_map.shape) != 2 or not isinstance(records, list):
        return refuse(path, "pt_shape", shape="-")
    n_layers, n_phys = phys_map.shape
    if not (0 < n_layers <= MAX_LAYERS and 0 < n_phys <= 4 * MAX_EXPERTS):
        return refuse(path, "pt_shape", shape=f"{n_layers}x{n_phys}")
    mapping = pl.concat(list(pt.values(phys_map)))
    if mapping.min() < 0 or mapping.max() >= MAX_EXPERTS:
        return refuse(path, "pt_shape", shape="map")
    total: pl.Series | None = None
    for rec in records:
        t = rec.get("global_physical_count") if isinstance(rec, dict) else None
        if not isinstance(t, TensorRef) or t.shape != (n_layers, n_phys):
            return refuse(path, "pt_shape", shape="x".join(map(str, getattr(t, "shape", ()))) or "-")
        part = pl.concat(list(pt.values(t)))
        bad = _check_counts(part, path)
        if bad:
            return bad
        total = part if total is None else total + part
    if total is None:
        total = pl.Series("v", [0] * (n_layers * n_phys), dtype=pl.Int64)
    return (pl.DataFrame({"tokens": total, "expert": mapping}).with_row_index("i")
            .with_columns(layer=(pl.col("i") // n_phys).cast(pl.Int32), expert=pl.col("expert").cast(pl.Int32))
            .group_by("layer", "expert").agg(pl.col("tokens").sum().cast(pl.Int64)).sort("layer", "expert"))


def read_dump(src: SourceFile) -> tuple[pl.DataFrame | Refused, dict[str, int]]:
    """The logical load of one dump and what it says about itself (``mode``, ``rows``, ``filled``, ``rank``)."""
    try:
        pt = PtFile(src.path if "!" not in src.path and not src.path.lower().endswith(".gz") else src.read())
        obj = pt.load()
        if not isinstance(obj, dict):
            return refuse(src.path, "pt_format", detail="not a dict"), {}
        if isinstance(obj.get("logical_count"), TensorRef):
            got, rows, filled = _stat(pt, obj["logical_count"], src.path)
            rank = obj.get("rank")
            return got, {"mode": 0, "rows": rows, "filled": filled, "rank": rank if isinstance(rank, int) else 0}
        if "records" in obj:
            return _per_pass(pt, obj, src.path), {"mode": 1}
        return refuse(src.path, "pt_format", detail="no logical_count or records"), {}
    except PtRefused as exc:
        if exc.code == "pt_format":
            return refuse(src.path, exc.code, detail=exc.detail), {}
        if exc.code == "pt_global":
            return refuse(src.path, exc.code, name=exc.detail), {}
        if exc.code == "too_big":
            return refuse(src.path, exc.code, max=exc.detail), {}
        return refuse(src.path, "pt_shape", shape=exc.detail), {}
    except OSError as exc:
        return refuse(src.path, "unreadable", detail=type(exc).__name__), {}


def read_json(src: SourceFile, data: object) -> tuple[pl.DataFrame | Refused | None, dict[str, int]]:
    """The JSON form SGLang accepts back with ``--init-expert-location`` (``sgl-project/sglang python/sglang/srt/eplb/
    expert_location.py``, ``compute_initial_expert_location_metadata``): ``{"logical_count": ...}``,
    ``[layers][logical experts]`` or ``[passes][layers][logical experts]`` (summed over passes, as a stat dump's
    rows). It is one window: counted whole, on its file's day. None for another JSON. A
    ``{"physical_to_logical_map": ...}`` file is a placement, not a load: ``info["placement"]`` says so."""
    if not isinstance(data, dict):
        return None, {}
    if "logical_count" not in data:
        return None, ({"placement": 1} if "physical_to_logical_map" in data else {})
    count = data["logical_count"]
    if isinstance(count, list) and count and all(isinstance(x, list) for x in count) and count[0] \
            and isinstance(count[0][0], list):
        rows = count
    else:
        rows = [count]
    if not isinstance(rows, list) or len(rows) > MAX_ROWS:
        return refuse(src.path, "pt_shape", shape="logical_count"), {}
    n_layers = len(rows[0]) if rows and isinstance(rows[0], list) else 0
    n_exp = len(rows[0][0]) if n_layers and isinstance(rows[0][0], list) else 0
    if not (0 < n_layers <= MAX_LAYERS and 0 < n_exp <= MAX_EXPERTS):
        return refuse(src.path, "pt_shape", shape="logical_count"), {}
    total = [0] * (n_layers * n_exp)
    for row in rows:
        if not isinstance(row, list) or len(row) != n_layers:
            return refuse(src.path, "pt_shape", shape="logical_count"), {}
        for li, layer in enumerate(row):
            if not isinstance(layer, list) or len(layer) != n_exp:
                return refuse(src.path, "pt_shape", shape="logical_count"), {}
            for e, v in enumerate(layer):
                bad = count_ok(v)
                if bad is not None:
                    return refuse(src.path, bad, line="-", text=str(v)[:40], width="-"), {}
                total[li * n_exp + e] += int(v)
    out = pl.DataFrame({"tokens": total}, schema={"tokens": pl.Int64}).with_row_index("i").select(
        layer=(pl.col("i") // n_exp).cast(pl.Int32), expert=(pl.col("i") % n_exp).cast(pl.Int32), tokens="tokens")
    return out, {"rows": len(rows)}
