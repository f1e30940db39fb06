"""The frame of events the incident page draws: dated warnings and errors that open an event, capped per
lane, and every evidence line of the findings (built in the pipeline, kept light)."""

from __future__ import annotations

import polars as pl

from diagnose.model import Finding

LEVELS = ("WARNING", "ERROR", "CRITICAL")
TIMELINE_COLUMNS = ("node", "rank", "proc", "source", "ts", "level", "code", "file", "line", "message")

def timeline_frame(records: pl.DataFrame | None, findings: list[Finding], signals: pl.DataFrame | None = None,
                   per_lane: int = 200, total: int = 20_000) -> pl.DataFrame | None:
    """Dated WARNING+ records that open an event (traceback bodies are left out), at most ``per_lane`` per
    node/rank/process and ``total`` in all, plus every evidence line of the findings. Columns: node, rank,
    proc, source, ts, level, code, file, line, message (cut to 300 characters), evidence (bool) and
    lane_total (WARNING+ records of that lane before capping, to say what was left out). Evidence lines that
    only left a signal (throughput lines: records of INFO lines are not kept) come from ``signals``, on the
    lane of their engine."""
    if records is None or records.height == 0:
        return None
    ev = [(e.file, e.line) for f in findings for e in f.evidence]
    ev_frame = pl.DataFrame({"file": [f for f, _ in ev], "line": [n for _, n in ev]},
                            schema={"file": pl.String, "line": pl.UInt32}).unique().with_columns(evidence=pl.lit(True))
    warn = pl.col("level").is_in(list(LEVELS)).fill_null(False)
    opens = pl.col("event").is_null() | (pl.col("event") == pl.col("line"))
    ev_lines = ev_frame["line"].implode()
    cand = records.filter(pl.col("ts").is_not_null() & ((warn & opens) | pl.col("line").is_in(ev_lines)))
    cand = (cand.select(*TIMELINE_COLUMNS)
            .join(ev_frame, on=["file", "line"], how="left")
            .with_columns(pl.col("evidence").fill_null(False), pl.col("message").str.slice(0, 300))
            .filter(pl.col("evidence") | pl.col("level").is_in(list(LEVELS)).fill_null(False)))
    lane = ["node", "rank", "proc"]
    cand = cand.sort("ts").with_columns(
        lane_total=pl.col("level").is_in(list(LEVELS)).fill_null(False).sum().over(lane).cast(pl.UInt32),
        _i=pl.int_range(pl.len()).over(lane),
    )
    kept = cand.filter(pl.col("evidence") | (pl.col("_i") < per_lane)).drop("_i")
    kept = pl.concat([kept, _signal_evidence(signals, findings, kept)], how="vertical_relaxed").sort("ts")
    if kept.height > total:
        kept = kept.filter(pl.col("evidence") | (pl.int_range(pl.len()) < total))
    return kept


def _signal_evidence(signals: pl.DataFrame | None, findings: list[Finding], have: pl.DataFrame) -> pl.DataFrame:
    ev = {(e.file, e.line): e.text for f in findings for e in f.evidence}
    schema = have.schema
    if signals is None or signals.height == 0 or not ev:
        return pl.DataFrame(schema=schema)
    want = pl.DataFrame({"file": [k[0] for k in ev], "line": [k[1] for k in ev],
                         "message": [v[:300] for v in ev.values()]},
                        schema={"file": pl.String, "line": pl.UInt32, "message": pl.String})
    want = want.join(have.select("file", "line"), on=["file", "line"], how="anti")
    if want.height == 0:
        return pl.DataFrame(schema=schema)
    sig = (signals.filter(pl.col("ts").is_not_null()).join(want.select("file", "line"), on=["file", "line"], how="semi")
           .unique(["file", "line"], keep="first")
           .select("file", "line", "node", "source", "ts", pl.col("engine").alias("proc")))
    rows = sig.join(want, on=["file", "line"], how="inner").with_columns(
        rank=pl.lit(None, pl.Int32), level=pl.lit(None, pl.String), code=pl.lit(None, pl.String),
        evidence=pl.lit(True), lane_total=pl.lit(0, pl.UInt32))
    return rows.select([pl.col(c).cast(d) for c, d in schema.items()])
