"""Hangs from silence: a serving engine that stopped printing its periodic lines while nothing says it stopped.

A serving engine prints a throughput line every logging interval while it serves (vLLM: ``Engine 000: Avg
prompt throughput ...`` every 10 s). A hang in a collective (vllm-ascend#8975: 32 ranks stuck in one MC2
all-to-all, no ERROR, no OOM) shows no error at all: only these lines stop, while the port still listens and
the other files still grow. So silence is the signal, read from the periodic series the source kinds declare
(``SourceKind.periodic``), one stream per (node, file, engine):

* an engine that printed at least ``MIN_LINES`` periodic lines has an interval (the median gap between them);
* it is **quiet** when the end of the run (the latest stamp of any file, or watch's clock in live mode: the
  ``now`` the pipeline hands in) lies ``INTERVALS`` of its intervals (and at least ``MIN_QUIET``, two minutes)
  past its last periodic line;
* it is **idle**, not hung, when that last line shows no request running or waiting and no throughput (vLLM
  stops printing the line on an idle server);
* it was **replaced** when the same engine of the same node prints again in another file that began after
  its last line (a restarted server writes a new file log);
* it **stopped** when its own file logs an error after its last line, or any file of its node says it shut
  down or died (a line of its kind's ``SourceKind.stops``): then the rules that read those lines explain it.

One finding names every quiet engine by its last line, the one that went quiet first on top: where the
timeline of a silent hang starts (the issue's "rebuilt by hand from plog heartbeats").
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Callable, Collection, Mapping

import polars as pl

from diagnose.analysis.fingerprint import unrotated
from diagnose.messages import Joined, Phrase, Words
from diagnose.model import ERROR_LEVELS, Evidence, Finding

SILENCE_ID = "ENG020"
SILENCE_NAME = "engine-went-quiet"  # --select/--ignore and suppressions may name it like a rule
CATEGORY = "engine"
INTERVALS = 3
# A forward step longer than this is no serving step: a long prefill stops vLLM's line for a while too (it
# prints it only while a throughput is not zero), so a shorter silence is not yet a hang.
MIN_QUIET = timedelta(seconds=120)
MIN_LINES = 3
_STATE = ("running_reqs", "waiting_reqs", "gen_throughput", "prompt_throughput")

ReadBack = Callable[[str, set[int]], dict[int, str]]


def find_silence(records: pl.DataFrame, series: pl.DataFrame | None, periodic: Mapping[str, frozenset[str]],
                 now: datetime | None = None, texts: pl.DataFrame | None = None,
                 read_back: ReadBack | None = None, stops: Mapping[str, str] | None = None,
                 cut: Collection[str] = ()) -> Finding | None:
    """The hang finding, or None when no serving engine went quiet (see the module docstring). ``periodic``
    and ``stops`` are the source kinds' declarations (``SourceKind.periodic``, ``SourceKind.stops``). ``cut``
    names the files whose samples past the run's budget were not kept (diagnose/pipeline/samples.py): their
    last sample kept is where the budget ended, not where the engine went quiet, so they are never quiet."""
    streams = _streams(series, periodic)
    if streams is None or streams.height == 0:
        return None
    end = now or _latest(records, series)
    if end is None:
        return None
    streams = streams.with_columns(
        quiet_s=(pl.lit(end) - pl.col("last_ts")).dt.total_microseconds() / 1e6,
        limit_s=pl.max_horizontal(pl.col("interval_s") * INTERVALS, pl.lit(MIN_QUIET.total_seconds())),
    )
    quiet = streams.filter((pl.col("quiet_s") >= pl.col("limit_s")) & ~_idle() & ~pl.col("file").is_in(list(cut)))
    if quiet.height == 0:
        return None
    later = streams.select("node", "engine", begun=pl.col("first_ts"))
    replaced = quiet.join(later, on=["node", "engine"], how="inner", nulls_equal=True) \
        .filter(pl.col("begun") > pl.col("last_ts")).select("node", "file", "engine").unique()
    quiet = quiet.join(replaced, on=["node", "file", "engine"], how="anti", nulls_equal=True)
    if quiet.height == 0:
        return None
    stopped = _stopped(records, quiet, stops or {})
    quiet = quiet.join(stopped, on=["node", "file", "engine"], how="anti", nulls_equal=True)
    if quiet.height == 0:
        return None
    quiet = quiet.sort("last_ts", "node", "file", "engine", nulls_last=True)
    active = streams.join(quiet.select("node", "file", "engine"), on=["node", "file", "engine"], how="anti",
                          nulls_equal=True).sort("last_ts", descending=True)
    return _finding(quiet, active, streams.height, texts, read_back)


def _streams(series: pl.DataFrame | None, periodic: Mapping[str, frozenset[str]]) -> pl.DataFrame | None:
    """One row per (node, file, engine) that printed periodic lines: its count, interval, last line and the
    state that line showed.

    The series holds every periodic value of the run (millions of rows for a dense metric log), so this pass
    stays lazy (polars then groups without materialising every group's rows), keeps the names categorical and
    groups by small integer ids of each stream's log and engine label, made from the few distinct names; the last
    line is looked for only among the rows of each stream's last time. Eager, with a string copy of every row, it
    cost a 105 MB metric log 360 MB more than the rules did."""
    if series is None or series.height == 0 or not periodic:
        return None
    cond = pl.lit(False)
    for source, names in sorted(periodic.items()):
        cond = cond | ((pl.col("source") == source) & pl.col("signal").is_in(sorted(names)))
    # One stream per log, through its rotations (app.log.1 and app.log are one engine's lines), and per engine
    # label without its ``#n`` suffix.
    log_of, _ = _ids(series["file"], unrotated)
    label_of, labels = _ids(series["engine"], lambda e: re.sub(r"#[0-9]+$", "", e or ""))
    rows = series.lazy().filter(cond & pl.col("ts").is_not_null()).select(
        "node", "file", "signal", "ts", "line", "value",
        log=pl.col("file").to_physical().replace_strict(log_of, return_dtype=pl.UInt32),
        eid=pl.col("engine").to_physical().replace_strict(label_of, return_dtype=pl.UInt32)
        .fill_null(label_of.get(None, 0)),
    )
    keys = ["node", "log", "eid"]
    per = rows.select(*keys, "ts").unique().group_by(keys).agg(  # the times of each stream, each once
        n=pl.len(),
        interval_s=pl.col("ts").sort().diff().drop_nulls().dt.total_microseconds().median() / 1e6,
        first_ts=pl.col("ts").min(),
        last_ts=pl.col("ts").max(),
    ).filter((pl.col("n") >= MIN_LINES) & (pl.col("interval_s") > 0)).collect()
    if per.height == 0:
        return None
    last = rows.join(per.lazy().select(*keys, ts=pl.col("last_ts")), on=[*keys, "ts"], how="semi",
                     nulls_equal=True).collect()
    # the last line; of the lines of its last time, the one that says how many requests ran
    state_line = pl.col("signal").is_in(list(_STATE))
    pick = last.group_by(keys).agg(file=pl.col("file").sort_by(state_line, "line").last(),
                                   last_line=pl.col("line").sort_by(state_line, "line").last())
    state = last.filter(state_line).join(
        pick.select(*keys, "file", line=pl.col("last_line")), on=[*keys, "file", "line"], how="semi", nulls_equal=True,
    ).group_by(keys).agg(pl.col("value").filter(pl.col("signal") == s).last().alias(s) for s in _STATE)
    return per.join(pick, on=keys, how="left", nulls_equal=True).join(state, on=keys, how="left", nulls_equal=True) \
        .select(pl.col("node").cast(pl.String), pl.col("eid").replace_strict(labels, return_dtype=pl.String)
                .alias("engine"), "n", "interval_s", "first_ts", "last_ts", pl.col("file").cast(pl.String), "last_line",
                *_STATE)


def _ids(names: pl.Series, key: Callable[[str | None], str]) -> tuple[dict, dict[int, str]]:
    """(the physical code of each distinct name of a categorical column -> the id of its ``key``, None for a
    missing name; id -> key): names that share a key share an id."""
    distinct = names.unique()
    ids: dict[str, int] = {}
    out = {}
    for code, name in zip(distinct.to_physical().to_list(), distinct.cast(pl.String).to_list()):
        out[code] = ids.setdefault(key(name), len(ids))
    return out, {i: k for k, i in ids.items()}


def _idle() -> pl.Expr:
    """The last line showed an idle engine: nothing running or waiting (or, without those counts, no
    throughput at all)."""
    counted = (pl.col("running_reqs") == 0) & (pl.col("waiting_reqs").fill_null(0) == 0)
    uncounted = pl.col("running_reqs").is_null() & (pl.col("gen_throughput") == 0) \
        & (pl.col("prompt_throughput").fill_null(0) == 0)
    return (counted | uncounted).fill_null(False)


def _latest(records: pl.DataFrame, series: pl.DataFrame | None):
    stamps = [s for s in (records["ts"].max() if records.height else None,
                          series["ts"].max() if series is not None and series.height else None) if s is not None]
    return max(stamps) if stamps else None


def _stopped(records: pl.DataFrame, quiet: pl.DataFrame, stops: Mapping[str, str]) -> pl.DataFrame:
    """The quiet streams whose file logged an error after their last line, or whose node logged that a process
    shut down or died (a line of a kind's ``stops``)."""
    keys = quiet.select("node", "file", "engine", "last_ts")
    later = records.filter(pl.col("ts").is_not_null()).select("node", "file", "ts", "level", "source", "message")
    if later.height == 0:
        return keys.select("node", "file", "engine").clear()
    error = pl.col("level").is_in(ERROR_LEVELS).fill_null(False)
    stop = pl.lit(False)
    for source, pattern in sorted(stops.items()):
        stop = stop | ((pl.col("source") == source) & pl.col("message").str.contains(pattern))
    stop = stop.fill_null(False)
    same_file = keys.join(later.filter(error | stop), on=["node", "file"], how="inner", nulls_equal=True)
    same_node = keys.join(later.filter(stop).drop("file"), on="node", how="inner", nulls_equal=True)
    hits = pl.concat([same_file.select("node", "file", "engine", "last_ts", "ts"),
                      same_node.select("node", "file", "engine", "last_ts", "ts")])
    return hits.filter(pl.col("ts") > pl.col("last_ts")).select("node", "file", "engine").unique()


def _label(row: dict, files_per_engine: dict[str, int]) -> str:
    """How a stream is named: its engine label, its node, and its file when the label alone is ambiguous."""
    name = row["engine"] or row["file"].replace("\\", "/").rsplit("/", 1)[-1]
    if row["engine"] and files_per_engine.get(row["engine"], 0) > 1:
        name = f"{name} ({row['file'].replace(chr(92), '/').rsplit('/', 1)[-1]})"
    return f"{name} @ {row['node']}" if row["node"] else name


def _finding(quiet: pl.DataFrame, active: pl.DataFrame, total: int, texts: pl.DataFrame | None,
             read_back: ReadBack | None) -> Finding:
    """The finding in facts and phrases of the catalog's ``[silence]`` table, said by each renderer."""
    rows = quiet.to_dicts()
    both = pl.concat([quiet.select("engine", "file"), active.select("engine", "file")])
    files_per_engine = dict(both.group_by("engine").agg(pl.col("file").n_unique()).iter_rows())
    first = rows[0]
    who = _label(first, files_per_engine)
    running = first.get("running_reqs")
    summary: Words = Phrase("silence.summary", who=who, when=first["last_ts"].strftime("%Y-%m-%d %H:%M:%S"),
                  quiet=round(first["quiet_s"]), k=round(first["quiet_s"] / first["interval_s"]),
                  interval=round(first["interval_s"], 1), n=len(rows), total=total)
    if running is not None:
        summary = Joined([summary, Phrase("silence.running", running=int(running))])
    others = active.to_dicts()
    places = [(r["file"], int(r["last_line"])) for r in rows + others][:5]
    text = _texts(places, texts, read_back)
    evidence = [Evidence(f, n, text.get((f, n), "")) for f, n in places]
    facts = {
        "quiet_first": who, "quiet_since": first["last_ts"].strftime("%Y-%m-%d %H:%M:%S"),
        "quiet_s": round(first["quiet_s"], 1), "interval_s": round(first["interval_s"], 1),
        "quiet_engines": [_label(r, files_per_engine) for r in rows],
        "last_lines": {_label(r, files_per_engine): f"{r['file']}:{int(r['last_line'])}" for r in rows + others},
        "engines": total, "ongoing": True,
    }
    if running is not None:
        facts["running_reqs"] = int(running)
    return Finding(
        rule_id=SILENCE_ID, name=SILENCE_NAME, category=CATEGORY, severity="error",
        title=Phrase("silence.title"), summary=summary, count=len(rows),
        first_seen=first["last_ts"], last_seen=max(r["last_ts"] for r in rows),
        nodes=sorted({r["node"] for r in rows if r["node"]}), ranks=[], evidence=evidence,
        remediation=Phrase("silence.remedy"), references=["https://github.com/vllm-project/vllm-ascend/issues/8975"],
        facts=facts,
    )


def _texts(places: list[tuple[str, int]], texts: pl.DataFrame | None,
           read_back: ReadBack | None) -> dict[tuple[str, int], str]:
    """The text of each evidence line: from the lines kept in memory, else read back from its file."""
    out: dict[tuple[str, int], str] = {}
    if texts is not None and texts.height:
        wanted = pl.DataFrame(places, schema={"file": pl.String, "line": pl.UInt32}, orient="row")
        for f, n, t in texts.join(wanted, on=["file", "line"], how="semi").select("file", "line", "text").iter_rows():
            out[(f, int(n))] = t
    if read_back is not None:
        missing: dict[str, set[int]] = {}
        for f, n in places:
            if (f, n) not in out:
                missing.setdefault(f, set()).add(n)
        for f, lines in missing.items():
            for n, t in read_back(f, lines).items():
                out[(f, n)] = t
    return out
