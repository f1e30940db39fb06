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

from typing import BinaryIO

import polars as pl

from diagnose.parsers.lineframe import FileContext
from diagnose.parsers.kinds.profiling.shared import (
    EPOCH_US, MC2_RE, engine_label, finish, first_line, fmt, raw_records, signal_frame, top_ops,
)
from diagnose.parsers.kinds.profiling.traceevents import MAX_TEXT, TraceScan, as_text
from diagnose.parsers.kinds.profiling.tracejson import iter_event_blocks

_CAND = {"line": pl.UInt32, "pid": pl.String, "name": pl.String, "dur": pl.Float64, "ts": pl.Float64,
         "task": pl.String, "text": pl.String}


class _Tally:
    """What the analysis needs from the events, gathered block by block in one pass over them. ``texts``: keep the
    text of every AI CPU launch on its own line (the stream entry, which has no lines); the first launch of each
    process in a one-line trace always keeps its text (the summary record's evidence). Durations are added in file
    order: the totals do not depend on where blocks were cut."""

    def __init__(self, texts: bool):
        self.texts = texts
        self.lanes: dict = {}  # pid -> first process_name
        self.sums: dict = {}  # pid -> [X events, total dur]
        self.cands: list[pl.DataFrame] = []
        self.first_text: set = set()  # processes whose first one-line launch has its text
        self.mc2: dict = {}  # kernel name -> not an MC2 kernel

    def add(self, block) -> None:
        sums, lanes, mc2, keep = self.sums, self.lanes, self.mc2, []
        for i, e in enumerate(block.events):
            ph = e.ph
            if ph == "X":
                acc = sums.get(e.pid)
                if acc is None:
                    acc = sums[e.pid] = [0, 0.0]
                acc[0] += 1
                if e.dur is not None:
                    acc[1] += e.dur
                name, args = e.name, e.args
                if (args is not None and args.task == "AI_CPU") or (name is not None and "AiCpu" in name):
                    not_mc2 = mc2.get(name)
                    if not_mc2 is None:  # MC2 fused communication kernels are not fallbacks; a few names repeat
                        not_mc2 = mc2[name] = not MC2_RE.search(name or "")
                    if not_mc2:
                        keep.append(i)
            elif ph == "M" and e.name == "process_name" and e.pid not in lanes:
                lanes[e.pid] = e.args.name if e.args is not None else None
        if not keep:
            return
        events = block.events
        cand = pl.DataFrame({
            "line": [block.line(i) for i in keep], "pid": [as_text(events[i].pid) for i in keep],
            "name": [events[i].name for i in keep], "dur": [events[i].dur for i in keep], "ts": block.ts(keep),
            "task": [events[i].args.task if events[i].args is not None else None for i in keep],
        }, schema={k: v for k, v in _CAND.items() if k != "text"})
        if block.one_line:
            firsts = [(i, p) for i, p in zip(keep, cand["pid"].to_list()) if p not in self.first_text]
            firsts = {p: i for i, p in reversed(firsts)}  # the first launch of each process
            self.first_text.update(firsts)
            wanted = sorted(firsts.values())
            got = dict(zip(wanted, block.texts(wanted)))
            texts = [got.get(i) for i in keep]
        else:
            texts = block.texts(keep) if self.texts else [None] * len(keep)
        self.cands.append(cand.with_columns(text=pl.Series(texts, dtype=pl.String)))

    def hardware(self) -> tuple[int, float, pl.DataFrame]:
        """(X events on the Ascend Hardware lanes, their total duration, their AI CPU launches in file order)."""
        hw = {as_text(p) for p, lane in self.lanes.items() if lane == "Ascend Hardware"}
        n, dur = 0, 0.0
        for pid, (k, d) in self.sums.items():
            if as_text(pid) in hw:
                n, dur = n + k, dur + d
        cands = pl.concat(self.cands) if self.cands else pl.DataFrame(schema=_CAND)
        return n, dur, cands.filter(pl.col("pid").is_in(pl.Series(sorted(hw), dtype=pl.String).implode()))


def _read(stream: BinaryIO | bytes, texts: bool, block_bytes: int | None = None) -> tuple[_Tally, TraceScan]:
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
    tally, scan = _read(data, texts=False)
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
        texts, at = [], 0
        for _ in range(lines.height):  # each line's head, without splitting (copying) the gigabyte line
            end = data.find(b"\n", at)
            end = len(data) if end < 0 else end
            texts.append(_clip_bytes(data[at:min(end, at + MAX_TEXT + 4)]))
            at = end + 1
        numbers = range(1, len(texts) + 1)
    else:
        numbers, texts = lines["line"].to_list(), [t if len(t) <= MAX_TEXT else t[:MAX_TEXT - 1] + "…"
                                                   for t in lines["text"].to_list()]
    return pl.DataFrame({"line": list(numbers), "text": [own.get(n, t) for n, t in zip(numbers, texts)]},
                        schema={"line": pl.UInt32, "text": pl.String})


def _clip_bytes(raw: bytes) -> str:
    if len(raw) > MAX_TEXT:  # (a head of MAX_TEXT + 4 bytes stands for a longer line)
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
    # A note's record is its own evidence: an empty text would have the evidence read back from the file.
    wanted = wanted.join(rows.select("line", "message"), on="line", how="left").select(
        "line", text=pl.coalesce("text", "message", pl.lit("trace_view.json")))
    base = raw_records(wanted.sort("line"), ctx)
    return finish(base.with_columns(parsed=pl.lit(True)), rows.drop("text")), signal_frame(out, ctx)
