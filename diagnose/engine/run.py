"""Run rules over the frames and turn each match into a Finding."""

from __future__ import annotations

import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, Callable

import polars as pl

from diagnose.engine.match_kinds import KINDS, Context, Hit
from diagnose.messages import LANGS, TEMPLATE_HOLE, Joined, Localized, Phrase, Template, Words
from diagnose.engine.rulefile import Rule
from diagnose.engine.selectors import record_condition
from diagnose.scan.plan import gate_searches
from diagnose.model import SEVERITY_RANK, Evidence, Finding, SlowRule

MAX_EVIDENCE = 5


# Reads lines back from a file: (display path, line numbers) -> {line: text}. The pipeline hands one in
# (diagnose/ingest/reread.py); the engine itself never opens a file.
ReadBack = Callable[[str, set[int]], dict[int, str]]


WORKERS = 2 if (os.cpu_count() or 1) >= 2 else 1
PARALLEL_ROWS = 1_000_000  # records, signals and series rows up to which the rules run on WORKERS threads
RULE_SECONDS = 10.0  # a rule that takes longer is named in the report (``slow``): its patterns are slow here


def run_rules(
    rules: list[Rule], records: pl.DataFrame, signals: pl.DataFrame, lang: str = "en",
    texts: pl.DataFrame | None = None, series: pl.DataFrame | None = None, read_back: ReadBack | None = None,
    slow: list[SlowRule] | None = None, cut: dict[str, str | None] | None = None,
) -> tuple[list[Finding], list[str]]:
    """Findings in catalog order (rank.py orders them) and internal errors, one per failing rule.

    ``texts`` (file, line, text) holds the lines that only carried signals: rules do not scan them, but a
    finding built on a signal shows its line as evidence. ``series`` holds every periodic metric sample
    (diagnose/model/series.py), of which ``signals`` keeps only those rules can report; ``read_back`` gives the
    text of evidence lines kept in neither. Each rule has a time budget (``RULE_SECONDS``): one that takes longer
    (a user's ``.{1,5000}`` on long lines ran for minutes) still gives its findings, and is added to ``slow``
    with its time, so the run says which rule made it slow instead of only being slow. ``cut`` names the files
    (file -> node) whose periodic samples the run's budget cut (diagnose/pipeline/samples.py): their series
    stops at the cut, not where the file did.
    """
    findings: list[Finding] = []
    errors: list[str] = []
    present = _sources_present(records, signals, series)
    rules = [rule for rule in rules if _can_fire(rule, present)]
    quiet = _quiet_pattern_rules(rules, records)
    ctx = Context(records, signals, series, lang, cut=cut or {})
    explained: list[pl.DataFrame] = []  # (file, event) of every hit: a later phase leaves those lines alone

    def one(rule: Rule) -> tuple[list[Finding], list[pl.DataFrame], str | None, float]:
        started = time.monotonic()
        found, covered, error = [], [], None
        try:
            for hit in KINDS[rule.match.kind].evaluate(rule.match, rule.sources or None, ctx):
                found.append(build_finding(rule, hit, records, lang, signals, texts, read_back))
                covered.append(hit.hits.select(pl.col("file").cast(pl.String), pl.col("event").cast(pl.UInt32)))
        except Exception as exc:  # noqa: BLE001 - one broken rule must not take the run down; the report says so
            error = f"rule {rule.id} ({rule.path}) failed: {type(exc).__name__}: {exc}"
        return found, covered, error, time.monotonic() - started

    # The rules of a phase read the same frames and none another's result: they run on WORKERS threads (their
    # queries release the GIL; a 1 GiB node's rules took 0.83 s on one), and are taken in catalog order. Two
    # rules' queries at once hold twice the memory: on large frames (a metric-only log's 6 million samples
    # went from 2.0 to 2.4 GB) they run one after the other.
    rows = records.height + signals.height + (series.height if series is not None else 0)
    with ThreadPoolExecutor(WORKERS if rows <= PARALLEL_ROWS else 1) as pool:
        for phase in sorted({KINDS[r.match.kind].phase for r in rules}):
            if phase:
                ctx.explained = pl.concat(explained).unique() if explained else None
            ready = [r for r in rules if KINDS[r.match.kind].phase == phase and r.id not in quiet]
            for rule, (found, covered, error, took) in zip(ready, pool.map(one, ready)):
                findings += found
                explained += covered
                if error is not None:
                    errors.append(error)
                if took > RULE_SECONDS and slow is not None:
                    slow.append(SlowRule(rule=rule.id, path=rule.path, seconds=round(took, 1), budget=RULE_SECONDS))
    return findings, errors


def _sources_present(records: pl.DataFrame, signals: pl.DataFrame, series: pl.DataFrame | None) -> set[str]:
    present = set(records["source"].drop_nulls().unique().to_list()) | set(signals["source"].drop_nulls().unique().to_list())
    if series is not None and series.height:
        present.update(series["source"].cast(pl.String).unique().to_list())
    return present


def _can_fire(rule: Rule, present: set[str]) -> bool:
    """A rule limited to sources of which no file was read selects nothing: skip it (most of the catalog,
    for a bundle of one kind). Selectors may name sources of their own, so those count too."""
    if not rule.sources:
        return True
    if KINDS[rule.match.kind].any_source:  # tracebacks are text in any kind of file
        return True
    wanted = set(rule.sources)
    for role, sel in rule.match.selectors():
        if role != "missing" and (sel.text_first or (sel.sources is not None and not sel.sources)):
            return True
        wanted.update(sel.sources or ())
    return bool(wanted & present)


def _quiet_pattern_rules(rules: list[Rule], records: pl.DataFrame) -> set[str]:
    """Ids of the pattern rules whose regex matches no record, found in one query: most rules match nothing,
    and a query per rule costs more than its regex on a small bundle. The rules whose regex the prefilter's
    planner covers with literals (diagnose/scan/plan.py) are asked only about the records holding one of those
    literals in the field they read (one literal search): on the 135,633 records of a 1 GiB node, 24,000;
    the query 0.40 -> 0.12 s of CPU."""
    checks: dict[str, dict[str, pl.Expr]] = {}
    gates = gate_searches(tuple(sorted({r.match.selector.regex for r in rules if _reads_records(r)} - {None})))
    for rule in rules:
        m = rule.match
        if _reads_records(rule):
            sources = m.selector.sources_for(rule.sources or None)
            cond = record_condition(m.selector)
            if sources:
                cond = cond & pl.col("source").is_in(sources)
            gated = m.selector.field if m.selector.regex in gates.covered else ""
            checks.setdefault(gated, {})[rule.id] = cond.any()
    if not checks or records.height == 0:
        return {rid for group in checks.values() for rid in group}
    quiet = set()
    try:
        for field, group in checks.items():
            some = records if not field else records.filter(pl.col(field).str.contains(gates.search))
            if some.height == 0:
                quiet.update(group)
                continue
            row = some.select(**group).row(0, named=True)
            quiet.update(rid for rid, hit in row.items() if not hit)
    except Exception:  # noqa: BLE001 - a broken pattern: let each rule run and report its own error
        return set()
    return quiet


def _reads_records(rule: Rule) -> bool:
    return rule.match.kind == "pattern" and rule.match.selector.reads_records


def build_finding(rule: Rule, match: Hit, records: pl.DataFrame, lang: str, signals: pl.DataFrame | None = None,
                  texts: pl.DataFrame | None = None, read_back: ReadBack | None = None) -> Finding:
    hits = match.hits
    nodes = sorted(hits["node"].drop_nulls().unique().to_list())
    ranks = sorted(int(r) for r in hits["rank"].drop_nulls().unique().to_list())
    if "_first" in hits.columns:
        first, last = hits["_first"][0], hits["_last"][0]
    else:
        ts = hits["ts"].drop_nulls()
        first, last = (ts.min(), ts.max()) if ts.len() else (None, None)
    evidence = _evidence(hits, records, texts, read_back)
    facts: dict[str, Any] = signal_facts(rule, hits, signals)
    facts.update(match.facts)
    facts.update(
        count=match.count,
        first_seen=_fmt_ts(first),
        last_seen=_fmt_ts(last),
        nodes=", ".join(nodes) if nodes else "-",
        ranks=", ".join(map(str, ranks)) if ranks else "-",
        where=_where(nodes, ranks),
    )
    summary = {lang: rule.text("summary", lang) or rule.text("title", lang) for lang in LANGS}
    tail = (Phrase("engine.excerpt_note", n=facts["excerpt_samples"]),) if facts.get("excerpt_samples") is not None else ()
    # An error-code finding takes its category, severity, title and next step from the code table.
    over = getattr(match, "overrides", None) or {}
    return Finding(
        rule_id=rule.id,
        name=rule.name,
        category=over.get("category", rule.category),
        severity=over.get("severity", rule.severity),
        title=over.get("title") or Localized(dict(rule.title)),
        summary=Template(summary, facts, tail=tail),
        count=match.count,
        first_seen=first,
        last_seen=last,
        nodes=nodes,
        ranks=ranks,
        evidence=evidence,
        remediation=over.get("remediation") or Localized({k: v.strip() for k, v in rule.remediation.items()}),
        references=list(rule.references) + list(over.get("references", [])),
        consequence=over.get("consequence", rule.consequence),
        facts={k: v for k, v in facts.items() if isinstance(v, (str, int, float)) or v is None},
        generic=over.get("generic", False),
        demoted=SEVERITY_RANK[over.get("severity", rule.severity)] < SEVERITY_RANK[rule.severity],
    )


def signal_facts(rule: Rule, hits: pl.DataFrame, signals: pl.DataFrame | None) -> dict[str, Any]:
    """A summary template may name a signal (``{hccl_connect_timeout_s}``): give it the value seen in the file of
    the first evidence line (for a threshold or mismatch, of its engine first), else on its node, else anywhere in the bundle (the first
    one in file order)."""
    if signals is None or signals.height == 0:
        return {}
    names = {n for lang in rule.summary for m in TEMPLATE_HOLE.finditer(rule.summary[lang])
             for n in m.group(1).split("|")}
    if not names:  # most summaries name no signal: no pass over every signal of the run
        return {}
    frame = signals.filter(pl.col("signal").is_in(list(names)))
    if frame.height == 0:
        return {}
    first = hits.head(1).select("file", "node", "engine").row(0) if hits.height else (None, None, None)
    # A threshold or mismatch finding is about one engine's values; a pattern's "engine" is only the process.
    by_engine = first[2] is not None and rule.match.kind in ("threshold", "mismatch")
    same_engine = pl.col("engine").eq_missing(first[2]) if by_engine else pl.lit(False)
    rank = ((pl.col("file") == first[0]).cast(pl.Int8) * 4 + same_engine.cast(pl.Int8) * 2
            + (pl.col("node").eq_missing(first[1])).cast(pl.Int8))
    frame = frame.with_columns(_r=rank.fill_null(0)).sort(["_r", "file", "line"], descending=[True, False, False])
    first_each = frame.select("signal", "value", "text").unique("signal", keep="first", maintain_order=True)
    out: dict[str, Any] = {}
    for name, value, text in first_each.iter_rows():
        out[name] = text if text is not None else (int(value) if value is not None and float(value).is_integer() else value)
    return out


def _evidence(hits: pl.DataFrame, records: pl.DataFrame, extra: pl.DataFrame | None = None,
              read_back: ReadBack | None = None) -> list[Evidence]:
    # Prefer one line per file/node before a second line from the same place.
    picked = hits.head(200).with_row_index("_i").with_columns(_dup=pl.int_range(pl.len()).over("file"))
    picked = picked.sort(["_dup", "_i"]).head(MAX_EVIDENCE).sort("_i")
    keys = picked.select("file", "line")
    files = keys["file"].unique().to_list()
    lookup = {}
    for source in (extra, records):
        if source is None or source.height == 0:
            continue
        found = source.filter(pl.col("file").is_in(files)).join(keys, on=["file", "line"], how="semi")
        lookup.update({(f, ln): t for f, ln, t in found.select("file", "line", "text").iter_rows()})
    rows = picked.select("file", "line", "vtext", "value").rows()
    missing: dict[str, set[int]] = {}
    for f, ln, vtext, _ in rows:
        if (f, ln) not in lookup and not vtext:
            missing.setdefault(f, set()).add(int(ln))
    for f, lines in missing.items() if read_back else ():  # periodic lines whose text was not kept
        lookup.update({(f, n): t for n, t in read_back(f, lines).items()})
    out = []
    for f, ln, vtext, value in rows:
        text = lookup.get((f, ln)) or vtext or ("" if value is None else f"value {value:g}")
        out.append(Evidence(file=f, line=int(ln), text=text))
    return out


_NODE_NAMED = re.compile(r"(?i)^node(?:[-_.]?\d+|[-_.]|$)")


def _where(nodes: list[str], ranks: list[int]) -> Words:
    parts: list[Words | str] = []
    if nodes:
        # Folders named node-0, node-1 already say what they are: "on node-1", not "on node node-1".
        key = "engine.where_named_nodes" if all(_NODE_NAMED.match(n) for n in nodes) else "engine.where_nodes"
        parts.append(Phrase(key, n=len(nodes), nodes=", ".join(nodes[:6]) + (" …" if len(nodes) > 6 else "")))
    if ranks:
        parts.append(Phrase("engine.where_ranks", n=len(ranks),
                            ranks=", ".join(map(str, ranks[:8])) + (" …" if len(ranks) > 8 else "")))
    return Joined(parts, "engine.where_join") if parts else Phrase("engine.where_bundle")


def _fmt_ts(ts: datetime | None) -> str:
    return ts.strftime("%Y-%m-%d %H:%M:%S") if ts else "?"
