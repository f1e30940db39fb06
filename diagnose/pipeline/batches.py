"""Small line-oriented files parsed in batches (the read stage, diagnose/pipeline/reading.py): a query per file
costs milliseconds, which a bundle of 100,000 small files (a plog per process and restart) cannot afford."""

from __future__ import annotations

from datetime import datetime

import polars as pl

from diagnose.engine.filters import RuleFilters
from diagnose.ingest.lines import TextInfo
from diagnose.ingest.walk import SourceFile
from diagnose.model import InputFile
from diagnose.parsers.lineframe import FileContext, raw_lines_frame
from diagnose.pipeline.chunks import parse_chunk, retain, select, split


class SmallFiles:
    """Small line-oriented files, parsed in batches: a query per file costs milliseconds, which a bundle of
    100,000 small files (a plog per process and restart) cannot afford. The files' lines are concatenated,
    parsed once, and every record and signal is mapped back to its file, line and node."""

    MAX_FILES = 2000
    MAX_LINES = 400_000

    def __init__(self, filters: RuleFilters, errors: list[str]):
        self.filters, self.errors = filters, errors
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
        frame = select(raw_lines_frame(all_lines, 1), kind, self.filters)
        records, signals = parse_chunk(frame, ctx, self.errors)
        records, signals = _remap(records, start_series, meta), _remap(signals, start_series, meta)
        kept, series = split(signals.drop("_fid"), self.filters)
        raw = dict(records.group_by("_fid").agg((~pl.col("parsed")).sum()).iter_rows())
        records, stamps = retain(records.drop("_fid"), signals, kept, self.filters)
        rows = [
            InputFile(path=src.path, kind=kind, lines=info.lines, bytes=info.bytes, raw_lines=int(raw.get(fid, 0)),
                      node=src.node, encoding=info.encoding)
            for fid, (src, _, info) in enumerate(files)
        ]
        # One frame per batch, not per file: 100,000 tiny frames would cost gigabytes.
        yield records, stamps, kept, series, rows, [mtime_of(src.mtime) for src, _, _ in files]


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


def mtime_of(value: float | None) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromtimestamp(value)
    except (OverflowError, OSError, ValueError):
        return None
