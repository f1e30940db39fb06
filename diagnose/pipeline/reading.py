"""The read stage: every input file through its kind's parser, in input order, within the budgets.

Log files are read in chunks (lines cut from UTF-8 bytes by polars' CSV reader) and parsed chunk by chunk;
tables (profiler CSV/JSON) are read whole; small line-oriented files are parsed in batches. Everything a file
gives is filed under its place in the walk and put in that order at the end, so the result is the same
whichever way the files were parsed (in a worker or here).
"""

from __future__ import annotations

import heapq
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Iterable, NamedTuple, Protocol

import polars as pl

from diagnose.engine.filters import RuleFilters
from diagnose.ingest.budget import SkipFile
from diagnose.ingest.lines import TextInfo, head_lines, iter_line_chunks, peek_head, read_table, tune_allocator
from diagnose.ingest.walk import SourceFile
from diagnose.knowledge import index as knowledge_index
from diagnose.messages import Joined, Phrase
from diagnose.model import ERROR_LEVELS, UNSET, InputFile, Skipped, empty_records, empty_signals, note, skip
from diagnose.parsers import registry
from diagnose.parsers.kinds.profiling import kernel_table_folder, trace_folder
from diagnose.parsers.lineframe import FileContext, raw_lines_frame
from diagnose.pipeline.batches import SmallFiles, mtime_of
from diagnose.pipeline.chunks import STAMP_COLUMNS, SampleCap, Selected, empty_stamps, parse_chunk, split
from diagnose.pipeline.samples import SeriesBudget
from diagnose.pipeline.settings import Settings
from diagnose.model.derived import Origins
from diagnose.model.series import empty_series
from diagnose.model.timewindow import TimeWindow



class Progress(Protocol):
    """What the pipeline tells a progress display (diagnose/commands/progress.py): the phase it is in, and the bytes
    read, once per chunk or small file (from the reading workers' threads too)."""

    def phase(self, name: str) -> None: ...

    def advance(self, nbytes: int, path: str) -> None: ...


# Large files parsed at once, two at most (each holds a chunk and its parse in memory). Polars runs each query
# on every core, but most of a chunk's work is a sequence of small queries that keep one core busy, so a second
# file uses the other: on 2 cores the 1 GiB benchmark bundle takes 24 s instead of 33 s (same report, peak RSS
# 594 MB instead of 520 MB).
WORKERS = 2 if (os.cpu_count() or 1) >= 2 else 1


class _LargestFirst:
    """The large files of a run, parsed by WORKERS threads, the largest waiting file first. In the walk's
    order the two largest files of a two-node bundle (each node's server log) came last, and the second ran
    alone at the end for 5 s; started first, they run beside the smaller ones. Nothing waits on a file's
    result until the walk is done (a file's result is small: what it keeps, not its text), so the walk and
    the small files never stall behind a large one."""

    def __init__(self, workers: int, deadline: float, budget_note: Phrase):
        self._pool = ThreadPoolExecutor(workers)
        self._waiting: list[tuple[int, int, SourceFile, tuple]] = []
        self._lock = threading.Lock()
        self._futures: list = []
        self._deadline, self._budget_note = deadline, budget_note

    def submit(self, place: int, src: SourceFile, *args) -> None:
        with self._lock:
            heapq.heappush(self._waiting, (-(src.disk_bytes or 0), place, src, args))
        # Each task parses whichever file is largest when a worker gets to it.
        self._futures.append(self._pool.submit(self._largest))

    def _largest(self):
        with self._lock:
            _, place, src, args = heapq.heappop(self._waiting)
        if time.monotonic() > self._deadline:
            return place, src, Skipped(src.path, self._budget_note)
        settings, filters, errors, progress, samples = args
        return place, src, _parse_one(src, settings, filters, errors, None, progress, samples)

    def ready(self):
        """The results of the files parsed so far (taken while the walk goes on, so that what they keep is
        trimmed to the run's budget of samples, diagnose/pipeline/samples.py, without waiting for the walk)."""
        done, waiting = [], []
        for future in self._futures:  # one look at each: a future that ends meanwhile is taken next time
            (done if future.done() else waiting).append(future)
        self._futures = waiting
        for future in done:
            yield future.result()

    def results(self):
        """The other results, as they come (their order does not matter: everything is put in the walk's order
        at the end)."""
        futures, self._futures = self._futures, []
        for future in as_completed(futures):
            yield future.result()

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

# Line-oriented files up to this size are parsed together, many per query (see SmallFiles). Only kinds
# whose parsers take nothing from the file's name (``batchable``): the plog parser reads the pid from it.
SMALL_FILE = 256 * 1024


@dataclass
class Parsed:
    """What the read stage gives the later stages (and what they add to it)."""

    records: pl.DataFrame
    signals: pl.DataFrame
    inputs: list[InputFile]
    skipped: list[Skipped]
    errors: list[str]
    texts: pl.DataFrame | None = None  # lines kept only for their signals (evidence text)
    series: pl.DataFrame | None = None  # every periodic metric row, compact (diagnose/model/series.py)
    stamps: pl.DataFrame | None = None  # STAMP_COLUMNS (+ text) of lines kept only for their signals, until dated
    files: pl.DataFrame | None = None  # file, mtime: for dating
    # What a stage hands a later one:
    tap: Any = None  # the preflight tap (diagnose/preflight/tap.py) until its facts are derived
    origins: Origins = field(default_factory=dict)  # derived file -> its lines' places in the real files
    window: TimeWindow | None = None  # dated records before and after --since/--until
    roots: list[str] = field(default_factory=list)  # the named files and bundles (coverage)
    derived: list[InputFile] = field(default_factory=list)  # inputs the run wrote itself (not files read)


class _Taken(NamedTuple):
    """What one file (or one batch of small files) gave, and its place in the walk."""

    place: int
    records: pl.DataFrame
    stamps: pl.DataFrame
    signals: pl.DataFrame
    series: pl.DataFrame
    infos: list[InputFile]
    mtimes: list[datetime | None]


def read_sources(sources: Iterable, settings: Settings, filters: RuleFilters,
                 progress: Progress | None = None) -> Parsed:
    tune_allocator()
    taken: list[_Taken] = []
    skipped: list[tuple[int, Skipped]] = []
    file_errors: dict[int, list[str]] = {}
    batch = SmallFiles(filters, [])
    budget = SeriesBudget(settings.budget.max_series_rows, filters.spec)
    caps: dict[str, SampleCap] = {}

    warming = False

    def take(place, records, stamps, signals, series, info, mtime):
        nonlocal warming
        infos, mtimes = (info, mtime) if isinstance(info, list) else ([info], [mtime])
        taken.append(_Taken(place, records, stamps, signals, series, infos, mtimes))
        budget.took(taken)
        if not warming and _erred(records):
            # A run that logged an error may have ended on one, which the judge looks up in the message index:
            # it loads beside the reading (a fifth of a second; 50 MB that a clean run never needs).
            warming = True
            knowledge_index.warm()

    def cap(src: SourceFile) -> SampleCap | None:
        if filters.periodic is None:  # rules see every periodic row (no series): nothing is counted
            return None
        caps[src.path] = SampleCap(settings.budget.max_series_rows, filters.spec)
        return caps[src.path]

    def flush_batch(place: int) -> None:
        # A batch of small files takes the place of the file that filled it. A batch that fails costs its
        # files (each skipped, with the reason), never the run.
        queued = [src for files in batch.queued.values() for src, _, _ in files]
        try:
            for done in batch.flush():
                take(place, *done)
        except Exception as exc:  # noqa: BLE001 - see above
            file_errors.setdefault(place, []).append(f"reading a batch of {len(queued)} small files failed: "
                                                     f"{failure(exc)}")
            skipped.extend((place, Skipped(src.path, skip("reader_failed", error=failure(exc)))) for src in queued)
        file_errors.setdefault(place, []).extend(batch.errors)
        batch.errors.clear()

    def took(place, src, done) -> None:
        if isinstance(done, Skipped):
            skipped.append((place, done))
        else:
            take(place, *done, mtime_of(src.mtime))

    deadline = time.monotonic() + settings.budget.max_seconds
    budget_note = skip("time_budget", n=settings.budget.max_seconds)
    pool = _LargestFirst(WORKERS, deadline, budget_note) if WORKERS > 1 else None

    tables: set[str] = set()  # profiler folders whose kernel table was read (their trace adds nothing)
    place = -1
    try:
        for place, item in enumerate(sources):
            if isinstance(item, Skipped):
                skipped.append((place, item))
                continue
            if settings.kind is None and _redundant_trace(item.path, tables):
                skipped.append((place, Skipped(item.path, skip("trace_beside_kernel_table"))))
                continue
            if time.monotonic() > deadline:
                skipped.append((place, Skipped(item.path, budget_note)))
                continue
            its_errors = file_errors.setdefault(place, [])
            if pool is not None:
                for done_place, src, done in pool.ready():
                    took(done_place, src, done)
            if pool is not None and item.standalone and (item.disk_bytes or 0) > SMALL_FILE:
                pool.submit(place, item, settings, filters, its_errors, progress, cap(item))
                continue
            result = _parse_one(item, settings, filters, its_errors, batch, progress, cap(item))
            if result is None:  # queued with other small files of its kind
                if batch.full:
                    flush_batch(place)
                continue
            if isinstance(result, Skipped):
                skipped.append((place, result))
                continue
            take(place, *result, mtime_of(item.mtime))
        if pool is not None:
            for done_place, src, done in pool.results():
                took(done_place, src, done)
    finally:
        if pool is not None:
            pool.shutdown()
    flush_batch(place + 1)
    taken.sort(key=lambda t: t.place)
    for path, one in caps.items():
        budget.count(path, one.dropped)
    taken = budget.noted(taken)
    # The shared frames of empty files add nothing but a piece to concatenate each; one of them is kept.
    shared = {id(part[0]) for part in _EMPTY.values()}
    record_parts = [t.records for i, t in enumerate(taken) if i == 0 or id(t.records) not in shared]
    stamp_parts = [t.stamps for t in taken if t.stamps.height]
    signal_parts = [t.signals for i, t in enumerate(taken) if i == 0 or id(t.records) not in shared]
    series_parts = [t.series for t in taken if t.series.height]
    file_rows = [(one.path, when) for t in taken for one, when in zip(t.infos, t.mtimes)]
    # One piece per column (rechunk): every later stage filters and joins these frames a few hundred times,
    # and on a frame of a thousand pieces (one per parse) each of those pays per piece.
    return Parsed(
        records=pl.concat(record_parts, how="diagonal_relaxed", rechunk=True) if record_parts else empty_records(),
        signals=pl.concat(signal_parts, how="vertical_relaxed", rechunk=True) if signal_parts else empty_signals(),
        inputs=[one for t in taken for one in t.infos],
        skipped=[s for _, s in sorted(skipped, key=lambda x: x[0])],
        errors=[e for _, errs in sorted(file_errors.items()) for e in errs],
        series=pl.concat(series_parts, rechunk=True) if series_parts else empty_series(),
        stamps=pl.concat(stamp_parts, rechunk=True) if stamp_parts else empty_stamps(),
        files=pl.DataFrame(file_rows, schema={"file": pl.String, "mtime": pl.Datetime("us")}, orient="row"),
    )


def _erred(records: pl.DataFrame) -> bool:
    return records.height > 0 and "level" in records.columns and bool(
        records.select(pl.col("level").is_in(ERROR_LEVELS).any()).item())


def _redundant_trace(path: str, tables: set[str]) -> bool:
    """A profiler trace whose rank's kernel table was read before it (diagnose/parsers/kinds/profiling)."""
    folder = kernel_table_folder(path)
    if folder is not None:
        tables.add(folder)
        return False
    return trace_folder(path) in tables


def _parse_one(src: SourceFile, settings: Settings, filters: RuleFilters, errors: list[str],
               batch: SmallFiles | None = None, progress: Progress | None = None, samples: SampleCap | None = None):
    """``_read_one``, whose failure costs only its file: any exception while one file is read (a reader's bug,
    an input no check foresaw) skips that file with the exception as its reason and records an internal error,
    so the run goes on and says it is incomplete (exit 3), instead of losing every other file's findings."""
    try:
        return _read_one(src, settings, filters, errors, batch, progress, samples)
    except Exception as exc:  # noqa: BLE001 - see the docstring
        errors.append(f"reading {src.path} failed: {failure(exc)}")
        return Skipped(src.path, skip("reader_failed", error=failure(exc)))


def _read_one(src: SourceFile, settings: Settings, filters: RuleFilters, errors: list[str],
              batch: SmallFiles | None = None, progress: Progress | None = None, samples: SampleCap | None = None):
    """Read one file chunk by chunk; line-oriented kinds are parsed per chunk, the others whole; small
    line-oriented files are handed to ``batch`` (returns None then). ``samples`` caps the periodic samples the
    file keeps (its ``dropped`` says how many were not)."""
    if src.size == 0:  # listed empty (an archive member, a marker file): nothing to open, sniff or parse
        kind = settings.kind or registry.sniff(src.rel or src.path, [])
        return (*_nothing(filters)[:4], InputFile(path=src.path, kind=kind, lines=0, bytes=0, raw_lines=0,
                                                  node=src.node))
    info = TextInfo()
    told = 0

    def tell() -> None:  # the bytes read since the last call, to the progress display
        nonlocal told
        if progress is not None and info.bytes > told:
            progress.advance(info.bytes - told, src.path)
            told = info.bytes

    parts: list[tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame, int]] = []
    next_line = 1
    small: pl.Series | None = None
    whole: tuple[pl.Series, bytes | None] | None = None
    streamed = None
    try:
        with src.open() as stream:
            kind = settings.kind or registry.sniff(src.rel or src.path, head_lines(peek_head(stream)))
            if kind == registry.SOURCE_CODE:
                return Skipped(src.path, skip("python_source"))
            ctx = FileContext(path=src.path, node=src.node, kind=kind, mtime=mtime_of(src.mtime))
            source = registry.get(kind)
            if source.streams is not None and source.streams(src.rel or src.path):
                # Read from the stream in bounded memory (a multi-GB one-line trace), never whole.
                records, signals = source.parse_stream(stream, ctx, info)
                kept, series = split(samples.take(signals) if samples is not None else signals, filters)
                streamed = (records, empty_stamps(), kept, series, int((~records["parsed"]).sum()))
            elif not source.line_oriented:  # tables and JSON are parsed whole
                whole = read_table(stream, info, src.size, max_line=settings.budget.max_line_bytes)
            else:
                selected = Selected(ctx, filters, errors, samples)
                for lines in iter_line_chunks(stream, info, max_line=settings.budget.max_line_bytes):
                    if (batch is not None and registry.get(kind).batchable and src.size is not None
                            and src.size <= SMALL_FILE and next_line == 1):
                        small = lines  # a small file arrives as one chunk: batched below
                        next_line += lines.len()
                        continue
                    if small is not None:  # it grew while read: parse its first chunk here after all
                        selected.add(small, 1)
                        small = None
                    selected.add(lines, next_line)
                    next_line += lines.len()
                    tell()
                parts = selected.flush()
    except SkipFile as exc:
        return Skipped(src.path, exc.reason)
    except OSError as exc:
        return Skipped(src.path, skip("cannot_read", error=str(exc.strerror or exc)))
    finally:
        tell()
    if info.binary:
        return Skipped(src.path, skip("binary"))
    if small is not None:
        if src.note is None and info.cut_lines == 0:
            batch.add(kind, src, small, info)
            return None
        whole = (small, None)
    if streamed is not None:
        parts = [streamed]
    elif whole is not None or not parts:
        lines, data = whole or (None, None)
        if lines is not None and lines.len():
            records, signals = parse_chunk(raw_lines_frame(lines, 1), replace(ctx, data=data), errors)
            kept, series = split(samples.take(signals) if samples is not None else signals, filters)
            parts = [(records, empty_stamps(), kept, series, int((~records["parsed"]).sum()))]
        else:  # an empty file (a marker such as analyse.done): no parser finds anything in it
            parts = [_nothing(filters)]
    raw = sum(p[4] for p in parts)
    records = pl.concat([p[0] for p in parts], how="diagonal_relaxed") if len(parts) > 1 else parts[0][0]
    stamps = pl.concat([p[1] for p in parts]) if len(parts) > 1 else parts[0][1]
    signals = pl.concat([p[2] for p in parts], how="vertical_relaxed") if len(parts) > 1 else parts[0][2]
    series = pl.concat([p[3] for p in parts]) if len(parts) > 1 else parts[0][3]
    notes = [n for n in (src.note, _cut_note(info, settings.budget.max_line_bytes)) if n]
    said = (notes[0] if len(notes) == 1 else Joined(notes, "input_note.join")) if notes else None
    # A cut, a read error or a line passed over by the budget: the file was read only in part (coverage.py).
    info_row = InputFile(
        path=src.path, kind=kind, lines=info.lines, bytes=info.bytes, raw_lines=raw, node=src.node,
        encoding=info.encoding, note=said, incomplete=said if said is not None else UNSET,
    )
    return records, stamps, signals, series, info_row


_EMPTY: dict[int, tuple] = {}


def _nothing(filters: RuleFilters) -> tuple:
    """What an empty file gives: one set of empty frames shared by every empty file of the run. A tar of 250,000
    empty members made a set of frames each (40 KB and 2 ms a member: 7.9 GB and 195 s)."""
    key = id(filters)
    if key not in _EMPTY:
        _EMPTY.clear()
        records, signals = empty_records(), empty_signals()
        kept, series = split(signals, filters)
        _EMPTY[key] = (records, empty_stamps(), kept, series, 0)
    return _EMPTY[key]


def failure(exc: BaseException, limit: int = 200) -> str:
    """``Type: message`` of an exception, clipped (a message may quote the input)."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _cut_note(info: TextInfo, limit: int) -> Phrase | None:
    """What the line limit refused, in the file's note (and so in every report that lists inputs)."""
    if not info.cut_lines:
        return None
    return note("lines_cut", n=info.cut_lines, limit=_size(limit), cut=_size(info.cut_bytes))


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}".replace(".0 ", " ")
    return f"{n} bytes"


__all__ = ["Parsed", "Progress", "read_sources", "mtime_of", "STAMP_COLUMNS", "SMALL_FILE", "WORKERS"]
