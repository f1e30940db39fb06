"""Inputs of the expert-load report: MindIE hotspot dumps, the expert map JSON, EPLB log lines.

MindIE hotspot dumps (``<dump>/prefill/prefill_<rank>.csv``, ``<dump>/decode/decode_<rank>.csv``) have no
header: each write appends a block of ``layers`` rows x ``local slots`` columns of *running totals* (tokens
each physical expert slot computed since warm-up). The load of a window is the difference of consecutive
blocks. This module never holds more than one file's needed blocks: per file it streams

1. the block totals (sum of every cell of a block), to find counter resets (a block whose total is lower
   than the one before it: the counters restarted from zero), then
2. only the blocks that end a reset-free segment, since the sum of the consecutive differences over a
   segment telescopes to ``last block - base``.

Chaining rules (documented in docs and the report):

* a file is dated by a ``YYYY-MM-DD`` (or ``YYYYMMDD``) folder or name in its path, else by its mtime;
* the first block of a file continues the previous file of the same stage and rank when that file is
  from the previous calendar day; its difference to that file's last block is counted (or the block counts
  whole when its total is lower: a reset across midnight);
* otherwise (a rank's first file, or the first after a missing day) the first block is a baseline that
  adds no load, because its totals cover an unknown span;
* a difference is never negative: a segment's ``last - base`` is clipped at zero per cell.
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

import polars as pl
import regex

from diagnose.ingest.walk import SourceFile, iter_sources
from diagnose.model import Skipped
from diagnose.parsers.expert_hotspot import block_period

DUMP_NAME = regex.compile(r"(?:^|[/!\\])(prefill|decode)_(\d+)\.csv$", regex.IGNORECASE)
DAY_IN_PATH = regex.compile(r"(?<!\d)(20\d\d)-?(0[1-9]|1[0-2])-?(0[1-9]|[12]\d|3[01])(?!\d)")
LOG_SUFFIXES = (".log", ".txt", ".out", ".err")
MAX_MAP_BYTES = 32 * 1024 * 1024  # an expert map of 61 layers x 64 devices is well under 1 MB

# DeepSeek-V3/R1 have 58 MoE layers (61 decoder layers, the first 3 dense); with MTP one more.
PREFERRED_LAYERS = (58, 59, 61, 60, 57, 26, 27, 47, 48, 94)


@dataclass
class DumpFile:
    stage: str
    rank: int
    day: date | None
    display: str
    src: SourceFile


@dataclass
class FileStat:
    path: str
    stage: str
    rank: int
    day: str | None
    blocks: int
    resets: int
    chained: bool
    note: str = ""


@dataclass
class Placement:
    """layer -> rank -> list of logical expert ids, in local slot order."""

    layers: list[list[list[int]]]
    source: str  # "map:<path>" or "contiguous"

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    @property
    def n_ranks(self) -> int:
        return len(self.layers[0]) if self.layers else 0

    def n_experts(self) -> int:
        return 1 + max((e for lay in self.layers for dev in lay for e in dev), default=-1)

    def frame(self) -> pl.DataFrame:
        rows = {"layer": [], "rank": [], "slot": [], "expert": []}
        for li, lay in enumerate(self.layers):
            for r, dev in enumerate(lay):
                for s, e in enumerate(dev):
                    rows["layer"].append(li)
                    rows["rank"].append(r)
                    rows["slot"].append(s)
                    rows["expert"].append(e)
        return pl.DataFrame(rows, schema={"layer": pl.Int32, "rank": pl.Int32, "slot": pl.Int32, "expert": pl.Int32})


@dataclass
class Loaded:
    loads: pl.DataFrame  # day, stage, rank, layer, slot, tokens (one row per cell, per file/day)
    n_layers: int
    slots: dict[int, int]  # rank -> physical slots (columns)
    placement: Placement | None  # from an expert map file, when one was given or found
    eplb: pl.DataFrame  # ts, signal, value (EPLB log lines)
    files: list[FileStat] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    layers_source: str = ""


def day_of(rel: str, mtime: float | None) -> date | None:
    found = DAY_IN_PATH.findall(rel.replace("\\", "/"))
    for y, m, d in reversed(found):
        try:
            return date(int(y), int(m), int(d))
        except ValueError:
            continue
    if mtime is not None:
        return datetime.fromtimestamp(mtime).date()
    return None


def classify(paths: list[str]) -> tuple[list[DumpFile], list[SourceFile], list[SourceFile], list[Skipped]]:
    """Split the inputs into hotspot dumps, expert map JSON candidates and log files."""
    dumps, maps, logs, skipped = [], [], [], []
    for item in iter_sources(paths):
        if isinstance(item, Skipped):
            skipped.append(item)
            continue
        rel = (item.rel or item.path).replace("\\", "/")
        m = DUMP_NAME.search(rel)
        if m:
            stage = m.group(1).lower()
            dumps.append(DumpFile(stage, int(m.group(2)), day_of(rel, item.mtime), item.path, item))
        elif rel.lower().endswith(".json") and (item.size or 0) <= MAX_MAP_BYTES:
            maps.append(item)
        elif rel.lower().endswith(LOG_SUFFIXES):
            logs.append(item)
    return dumps, maps, logs, skipped


def _lazy(src: SourceFile) -> pl.LazyFrame:
    opts: dict[str, Any] = dict(has_header=False, infer_schema=False, truncate_ragged_lines=True)
    path = src.path
    if "!" not in path and not path.lower().endswith(".gz") and os.path.isfile(path):
        lf = pl.scan_csv(path, **opts)
    else:
        lf = pl.read_csv(io.BytesIO(src.read()), **opts).lazy()
    cols = lf.collect_schema().names()
    return lf.select([pl.col(c).str.strip_chars().cast(pl.Int64, strict=False).fill_null(0).alias(f"s{i}")
                      for i, c in enumerate(cols)])


def detect_layers(src: SourceFile) -> int | None:
    """Rows per block of one file (see ``block_period``); None when the file does not tell."""
    lf = _lazy(src)
    head = lf.head(4096).collect()
    n = lf.select(pl.len()).collect().item()
    if n == 0 or head.width == 0:
        return None
    width, shown = head.width, head.height
    flat = head.select(pl.concat_list(pl.all()).alias("v"))["v"].explode()  # the cells row by row
    if shown < n:  # the period must divide the whole file: pad the head to a divisor-compatible view
        cands = [d for d in range(1, shown // 2 + 1) if n % d == 0]
        for d in sorted(cands, key=lambda d: (d not in PREFERRED_LAYERS, d)):
            got = block_period(flat.slice(0, (shown // d) * d * width), width)
            if got == d:
                return d
        return None
    return block_period(flat, width)


def read_map(src: SourceFile) -> Placement | None:
    """The vllm-ascend / MindIE expert map (``moe_layer_count``, ``layer_list[].device_list[].device_expert``)."""
    try:
        data = json.loads(src.read().decode("utf-8", errors="replace"))
        layers = sorted(data["layer_list"], key=lambda x: int(x.get("layer_id", 0)))
        out = []
        for lay in layers:
            devs = sorted(lay["device_list"], key=lambda x: int(x["device_id"]))
            out.append([[int(e) for e in d["device_expert"]] for d in devs])
        if not out or not out[0]:
            return None
        return Placement(out, f"map:{src.path}")
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _file_loads(f: DumpFile, n_layers: int, carry: tuple[date | None, list[list[int]] | None, int] | None,
                stat: FileStat) -> tuple[pl.DataFrame | None, tuple | None]:
    """This file's load per (layer, slot) and the carry (day, last block, its total) for the next file."""
    lf = _lazy(f.src)
    n_slots = len(lf.collect_schema().names())
    idx = lf.with_row_index("_r").with_columns(_block=(pl.col("_r") // n_layers).cast(pl.Int64),
                                               _layer=(pl.col("_r") % n_layers).cast(pl.Int32))
    totals = (idx.group_by("_block").agg(pl.sum_horizontal(pl.all().exclude("_r", "_block", "_layer")).sum().alias("t"),
                                         pl.len().alias("rows"))
              .sort("_block").collect(engine="streaming"))
    complete = totals.filter(pl.col("rows") == n_layers)
    if complete.height < totals.height:
        stat.note = "last block incomplete (a write in progress); ignored"
    t = complete["t"].to_list()
    stat.blocks = len(t)
    if not t:
        return None, carry
    chained = carry is not None and carry[0] is not None and f.day is not None and carry[0] == f.day - timedelta(days=1)
    stat.chained = chained
    # Segments: (base, end block); base is "carry", "zero" or a block index.
    segments: list[tuple[Any, int]] = []
    if chained and carry[1] is not None and len(carry[1][0]) == n_slots:
        base: Any = "carry" if t[0] >= carry[2] else "zero"
        if base == "zero":
            stat.resets += 1
    else:
        base = 0
        if chained:
            stat.note = (stat.note + "; " if stat.note else "") + "slot count changed; first block is a baseline"
    for i in range(1, len(t)):
        if t[i] < t[i - 1]:
            segments.append((base, i - 1))
            base = "zero"
            stat.resets += 1
    segments.append((base, len(t) - 1))
    need = sorted({e for _, e in segments} | {b for b, _ in segments if isinstance(b, int)})
    blocks = idx.filter(pl.col("_block").is_in(need)).drop("_r").collect(engine="streaming")
    cols = [c for c in blocks.columns if c.startswith("s")]

    def block(i: int) -> pl.DataFrame:
        return blocks.filter(pl.col("_block") == i).sort("_layer").select(cols)

    total = None
    for b, e in segments:
        end = block(e)
        if b == "carry":
            prev = pl.DataFrame(carry[1], schema=cols, orient="row")
            diff = end - prev
        elif b == "zero":
            diff = end
        elif b == e:
            continue
        else:
            diff = end - block(b)
        diff = diff.select([pl.col(c).clip(lower_bound=0) for c in cols])
        total = diff if total is None else total + diff
    last = block(len(t) - 1)
    new_carry = (f.day, last.rows(), int(t[-1]))
    if total is None:
        return None, new_carry
    long = (total.with_row_index("layer").unpivot(index="layer", variable_name="slot", value_name="tokens")
            .with_columns(pl.col("layer").cast(pl.Int32), pl.col("slot").str.slice(1).cast(pl.Int32),
                          pl.col("tokens").cast(pl.Int64)))
    return long, new_carry


def load(paths: list[str], layers: int | None = None, expert_map: str | None = None) -> Loaded:
    dumps, maps, logs, skipped = classify(paths)
    notes: list[str] = []
    placement = None
    if expert_map:
        srcs = [s for s in iter_sources([expert_map]) if isinstance(s, SourceFile)]
        placement = read_map(srcs[0]) if srcs else None
        if placement is None:
            notes.append(f"expert map {expert_map} could not be read; assuming contiguous placement")
    else:
        for m in maps:
            placement = read_map(m)
            if placement is not None:
                break
    layers_source = "--layers"
    if layers is None and placement is not None:
        layers, layers_source = placement.n_layers, "expert map moe_layer_count"
    dumps.sort(key=lambda d: (d.stage, d.rank, d.day or date.min, d.display))
    if layers is None:
        # Vote over a few files: a file with a counter reset in its head does not tell.
        votes: dict[int, list[str]] = {}
        for d in sorted(dumps, key=lambda d: -(d.src.size or 0))[:8]:
            try:
                got = detect_layers(d.src)
            except Exception:  # noqa: BLE001 - a bad file is reported below
                got = None
            if got:
                votes.setdefault(got, []).append(d.display)
        if votes:
            layers = max(votes, key=lambda k: (len(votes[k]), -k))
            layers_source = f"detected from {len(votes[layers])} file(s), e.g. {votes[layers][0]}"
    frames: list[pl.DataFrame] = []
    files: list[FileStat] = []
    slots: dict[int, int] = {}
    carry: dict[tuple[str, int], tuple] = {}
    seen: set[tuple[str, int, date | None]] = set()
    for d in dumps:
        if not layers:
            skipped.append(Skipped(d.display, "rows per block unknown (give --layers or an expert map)"))
            continue
        key = (d.stage, d.rank, d.day)
        if key in seen:
            skipped.append(Skipped(d.display, f"second {d.stage} dump of rank {d.rank} for {d.day}; first one used"))
            continue
        seen.add(key)
        stat = FileStat(d.display, d.stage, d.rank, d.day.isoformat() if d.day else None, 0, 0, False)
        try:
            long, carry[(d.stage, d.rank)] = _file_loads(d, layers, carry.get((d.stage, d.rank)), stat)
        except Exception as exc:  # noqa: BLE001 - unreadable input is reported, never raised
            skipped.append(Skipped(d.display, f"unreadable hotspot dump: {type(exc).__name__}: {exc}"))
            continue
        files.append(stat)
        if long is None:
            continue
        slots[d.rank] = max(slots.get(d.rank, 0), int(long["slot"].max()) + 1)
        frames.append(long.with_columns(day=pl.lit(d.day, pl.Date), stage=pl.lit(d.stage), rank=pl.lit(d.rank, pl.Int32)))
    schema = {"day": pl.Date, "stage": pl.String, "rank": pl.Int32, "layer": pl.Int32, "slot": pl.Int32, "tokens": pl.Int64}
    loads = pl.concat([f.select(list(schema)) for f in frames]) if frames else pl.DataFrame(schema=schema)
    return Loaded(loads, layers or 0, slots, placement, read_eplb(logs), files, skipped, notes, layers_source)


EPLB_SIGNALS = ("eplb_imbalance_current_mean", "eplb_imbalance_current_max", "eplb_imbalance_updated_mean",
                "eplb_imbalance_updated_max", "eplb_balancedness")


def read_eplb(logs: list[SourceFile]) -> pl.DataFrame:
    """EPLB imbalance signals of the log files, through the normal parsers (dated by the timeline)."""
    empty = pl.DataFrame(schema={"ts": pl.Datetime("us"), "signal": pl.String, "value": pl.Float64, "file": pl.String})
    if not logs:
        return empty
    from diagnose.pipeline import Options, parse_sources

    try:
        parsed = parse_sources(logs, Options())
    except Exception:  # noqa: BLE001
        return empty
    sig = parsed.signals.filter(pl.col("signal").is_in(EPLB_SIGNALS))
    return sig.select("ts", "signal", "value", "file").sort("ts", nulls_last=True)
