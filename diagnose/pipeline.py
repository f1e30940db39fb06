"""The one-way flow: paths → ingest → parsers → timeline → engine → rank → Report."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Callable

import polars as pl

from diagnose.engine import Rule, builtin_rules_dir, load_rules, run_rules
from diagnose.ingest.budget import Budget, BudgetExceeded
from diagnose.ingest.decode import decode, is_binary, split_lines
from diagnose.ingest.sniff import sniff
from diagnose.ingest.walk import SourceFile, iter_sources
from diagnose.model import InputFile, Report, Skipped, empty_records, empty_signals
from diagnose.parsers import parser_for
from diagnose.parsers.common import FileContext, lines_frame
from diagnose.rank import rank_findings
from diagnose.timeline import bundle_years, date_file

Progress = Callable[[int, str], None]


@dataclass
class Options:
    rule_dirs: list[Path] = field(default_factory=list)
    builtin_rules: bool = True
    since: datetime | None = None
    until: datetime | None = None
    lang: str = "en"
    budget: Budget = field(default_factory=Budget)
    kind: str | None = None  # force every file to this kind (rule fixtures)


@dataclass
class Parsed:
    records: pl.DataFrame
    signals: pl.DataFrame
    inputs: list[InputFile]
    skipped: list[Skipped]
    errors: list[str]


def read_inputs(paths: list[str], options: Options, progress: Progress | None = None) -> Parsed:
    return parse_sources(iter_sources(paths, options.budget), options, progress)


def parse_sources(sources, options: Options, progress: Progress | None = None) -> Parsed:
    per_file: list[tuple[pl.DataFrame, pl.DataFrame, datetime | None, int]] = []
    inputs: list[InputFile] = []
    skipped: list[Skipped] = []
    errors: list[str] = []
    for item in sources:
        if isinstance(item, Skipped):
            skipped.append(item)
            continue
        result = _parse_one(item, options, errors)
        if isinstance(result, Skipped):
            skipped.append(result)
            continue
        records, signals, info = result
        inputs.append(info)
        per_file.append((records, signals, _mtime(item.mtime), len(inputs) - 1))
        if progress:
            progress(info.bytes, info.path)
    years = bundle_years([r for r, _, _, _ in per_file])
    all_records, all_signals = [], []
    for records, signals, mtime, idx in per_file:
        dated, how = date_file(records, years, mtime)
        if how != "not needed":
            signals = _redate_signals(signals, dated)
        all_records.append(dated)
        all_signals.append(signals)
    records = pl.concat(all_records, how="vertical_relaxed") if all_records else empty_records()
    signals = pl.concat(all_signals, how="vertical_relaxed") if all_signals else empty_signals()
    if options.since or options.until:
        records = _window(records, options)
        signals = _window(signals, options)
    return Parsed(records, signals, inputs, skipped, errors)


def _redate_signals(signals: pl.DataFrame, records: pl.DataFrame) -> pl.DataFrame:
    """Signals share their line's time: take it from the dated records."""
    if signals.height == 0:
        return signals
    times = records.select("line", pl.col("ts").alias("_ts"))
    return signals.join(times, on="line", how="left").with_columns(ts=pl.col("_ts")).drop("_ts")


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


def _parse_one(src: SourceFile, options: Options, errors: list[str]):
    try:
        data = src.read()
    except BudgetExceeded as exc:
        return Skipped(src.path, str(exc))
    except OSError as exc:
        return Skipped(src.path, f"cannot read: {exc.strerror or exc}")
    if is_binary(data):
        return Skipped(src.path, "binary file (not text)")
    text, _encoding = decode(data)
    lines = split_lines(text)
    kind = options.kind or sniff(src.rel or src.path, lines)
    ctx = FileContext(path=src.path, node=src.node, kind=kind, mtime=_mtime(src.mtime))
    frame = lines_frame(lines)
    try:
        records, signals = parser_for(kind)(frame, ctx)
    except Exception as exc:  # a parser bug must not lose the file: keep it as raw lines and say so
        errors.append(f"parser {kind} failed on {src.path}: {type(exc).__name__}: {exc}")
        from diagnose.parsers import generic

        records, signals = generic.parse(frame, ctx)
    raw = int((~records["parsed"]).sum()) if records.height else 0
    info = InputFile(path=src.path, kind=kind, lines=len(lines), bytes=len(data), raw_lines=raw, node=src.node)
    return records, signals, info


def catalog(options: Options) -> tuple[list[Rule], list[str]]:
    dirs = ([builtin_rules_dir()] if options.builtin_rules else []) + list(options.rule_dirs)
    rules, errors = load_rules(dirs)
    return rules, [str(e) for e in errors]


def analyze(paths: list[str], options: Options, progress: Progress | None = None) -> Report:
    rules, rule_errors = catalog(options)
    parsed = read_inputs(paths, options, progress)
    return diagnose_parsed(parsed, rules, rule_errors, options)


def diagnose_parsed(parsed: Parsed, rules: list[Rule], rule_errors: list[str], options: Options) -> Report:
    findings, run_errors = run_rules(rules, parsed.records, parsed.signals, options.lang)
    return Report(
        findings=rank_findings(findings),
        inputs=parsed.inputs,
        skipped=parsed.skipped,
        errors=rule_errors + parsed.errors + run_errors,
        rules_checked=[r.brief(options.lang) for r in rules],
        signals=parsed.signals,
    )
