"""Did the run end abnormally, and which error ended it?

A run ended abnormally when its logs say a process died or was killed (``knowledge/endings.toml``: an engine core
that died, a worker that failed to start, a daemon killing its workers, the kernel's OOM killer, a native crash,
a failure exit code), or when an exception is the last thing its process logged (a traceback followed by no
further INFO or DEBUG line of the same file and process: nothing went on after it).

The error that ended it is the earliest exception, not an echo, logged in the ten minutes before the first
sign of the end (or, without one, the earliest exception that ended its process): a worker's ``KeyError`` rather
than the ``EngineDeadError`` the API server printed about it. A wrapper that quotes it (``Worker failed with error
'...'``) is unwrapped. Without any exception, the last ERROR line before the end stands for it.

The error is then classified, in this order: a rule that explains it (its evidence or selected rows hold the
line: that finding goes first); the message index (which release prints the message, in which module: its
category); an error code on the line (the code tables); the class of the exception; the innermost frame's
module. A finding ``END001`` says what ended the run, where it was raised and what to do, unless a rule said it.
A run that did not end abnormally is never failed by the errors no rule explains (diagnose/analysis/verdict.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import timedelta

import msgspec
import polars as pl

from diagnose.knowledge import categories
from diagnose.knowledge.benign import benign_mask
from diagnose.knowledge.code_tables import builtin_tables, classify as classify_code
from diagnose.knowledge.endings import builtin_endings, ending_ids
from diagnose.messages import Phrase
from diagnose.model import ERROR_LEVELS, ROUTINE_LEVELS, Evidence, Finding, SourceSite
from diagnose.parsers.families.tracebacks import START

END_ID, END_NAME = "END001", "run-ended-by-error"
LOOKBACK = timedelta(minutes=10)  # the error that ended a run precedes the first sign of the end by at most this
# Exceptions that report an ending rather than cause one (the user stopped it, a supervisor saw a child fail).
_ECHO_CLASSES = re.compile(r"(?:^|\.)(?:EngineDeadError|KeyboardInterrupt|SystemExit|CancelledError|ChildFailedError|"
                           r"ActorDiedError|BrokenPipeError)$")
_WRAPPED = re.compile(r"Worker failed with error '(?P<inner>.*)', please check the stack trace above")


@dataclass
class TheError:
    """The error that ended the run: where, and what it says."""

    file: str
    line: int
    event: int
    node: str | None
    rank: int | None
    ts: object
    exception: str  # the class ("" for a line without one)
    message: str
    frames: list[str] = field(default_factory=list)  # path:function, innermost last
    code: str | None = None
    text: str = ""
    # what the record that carried a traceback said before it, when the traceback lost its exception line:
    # ``logger.exception(e)`` logs ``str(e)`` there (a KeyError's key), other callers a sentence of their own
    logged: str = ""


@dataclass
class Ending:
    abnormal: bool = False
    signs: list[tuple[str, int, str]] = field(default_factory=list)  # (file, line, why): ending lines, last exceptions
    error: TheError | None = None


def find_ending(records: pl.DataFrame, tracebacks: pl.DataFrame) -> Ending:
    """``tracebacks``: one row per exception (diagnose/engine/match_kinds/traceback.py ``exceptions``)."""
    out = Ending()
    if records.height == 0:
        return out
    if "exception" not in tracebacks.columns:  # no exception in the bundle
        tracebacks = pl.DataFrame(schema={"file": pl.String, "line": pl.UInt32, "event": pl.UInt32, "ts": pl.Datetime("us"),
                                          "node": pl.String, "rank": pl.Int32, "engine": pl.String,
                                          "exception": pl.String, "message": pl.String, "frames": pl.String,
                                          "text": pl.String})
    signs = _ending_lines(records)
    last_ones = _last_exceptions(records, tracebacks)
    out.signs = [(f, int(n), why) for f, n, why in signs.select("file", "line", "id").iter_rows()]
    out.signs += [(f, int(n), "exception") for f, n in last_ones.select("file", "line").iter_rows()]
    out.abnormal = bool(out.signs)
    if not out.abnormal:
        return out
    out.error = _the_error(records, tracebacks, signs, last_ones)
    return out


def _ending_lines(records: pl.DataFrame) -> pl.DataFrame:
    msgs = records["message"]
    found = records.with_columns(id=ending_ids(msgs)).filter(pl.col("id").is_not_null())
    if found.height:
        found = found.filter(~benign_mask(found["message"]))
    return found.select("file", "line", "event", "ts", "node", "rank", "message", "id")


def _last_exceptions(records: pl.DataFrame, tracebacks: pl.DataFrame) -> pl.DataFrame:
    """Exceptions after which their file and process logged no INFO or DEBUG line: they ended that process."""
    if tracebacks.height == 0:
        return tracebacks
    goes_on = (records.filter(pl.col("level").is_in(ROUTINE_LEVELS).fill_null(False))
               .group_by("file", "proc").agg(pl.col("line").max().alias("_last_ok")))
    rows = tracebacks.with_columns(proc=pl.col("engine"))
    rows = rows.join(goes_on, on=["file", "proc"], how="left", nulls_equal=True)
    ended = rows.filter(pl.col("_last_ok").is_null() | (pl.col("_last_ok") < pl.col("line")))
    return ended.filter(~_echo_expr()).drop("_last_ok")


def _echo_expr() -> pl.Expr:
    return pl.col("exception").fill_null("").str.contains(_ECHO_CLASSES.pattern)


def _the_error(records: pl.DataFrame, tracebacks: pl.DataFrame, signs: pl.DataFrame,
               last_ones: pl.DataFrame) -> TheError | None:
    candidates = tracebacks.filter(~_echo_expr()) if tracebacks.height else tracebacks
    if candidates.height and signs.height:
        first_end = signs["ts"].drop_nulls().min()
        if first_end is not None:
            dated = candidates.filter(pl.col("ts").is_not_null())
            window = dated.filter((pl.col("ts") <= first_end) & (pl.col("ts") >= first_end - LOOKBACK))
            candidates = window if window.height else candidates
    elif not signs.height:
        candidates = last_ones
    candidates = candidates.filter(~_echo_message_expr()) if candidates.height else candidates
    if candidates.height:
        # A traceback that kept its exception line says more than one whose paste lost it (frames only).
        said = candidates.filter((pl.col("exception").fill_null("") != "") | (pl.col("message").fill_null("") != ""))
        candidates = said if said.height else candidates
        row = candidates.sort(["ts", "file", "line"], nulls_last=True).row(0, named=True)
        return _from_exception(row, records)
    return _last_error_line(records, signs)


def _echo_message_expr() -> pl.Expr:
    """An exception whose text is itself an echo (``RuntimeError: Engine core initialization failed...``)."""
    echoes = "|".join(f"(?:{e.regex})" for e in builtin_endings() if e.fields.get("echo"))
    text = pl.concat_str([pl.col("exception").fill_null(""), pl.lit(": "), pl.col("message").fill_null("")])
    return text.str.contains(echoes) if echoes else pl.lit(False)


def _from_exception(row: dict, records: pl.DataFrame) -> TheError:
    message = row.get("message") or ""
    wrapped = _WRAPPED.search(message)
    if wrapped:  # the engine quotes its worker's error: the quote is the error
        message = wrapped.group("inner")
    event = records.filter((pl.col("file") == row["file"]) & (pl.col("event") == row["event"]))
    logged = ""
    if not message and not row.get("exception"):
        opener = event.filter(pl.col("line") == row["event"])["message"]
        if opener.len() and opener[0] and not re.search(START, opener[0]):
            logged = opener[0].strip()
    code = event.filter(pl.col("code").is_not_null())["code"]
    line = event.filter(pl.col("line") == row["line"])["text"]
    return TheError(file=row["file"], line=int(row["line"]), event=int(row["event"]), node=row.get("node"),
                    rank=row.get("rank"), ts=row.get("ts"), exception=row.get("exception") or "", message=message,
                    frames=[f for f in (row.get("frames") or "").split("\n") if f],
                    code=code[0] if code.len() else None, text=line[0] if line.len() else (row.get("text") or ""),
                    logged=logged)


def _last_error_line(records: pl.DataFrame, signs: pl.DataFrame) -> TheError | None:
    """No exception: the last ERROR line (not benign, not an ending line) before the first sign of the end."""
    if signs.height == 0:
        return None
    first = signs.sort(["ts", "file", "line"], nulls_last=True).row(0, named=True)
    errors = records.filter(pl.col("level").is_in(ERROR_LEVELS).fill_null(False))
    errors = errors.join(signs.select("file", "line"), on=["file", "line"], how="anti")
    if errors.height:
        errors = errors.filter(~benign_mask(errors["message"]))
    same_file = errors.filter((pl.col("file") == first["file"]) & (pl.col("line") < first["line"]))
    pick = same_file.tail(1) if same_file.height else pl.DataFrame()
    if pick.height == 0:
        return None
    row = pick.row(0, named=True)
    return TheError(file=row["file"], line=int(row["line"]), event=int(row["event"] or row["line"]),
                    node=row["node"], rank=row["rank"], ts=row["ts"], exception="", message=row["message"] or "",
                    code=row["code"], text=row["text"] or "")


def sign_error(records: pl.DataFrame, ending: Ending) -> TheError | None:
    """When no error line is left (only an ending line: a killed process, a crash), that line stands for it."""
    named = [(f, n) for f, n, why in ending.signs if why != "exception"]
    if not named:
        return None
    file, line = named[0]
    row = records.filter((pl.col("file") == file) & (pl.col("line") == line)).row(0, named=True)
    return TheError(file=file, line=line, event=int(row["event"] or line), node=row["node"], rank=row["rank"],
                    ts=row["ts"], exception="", message=row["message"] or "", code=row["code"], text=row["text"] or "")


def ending_category(message: str) -> str | None:
    """The category an ending line itself names (the OOM killer: host memory), else None."""
    frame = pl.Series([message])
    found = ending_ids(frame)[0]
    entry = next((e for e in builtin_endings() if e.id == found), None)
    return (entry.fields.get("category") or None) if entry is not None else None


def lookup_site(error: TheError) -> SourceSite | None:
    """The message index's site of the error's message (the class-prefixed form first), with its link."""
    from diagnose.knowledge.index import message_index  # deferred: the message index (abnormal ends only)

    said = [f"{error.exception}: {error.message}"] if error.exception else []
    said.append(error.message)
    said = [s for s in said if s and s.strip()]
    if not said:
        return None
    found = next((s for s in message_index().lookup(said, [error.exception or None] * len(said)) if s), None)
    if found is None:
        return None
    return SourceSite(project=found.project, versions=found.version_range, path=found.path,
                      function=found.function, line=found.lineno, kind=found.kind, template=found.template,
                      category=found.category, origin=found.origin, code=found.code or "",
                      link=categories.link(found.project, found.newest, found.path, found.lineno))


# Which table a code found on a line belongs to, by its form (diagnose/parsers/lineframe.py CODE finds these).
_FAMILY_OF = ((re.compile(r"E[0-9A-Z][0-9]{4}"), "cann"), (re.compile(r"ERR[0-9]{5}"), "torch_npu"),
              (re.compile(r"MIE[0-9A-Z]+"), "mindie"), (re.compile(r"[0-9]{6}"), "acl"))


def codes_near(records: pl.DataFrame, error: TheError, lines: int = 30) -> list[str]:
    """The error codes of the error's own event, then of the lines around it in its file (nearest first)."""
    near = records.filter((pl.col("file") == error.file) & pl.col("code").is_not_null()
                          & pl.col("line").is_between(max(error.line - lines, 0), error.line + lines))
    near = near.with_columns(_own=pl.col("event") != error.event,
                             _d=(pl.col("line").cast(pl.Int64) - error.line).abs()).sort(["_own", "_d"])
    return list(dict.fromkeys(near["code"].to_list()))


def code_category(codes: list[str]) -> str | None:
    """The category the code tables give the first code that names one: a listed, specific code's, else the class
    of a CANN code (its module letter says the layer even for an inner error)."""
    fallback = None
    for code in codes:
        family = next((name for form, name in _FAMILY_OF if form.fullmatch(code)), None)
        fam = builtin_tables().get(family) if family else None
        if fam is None:
            continue
        known, cls = classify_code(fam, code)
        if known is not None and not known.generic:
            return known.category
        if fallback is None and family == "cann" and cls is not None:
            fallback = cls.category
    return fallback


# --- what it was ---------------------------------------------------------------------------------------------

@dataclass
class Classified:
    category: str
    by: str  # index | code | class | frame | ending | none
    site: SourceSite | None = None
    module: str = ""  # path inside its release (or the frame's file) and function, for the sentence

    @property
    def strong(self) -> bool:
        """The message, its code or its class said what failed (the raising module alone says less than a rule)."""
        return self.by in ("index", "code", "class")


def explained_by(error: TheError, findings: list[Finding], selected: pl.DataFrame) -> Finding | None:
    """The finding of a rule that explains the error (its evidence or its selector's rows hold the line or its
    event): rules come first. Generic findings (a code that only names its class) and echoes do not count."""
    rows = selected.filter((pl.col("file") == error.file)
                           & ((pl.col("line") == error.line) | (pl.col("event") == error.event)))
    ids = set(rows["rule_id"].to_list())
    for f in findings:
        if f.generic or f.consequence:
            continue
        if f.rule_id in ids or any(e.file == error.file and e.line == error.line for e in f.evidence):
            return f
    return None


# Layers that report what went wrong below them: a message of theirs is a wrapper, and a code beside it (the
# HCCL or operator code a stream-synchronise failure carries) says what it wraps.
_WRAPPING_CATEGORIES = ("device", "engine")


def classify(error: TheError, site: SourceSite | None, code_category: str | None) -> Classified:
    """Through the message index (``site``, looked up by the caller), then the error code's table, then the
    exception class and Python's own messages, then the innermost frame's module. A site in a wrapping layer
    (device, engine) gives way to a code that names another category."""
    table = categories.table()
    frame = _frame_site(error.frames)
    if site is not None:
        if code_category and site.category in _WRAPPING_CATEGORIES and code_category not in _WRAPPING_CATEGORIES:
            return Classified(code_category, "code", site, f"{site.path} ({site.function})")
        return Classified(site.category, "index", site, f"{site.path} ({site.function})")
    if code_category:
        return Classified(code_category, "code", None, _module_text(frame))
    builtin = table.builtin_category(error.message)
    if builtin is not None:
        return Classified(builtin, "class", None, _module_text(frame))
    cls = table.exception_class(error.exception) if error.exception else None
    if cls is not None and not cls.data_only:
        return Classified(cls.category, "class", None, _module_text(frame))
    if frame is not None:
        project, path, function = frame
        # the logged text may name what failed (a weight's `deq_scale`) where the raising module is generic
        said = error.message or error.logged
        return Classified(categories.category_of(project, path, said), "frame", None, _module_text(frame))
    return Classified(cls.category if cls is not None else table.default, "none", None, "")


def _frame_site(frames: list[str]) -> tuple[str, str, str] | None:
    """(project, path in its release, function) of the innermost frame of a known package (else the innermost)."""
    table = categories.table()
    for frame in reversed(frames):
        path, _, function = frame.rpartition(":")
        where = table.site_of_path(path)
        if where is not None:
            return where[0], where[1], function
    return None


def _module_text(frame: tuple[str, str, str] | None) -> str:
    return f"{frame[1]} ({frame[2]})" if frame else ""


def ending_finding(error: TheError, what: Classified) -> Finding:
    """``END001``: the error that ended the run, where it was raised, and what its category asks."""
    said = f"{error.exception}: {error.message}" if error.exception else (error.message or error.logged)
    said = said if len(said) <= 300 else said[:299] + "…"
    site = what.site
    where = (Phrase("ending.where_site", project=site.project, versions=site.versions, path=site.path,
                    line=site.line, function=site.function) if site is not None
             else Phrase("ending.where_module", module=what.module) if what.module else Phrase("ending.where_none"))
    summary = Phrase("ending.summary", error=said, where=where, category=Phrase(f"category.{what.category}"))
    references = [site.link or f"{site.project} {site.versions} {site.path}:{site.line}"] if site is not None else []
    return Finding(
        rule_id=END_ID, name=END_NAME, category=what.category, severity="error",
        title=Phrase("ending.title", exception=error.exception or Phrase("ending.an_error")),
        summary=summary, count=1, first_seen=error.ts, last_seen=error.ts,
        nodes=[error.node] if error.node else [], ranks=[int(error.rank)] if error.rank is not None else [],
        evidence=[Evidence(error.file, error.line, error.text or said)],
        remediation=Phrase(f"ending.next.{what.category}"), references=references,
        facts={"exception": error.exception, "message": error.message[:300], "classified_by": what.by,
               "module": site.path if site is not None else what.module},
        site=site if site is not None else msgspec.UNSET,
    )
