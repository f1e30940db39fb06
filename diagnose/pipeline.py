"""The one-way flow: paths → ingest → parsers → timeline → engine → rank → Report."""

from __future__ import annotations

import os
import re
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Callable, NamedTuple

import polars as pl

from diagnose.engine import Rule, builtin_rules_dir, load_rules, run_rules
from diagnose.ingest.budget import Budget, SkipFile
from diagnose.ingest.lines import TextInfo, head_lines, iter_line_chunks, peek_head, read_table
from diagnose.ingest.walk import SourceFile, iter_sources
from diagnose.model import RECORD_SCHEMA, InputFile, Report, Skipped, compact_strings, empty_records, empty_signals
from diagnose.parsers import registry
from diagnose.parsers.common import FileContext, clean_lines, raw_lines_frame
from diagnose.rank import rank_findings
from diagnose.series import Condition, empty_series
from diagnose.series import conditions as series_conditions
from diagnose.series import split as split_series
from diagnose.timeline import date_records

Progress = Callable[[int, str], None]

# Large files parsed at once, two at most (each holds a chunk and its parse in memory). Polars already runs
# each query on every core: on two cores a second file only competes with the first (measured: the same
# wall time, 15% more CPU), so files are parsed two at a time only from four cores on.
WORKERS = 2 if (os.cpu_count() or 1) >= 4 else 1

@dataclass
class Options:
    rule_dirs: list[Path] = field(default_factory=list)
    builtin_rules: bool = True
    since: datetime | None = None
    until: datetime | None = None
    lang: str = "en"
    budget: Budget = field(default_factory=Budget)
    kind: str | None = None  # force every file to this kind (rule fixtures)
    keep: pl.Expr | None = None  # which records to keep in memory (retention_filter); None keeps all
    select: dict[str, str] = field(default_factory=dict)  # kind -> raw-line pattern (prefilter_patterns)
    periodic: list[Condition] | None = None  # threshold rules on periodic metrics (diagnose/series.py)
    baseline: str | None = None  # --baseline: earlier run folder/file, TOML of expected numbers, JSON report
    timeline: bool = True  # build Report.timeline (only the html page draws it)


@dataclass
class Parsed:
    records: pl.DataFrame
    signals: pl.DataFrame
    inputs: list[InputFile]
    skipped: list[Skipped]
    errors: list[str]
    texts: pl.DataFrame | None = None  # lines kept only for their signals (evidence text)
    series: pl.DataFrame | None = None  # every periodic metric row, compact (diagnose/series.py)


class _Taken(NamedTuple):
    """What one file (or one batch of small files) gave, and its place in the walk."""

    place: int
    records: pl.DataFrame
    stamps: pl.DataFrame
    signals: pl.DataFrame
    series: pl.DataFrame
    infos: list[InputFile]
    mtimes: list[datetime | None]


def read_inputs(paths: list[str], options: Options, progress: Progress | None = None) -> Parsed:
    return parse_sources(iter_sources(paths, options.budget), options, progress)


def parse_sources(sources, options: Options, progress: Progress | None = None) -> Parsed:
    # Everything a file gives is filed under its place in the walk and put in that order at the end, so the
    # report is the same whichever way the files were parsed (in a worker or here). A batch of small files
    # takes the place of the file that filled it.
    taken: list[_Taken] = []
    skipped: list[tuple[int, Skipped]] = []
    file_errors: dict[int, list[str]] = {}
    batch = _SmallFiles(options, [])

    def take(place, records, stamps, signals, series, info, mtime):
        infos, mtimes = (info, mtime) if isinstance(info, list) else ([info], [mtime])
        taken.append(_Taken(place, records, stamps, signals, series, infos, mtimes))
        if progress:
            for one in infos:
                progress(one.bytes, one.path)

    def flush_batch(place: int) -> None:
        for done in batch.flush():
            take(place, *done)
        file_errors.setdefault(place, []).extend(batch.errors)
        batch.errors.clear()

    tap = None
    if options.kind is None:  # model JSON files and launch scripts in a bundle: see diagnose/preflight/bundle.py
        from diagnose.preflight.bundle import Tap

        tap = Tap()
        sources = tap.wrap(sources)
    deadline = time.monotonic() + options.budget.max_seconds
    pool = ThreadPoolExecutor(WORKERS) if WORKERS > 1 else None
    running: deque = deque()  # (place, file, future) in input order: results are taken in that order

    def settle(limit: int) -> None:
        while len(running) > limit:
            place, src, future = running.popleft()
            done = future.result()
            if isinstance(done, Skipped):
                skipped.append((place, done))
            else:
                take(place, *done, _mtime(src.mtime))

    place = -1
    try:
        for place, item in enumerate(sources):
            if isinstance(item, Skipped):
                skipped.append((place, item))
                continue
            if time.monotonic() > deadline:
                reason = f"time budget of {options.budget.max_seconds} s reached (not read)"
                skipped.append((place, Skipped(item.path, reason)))
                continue
            its_errors = file_errors.setdefault(place, [])
            if pool is not None and item.standalone and (item.size or 0) > SMALL_FILE:
                # Large files on disk are parsed two at a time (polars releases the GIL); at most one more waits.
                running.append((place, item, pool.submit(_parse_one, item, options, its_errors)))
                settle(WORKERS)
                continue
            result = _parse_one(item, options, its_errors, batch)
            if result is None:  # queued with other small files of its kind
                if batch.full:
                    flush_batch(place)
                continue
            if isinstance(result, Skipped):
                skipped.append((place, result))
                continue
            take(place, *result, _mtime(item.mtime))
        settle(0)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    flush_batch(place + 1)
    taken.sort(key=lambda t: t.place)
    record_parts = [t.records for t in taken]
    stamp_parts = [t.stamps for t in taken if t.stamps.height]
    signal_parts = [t.signals for t in taken]
    series_parts = [t.series for t in taken if t.series.height]
    inputs = [one for t in taken for one in t.infos]
    file_rows = [(one.path, when) for t in taken for one, when in zip(t.infos, t.mtimes)]
    errors = [e for _, errs in sorted(file_errors.items()) for e in errs]
    skipped_files = [s for _, s in sorted(skipped, key=lambda x: x[0])]
    records = pl.concat(record_parts, how="diagonal_relaxed") if record_parts else empty_records()
    signals = pl.concat(signal_parts, how="vertical_relaxed") if signal_parts else empty_signals()
    series = pl.concat(series_parts) if series_parts else empty_series()
    files = pl.DataFrame(file_rows, schema={"file": pl.String, "mtime": pl.Datetime("us")}, orient="row")
    stamps = pl.concat(stamp_parts) if stamp_parts else _empty_stamps()
    # Lines kept only for their signals are dated with the records: their stamps date the signals.
    both, dated = date_records(pl.concat([records.select(STAMP_COLUMNS), stamps.select(STAMP_COLUMNS)]), files)
    if dated:
        records = records.with_columns(ts=both["ts"].head(records.height))
        stamps = stamps.with_columns(ts=both["ts"].tail(stamps.height))
        signals = _redate_signals(signals, both, list(dated))
        series = _redate_signals(series, both, list(dated))
    del both
    texts = stamps.filter(pl.col("text").is_not_null()).select("file", "line", "text", "message")
    if tap is not None:
        try:
            seen = pl.concat([records.select("file", "line", "message"), texts.select("file", "line", "message")])
            extra_records, extra_signals, extra_inputs = tap.finish(seen)
        except Exception as exc:  # noqa: BLE001 - report it, keep the logs' findings
            errors.append(f"preflight on the bundle failed: {type(exc).__name__}: {exc}")
        else:
            records = pl.concat([records, *extra_records], how="vertical_relaxed")
            signals = pl.concat([signals, *extra_signals], how="vertical_relaxed")
            inputs += extra_inputs
    for kind, bundle_pass in registry.bundle_passes():  # values computed across files (each kind's own)
        try:
            signals = bundle_pass(signals, series)
        except Exception as exc:  # noqa: BLE001 - report it, keep the parsed signals
            errors.append(f"{kind} bundle pass failed: {type(exc).__name__}: {exc}")
    if options.since or options.until:
        records = _window(records, options)
        signals = _window(signals, options)
        series = _window(series, options)
    return Parsed(records, signals, inputs, skipped_files, errors, texts, series)


def _redate_signals(signals: pl.DataFrame, records: pl.DataFrame, files: list[str]) -> pl.DataFrame:
    """Signals share their line's time: take it from the dated records of the files that were dated.

    Only the ``ts`` column is rebuilt (a join carrying every column would copy the largest frame), a slice
    of rows at a time so the join's working memory stays small; file names are joined as categories."""
    if signals.height == 0 or not files:
        return signals
    wanted = pl.Series(files, dtype=pl.String).implode()
    dated = (
        records.filter(pl.col("file").is_in(wanted) & pl.col("ts").is_not_null())
        .select(pl.col("file").cast(pl.Categorical), "line", pl.col("ts").alias("_ts"))
        .unique(["file", "line"], keep="first")
    )
    pieces = []
    for start in range(0, signals.height, _REDATE_SLICE):
        part = signals.slice(start, _REDATE_SLICE)
        keys = part.select(pl.col("file").cast(pl.Categorical), "line", "ts")
        hit = keys.join(dated, on=["file", "line"], how="left", maintain_order="left")
        pieces.append(hit.select(pl.coalesce("_ts", "ts").alias("ts"))["ts"])
    return signals.with_columns(ts=pl.concat(pieces))


_REDATE_SLICE = 1_000_000


def _window(frame: pl.DataFrame, options: Options) -> pl.DataFrame:
    cond = pl.lit(True)
    if options.since:
        cond = cond & (pl.col("ts").is_null() | (pl.col("ts") >= options.since))
    if options.until:
        cond = cond & (pl.col("ts").is_null() | (pl.col("ts") <= options.until))
    return frame.filter(cond)


def _mtime(value: float | None) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromtimestamp(value)
    except (OverflowError, OSError, ValueError):
        return None


# Line-oriented files up to this size are parsed together, many per query (see _SmallFiles). Only kinds
# whose parsers take nothing from the file's name (``batchable``): the plog parser reads the pid from it.
SMALL_FILE = 256 * 1024


class _SmallFiles:
    """Small line-oriented files, parsed in batches: a query per file costs milliseconds, which a bundle of
    100,000 small files (a plog per process and restart) cannot afford. The files' lines are concatenated,
    parsed once, and every record and signal is mapped back to its file, line and node."""

    MAX_FILES = 2000
    MAX_LINES = 400_000

    def __init__(self, options: Options, errors: list[str]):
        self.options, self.errors = options, errors
        self.queued: dict[str, list[tuple[SourceFile, pl.Series, TextInfo]]] = {}
        self.lines = 0

    @property
    def full(self) -> bool:
        return self.lines >= self.MAX_LINES or sum(len(v) for v in self.queued.values()) >= self.MAX_FILES

    def add(self, kind: str, src: SourceFile, lines: pl.Series, info: TextInfo) -> None:
        self.queued.setdefault(kind, []).append((src, lines, info))
        self.lines += lines.len()

    def flush(self):
        queued, self.queued, self.lines = self.queued, {}, 0
        for kind, files in queued.items():
            yield from self._parse(kind, files)

    def _parse(self, kind, files):
        sizes = [lines.len() for _, lines, _ in files]
        starts, at = [], 1
        for n in sizes:
            starts.append(at)
            at += n
        meta = pl.DataFrame(
            {
                "_fid": list(range(len(files))),
                "_file": [src.path for src, _, _ in files],
                "_node": [src.node for src, _, _ in files],
                "_start": starts,
            },
            schema={"_fid": pl.UInt32, "_file": pl.String, "_node": pl.String, "_start": pl.UInt32},
        )
        start_series = pl.Series(starts, dtype=pl.UInt32)
        all_lines = pl.concat([lines for _, lines, _ in files]) if files else pl.Series("text", [], pl.String)
        ctx = FileContext(path="<batch>", node=None, kind=kind, mtime=None)
        frame = _select(raw_lines_frame(all_lines, 1), kind, self.options)
        records, signals = _parse_chunk(frame, ctx, self.errors)
        records, signals = _remap(records, start_series, meta), _remap(signals, start_series, meta)
        kept, series = _split(signals.drop("_fid"), self.options)
        raw = dict(records.group_by("_fid").agg((~pl.col("parsed")).sum()).iter_rows())
        records, stamps = _retain(records.drop("_fid"), signals, kept, self.options)
        rows = [
            InputFile(path=src.path, kind=kind, lines=info.lines, bytes=info.bytes, raw_lines=int(raw.get(fid, 0)),
                      node=src.node, encoding=info.encoding)
            for fid, (src, _, info) in enumerate(files)
        ]
        # One frame per batch, not per file: 100,000 tiny frames would cost gigabytes.
        yield records, stamps, kept, series, rows, [_mtime(src.mtime) for src, _, _ in files]


def _remap(frame: pl.DataFrame, starts: pl.Series, meta: pl.DataFrame) -> pl.DataFrame:
    """Batch line numbers back to (file, line, node); an event that began in an earlier file is its own."""
    if frame.height == 0:
        return frame.with_columns(_fid=pl.lit(None, pl.UInt32))
    fid = (starts.search_sorted(frame["line"], side="right") - 1).cast(pl.UInt32)
    out = frame.with_columns(_fid=fid).join(meta, on="_fid", how="left", maintain_order="left")
    cols = {
        "file": pl.col("_file"),
        "line": (pl.col("line") - pl.col("_start") + 1).cast(pl.UInt32),
        "node": pl.coalesce(pl.col("node"), pl.col("_node")),
    }
    if "event" in frame.columns:
        cols["event"] = pl.when(pl.col("event") >= pl.col("_start")).then(pl.col("event") - pl.col("_start") + 1) \
            .otherwise(pl.col("line") - pl.col("_start") + 1).cast(pl.UInt32)
    return out.with_columns(**cols).drop("_file", "_node", "_start")


def _parse_one(src: SourceFile, options: Options, errors: list[str], batch: _SmallFiles | None = None):
    """Read one file chunk by chunk; line-oriented kinds are parsed per chunk, the others whole; small
    line-oriented files are handed to ``batch`` (returns None then)."""
    info = TextInfo()
    parts: list[tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame, int]] = []
    next_line = 1
    small: pl.Series | None = None
    whole: tuple[pl.Series, bytes | None] | None = None
    try:
        with src.open() as stream:
            kind = options.kind or registry.sniff(src.rel or src.path, head_lines(peek_head(stream)))
            ctx = FileContext(path=src.path, node=src.node, kind=kind, mtime=_mtime(src.mtime))
            if not registry.line_oriented(kind):  # tables and JSON are parsed whole
                whole = read_table(stream, info, src.size)
            else:
                for lines in iter_line_chunks(stream, info):
                    if (batch is not None and registry.get(kind).batchable and src.size is not None
                            and src.size <= SMALL_FILE and next_line == 1):
                        small = lines  # a small file arrives as one chunk: batched below
                        next_line += lines.len()
                        continue
                    if small is not None:  # it grew while read: parse its first chunk here after all
                        parts.append(_parse_lines(small, 1, ctx, options, errors))
                        small = None
                    parts.append(_parse_lines(lines, next_line, ctx, options, errors))
                    next_line += lines.len()
    except SkipFile as exc:
        return Skipped(src.path, str(exc))
    except OSError as exc:
        return Skipped(src.path, f"cannot read: {exc.strerror or exc}")
    if info.binary:
        return Skipped(src.path, "binary file (not text)")
    if small is not None:
        if src.note is None and info.cut_lines == 0:
            batch.add(kind, src, small, info)
            return None
        whole = (small, None)
    if whole is not None or not parts:
        lines, data = whole or (pl.Series("text", [], dtype=pl.String), None)
        if lines.len():
            records, signals = _parse_chunk(raw_lines_frame(lines, 1), replace(ctx, data=data), errors)
        else:  # an empty file (a marker such as analyse.done): no parser finds anything in it
            records, signals = empty_records(), empty_signals()
        kept, series = _split(signals, options)
        parts = [(records, _empty_stamps(), kept, series, int((~records["parsed"]).sum()))]
    raw = sum(p[4] for p in parts)
    records = pl.concat([p[0] for p in parts], how="diagonal_relaxed") if len(parts) > 1 else parts[0][0]
    stamps = pl.concat([p[1] for p in parts]) if len(parts) > 1 else parts[0][1]
    signals = pl.concat([p[2] for p in parts], how="vertical_relaxed") if len(parts) > 1 else parts[0][2]
    series = pl.concat([p[3] for p in parts]) if len(parts) > 1 else parts[0][3]
    notes = [n for n in (src.note, f"{info.cut_lines} over-long lines cut" if info.cut_lines else None) if n]
    info_row = InputFile(
        path=src.path, kind=kind, lines=info.lines, bytes=info.bytes, raw_lines=raw, node=src.node,
        encoding=info.encoding, note="; ".join(notes) or None,
    )
    return records, stamps, signals, series, info_row


def _parse_lines(lines: pl.Series, first_line: int, ctx: FileContext, options: Options, errors: list[str]):
    """One chunk of a line-oriented file: (records kept, stamps, signals kept, series, raw line count)."""
    records, signals = _parse_chunk(_select(raw_lines_frame(lines, first_line), ctx.kind, options), ctx, errors)
    kept, series = _split(signals, options)
    return (*_retain(records, signals, kept, options), kept, series, int((~records["parsed"]).sum()))


def _select(frame: pl.DataFrame, kind: str, options: Options) -> pl.DataFrame:
    """Before parsing, drop the lines no rule and no signal can use: well-formed lines (their head matches)
    that match neither the kind's signal hints nor the rules' combined pattern. Lines that do not look
    well-formed are always parsed (they are the raw records and traceback bodies), and so is the line just
    above each of them (the record that opens a traceback or a table)."""
    head, hints = registry.well_formed(kind), registry.get(kind).hints
    if options.keep is None or head is None or hints is None:
        return frame
    wanted = options.select.get(kind)
    text = pl.col("text")
    # Two scans, evaluated in parallel: "not well-formed" and "wanted" (hints and rules in one alternation).
    marks = frame.select(
        odd=~text.str.contains(head),
        want=text.str.contains(hints + (f"|{wanted}" if wanted else "")),
    )
    odd, want = marks["odd"], marks["want"]
    keep = odd | odd.shift(-1, fill_value=False) | want
    if keep.len():
        # First and last lines: year anchors and the span of the file.
        keep = keep.scatter([0, keep.len() - 1], True)
    return frame.filter(keep)


def _parse_chunk(frame: pl.DataFrame, ctx: FileContext, errors: list[str]):
    # Tables, JSON and tool output carry no colour codes, and the reader already cut every line end.
    if registry.line_oriented(ctx.kind):
        frame = clean_lines(frame)
    try:
        return registry.parser_for(ctx.kind)(frame, ctx)
    except Exception as exc:  # a parser bug must not lose the file: keep it as raw lines and say so
        errors.append(f"parser {ctx.kind} failed on {ctx.path}: {type(exc).__name__}: {exc}")
        from diagnose.parsers import generic

        return generic.parse(frame, ctx)


def _retain(records: pl.DataFrame, signals: pl.DataFrame, kept: pl.DataFrame,
            options: Options) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the records that can matter, the stamps of lines kept only for their signals); the rest is counted.
    See ``retention_filter``. A stamp (STAMP_COLUMNS) dates its line's signals; it has the line's text only
    when the rules see its signals (``kept``, diagnose/series.py), for evidence."""
    if options.keep is None or records.height == 0:
        return records, _empty_stamps()
    signal_line = pl.col("line").is_in(signals["line"].unique().implode())
    # The first and last dated line of each chunk keep the dating anchors.
    anchor = pl.col("year_known").fill_null(False)
    keep = options.keep
    keep = keep | (anchor & (pl.col("line") == pl.col("line").filter(anchor).min()))
    keep = keep | (anchor & (pl.col("line") == pl.col("line").filter(anchor).max()))
    quote = pl.col("line").is_in(kept["line"].unique().implode())
    flagged = records.with_columns(_keep=keep)
    stamps = flagged.filter(~pl.col("_keep") & signal_line).select(
        *STAMP_COLUMNS, text=pl.when(quote).then(pl.col("text")), message=pl.when(quote).then(pl.col("message")),
    )
    # Copies: the few kept rows must not keep the whole chunk's text alive (see compact_strings).
    return compact_strings(flagged.filter(pl.col("_keep")).drop("_keep")), compact_strings(stamps)


STAMP_COLUMNS = ["file", "line", "node", "ts", "year_known"]


def _empty_stamps() -> pl.DataFrame:
    schema = {c: RECORD_SCHEMA[c] for c in STAMP_COLUMNS} | {"text": pl.String, "message": pl.String}
    return pl.DataFrame(schema=schema)


def _split(signals: pl.DataFrame, options: Options) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the signals rules see, the periodic series); without rule-driven retention, rules see everything."""
    if options.periodic is None:
        return signals, empty_series()
    kept, series = split_series(signals, options.periodic, registry.periodic_signals())
    return compact_strings(kept), series


def retention_filter(rules: list[Rule]) -> pl.Expr:
    """Rows any rule could use: warnings and errors, lines with an error code, and lines matching any rule
    regex (one combined, linear-time alternation). Everything else is parsed and counted, not kept."""
    keep = pl.col("level").is_in(["WARNING", "ERROR", "CRITICAL"]).fill_null(False) | pl.col("code").is_not_null()
    combined = _combined_pattern(rules)
    if combined:
        keep = keep | pl.col("text").str.contains(combined)
    return keep


def use_rules(options: Options, rules: list[Rule]) -> None:
    """Set the record filters that keep memory bounded to what these rules can use."""
    options.keep = retention_filter(rules)
    options.select = prefilter_patterns(rules)
    options.periodic = series_conditions(rules, registry.periodic_signals())


def prefilter_patterns(rules: list[Rule]) -> dict[str, str]:
    """Per line-oriented kind: one alternation of the levels worth keeping and every rule regex that can
    read that kind, run on raw lines before parsing."""
    out = {}
    for kind in (k.name for k in registry.KINDS if k.line_heads and k.hints):
        usable = [r for r in rules if not r.sources or kind in r.sources]
        combined = _combined_pattern(usable)
        out[kind] = _LEVEL_WORDS + (f"|{combined}" if combined else "")
    return out


# Level words as vLLM, MindIE, ATB and CANN print them; a line holding one may be a warning or an error.
_LEVEL_WORDS = r"WARN|ERROR|CRITICAL|FATAL|\[(?:error|warn|warning|critical|fatal)\]"


def _combined_pattern(rules: list[Rule]) -> str:
    patterns = set()
    for rule in rules:
        for sel in _selectors(rule.match):
            if "regex" in sel and "signal" not in sel:  # with a signal, the regex reads the signal's text
                patterns.add(_anonymous_groups(sel["regex"]))
    return "|".join(f"(?:{p})" for p in sorted(patterns))


def _selectors(match: dict) -> list[dict]:
    found = [match]
    for key in ("when", "missing", "require"):
        if isinstance(match.get(key), dict):
            found.append(match[key])
    found += [c for c in match.get("also", []) if isinstance(c, dict)]
    return found


def _anonymous_groups(pattern: str) -> str:
    # Named groups would clash inside one alternation; their names do not matter for keeping rows.
    return re.sub(r"\(\?P?<([A-Za-z_][A-Za-z0-9_]*)>", "(?:", pattern)


def catalog(options: Options) -> tuple[list[Rule], list[str]]:
    dirs = ([builtin_rules_dir()] if options.builtin_rules else []) + list(options.rule_dirs)
    rules, errors = load_rules(dirs, trusted=builtin_rules_dir())
    return rules, [str(e) for e in errors]


def analyze(paths: list[str], options: Options, progress: Progress | None = None) -> Report:
    rules, rule_errors = catalog(options)
    use_rules(options, rules)
    parsed = read_inputs(paths, options, progress)
    return diagnose_parsed(parsed, rules, rule_errors, options)


def diagnose_parsed(parsed: Parsed, rules: list[Rule], rule_errors: list[str], options: Options) -> Report:
    comparisons: list[dict] = []
    try:  # validation runs: benchmark/accuracy results against --baseline (diagnose/compare.py)
        from diagnose.compare import apply_validation

        parsed, comparisons = apply_validation(parsed, options)
    except Exception as exc:  # noqa: BLE001 - report it, run the rules on what was parsed
        parsed.errors.append(f"baseline comparison failed: {type(exc).__name__}: {exc}")
    findings, run_errors = run_rules(rules, parsed.records, parsed.signals, options.lang, parsed.texts, parsed.series)
    findings = rank_findings(findings)
    try:  # across ranks: the rank that failed first goes on top (diagnose/rootcause.py)
        from diagnose.rootcause import find_root_cause

        findings = find_root_cause(findings, rules, parsed.records, parsed.signals, options.lang)
    except Exception as exc:  # noqa: BLE001 - report it, keep the ranked findings
        run_errors.append(f"root cause across ranks failed: {type(exc).__name__}: {exc}")
    timeline = _timeline(parsed, findings, run_errors) if options.timeline else None
    unrecognised, more, new = _unrecognised(parsed, findings, rules, options, run_errors)
    return Report(
        unrecognised=unrecognised,
        unrecognised_more=more,
        unrecognised_new=new,
        comparisons=comparisons,
        findings=findings,
        inputs=parsed.inputs,
        skipped=parsed.skipped,
        errors=rule_errors + parsed.errors + run_errors,
        rules_checked=[r.brief(options.lang) for r in rules],
        signals=parsed.signals,
        series=parsed.series,
        panels=[(p.title, p.unit, p.signals) for p in registry.panels()],
        timeline=timeline,
    )


def _unrecognised(parsed: Parsed, findings, rules: list[Rule], options: Options, errors: list[str]):
    """Errors no rule explains, grouped into signatures (diagnose/signatures.py)."""
    try:
        from diagnose.signatures import section

        return section(findings, rules, parsed.records, parsed.signals, options.baseline)
    except Exception as exc:  # noqa: BLE001 - an extra section; the findings stand
        errors.append(f"unrecognised error signatures failed: {type(exc).__name__}: {exc}")
        return [], 0, None


def _timeline(parsed: Parsed, findings, errors: list[str]) -> pl.DataFrame | None:
    """Dated warnings/errors and evidence lines for the html timeline (capped; see diagnose/report/html.py)."""
    try:
        from diagnose.report.html import timeline_frame

        return timeline_frame(parsed.records, findings, parsed.signals)
    except Exception as exc:  # noqa: BLE001 - the timeline is an extra; the findings stand
        errors.append(f"html timeline failed: {type(exc).__name__}: {exc}")
        return None
