"""Counting the windows of the hotspot dumps: what each dump block adds to the load.

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
4. Otherwise (no previous dump, or one from before a missing day) the span before ``B0`` was not observed by
   the chain, and ``--first-window`` (``policy``) decides:

   * ``count``: the first window counts (``B0`` itself, or ``B0 - last(P)`` when the counters ran on across the
     missing days: ``count``).
   * ``skip``: it does not; ``B0`` is a baseline (``skip``).
   * ``auto`` (the default) decides from the facts. A dump whose folder holds ``model_gen_config.json`` *begins
     with its service*: MindIE rank 0 writes that file at start-up, and start-up refuses a dump folder that
     already holds a CSV (``RuntimeError("There should be no CSV files in the hotpot dump path.")``,
     MindIE-LLM ``flash_causal_deepseekv2.py:432-457``; reference profiling-and-expert-load.md §D4). Its counters
     run from warm-up, so ``B0`` is the load of its first append interval and counts whole (``service``). The
     exception is a first block that is cell-wise at least ``P``'s last (the counters ran on since ``P``: the
     file was moved out of a running service and began again mid-run): that window spans the missing days and
     goes through the size test below (``gap`` when it fails). Inputs without that fact can begin mid-run (CSVs copied without their folder,
     rotated, picked up from a running service), and only they get the size test: the window is compared with
     the file's own windows, and when its total is at most ``FIRST_WINDOW_MAX_INTERVALS`` (2; the
     ``first_window_max`` argument of ``load``) times the median of the file's positive block-to-block
     increments, it is about one append interval: the file *starts* with the service and it is counted. When
     it is larger, the file begins *mid-run* (or the window spans the missing days) and ``B0`` covers an
     unknown span: it is a baseline that adds no load. A file with a single block measures against the median
     increment of the other dumps of its rank, else of its stage; without any, the first window is not counted
     (``unknown``). A window of zero tokens is counted (it adds nothing).

   The size test alone is wrong when traffic varies: a first interval busier than twice the median looks
   mid-run and a real window is dropped, which is why MindIE's own folders never go through it.

So a service that restarts every day is counted from the first write of each day (rule 3, or 4 for the
very first dump), and a file picked up in the middle of a long run is not. Each file's decision, the ratio
and the reason go into ``FileStat`` and from there into every report.

Other rules:

* a window is never negative: a segment's ``end - base`` is clipped at zero per cell;
* a trailing incomplete block (a write in progress) is ignored.

Per file only the block totals and the blocks that end a reset-free segment (plus the first) are kept:
the consecutive differences over a segment telescope to ``last block - base``. The words of each decision
are the reports' (expertload/texts.py); here a file gets a code and the numbers behind it.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Any

import polars as pl

from diagnose.expertload.inputs import DumpFile
from diagnose.expertload.readers.mindie_dumps import cells
from diagnose.ingest.metered import SourceFile
from diagnose.model.expertload import COUNTED, FileStat

FIRST_WINDOW_MAX_INTERVALS = 2.0  # a first window up to this many median increments is "one append interval"


@dataclass
class Scan:
    """One dump file: its block totals and the blocks the counting needs (flat, layer-major)."""

    f: DumpFile
    stat: FileStat
    n_slots: int
    totals: list[int]
    starts: list[int]  # first block of every reset-free segment: 0 and each in-file reset
    blocks: dict[int, array]
    inc: float | None  # median positive block-to-block increment of the file's totals
    lines: int | None = None  # lines to read (a last line being written left out)

    def ends(self) -> list[int]:
        return [s - 1 for s in self.starts[1:]] + [len(self.totals) - 1]


def _blocks(src: SourceFile | pl.LazyFrame, n_layers: int, need: set[int], lines: int | None = None) -> dict[int, array]:
    """The cells of the blocks ``need`` (index -> flat layer-major array)."""
    if not need:
        return {}
    lf = src if isinstance(src, pl.LazyFrame) else cells(src, lines)
    lf = lf.with_row_index("_r").with_columns(_block=(pl.col("_r") // n_layers).cast(pl.Int64))
    got = lf.filter(pl.col("_block").is_in(sorted(need))).sort("_r").collect(engine="streaming")
    cols = [c for c in got.columns if c.startswith("s")]
    out: dict[int, array] = {}
    for (i,), part in got.group_by(["_block"], maintain_order=True):
        out[int(i)] = array("q", [v for row in part.select(cols).rows() for v in row])
    return out


def scan(f: DumpFile, n_layers: int, stat: FileStat, lines: int | None = None) -> Scan | None:
    lf = cells(f.src, lines, in_memory=True)
    n_slots = len(lf.collect_schema().names())
    idx = lf.with_row_index("_r").with_columns(_block=(pl.col("_r") // n_layers).cast(pl.Int64))
    totals = (idx.group_by("_block").agg(pl.sum_horizontal(pl.all().exclude("_r", "_block")).sum().alias("t"),
                                         pl.len().alias("rows"))
              .sort("_block").collect(engine="streaming"))
    complete = totals.filter(pl.col("rows") == n_layers)
    if complete.height < totals.height:
        stat.note = "incomplete_block"
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
    sc = Scan(f, stat, n_slots, t, starts, {}, inc, lines)
    sc.blocks = _blocks(lf, n_layers, {0, *sc.ends()})
    return sc


def _ge(a: array, b: array) -> bool:
    return len(a) == len(b) and all(x >= y for x, y in zip(a, b))


def _first_window(sc: Scan, prev: Scan | None, n_layers: int, typical: float | None,
                  max_intervals: float = FIRST_WINDOW_MAX_INTERVALS, policy: str = "auto") -> tuple[str, Any]:
    """(code, base) for the first window of ``sc``: base is "zero", "carry", or a block index of ``sc``.
    ``policy`` (``--first-window``) decides the windows the chain does not: see the module docstring."""
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
            got = _blocks(sc.f.src, n_layers, {j for j in cands if j not in sc.blocks}, sc.lines)
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
    if policy == "count":
        return "count", base
    if policy == "skip":
        return "skip", 0
    if code == "mid-run" and sc.f.with_service:
        return "service", "zero"
    if window == 0:
        st.ratio = 0.0
        return ("start" if code == "mid-run" else "continues"), base
    if not typical:
        return "unknown", 0
    st.ratio = round(window / typical, 4)
    if window <= max_intervals * typical:
        return ("start" if code == "mid-run" else "continues"), base
    return code, 0


def median(values: list[float]) -> float | None:
    v = sorted(x for x in values if x)
    if not v:
        return None
    m = len(v) // 2
    return v[m] if len(v) % 2 else (v[m - 1] + v[m]) / 2


def _follows(a: Scan, b: Scan) -> bool:
    """Whether ``b`` reads as the dump after ``a`` (its first block continues ``a``'s last, or it holds that block)."""
    last = a.blocks.get(len(a.totals) - 1)
    return last is not None and (_ge(b.blocks[0], last) or (a.totals[-1] > 0 and a.totals[-1] in b.totals))


def _order_days(chain: list[Scan]) -> list[Scan]:
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


def chain_loads(chain: list[Scan], n_layers: int, stage_inc: float | None,
                max_intervals: float = FIRST_WINDOW_MAX_INTERVALS,
                policy: str = "auto") -> list[tuple[Scan, pl.DataFrame | None]]:
    """The load per (layer, slot) of every file of one stage and rank, in chain order."""
    chain = _order_days(chain)
    rank_inc = median([s.inc for s in chain if s.inc])
    out = []
    prev: Scan | None = None
    for sc in chain:
        st = sc.stat
        code, base = _first_window(sc, prev, n_layers, sc.inc or rank_inc or stage_inc, max_intervals, policy)
        st.first = code
        st.first_counted = code in COUNTED
        st.chained = code in ("continues", "restart", "repeat")
        if prev is not None and prev.f.day is not None:
            st.previous_day = prev.f.day.isoformat()
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


