"""One chunk of lines (or one whole table file) through the parse stage: the prefilter, the kind's parser,
what is kept in memory, and the split of periodic metrics into the compact series.

Before parsing, a chunk of a line-oriented kind is reduced to the lines that can matter, with two
linear-time scans: lines whose head does not look well-formed (raw records and traceback bodies) plus the
line above each, and lines matching one alternation of the kind's hints, the level words and every rule
regex (``RuleFilters.select``). Everything else is counted but not kept.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import replace
from pathlib import Path

import polars as pl

from diagnose.engine.filters import RuleFilters, kept_by_level_or_code
from diagnose.scan import literals
from diagnose.scan import plan as scanplan
from diagnose.scan.plan import ScanPlan, literal_hits, plan
from diagnose.cache import JsonStore
from diagnose.model import RECORD_SCHEMA, ROUTINE_LEVELS, compact_strings
from diagnose.parsers import registry
from diagnose.parsers.kinds import generic
from diagnose.parsers.lineframe import BARE_SGR, FileContext, clean_lines, raw_lines_frame
from diagnose.pipeline.repair import mask_logged_prompts, repair
from diagnose.model.series import Periodic, cap, empty_series
from diagnose.model.series import split as split_series

STAMP_COLUMNS = ["file", "line", "node", "ts", "year_known"]


def empty_stamps() -> pl.DataFrame:
    schema = {c: RECORD_SCHEMA[c] for c in STAMP_COLUMNS} | {"text": pl.String, "message": pl.String}
    return pl.DataFrame(schema=schema)


class SampleCap:
    """The periodic samples one file may still keep (``Budget.max_series_rows``): its chunks take them in line
    order, and after the first cut none (the samples kept are a prefix of the file). ``dropped`` counts the
    samples not kept, for the file's note; everything else of the file (its error lines) is read as ever."""

    def __init__(self, left: int, spec: Periodic):
        self.left, self.spec, self.dropped = left, spec, 0

    def take(self, signals: pl.DataFrame) -> pl.DataFrame:
        if signals.height == 0:
            return signals
        kept, taken, dropped = cap(signals, self.spec, self.left)
        self.left = 0 if dropped else self.left - taken
        self.dropped += dropped
        return kept


def parse_lines(lines: pl.Series, first_line: int, ctx: FileContext, filters: RuleFilters, errors: list[str]):
    """One chunk of a line-oriented file: (records kept, stamps, signals kept, series, raw line count)."""
    return parse_selected(select(raw_lines_frame(lines, first_line), ctx.kind, filters), ctx, filters, errors)


def parse_selected(frame: pl.DataFrame, ctx: FileContext, filters: RuleFilters, errors: list[str],
                   samples: SampleCap | None = None):
    """Lines ``select`` kept (of one chunk or of several of one file, in order) through the kind's parser:
    (records kept, stamps, signals kept, series, raw line count); periodic samples past ``samples`` are not
    kept (nor the stamps of lines that had nothing else)."""
    records, signals = parse_chunk(frame, ctx, errors)
    if samples is not None:
        signals = samples.take(signals)
    kept, series = split(signals, filters)
    return (*retain(records, signals, kept, filters), kept, series, int((~records["parsed"]).sum()))


class Selected:
    """The lines ``select`` kept from the chunks of one file, parsed together once they hold PARSE_BYTES
    (or at the end of the file). A parse costs tens of milliseconds whatever its size (dozens of queries,
    each with its patterns), and a chunk of a request-logging server log keeps a few hundred lines of its
    megabytes: parsed chunk by chunk, the 1 GiB benchmark bundle spent most of its time in that fixed cost."""

    PARSE_BYTES = 8 * 1024 * 1024
    PARSE_LINES = 200_000

    def __init__(self, ctx: FileContext, filters: RuleFilters, errors: list[str], samples: SampleCap | None = None):
        self.ctx, self.filters, self.errors, self.samples = ctx, filters, errors, samples
        self.frames: list[pl.DataFrame] = []
        self.bytes = self.lines = 0
        self.parts: list[tuple] = []
        self.plan: ScanPlan | None = None  # the prefilter's, chosen on the file's first chunk

    def add(self, lines: pl.Series, first_line: int) -> None:
        chosen, self.plan = select_with(raw_lines_frame(lines, first_line), self.ctx.kind, self.filters, self.plan)
        if chosen.height == lines.len():  # nothing dropped (a kind without a prefilter): parsed as it comes
            self.bytes = self.PARSE_BYTES
        else:
            # Copied: the few lines kept must not keep their chunk's text alive while the next chunks are read
            # (a request log's chunks wait for its one parse: 400 MB held).
            chosen = compact_strings(chosen)
            self.bytes += chosen["text"].str.len_bytes().sum() or 0
        self.frames.append(chosen)
        self.lines += chosen.height
        if self.bytes >= self.PARSE_BYTES or self.lines >= self.PARSE_LINES:
            self.flush()

    def flush(self) -> list[tuple]:
        if self.frames:
            frame = pl.concat(self.frames) if len(self.frames) > 1 else self.frames[0]
            self.frames, self.bytes, self.lines = [], 0, 0
            self.parts.append(parse_selected(frame, self.ctx, self.filters, self.errors, self.samples))
        return self.parts


CONTEXT_LINES = 200  # of a kind's context lines per chunk (SourceKind.context_hints)


TUNE_LINES = 2000  # a sample of at least this many lines measures which literals are rare
TUNE_SAMPLE = 5_000  # and the first this many are enough (a literal on 5% of the lines is on 250 of them)
TUNE_WHEN = 0.05  # worth it when a plan's literals are on more than this share of the sample
TUNE_FAMILIES = 4  # tuned plans kept per kind
# The plans tuned for a kind, each with the share of its own sample its literals were on.
_TUNED: dict[tuple[str, tuple[str, ...]], list[tuple[ScanPlan, float]]] = {}


def scan_plan(hints: str, wanted: tuple[str, ...], sample: pl.Series | None = None) -> ScanPlan:
    """The kind's hints and the rules' prefilter patterns as one plan of scans (diagnose/scan/plan.py), for a
    file whose first lines are ``sample``. When the plan's literals are common there (more than TUNE_WHEN of
    the lines), it is tuned on the sample: each pattern is then searched by its literals seen least often.
    A kind's files differ (a plog is a tenth HCCL lines, the device log of the same process has none, and a
    literal rare in one is on 40% of the other's lines), so a tuned plan is kept per family of files: the
    first one whose literals are about as rare on this sample as on its own is taken, else one is tuned for
    it (a quarter of a second) and kept in the cache folder for later runs. Which literals are searched
    changes only the speed, never the lines kept."""
    key = (hints, wanted)
    untuned = _untuned(key)
    tuned = _families(key)
    if sample is None or sample.len() < TUNE_LINES:
        return tuned[0][0] if tuned else untuned
    sample = sample.head(TUNE_SAMPLE)
    measured = []
    for scan, own in [*tuned, (untuned, 0.0)]:
        share = _share(scan, sample)
        if share <= max(TUNE_WHEN, 2 * own):
            return scan
        measured.append((share, scan))
    if len(tuned) >= TUNE_FAMILIES:
        return min(measured, key=lambda m: m[0])[1]
    patterns = [hints, *wanted]
    scan = plan(patterns, literal_hits(patterns, sample))
    tuned.append((scan, _share(scan, sample)))  # two workers may both tune: either plan is right
    _plan_store().put(_name(key) + "-tuned", [[_stored(p), own] for p, own in tuned])
    return scan


def _share(scan: ScanPlan, sample: pl.Series) -> float:
    """The share of ``sample``'s lines holding one of the plan's candidate literals."""
    return float(sample.str.contains(scan.candidates[0]).mean() or 0.0) if scan.candidates else 0.0


def _families(key: tuple[str, tuple[str, ...]]) -> list[tuple[ScanPlan, float]]:
    """The plans tuned for ``key`` (with their own sample's share), first those earlier runs kept."""
    if key not in _TUNED:
        stored = _plan_store().get(_name(key) + "-tuned")
        families = []
        for item in stored if isinstance(stored, list) else ():
            if (isinstance(item, list) and len(item) == 2 and isinstance(item[1], float)
                    and (scan := _read(item[0])) is not None):
                families.append((scan, item[1]))
        _TUNED.setdefault(key, families[:TUNE_FAMILIES])
    return _TUNED[key]


@functools.lru_cache(maxsize=64)
def _untuned(key: tuple[str, tuple[str, ...]]) -> ScanPlan:
    """The plan without a sample, from the cache folder when the same patterns were planned before (building
    one parses a hundred patterns: a tenth of a second per kind, on every small run)."""
    found = _read(_plan_store().get(_name(key)))
    if found is None:
        found = plan([key[0], *key[1]])
        _plan_store().put(_name(key), _stored(found))
    return found


def _name(key: tuple[str, tuple[str, ...]]) -> str:
    return hashlib.sha256("\0".join([key[0], *key[1]]).encode()).hexdigest()


def _stored(scan: ScanPlan) -> list:
    return [list(scan.always), list(scan.candidates), list(scan.confirm), list(scan.literals)]


def _read(stored) -> ScanPlan | None:
    """A plan as ``_stored`` wrote it, or None: the cache folder is not trusted (diagnose/cache.py)."""
    if (isinstance(stored, list) and len(stored) == 4
            and all(isinstance(part, list) and all(isinstance(p, str) for p in part) for part in stored)):
        return ScanPlan(*(tuple(part) for part in stored))
    return None


@functools.cache
def _plan_store() -> JsonStore:
    # Keyed by the planner's own source: a changed planner plans again.
    source = b"".join(Path(module.__file__).read_bytes() for module in (literals, scanplan))
    return JsonStore("plans-", hashlib.sha256(source).hexdigest())


def select(frame: pl.DataFrame, kind: str, filters: RuleFilters) -> pl.DataFrame:
    """Drop the lines no rule and no signal can use: well-formed lines (their head matches) that match
    neither the kind's hints nor the rules' combined pattern. Lines that do not look well-formed are always
    parsed, and so is the line just above each of them (the record that opens a traceback or a table)."""
    return select_with(frame, kind, filters)[0]


def select_with(frame: pl.DataFrame, kind: str, filters: RuleFilters,
                plan: ScanPlan | None = None) -> tuple[pl.DataFrame, ScanPlan | None]:
    """``select`` with the scan plan chosen for the file (``scan_plan``) on its first chunk, returned for
    its next chunks: (lines kept, the plan)."""
    source = registry.get(kind)
    head, hints = registry.well_formed(kind), source.hints
    if filters.keep is None or head is None or hints is None:
        return frame, plan
    frame = mask_logged_prompts(frame)  # no scan need read a logged prompt: most bytes of a request log
    if plan is None:
        plan = scan_plan(hints, tuple(filters.select.get(kind, [])), frame["text"])
    text = pl.col("text")
    # A terminal capture colours the head: tested raw, no line would look well-formed and all would be kept.
    escaped = frame.height and frame.select(text.str.contains("\x1b", literal=True).any()).item()
    if escaped:
        frame = clean_lines(frame)
    context = source.context_hints
    # A few scans, evaluated in parallel: "not well-formed" and "wanted" (the hints and the rules' patterns as
    # literal searches where they can be: diagnose/scan/plan.py).
    # The literal members and the candidates' literals are one search (one pass of the multi-literal automaton:
    # on 8 MB of plog lines 19 ms, against 9 + 20 ms as two), told apart on the few lines found.
    searched = (*plan.literals, *plan.candidates)
    scans = dict(
        odd=~text.str.contains(head),
        want=_any(text, plan.always),
        found=text.str.contains("|".join(searched)) if searched else pl.lit(False),
        context=text.str.contains(context) if context else pl.lit(False),
    )
    marks = frame.select(**scans)
    # Colour codes that lost their ESC in a paste (``[0;36m(EngineCore_DP0 pid=224)[0;0m ERROR``) sit on the
    # head too, so the lines holding them are among those that do not look well-formed: only those are
    # searched for them (every line of a chunk took 5% of the prefilter's time), and the chunk is scanned
    # again without its colour codes when one has them.
    if not escaped and marks["odd"].any() and frame.filter(marks["odd"]).select(
            text.str.contains(BARE_SGR).any()).item():
        frame = clean_lines(frame)
        marks = frame.select(**scans)
    odd, want, context = marks["odd"], marks["want"], marks["context"]
    if searched and (found := (marks["found"] & ~want & ~odd).arg_true()).len():
        lines = frame.select(pl.col("text").gather(found))
        if not plan.candidates:
            want = want.scatter(found, True)
        else:
            # A line found holds a literal member or a candidate literal: one without the first holds the second,
            # so only the literal members are searched again, not the candidates' thousand case variants (select
            # on an 8 MB chunk of plog lines, where HCCL's remoteRank lines are a tenth: 49.5 -> 46 ms of CPU).
            if plan.literals:
                lit = lines.select(lit=_any(text, plan.literals))["lit"]
                want = want.scatter(found.filter(lit), True)
                maybe = ~lit
            else:
                maybe = pl.repeat(True, found.len(), dtype=pl.Boolean, eager=True)
            if plan.confirm and maybe.any():
                # The members found by their literals, confirmed on the lines that hold one (diagnose/scan/plan.py).
                confirmed = lines.filter(maybe).select(hit=_any(text, plan.confirm))["hit"]
                want = want.scatter(found.filter(maybe).filter(confirmed), True)
    keep = odd | odd.shift(-1, fill_value=False) | want | (context & (context.cum_sum() <= CONTEXT_LINES))
    if keep.len():
        # First and last lines: year anchors and the span of the file.
        keep = keep.scatter([0, keep.len() - 1], True)
    return frame.filter(keep), plan


def _any(text: pl.Expr, patterns: tuple[str, ...]) -> pl.Expr:
    return pl.any_horizontal([text.str.contains(p) for p in patterns]) if patterns else pl.lit(False)


def parse_chunk(frame: pl.DataFrame, ctx: FileContext, errors: list[str]):
    # Tables, JSON and tool output carry no colour codes, and the reader already cut every line end.
    line_kind = registry.line_oriented(ctx.kind)
    if line_kind:
        frame = repair(clean_lines(frame))
    try:
        records, signals = registry.parser_for(ctx.kind)(frame, ctx)
    except Exception as exc:  # a parser bug must not lose the file: keep it as raw lines and say so
        errors.append(f"parser {ctx.kind} failed on {ctx.path}: {type(exc).__name__}: {exc}")
        return generic.parse(frame, ctx)
    if line_kind:
        records, signals = _other_families(frame, records, signals, ctx, errors)
    return records, signals


def _other_families(frame: pl.DataFrame, records: pl.DataFrame, signals: pl.DataFrame, ctx: FileContext,
                    errors: list[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Lines a file's own parser kept raw that are well-formed lines of another log kind (a plog line in a vLLM
    log, ATB lines in a MindIE daemon stream, vLLM records in a text of no known kind) are read by that kind's
    parser: they get their level, stamp, process and signals. The file's kind stays; the record's ``source``
    is the line's family."""
    raw = records.filter(~pl.col("parsed")).select("line")
    if raw.height == 0:
        return records, signals
    lines = frame.join(raw, on="line", how="semi")
    for other in registry.KINDS:
        if other.name == ctx.kind or not other.line_oriented or not other.line_heads:
            continue
        mine = lines.filter(pl.col("text").str.contains(registry.well_formed(other.name)))
        if mine.height == 0:
            continue
        try:
            theirs, their_signals = other.parse(mine, replace(ctx, kind=other.name))
        except Exception as exc:  # noqa: BLE001 - those lines stay raw records of the file's kind
            errors.append(f"parser {other.name} failed on lines of {ctx.path}: {type(exc).__name__}: {exc}")
            continue
        theirs = theirs.filter(pl.col("parsed"))
        if theirs.height == 0:
            continue
        records = pl.concat([records.join(theirs.select("line"), on="line", how="anti"), theirs],
                            how="vertical_relaxed").sort("line")
        signals = pl.concat([signals, their_signals.join(theirs.select("line"), on="line", how="semi")],
                            how="vertical_relaxed")
        lines = lines.join(theirs.select("line"), on="line", how="anti")
    return records, signals


def retain(records: pl.DataFrame, signals: pl.DataFrame, kept: pl.DataFrame,
           filters: RuleFilters) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the records that can matter, the stamps of lines kept only for their signals); the rest is counted.
    A stamp (STAMP_COLUMNS) dates its line's signals; it has the line's text only when the rules see its
    signals (``kept``, diagnose/model/series.py), for evidence."""
    if filters.keep is None or records.height == 0:
        return records, empty_stamps()
    signal_line = pl.col("line").is_in(signals["line"].unique().implode())
    # The first and last dated line of each chunk keep the dating anchors.
    anchor = pl.col("year_known").fill_null(False)
    keep = kept_by_level_or_code()
    keep = keep | (anchor & (pl.col("line") == pl.col("line").filter(anchor).min()))
    keep = keep | (anchor & (pl.col("line") == pl.col("line").filter(anchor).max()))
    # The last routine line of each process: an exception before it did not end that process (analysis/ending.py
    # tells a traceback a server logged and went on from one that ended it).
    routine = pl.col("level").is_in(ROUTINE_LEVELS).fill_null(False)
    last_routine = pl.col("line").filter(routine).max().over(pl.col("proc").fill_null(""))
    keep = keep | (routine & (pl.col("line") == last_routine))
    quote = pl.col("line").is_in(kept["line"].unique().implode())
    flagged = records.with_columns(_keep=keep)
    # The rules' patterns (two large alternations) only on the rows neither level nor code keeps: most of what
    # the prefilter kept are warnings and errors (a plog's parse spent a quarter of its time here).
    if (open_rows := (~flagged["_keep"]).arg_true()).len():
        by_text = records.select(pl.all().gather(open_rows)).select(filters.keep)
        flagged = flagged.with_columns(flagged["_keep"].scatter(open_rows, by_text.to_series()))
    text = pl.col("text") if filters.quote_signal_lines else pl.when(quote).then(pl.col("text"))
    stamps = flagged.filter(~pl.col("_keep") & signal_line).select(
        *STAMP_COLUMNS, text=text, message=pl.when(quote).then(pl.col("message")),
    )
    # Copies: the few kept rows must not keep the whole chunk's text alive (see compact_strings).
    return compact_strings(flagged.filter(pl.col("_keep")).drop("_keep")), compact_strings(stamps)


def split(signals: pl.DataFrame, filters: RuleFilters) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the signals rules see, the periodic series); without rule-driven retention, rules see everything."""
    if filters.periodic is None:
        return signals, empty_series()
    kept, series = split_series(signals, filters.periodic, filters.spec)
    return compact_strings(kept), series
