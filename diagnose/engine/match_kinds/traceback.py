"""The ``traceback`` match kind: Python exceptions by type, message and the frames that raised them.

It reads the ``exception`` and ``exception_frames`` signals (diagnose/parsers/families/tracebacks.py): one pair per
traceback, on its exception line. Tracebacks are text wherever they appear, so the rule's ``sources`` do not
limit it. The evidence is the exception line; ``{exception}``, ``{message}``, ``{frame}`` (the innermost frame
that matched ``frames``, else the innermost one) and the message pattern's named groups are summary fields.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import polars as pl

from diagnose.engine.match import Match
from diagnose.engine.match_kinds.protocol import Context, Hit, MatchKind
from diagnose.parsers.families.tracebacks import EXCEPTION

# An exception line with its groups unnamed: the filters join it into one alternation with other patterns.
EXCEPTION_LINE = re.sub(r"\(\?P<[A-Za-z_][A-Za-z0-9_]*>", "(?:", EXCEPTION)

FIELDS = {"exception": ("regex", "pattern over the exception type, e.g. `KeyError$` (dotted names too)"),
          "message": ("regex", "pattern over the exception's message; named groups become summary fields"),
          "not_message": ("regex", "the message must not match"),
          "frames": ("regex", "one of the innermost frames (`path:function`, `frames_depth` of them) must match: "
                              "the code that raised it"),
          "frames_depth": ("int", "how many innermost frames `frames` reads (default 2)"),
          "any_frame": ("regex", "some frame anywhere on the stack must match; only beside `exception` or "
                                 "`message` (an outer frame alone never decides)"),
          "not_frames": ("regex", "no frame may match"),
          "min_count": ("int", "tracebacks needed (default 1)")}


@dataclass(frozen=True)
class TracebackMatch(Match):
    """Python exceptions (the ``exception`` signals of parsers/families/tracebacks.py) by type, message and the frames
    that raised them. Without ``exception``, a traceback whose exception line was lost still matches by its
    frames."""

    exception: str | None = None
    message: str | None = None
    not_message: str | None = None
    frames: str | None = None
    frames_depth: int = 2
    any_frame: str | None = None
    not_frames: str | None = None
    min_count: int = 1

    kind = "traceback"


def build(raw: dict[str, Any], table: dict[str, Any], seconds) -> TracebackMatch:
    return TracebackMatch(raw=raw, exception=table.get("exception"), message=table.get("message"),
                          not_message=table.get("not_message"), frames=table.get("frames"),
                          frames_depth=int(table.get("frames_depth", 2)), any_frame=table.get("any_frame"),
                          not_frames=table.get("not_frames"), min_count=int(table.get("min_count", 1)))


def check(table: dict[str, Any]):
    if not any(k in table for k in ("exception", "message", "frames")):
        yield "match", "needs at least one of `exception`, `message` or `frames`"
    if "any_frame" in table and not any(k in table for k in ("exception", "message")):
        yield "match.any_frame", "needs `exception` or `message` beside it: an outer frame alone never decides"
    if not 1 <= int(table.get("frames_depth", 2)) <= 8:
        yield "match.frames_depth", "must be 1 to 8"


def keeps(m: TracebackMatch):
    yield EXCEPTION_LINE  # exception lines (the frames are read by the parser per chunk)


def evaluate(m: TracebackMatch, sources, ctx: Context) -> list[Hit]:
    rows = ctx.once("exceptions", lambda: exceptions(ctx.records, ctx.signals))  # found once for every rule
    found = match_traceback(m, ctx.records, ctx.signals, sources, ctx.series, rows=rows)
    return [found] if found is not None else []


def exceptions(records: pl.DataFrame, signals: pl.DataFrame) -> pl.DataFrame:
    """One row per traceback: file, line, source, node, ts, engine, exception (type), message, frames, event."""
    exc = signals.filter(pl.col("signal") == "exception")
    if exc.height == 0:
        return pl.DataFrame()
    frames = signals.filter(pl.col("signal") == "exception_frames").select(
        "file", "line", "engine", frames=pl.col("text").fill_null(""))
    out = exc.join(frames.unique(["file", "line", "engine"]), on=["file", "line", "engine"], how="left",
                   nulls_equal=True)
    head = pl.col("text").fill_null("")
    out = out.with_columns(
        exception=head.str.extract(r"^([^:\s]+)", 1).fill_null(""),
        message=head.str.extract(r"^[^:\s]+:\s?(.*)$", 1).fill_null(""),
        frames=pl.col("frames").fill_null(""),
    )
    # The record's event at the exception line (a vLLM traceback is one event), so what this explains is known.
    events = records.select("file", "line", "event", "rank").unique(["file", "line"], keep="first")
    out = out.join(events, on=["file", "line"], how="left").with_columns(event=pl.coalesce("event", "line"))
    return out


def match_traceback(m: TracebackMatch, records: pl.DataFrame, signals: pl.DataFrame, sources,
                    series: pl.DataFrame | None = None, rows: pl.DataFrame | None = None) -> Hit | None:
    """``rows``: ``exceptions(records, signals)``, when the caller computed it once for several rules."""
    if rows is None:
        rows = exceptions(records, signals)
    if rows.height == 0:
        return None
    cond = pl.lit(True)
    if m.exception is not None:
        cond = cond & pl.col("exception").str.contains(m.exception)
    if m.message is not None:
        cond = cond & pl.col("message").str.contains(m.message)
    if m.not_message is not None:
        cond = cond & ~pl.col("message").str.contains(m.not_message)
    if m.frames is not None:  # what raised it: the innermost frames, never an outer frame that was merely on the stack
        innermost = pl.col("frames").str.split("\n").list.tail(m.frames_depth).list.join("\n")
        cond = cond & innermost.str.contains(m.frames)
    if m.any_frame is not None:
        cond = cond & pl.col("frames").str.contains(m.any_frame)
    if m.not_frames is not None:
        cond = cond & ~pl.col("frames").str.contains(m.not_frames)
    hits = rows.filter(cond).sort(["ts", "file", "line"], nulls_last=True)
    if hits.height < m.min_count:
        return None
    first = hits.row(0, named=True)
    frame_list = [f for f in first["frames"].split("\n") if f]
    looked_at = frame_list[-m.frames_depth:] if m.frames is not None else frame_list
    matching = [f for f in looked_at if m.frames is None or pl.Series([f]).str.contains(m.frames)[0]]
    facts = {"exception": first["exception"] or "(exception line not in the log)",
             "message": first["message"][:300], "frame": (matching or frame_list or ["-"])[-1]}
    if m.message is not None and first["message"]:
        groups = pl.DataFrame({"m": [first["message"]]}).select(pl.col("m").str.extract_groups(m.message)).item()
        facts.update({k: v for k, v in (groups or {}).items() if not k.isdigit() and v is not None})
    out = hits.select("file", "line", "source", "node", "ts", pl.col("rank").cast(pl.Int32), pl.col("event").cast(pl.UInt32),
                      "engine", pl.lit(None, pl.Float64).alias("value"), pl.col("text").alias("vtext"))
    return Hit(out, out.height, facts)


KIND = MatchKind("traceback", FIELDS, build, evaluate, check, keeps, any_source=True,
                 summary="a Python exception of a type, message or raising frames")
