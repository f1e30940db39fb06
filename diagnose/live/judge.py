"""The live programs' one call into the application service: the window's files -> a Report.

It is the batch split, read then judge (``pipeline.read`` over the window's in-memory files, then
``pipeline.diagnose``), so a tick sees exactly what a batch run over the same lines would; nothing here
assembles stages. When the service is renamed (``read(paths, settings) -> Frames`` and ``judge(frames,
settings) -> Report``), the two calls in ``Service.judge`` are what changes.

Two things only a window needs are added around the calls: the read numbers each file's lines from 1, so
they are shifted to where the window's copy starts in the real file (evidence then points at the real line),
and the judged frames say, per file, the first line still inside the window and the latest time read.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import polars as pl

from diagnose.ingest.walk import SourceFile
from diagnose.model import Report
from diagnose.pipeline import Settings, diagnose, filters_for, load_catalog, read


@dataclass
class Judged:
    report: Report
    first_inside: dict[str, int]  # display path -> first line with a time inside the window
    latest: datetime | None  # the latest time any judged line carries


class Service:
    """The catalog loaded once (and its filters); ``judge`` runs once per tick."""

    def __init__(self, settings: Settings):
        self.rules, self.rule_errors = load_catalog(settings)
        self.filters = filters_for(self.rules)

    def judge(self, sources: list[SourceFile], shifts: dict[str, int], settings: Settings,
              span_s: float | None = None) -> Judged:
        """The window's Report; ``span_s``: the window's length, which says (with the latest time read) where
        each file's lines still inside it begin."""
        parsed = read(sources, settings, self.filters)
        _shift(parsed, shifts)
        first_inside, latest = _extent(parsed, span_s)
        report = diagnose(parsed, self.rules, list(self.rule_errors), settings, self.filters)
        return Judged(report, first_inside, latest)


def _shift(parsed, shifts: dict[str, int]) -> None:
    """Line numbers of the window's copies -> line numbers of the real files."""
    if not any(shifts.values()):
        return
    by = pl.col("file").cast(pl.String).replace_strict(shifts, default=0, return_dtype=pl.UInt32)

    def moved(frame: pl.DataFrame | None, *cols: str) -> pl.DataFrame | None:
        if frame is None or frame.height == 0:
            return frame
        return frame.with_columns((pl.col(c) + by).alias(c) for c in cols if c in frame.columns)

    parsed.records = moved(parsed.records, "line", "event")
    parsed.signals = moved(parsed.signals, "line")
    parsed.series = moved(parsed.series, "line")
    parsed.texts = moved(parsed.texts, "line")


def _extent(parsed, span_s: float | None) -> tuple[dict[str, int], datetime | None]:
    frames = [f.select(pl.col("file").cast(pl.String), "line", "ts") for f in (parsed.records, parsed.signals,
                                                                              parsed.series)
              if f is not None and f.height]
    if not frames:
        return {}, None
    dated = pl.concat(frames).filter(pl.col("ts").is_not_null())
    if dated.height == 0:
        return {}, None
    latest = dated["ts"].max()
    if span_s is not None:  # by the time just read, not the clock the read began with
        dated = dated.filter(pl.col("ts") >= latest - timedelta(seconds=span_s))
    first = dict(dated.group_by("file").agg(pl.col("line").min()).iter_rows())
    return {k: int(v) for k, v in first.items()}, latest
