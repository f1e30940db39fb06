"""``trace_view*.json``: the Chrome trace; AI CPU launches on the ``Ascend Hardware`` lane."""

from __future__ import annotations

import json

import polars as pl

from diagnose.parsers.common import FileContext
from diagnose.parsers.profiling.common import (
    EPOCH_US, MC2, engine_label, finish, first_line, fmt, keep_rows, signal_frame, to_float, top_ops, whole_json,
)

def parse_trace_view(lines: pl.DataFrame, records: pl.DataFrame, ctx: FileContext):
    """Chrome trace: per-line events when the file has one event per line, else the whole text (line 1)."""
    body = lines.with_columns(j=pl.col("text").str.strip_chars().str.strip_chars_end(","))
    objs = body.filter(pl.col("j").str.starts_with("{"))
    stripped = lines.select(pl.col("text").str.join("\n")).item().strip() if lines.height else ""
    truncated = bool(stripped) and not (stripped.endswith("]") or stripped.endswith("}"))
    notes: list[tuple[int, str]] = []
    if objs.height >= 2:
        ev = objs.select(
            "line",
            ph=pl.col("j").str.json_path_match("$.ph"),
            name=pl.col("j").str.json_path_match("$.name"),
            pid=pl.col("j").str.json_path_match("$.pid"),
            dur=pl.col("j").str.json_path_match("$.dur").cast(pl.Float64, strict=False),
            ts=pl.col("j").str.json_path_match("$.ts").cast(pl.Float64, strict=False),
            task=pl.col("j").str.json_path_match("$.args['Task Type']"),
            lane=pl.col("j").str.json_path_match("$.args.name"),
        )
        bad = ev.filter(pl.col("ph").is_null())
        if truncated:  # the cut last event is reported as the truncation below
            bad = bad.filter(pl.col("line") != ev["line"].max())
        if bad.height:
            notes.append((int(bad["line"][0]), f"profiler: {bad.height} trace event line(s) could not be read, first at line {int(bad['line'][0])}"))
    else:
        data, err, _ = whole_json(lines)
        if err and truncated:
            data = salvage(stripped)
        if isinstance(data, dict):
            data = data.get("traceEvents", [])
        if not isinstance(data, list):
            data = []
        rows = [e for e in data if isinstance(e, dict)]
        ev = pl.DataFrame(
            {
                "line": [1] * len(rows),
                "ph": [str(e.get("ph")) for e in rows],
                "name": [str(e.get("name", "")) for e in rows],
                "pid": [str(e.get("pid")) for e in rows],
                "dur": [to_float(e.get("dur")) for e in rows],
                "ts": [to_float(e.get("ts")) for e in rows],
                "task": [str((e.get("args") or {}).get("Task Type")) if isinstance(e.get("args"), dict) else None for e in rows],
                "lane": [str((e.get("args") or {}).get("name")) if isinstance(e.get("args"), dict) else None for e in rows],
            },
            schema={"line": pl.UInt32, "ph": pl.String, "name": pl.String, "pid": pl.String, "dur": pl.Float64,
                    "ts": pl.Float64, "task": pl.String, "lane": pl.String},
        )
    if truncated:
        n = ev.filter(pl.col("ph").is_not_null()).height
        notes.append((first_line(lines), f"profiler: trace_view.json is truncated (the JSON array is not closed): "
                                          f"{n} events before the cut were analysed, the rest is lost"))
    lanes = ev.filter((pl.col("ph") == "M") & (pl.col("name") == "process_name")).select("pid", "lane").unique("pid")
    hw_pids = lanes.filter(pl.col("lane") == "Ascend Hardware")["pid"]
    k = ev.filter((pl.col("ph") == "X") & pl.col("pid").is_in(hw_pids.implode()))
    mc2 = pl.col("name").fill_null("").str.contains(MC2)
    k = k.with_columns(
        type=pl.col("name").str.extract(r"_([A-Za-z0-9]+)$", 1).fill_null(pl.col("name")),
        _aicpu=((pl.col("task") == "AI_CPU") | pl.col("name").fill_null("").str.contains("AiCpu")) & ~mc2,
        engine=pl.lit(engine_label(ctx)),
    )
    dev = k["dur"].fill_null(0).sum()
    ai = k.filter(pl.col("_aicpu"))
    ai_t = ai["dur"].fill_null(0).sum()
    share = 100.0 * ai_t / dev if dev else 0.0
    tail = f" (AI CPU {share:.1f}% of device time in trace_view: {fmt(ai_t)} of {fmt(dev)} us in {ai.height} launches)"
    ts = pl.when(pl.col("ts").is_between(*EPOCH_US)).then(pl.from_epoch(pl.col("ts").cast(pl.Int64), time_unit="us"))
    rows = ai.filter(pl.col("line") > 1) if objs.height >= 2 else ai.head(0)
    rows = rows.select("line", message=pl.format("AI_CPU operator {} ({}) {} us, dtypes not in trace_view{}", pl.col("name"), pl.col("type"),
                                                  pl.col("dur").round(2), pl.lit(tail)),
                       ts=ts, level=pl.lit("WARNING"))
    if objs.height < 2 and ai.height:  # one-line trace: one summary record on line 1
        rows = pl.DataFrame({"line": [1], "message": [f"AI_CPU operator {ai['name'][0]} ({ai['type'][0]}) {ai['dur'][0]:.2f} us, dtypes not in trace_view{tail}"],
                             "level": ["WARNING"]})
    if notes:
        rows = pl.concat([rows, pl.DataFrame({"line": [n[0] for n in notes], "message": [n[1] for n in notes],
                                              "level": ["WARNING"] * len(notes)})], how="diagonal_relaxed")
    out = []
    if k.height:
        worst = ai.sort("dur", descending=True, nulls_last=True)
        line = int(worst["line"][0]) if worst.height else first_line(lines)
        ops = top_ops(ai.with_columns(ind=pl.lit(None, pl.String), outd=pl.lit(None, pl.String)), with_dtype=False)
        text = f"{engine_label(ctx)}: {share:.1f}% of {fmt(dev)} us device time on the AI CPU ({fmt(ai_t)} us, {ai.height} launches)" + (f": {ops}" if ops else "")
        out.append(dict(line=line, engine=engine_label(ctx), signal="aicpu_time_share_pct", value=share, text=text))
    if objs.height >= 2:  # ordinary events are analysed, not kept (a trace has millions)
        records = keep_rows(records, objs["line"], rows["line"], [r["line"] for r in out])
    return finish(records, rows), signal_frame(out, ctx)


def salvage(text: str):
    """The events of a truncated JSON array: cut after the last complete event and close the array."""
    pos = len(text)
    for _ in range(50):
        pos = text.rfind("}", 0, pos)
        if pos <= 0:
            return []
        try:
            data = json.loads(text[: pos + 1] + "]")
            return data if isinstance(data, list) else []
        except json.JSONDecodeError:
            continue
    return []
