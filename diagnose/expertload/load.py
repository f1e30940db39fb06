"""Inputs of the expert-load report: MindIE hotspot dumps, the expert map JSON, EPLB log lines.

MindIE hotspot dumps (``<dump>/prefill/prefill_<rank>.csv``, ``<dump>/decode/decode_<rank>.csv``) have no
header: each write appends a block of ``layers`` rows x ``local slots`` columns of *running totals* (tokens
each physical expert slot computed since warm-up, i.e. since the service started). Every block closes a
*window*: the tokens computed between the write before it and this write. The window of block ``i > 0`` is
``block i - block i-1``; after a counter reset (a block whose total is lower than the one before it: the
service restarted and its counters began again from zero) it is the block itself.

The first window of a file (what its first block adds) depends on what came before it. The dumps of one
stage and rank form a chain, ordered by day and then by path (natural order: ``dump2`` before ``dump10``),
so several dumps a day are chained in order; within a day the contents override the names when a dump
reads as following the next one and not the other way round (``_order_days``). For the first block ``B0``
of a file, with ``P`` the previous dump of the chain:

1. ``P``'s last block reappears in this file (a longer copy of the same growing file, or a byte-identical
   duplicate): the blocks up to it *repeat* ``P`` and are skipped; counting resumes after it.
2. ``P`` is from the same or the previous day and every cell of ``B0`` is >= ``P``'s last block: the run
   *continues*; the window is ``B0 - last(P)``, counted (both ends were observed).
3. ``P`` is from the same or the previous day and some cell fell: the counters were reset (a *restart*)
   after ``P``'s last write, so ``B0`` holds only load since that restart, all of it after a write we saw:
   counted whole.
4. Otherwise (no previous dump, or one from before a missing day) the span before ``B0`` was not observed.
   The window (``B0`` itself, or ``B0 - last(P)`` when the counters ran on across the missing days) is
   compared with the file's own windows: when its total is at most ``FIRST_WINDOW_MAX_INTERVALS`` (2; the
   ``first_window_max`` argument of ``load``) times the median of the file's positive block-to-block
   increments, it is about one append interval: the file
   *starts* with the service (MindIE's counters run from warm-up, so that first block is real load) and it
   is counted. When it is larger, the file begins *mid-run* (or the window spans the missing days) and
   ``B0`` covers an unknown span: it is a baseline that adds no load. A file with a single block measures
   against the median increment of the other dumps of its rank, else of its stage; without any, the
   first window is not counted (``unknown``). A window of zero tokens is counted (it adds nothing).

So a service that restarts every day is counted from the first write of each day (rule 3, or 4 for the
very first dump), and a file picked up in the middle of a long run is not. Each file's decision, the ratio
and the reason go into ``FileStat`` and from there into every report.

Other rules:

* a file is dated by a ``YYYY-MM-DD`` (or ``YYYYMMDD``) folder or name in its path, else by its mtime;
* a window is never negative: a segment's ``end - base`` is clipped at zero per cell;
* a trailing incomplete block (a write in progress) is ignored;
* ``*_bak.csv`` duplicates and ``*_topk_*`` id dumps are not load dumps (the name does not match).

Per file only the block totals and the blocks that end a reset-free segment (plus the first) are kept:
the consecutive differences over a segment telescope to ``last block - base``.
"""

from __future__ import annotations

import io
import json
import os
from array import array
from dataclasses import dataclass, field
from datetime import date, datetime
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
    chained: bool  # the first window is tied to the previous dump (continues, restart, repeat)
    note: str = ""
    windows: int = 0  # one per complete block
    counted: int = 0  # windows whose load is counted
    first: str = ""  # how the first window was decided: a key of FIRST_WINDOW_WHY
    first_counted: bool = False
    why: str = ""
    ratio: float | None = None  # first window's total over the median increment (rule 4 only)
    previous: str | None = None  # the previous dump of the chain
    repeated: int = 0  # leading blocks that repeat the previous dump


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
    first_window_max: float = 2.0  # the size test of a file's first window (FIRST_WINDOW_MAX_INTERVALS)


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


IN_MEMORY_BYTES = 16 * 1024 * 1024  # a dump file up to this size is parsed once and counted in memory


def _lazy(src: SourceFile, in_memory: bool = False) -> pl.LazyFrame:
    """The cells as Int64 columns s0, s1, ...; streamed from disk unless ``in_memory`` and the file is small."""
    opts: dict[str, Any] = dict(has_header=False, infer_schema=False, truncate_ragged_lines=True)
    path = src.path
    small = in_memory and (src.size or 0) <= IN_MEMORY_BYTES
    if "!" not in path and not path.lower().endswith(".gz") and os.path.isfile(path):
        lf = pl.read_csv(path, **opts).lazy() if small else pl.scan_csv(path, **opts)
    else:
        lf = pl.read_csv(io.BytesIO(src.read()), **opts).lazy()
        small = True
    cols = lf.collect_schema().names()
    lf = lf.select([pl.col(c).str.strip_chars().cast(pl.Int64, strict=False).fill_null(0).alias(f"s{i}")
                    for i, c in enumerate(cols)])
    return lf.collect().lazy() if small else lf


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


FIRST_WINDOW_MAX_INTERVALS = 2.0  # a first window up to this many median increments is "one append interval"

FIRST_WINDOW_WHY = {
    "start": "starts with the service: its first block is about one append interval of load since warm-up",
    "continues": "continues the previous dump: the first window is the difference to its last block",
    "restart": "the counters were reset after the previous dump's last write: the first block is load since the restart",
    "repeat": "repeats the blocks of the previous dump up to its last block; counting resumes after it",
    "mid-run": "begins mid-run: the first block covers an unknown span since the service started",
    "gap": "the counters ran on across missing day(s): the first window spans them",
    "unknown": "a single block and no other dump to measure an append interval against",
    "slots": "the slot count changed against the previous dump: the first block is a baseline",
}


def natural_key(text: str) -> tuple:
    """``dump2`` before ``dump10``: digit runs compare as numbers."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in regex.split(r"(\d+)", text.replace("\\", "/")) if p)


@dataclass
class _Scan:
    """One dump file: its block totals and the blocks the counting needs (flat, layer-major)."""

    f: DumpFile
    stat: FileStat
    n_slots: int
    totals: list[int]
    starts: list[int]  # first block of every reset-free segment: 0 and each in-file reset
    blocks: dict[int, array]
    inc: float | None  # median positive block-to-block increment of the file's totals

    def ends(self) -> list[int]:
        return [s - 1 for s in self.starts[1:]] + [len(self.totals) - 1]


def _blocks(src: SourceFile | pl.LazyFrame, n_layers: int, need: set[int]) -> dict[int, array]:
    """The cells of the blocks ``need`` (index -> flat layer-major array)."""
    if not need:
        return {}
    lf = src if isinstance(src, pl.LazyFrame) else _lazy(src)
    lf = lf.with_row_index("_r").with_columns(_block=(pl.col("_r") // n_layers).cast(pl.Int64))
    got = lf.filter(pl.col("_block").is_in(sorted(need))).sort("_r").collect(engine="streaming")
    cols = [c for c in got.columns if c.startswith("s")]
    out: dict[int, array] = {}
    for (i,), part in got.group_by(["_block"], maintain_order=True):
        out[int(i)] = array("q", [v for row in part.select(cols).rows() for v in row])
    return out


def _scan(f: DumpFile, n_layers: int, stat: FileStat) -> _Scan | None:
    lf = _lazy(f.src, in_memory=True)
    n_slots = len(lf.collect_schema().names())
    idx = lf.with_row_index("_r").with_columns(_block=(pl.col("_r") // n_layers).cast(pl.Int64))
    totals = (idx.group_by("_block").agg(pl.sum_horizontal(pl.all().exclude("_r", "_block")).sum().alias("t"),
                                         pl.len().alias("rows"))
              .sort("_block").collect(engine="streaming"))
    complete = totals.filter(pl.col("rows") == n_layers)
    if complete.height < totals.height:
        stat.note = "last block incomplete (a write in progress); ignored"
    t = [int(v) for v in complete["t"].to_list()]
    stat.blocks = stat.windows = len(t)
    if not t:
        return None
    starts = [0] + [i for i in range(1, len(t)) if t[i] < t[i - 1]]
    stat.resets = len(starts) - 1
    incs = sorted(t[i] - t[i - 1] for i in range(1, len(t)) if i not in set(starts) and t[i] > t[i - 1])
    inc = None
    if incs:
        m = len(incs) // 2
        inc = float(incs[m]) if len(incs) % 2 else (incs[m - 1] + incs[m]) / 2
    sc = _Scan(f, stat, n_slots, t, starts, {}, inc)
    sc.blocks = _blocks(lf, n_layers, {0, *sc.ends()})
    return sc


def _ge(a: array, b: array) -> bool:
    return len(a) == len(b) and all(x >= y for x, y in zip(a, b))


def _first_window(sc: _Scan, prev: _Scan | None, n_layers: int, typical: float | None,
                  max_intervals: float = FIRST_WINDOW_MAX_INTERVALS) -> tuple[str, Any]:
    """(code, base) for the first window of ``sc``: base is "zero", "carry", or a block index of ``sc``."""
    st = sc.stat
    b0 = sc.blocks[0]
    adjacent = False
    if prev is not None:
        st.previous = prev.stat.path
        if prev.f.day is not None and sc.f.day is not None:
            adjacent = 0 <= (sc.f.day - prev.f.day).days <= 1
        if prev.n_slots != sc.n_slots:
            return "slots", 0
        last = prev.blocks[len(prev.totals) - 1]
        lt = prev.totals[-1]
        cands = [j for j, v in enumerate(sc.totals) if v == lt] if lt > 0 else []
        if cands:
            got = _blocks(sc.f.src, n_layers, {j for j in cands if j not in sc.blocks})
            sc.blocks.update(got)
            for j in reversed(cands):
                if sc.blocks.get(j) == last:
                    st.repeated = j + 1
                    return "repeat", j
        if _ge(b0, last):
            if adjacent:
                return "continues", "carry"
            window, code, base = sc.totals[0] - lt, "gap", "carry"
        elif adjacent:
            return "restart", "zero"
        else:
            window, code, base = sc.totals[0], "mid-run", "zero"
    else:
        window, code, base = sc.totals[0], "mid-run", "zero"
    if window == 0:
        st.ratio = 0.0
        return ("start" if code == "mid-run" else "continues"), base
    if not typical:
        return "unknown", 0
    st.ratio = round(window / typical, 4)
    if window <= max_intervals * typical:
        return ("start" if code == "mid-run" else "continues"), base
    return code, 0


def _median(values: list[float]) -> float | None:
    v = sorted(x for x in values if x)
    if not v:
        return None
    m = len(v) // 2
    return v[m] if len(v) % 2 else (v[m - 1] + v[m]) / 2


def _follows(a: _Scan, b: _Scan) -> bool:
    """Whether ``b`` reads as the dump after ``a`` (its first block continues ``a``'s last, or it holds that block)."""
    last = a.blocks.get(len(a.totals) - 1)
    return last is not None and (_ge(b.blocks[0], last) or (a.totals[-1] > 0 and a.totals[-1] in b.totals))


def _order_days(chain: list[_Scan]) -> list[_Scan]:
    """Within a day, path order (natural) unless the contents say otherwise: when a dump reads as following the
    next one and not the other way round (names like ``morning``/``evening`` sort the wrong way), swap them."""
    out = list(chain)
    for _ in range(len(out)):
        moved = False
        for i in range(len(out) - 1):
            a, b = out[i], out[i + 1]
            if a.f.day == b.f.day and a.n_slots == b.n_slots and not _follows(a, b) and _follows(b, a):
                out[i], out[i + 1] = b, a
                moved = True
        if not moved:
            break
    return out


def _chain_loads(chain: list[_Scan], n_layers: int, stage_inc: float | None,
                 max_intervals: float = FIRST_WINDOW_MAX_INTERVALS) -> list[tuple[_Scan, pl.DataFrame | None]]:
    """The load per (layer, slot) of every file of one stage and rank, in chain order."""
    chain = _order_days(chain)
    rank_inc = _median([s.inc for s in chain if s.inc])
    out = []
    prev: _Scan | None = None
    for sc in chain:
        st = sc.stat
        code, base = _first_window(sc, prev, n_layers, sc.inc or rank_inc or stage_inc, max_intervals)
        st.first = code
        st.first_counted = code in ("start", "continues", "restart", "repeat")
        st.chained = code in ("continues", "restart", "repeat")
        st.why = FIRST_WINDOW_WHY[code]
        if st.ratio is not None:
            st.why += f" (first window {st.ratio:g}x the median increment; counted up to {max_intervals:g}x)"
        if code == "repeat":
            st.why = f"its first {st.repeated} block(s) repeat the previous dump; counting resumes after them"
        elif code == "gap":
            st.why = (f"the counters ran on since the previous dump ({prev.f.day}), more than a day earlier: the first "
                      f"window spans the day(s) between, which have no dump of this rank") + st.why[len(FIRST_WINDOW_WHY["gap"]):]
        n = len(sc.totals)
        # windows counted: every block but an uncounted first one and the repeated ones
        st.counted = n - (st.repeated if code == "repeat" else (0 if st.first_counted else 1))
        total: array | None = None
        ends = sc.ends()
        for k, (s0, e) in enumerate(zip(sc.starts, ends)):
            if code == "repeat" and e < base:
                continue  # a segment wholly inside the repeated blocks
            end = sc.blocks[e]
            if code == "repeat" and s0 <= base <= e:
                ref = sc.blocks[base]
            elif k > 0 or base == "zero":
                ref = None
            elif base == "carry":
                ref = prev.blocks[len(prev.totals) - 1]
            else:  # base == 0: the first block is a baseline
                ref = sc.blocks[0]
            diff = array("q", end) if ref is None else array("q", (max(0, x - y) for x, y in zip(end, ref)))
            total = diff if total is None else array("q", (x + y for x, y in zip(total, diff)))
        prev = sc
        if total is None:
            out.append((sc, None))
            continue
        m = sc.n_slots
        long = pl.DataFrame({"layer": [i // m for i in range(len(total))], "slot": [i % m for i in range(len(total))],
                             "tokens": list(total)},
                            schema={"layer": pl.Int32, "slot": pl.Int32, "tokens": pl.Int64})
        out.append((sc, long))
    return out


def load(paths: list[str], layers: int | None = None, expert_map: str | None = None,
         first_window_max: float = FIRST_WINDOW_MAX_INTERVALS) -> Loaded:
    """Read the dumps, the expert map and EPLB lines; count the windows (module docstring).

    ``first_window_max``: a file's first window with no observed predecessor is counted when it is at most this
    many median block-to-block increments (rule 4).
    """
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
    dumps.sort(key=lambda d: (d.stage, d.rank, d.day or date.min, natural_key(d.display)))
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
    chains: dict[tuple[str, int], list[_Scan]] = {}
    for d in dumps:
        if not layers:
            skipped.append(Skipped(d.display, "rows per block unknown (give --layers or an expert map)"))
            continue
        stat = FileStat(d.display, d.stage, d.rank, d.day.isoformat() if d.day else None, 0, 0, False)
        try:
            sc = _scan(d, layers, stat)
        except Exception as exc:  # noqa: BLE001 - unreadable input is reported, never raised
            skipped.append(Skipped(d.display, f"unreadable hotspot dump: {type(exc).__name__}: {exc}"))
            continue
        files.append(stat)
        if sc is None:
            stat.why = "no complete block"
            continue
        chains.setdefault((d.stage, d.rank), []).append(sc)
    stage_inc = {st: _median([s.inc for (s2, _), ch in chains.items() if s2 == st for s in ch if s.inc])
                 for st in {k[0] for k in chains}}
    for (st, rank), chain in chains.items():
        for sc, long in _chain_loads(chain, layers, stage_inc.get(st), first_window_max):
            if long is None:
                continue
            d = sc.f
            slots[d.rank] = max(slots.get(d.rank, 0), int(long["slot"].max()) + 1)
            frames.append(long.with_columns(day=pl.lit(d.day, pl.Date), stage=pl.lit(d.stage), rank=pl.lit(d.rank, pl.Int32)))
        for sc in chain:
            sc.blocks.clear()
    schema = {"day": pl.Date, "stage": pl.String, "rank": pl.Int32, "layer": pl.Int32, "slot": pl.Int32, "tokens": pl.Int64}
    loads = pl.concat([f.select(list(schema)) for f in frames]) if frames else pl.DataFrame(schema=schema)
    return Loaded(loads, layers or 0, slots, placement, read_eplb(logs), files, skipped, notes, layers_source,
                  first_window_max)


EPLB_SIGNALS = ("eplb_imbalance_current_mean", "eplb_imbalance_current_max", "eplb_imbalance_updated_mean",
                "eplb_imbalance_updated_max", "eplb_balancedness")


def read_eplb(logs: list[SourceFile]) -> pl.DataFrame:
    """EPLB imbalance signals of the log files, through the normal parsers (dated by the timeline)."""
    empty = pl.DataFrame(schema={"ts": pl.Datetime("us"), "signal": pl.String, "value": pl.Float64, "file": pl.String})
    if not logs:
        return empty
    from diagnose.pipeline import RuleFilters, Settings, read

    try:
        parsed = read(logs, Settings(), RuleFilters())
    except Exception:  # noqa: BLE001
        return empty
    sig = parsed.signals.filter(pl.col("signal").is_in(EPLB_SIGNALS))
    return sig.select("ts", "signal", "value", "file").sort("ts", nulls_last=True)
