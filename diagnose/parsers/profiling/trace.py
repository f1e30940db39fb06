"""``trace_view*.json``: the Chrome trace; AI CPU launches on the ``Ascend Hardware`` lane.

The events are read by :mod:`tracejson` block by block and tallied as they come (bounded memory): the lanes
(``process_name`` metadata events, wherever they are in the file), per process the count and total duration of
its X events, and the X events that look like AI CPU fallbacks (``Task Type`` AI_CPU or ``AiCpu`` in the name,
MC2 fused kernels excepted) with what their records need. At the end only the ``Ascend Hardware`` processes
count. Nothing else is kept: a trace has millions of events and the analyses read these few fields.

Two entries: :func:`parse_trace_view` takes the lines the reader read (and the file's bytes when it kept them)
like every other profiler file; :func:`parse_trace_stream` takes a binary stream and never holds the file.
Both give the same signals and the same AI CPU records. A trace with events on several lines (one per line, or
pretty-printed) gets a record per AI CPU launch on its line; a one-line trace gets one summary record on its line,
whose text is the launch's JSON (clipped), not the gigabyte line.
"""

from __future__ import annotations

import io
from typing import BinaryIO

import polars as pl

from diagnose.parsers.common import FileContext
from diagnose.parsers.profiling.common import (
    EPOCH_US, MC2, engine_label, finish, first_line, fmt, raw_records, signal_frame, top_ops,
)
from diagnose.parsers.profiling.tracejson import MAX_TEXT, TraceScan, iter_event_blocks

_CAND = {"line": pl.UInt32, "pid": pl.String, "name": pl.String, "dur": pl.Float64, "ts": pl.Float64,
         "task": pl.String, "text": pl.String}


class _Tally:
    """What the analysis needs from the events, gathered block by block. ``texts``: keep the text of every AI CPU
    launch on its own line (the stream entry, which has no lines); the first launch of each process in a one-line
    trace always keeps its text (the summary record's evidence)."""

    def __init__(self, texts: bool):
        self.texts = texts
        self.lanes: list[pl.DataFrame] = []
        self.sums: list[pl.DataFrame] = []
        self.cands: list[pl.DataFrame] = []
        self.first_text: set[str | None] = set()  # processes whose first one-line launch has its text

    def add(self, block) -> None:
        f = block.frame
        meta = f.filter((pl.col("ph") == "M") & (pl.col("name") == "process_name"))
        if meta.height:
            self.lanes.append(_own(meta.select("pid", lane=pl.Series(block.lane(meta["i"].to_list()), dtype=pl.String))))
        x = f.filter(pl.col("ph") == "X")
        if x.height == 0:
            return
        self.sums.append(_own(x.group_by("pid").agg(n=pl.len(), dur=pl.col("dur").fill_null(0).sum())))
        name = pl.col("name").fill_null("")
        cand = x.filter((pl.col("task") == "AI_CPU") | name.str.contains("AiCpu", literal=True))
        cand = cand.filter(~name.str.contains(MC2))
        if cand.height == 0:
            return
        idx = cand["i"].to_list()
        if block.one_line:
            firsts = cand.unique("pid", keep="first", maintain_order=True).filter(
                ~pl.col("pid").is_in(pl.Series(list(self.first_text), dtype=pl.String).implode()))
            self.first_text.update(firsts["pid"].to_list())
            want = set(firsts["i"].to_list())
            got = dict(zip(sorted(want), block.texts(sorted(want))))
            texts = [got.get(i) for i in idx]
        else:
            texts = block.texts(idx) if self.texts else [None] * len(idx)
        self.cands.append(_own(cand.select(
            "line", "pid", "name", "dur",
            ts=pl.Series(block.ts(idx), dtype=pl.Float64), task="task", text=pl.Series(texts, dtype=pl.String),
        )))

    def hardware(self) -> tuple[int, float, pl.DataFrame]:
        """(X events on the Ascend Hardware lanes, their total duration, their AI CPU launches in file order)."""
        lanes = pl.concat(self.lanes) if self.lanes else pl.DataFrame(schema={"pid": pl.String, "lane": pl.String})
        hw = lanes.unique("pid", keep="first", maintain_order=True).filter(pl.col("lane") == "Ascend Hardware")["pid"]
        sums = pl.concat(self.sums) if self.sums else pl.DataFrame(schema={"pid": pl.String, "n": pl.UInt32,
                                                                          "dur": pl.Float64})
        on_hw = sums.filter(pl.col("pid").is_in(hw.implode()))
        cands = pl.concat(self.cands) if self.cands else pl.DataFrame(schema=_CAND)
        return int(on_hw["n"].sum()), float(on_hw["dur"].sum()), cands.filter(pl.col("pid").is_in(hw.implode()))


def _own(frame: pl.DataFrame) -> pl.DataFrame:
    """A copy of a few rows that holds no reference to the block's buffers (filtered or grouped strings are views
    into them: kept, they would keep every block's names alive)."""
    return pl.DataFrame(frame.to_dict(as_series=False), schema=frame.schema)


def _read(stream: BinaryIO, texts: bool, block_bytes: int | None = None) -> tuple[_Tally, TraceScan]:
    scan, tally = TraceScan(), _Tally(texts)
    kwargs = {"block_bytes": block_bytes} if block_bytes else {}
    for block in iter_event_blocks(stream, scan, **kwargs):
        tally.add(block)
        del block  # before the next block is decoded
    return tally, scan


def _analyse(tally: _Tally, scan: TraceScan, ctx: FileContext, first: int):
    """(record rows: line, message, ts, level, text; signal rows) of a read trace."""
    n_hw, dev, ai = tally.hardware()
    label = engine_label(ctx)
    ai = ai.with_columns(type=pl.col("name").str.extract(r"_([A-Za-z0-9]+)$", 1).fill_null(pl.col("name")))
    ai_t = float(ai["dur"].fill_null(0).sum())
    share = 100.0 * ai_t / dev if dev else 0.0
    tail = f" (AI CPU {share:.1f}% of device time in trace_view: {fmt(ai_t)} of {fmt(dev)} us in {ai.height} launches)"
    ts = pl.when(pl.col("ts").is_between(*EPOCH_US)).then(pl.from_epoch(pl.col("ts").cast(pl.Int64), time_unit="us"))
    if scan.multi_line:
        rows = ai.filter(pl.col("line") > 1).select(
            "line", message=pl.format("AI_CPU operator {} ({}) {} us, dtypes not in trace_view{}", pl.col("name"),
                                      pl.col("type"), pl.col("dur").round(2), pl.lit(tail)),
            ts=ts, level=pl.lit("WARNING"), text="text")
    elif ai.height:  # one-line trace: one summary record
        one = ai.row(0, named=True)
        dur = "N/A" if one["dur"] is None else f"{one['dur']:.2f}"
        rows = pl.DataFrame({"line": [one["line"]], "message": [f"AI_CPU operator {one['name']} ({one['type']}) {dur} us, "
                                                                 f"dtypes not in trace_view{tail}"],
                             "level": ["WARNING"], "text": [one["text"]]}, schema_overrides={"line": pl.UInt32})
    else:
        rows = pl.DataFrame(schema={"line": pl.UInt32, "message": pl.String, "level": pl.String, "text": pl.String})
    notes = []
    if scan.bad:
        notes.append((scan.first_bad, f"profiler: {scan.bad} trace event line(s) could not be read, first at line {scan.first_bad}"))
    if scan.truncated:
        notes.append((first, f"profiler: trace_view.json is truncated (the JSON array is not closed): "
                             f"{scan.events} events before the cut were analysed, the rest is lost"))
    if scan.form == "other":
        notes.append((first, "profiler: trace_view.json is not a JSON array of trace events (nor an object with "
                             "traceEvents); its content was not analysed"))
    if notes:  # first: on the line of a one-line trace, what could not be read is the news (the signal keeps the share)
        rows = pl.concat([pl.DataFrame({"line": [n[0] for n in notes], "message": [n[1] for n in notes],
                                        "level": ["WARNING"] * len(notes)}, schema_overrides={"line": pl.UInt32}), rows],
                         how="diagonal_relaxed")
    rows = rows.unique("line", keep="first", maintain_order=True)
    out = []
    if n_hw:
        worst = ai.sort("dur", descending=True, nulls_last=True, maintain_order=True)
        line = int(worst["line"][0]) if worst.height else first
        ops = top_ops(ai.with_columns(ind=pl.lit(None, pl.String), outd=pl.lit(None, pl.String)), with_dtype=False)
        text = (f"{label}: {share:.1f}% of {fmt(dev)} us device time on the AI CPU ({fmt(ai_t)} us, {ai.height} launches)"
                + (f": {ops}" if ops else ""))
        out.append(dict(line=line, engine=label, signal="aicpu_time_share_pct", value=share, text=text))
    return rows, out


def parse_trace_view(lines: pl.DataFrame, ctx: FileContext):
    """A trace the reader read: its events are read from the file's bytes (``ctx.data``) or from the lines."""
    data = ctx.data
    if data is None:
        data = lines.select(pl.col("text").str.join("\n")).item().encode("utf-8") if lines.height else b""
    tally, scan = _read(io.BytesIO(data), texts=False)
    first = scan.first_line if scan.bytes else first_line(lines)
    rows, out = _analyse(tally, scan, ctx, first)
    keep = pl.concat([rows["line"], pl.Series([r["line"] for r in out], dtype=pl.UInt32)]).implode()
    if scan.multi_line:  # ordinary events are analysed, not kept (a trace has millions)
        if lines.height > 2 * scan.events + 2:  # pretty-printed: every line is part of the JSON
            kept = lines.filter(pl.col("line").is_in(keep))
        else:
            j = pl.col("text").str.strip_chars().str.strip_chars_end(",")
            kept = lines.filter(~j.str.starts_with("{") | pl.col("line").is_in(keep))
    else:  # one line of events (maybe gigabytes): the launch, not the line, is the evidence
        kept = _one_line_texts(lines, ctx.data, rows)
    return finish(raw_records(kept, ctx), rows.drop("text")), signal_frame(out, ctx)


def _one_line_texts(lines: pl.DataFrame, data: bytes | None, rows: pl.DataFrame) -> pl.DataFrame:
    """(line, text) of every line of a trace whose events are all on one line, that line clipped (any polars
    operation on a frame holding a gigabyte line costs a pass over it: the few lines are taken in Python) and a
    summary record's line given the launch's own text."""
    own = dict(rows.filter(pl.col("text").is_not_null()).select("line", "text").unique("line", keep="first").iter_rows())
    if data is not None and lines.height <= 64:
        texts = [_clip_bytes(b) for b in data.split(b"\n", lines.height)[:lines.height]]
        numbers = range(1, len(texts) + 1)
    else:
        numbers, texts = lines["line"].to_list(), [t if len(t) <= MAX_TEXT else t[:MAX_TEXT - 1] + "…"
                                                   for t in lines["text"].to_list()]
    return pl.DataFrame({"line": list(numbers), "text": [own.get(n, t) for n, t in zip(numbers, texts)]},
                        schema={"line": pl.UInt32, "text": pl.String})


def _clip_bytes(raw: bytes) -> str:
    if len(raw) > MAX_TEXT:
        return raw[:MAX_TEXT - 1].decode("utf-8", errors="ignore") + "…"
    return raw.decode("utf-8", errors="replace").removesuffix("\r")


def parse_trace_stream(stream: BinaryIO, ctx: FileContext, info=None, block_bytes: int | None = None):
    """A trace read from a binary stream in bounded memory: (records, signals). Records are kept only for what
    the analysis reports (AI CPU launches, notes, evidence lines). ``info``, when given, gets the reader's
    counts: ``bytes``, ``lines`` and ``encoding`` are set on it."""
    tally, scan = _read(stream, texts=True, block_bytes=block_bytes)
    if info is not None:
        info.bytes, info.lines, info.encoding = scan.bytes, scan.lines, scan.encoding
    first = scan.first_line if scan.bytes else 1
    rows, out = _analyse(tally, scan, ctx, first)
    wanted = rows.select("line", "text").unique("line", keep="first", maintain_order=True)
    have = set(wanted["line"].to_list())
    extra = {r["line"]: r["text"] for r in out if r["line"] not in have}  # evidence lines need a text
    if extra:
        wanted = pl.concat([wanted, pl.DataFrame({"line": list(extra), "text": list(extra.values())},
                                                 schema={"line": pl.UInt32, "text": pl.String})])
    base = raw_records(wanted.with_columns(text=pl.col("text").fill_null("")).sort("line"), ctx)
    return finish(base.with_columns(parsed=pl.lit(True)), rows.drop("text")), signal_frame(out, ctx)
