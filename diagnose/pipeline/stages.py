"""The pipeline as a list of stages. Each stage takes the run so far and adds to it; a stage that may fail
without costing the findings of the others is wrapped once (``_guarded``): its failure is recorded in the
report's errors (which makes the run incomplete) and the next stage goes on.

    read ─► date ─► derived inputs ─► bundle passes ─► window ─► validate ─► rules ─► rank ─► root cause
         ─► signatures ─► origins (derived facts to their files) ─► triage (fingerprints, suppressions,
         findings baseline) ─► timeline; then what the run covered (diagnose/analysis/coverage.py) and the verdict

A parser never knows about rules, a rule never opens a file (the rules stage hands the engine a reader for
evidence lines whose text was not kept), a reporter never re-reads logs: data flows one way.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Iterable

import polars as pl

from diagnose.analysis import ending as end
from diagnose.analysis.coverage import NOTHING, assess
from diagnose.analysis.provenance import relocate
from diagnose.analysis.rootcause import find_root_cause, ROOT_ID
from diagnose.analysis.silence import CATEGORY, SILENCE_ID, SILENCE_NAME, find_silence
from diagnose.analysis.triage import triage, unrecognised
from diagnose.analysis.verdict import verdict
from diagnose.engine import Rule, run_rules
from diagnose.engine.filters import RuleFilters
from diagnose.engine.hits import SELECTED_SCHEMA, selected_rows
from diagnose.engine.match_kinds.traceback import exceptions
from diagnose.engine.selection import RuleKey, is_selected
from diagnose.analysis.gate import UNRECOGNISED_ID, UNRECOGNISED_NAME, decide
from diagnose.analysis.known import read_report
from diagnose.ingest.reread import read_lines
from diagnose.ingest.walk import iter_sources
from diagnose.model import (
    SEVERITY_RANK, empty_records, empty_signals, Comparison, Finding, NothingAnalysed, Report, Signature, SlowRule, Suppressed,
)
from diagnose.parsers import registry
from diagnose.pipeline.reading import STAMP_COLUMNS, Parsed, Progress, read_sources
from diagnose.pipeline.samples import cut_files
from diagnose.pipeline.settings import Settings
from diagnose.analysis.rank import rank_findings
from diagnose.analysis.timeline_events import timeline_frame
from diagnose.pipeline.dating import date_records, redate
from diagnose.model.timewindow import TimeWindow
from diagnose.model.series import empty_series

if TYPE_CHECKING:  # the preflight room is imported when a run has facts (start-up)
    from diagnose.preflight.factsource import FactSource
from diagnose.pipeline.chunks import empty_stamps


@dataclass
class Run:
    """The run so far: what was read, and what the stages after it concluded."""

    settings: Settings
    filters: RuleFilters
    rules: list[Rule]
    rule_errors: list[str]
    parsed: Parsed | None = None
    comparisons: list[Comparison] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # failures of the stages from the rules on
    timeline: pl.DataFrame | None = None
    selected: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=SELECTED_SCHEMA))  # engine/hits.py
    ending: Any = None  # analysis/ending.py Ending: did the run end abnormally, and how
    unrecognised: tuple[list[Signature], int, int | None] = ([], 0, None)
    suppressed: list[Suppressed] = field(default_factory=list)  # by the configuration, with reasons
    findings_new: int | None = None  # with a findings baseline: how many findings are new
    slow_rules: list[SlowRule] = field(default_factory=list)  # rules over their time budget (engine/run.py)


@dataclass(frozen=True)
class Stage:
    name: str
    run: Callable[[Run], None]
    failure: str | None = None  # "X failed" is recorded and the run goes on; None: a failure is a bug


def _guarded(stage: Stage, run: Run, into: list[str]) -> None:
    if stage.failure is None:
        stage.run(run)
        return
    try:
        stage.run(run)
    except Exception as exc:  # noqa: BLE001 - recorded in the report; the other stages' results stand
        into.append(f"{stage.failure} failed: {type(exc).__name__}: {exc}")


# --- reading the bundle --------------------------------------------------------------------------------------

def _date(run: Run) -> None:
    """Year-less stamps get their year (diagnose/pipeline/dating.py); lines kept only for their signals are dated
    with the records, and their stamps date the signals and the series."""
    p = run.parsed
    stamps = p.stamps
    both, dated = date_records(pl.concat([p.records.select(STAMP_COLUMNS), stamps.select(STAMP_COLUMNS)]), p.files)
    if dated:
        p.records = p.records.with_columns(ts=both["ts"].head(p.records.height))
        stamps = stamps.with_columns(ts=both["ts"].tail(stamps.height))
        p.signals = redate(p.signals, both, list(dated))
        p.series = redate(p.series, both, list(dated))
    p.texts = stamps.filter(pl.col("text").is_not_null()).select("file", "line", "text", "message")
    p.stamps = None


def _derived_inputs(run: Run) -> None:
    """Preflight facts from the model files, launch scripts and ``non-default args`` lines the read stage
    tapped (diagnose/preflight/tap.py)."""
    p = run.parsed
    tap, p.tap = p.tap, None
    if tap is None:
        return
    seen = pl.concat([p.records.select("file", "line", "message"), p.texts.select("file", "line", "message")])
    add_facts(p, tap.finish(seen))


def add_facts(p: Parsed, facts: FactSource) -> None:
    """Derived facts join the run: their records and signals, their derived inputs and the origins of their
    lines, and the files they were derived from when no read stage read those."""
    p.records = pl.concat([p.records, *facts.records], how="vertical_relaxed")
    p.signals = pl.concat([p.signals, *facts.signals], how="vertical_relaxed")
    p.derived += facts.inputs
    p.origins.update(facts.origins)
    p.inputs += facts.read
    p.skipped = facts.skipped + p.skipped


def _bundle_pass(kind: str, bundle_pass) -> Stage:
    def run_it(run: Run) -> None:
        run.parsed.signals = bundle_pass(run.parsed.signals, run.parsed.series)

    return Stage(f"{kind} bundle pass", run_it, failure=f"{kind} bundle pass")


def _window(run: Run) -> None:
    s = run.settings
    if not (s.since or s.until):
        return
    cond = pl.lit(True)
    if s.since:
        cond = cond & (pl.col("ts").is_null() | (pl.col("ts") >= s.since))
    if s.until:
        cond = cond & (pl.col("ts").is_null() | (pl.col("ts") <= s.until))
    p = run.parsed
    dated = p.records.select(n=pl.col("ts").count(), first=pl.col("ts").min(), last=pl.col("ts").max()).row(0)
    p.records, p.signals, p.series = p.records.filter(cond), p.signals.filter(cond), p.series.filter(cond)
    # A window that leaves no dated record analysed nothing (diagnose/analysis/coverage.py).
    p.window = TimeWindow(dated=dated[0], kept=p.records["ts"].count(), first=dated[1], last=dated[2],
                          since=s.since, until=s.until)


def node_stages() -> list[Stage]:
    """The stages that need only one node's files: dating (a year-less stamp takes its year from its file, its
    node, then the bundle) and the preflight facts of the model files and launch scripts read. ``extract``
    stops here on the node that holds the logs (diagnose/fleet/)."""
    return [
        Stage("date", _date),
        Stage("derived inputs", _derived_inputs, failure="preflight on the bundle"),
    ]


def across_stages() -> list[Stage]:
    """The stages that compare files of every node: each kind's bundle pass (the profiler's slow rank, the
    versions of the nodes) and the time window. ``fleet`` runs these over every node's extracted frames."""
    return [
        *[_bundle_pass(kind, fn) for kind, fn in registry.bundle_passes()],
        Stage("window", _window),
    ]


def bundle_stages() -> list[Stage]:
    return [*node_stages(), *across_stages()]


def gather(sources: Iterable, settings: Settings, filters: RuleFilters, progress: Progress | None = None) -> Parsed:
    """The read stage and the node stages: what one node's files give on their own."""
    from diagnose.preflight.tap import Tap  # deferred: start-up (the preflight room, not for --help)
    tap = None
    if settings.kind is None:  # model JSON files and launch scripts in a bundle: see diagnose/preflight/tap.py
        tap = Tap()
        sources = tap.wrap(sources)
    parsed = read_sources(sources, settings, filters, progress)
    if progress is not None:
        progress.phase("parsing")  # dating, the preflight facts, the cross-file passes
    if tap is not None:
        parsed.tap = tap
    run = Run(settings, filters, [], [], parsed)
    for stage in node_stages():
        _guarded(stage, run, parsed.errors)
    return parsed


def complete(parsed: Parsed, settings: Settings, filters: RuleFilters) -> Parsed:
    """The stages across files and nodes, over what ``gather`` gave (of one node, or of many put together)."""
    run = Run(settings, filters, [], [], parsed)
    for stage in across_stages():
        _guarded(stage, run, parsed.errors)
    return parsed


def read(sources: Iterable, settings: Settings, filters: RuleFilters, progress: Progress | None = None) -> Parsed:
    """The read stage and the stages that complete the bundle; errors go to ``Parsed.errors``."""
    return complete(gather(sources, settings, filters, progress), settings, filters)


def read_facts(facts: FactSource) -> Parsed:
    """``diagnose preflight``: the facts of a model directory and a launch, as a run with nothing else read."""
    parsed = Parsed(records=empty_records(), signals=empty_signals(), inputs=[], skipped=[], errors=[],
                    texts=empty_stamps().select("file", "line", "text", "message"), series=empty_series())
    add_facts(parsed, facts)
    return parsed


def read_paths(paths: list[str], settings: Settings, filters: RuleFilters, progress: Progress | None = None) -> Parsed:
    parsed = read(iter_sources(paths, settings.budget), settings, filters, progress)
    parsed.roots = list(paths)  # named files and bundles (diagnose/analysis/coverage.py)
    return parsed


# --- diagnosing it -------------------------------------------------------------------------------------------

def _validate(run: Run) -> None:
    """Benchmark/accuracy results against --baseline (diagnose/validation)."""
    from diagnose.validation import apply_validation  # deferred: start-up (the validation room: --baseline only)
    def read_run(path: str):
        earlier = read_paths([path], Settings(since=run.settings.since, until=run.settings.until,
                                               lang=run.settings.lang, budget=run.settings.budget), run.filters)
        return earlier.signals, bool(earlier.inputs)

    run.parsed, run.comparisons = apply_validation(run.parsed, run.settings.baseline, read_run, run.settings.earlier)


def _rules(run: Run) -> None:
    p = run.parsed
    run.findings, errors = run_rules(run.rules, p.records, p.signals, run.settings.lang, p.texts, p.series,
                                     read_back=read_lines, slow=run.slow_rules, cut=cut_files(p.inputs))
    run.errors.extend(errors)
    run.selected = selected_rows([f.rule_id for f in run.findings], run.rules, p.records, p.signals)


def _silence(run: Run) -> None:
    """A serving engine that went quiet while nothing says it stopped: a hang (diagnose/analysis/silence.py)."""
    if not is_selected(run.settings.selection, RuleKey(SILENCE_ID, SILENCE_NAME, CATEGORY)):
        return
    p = run.parsed
    found = find_silence(p.records, p.series, registry.periodic_signals(), now=run.settings.now, texts=p.texts,
                         read_back=read_lines, stops=registry.stops(), cut=cut_files(p.inputs))
    if found is not None:
        run.findings.append(found)


def _rank(run: Run) -> None:
    run.findings = rank_findings(run.findings, [link for rule in run.rules for link in rule.links])


def _root_cause(run: Run) -> None:
    """Across ranks: the rank that failed first goes on top (diagnose/analysis/rootcause.py)."""
    run.findings = find_root_cause(run.findings, run.selected, run.parsed.records, run.parsed.signals)


def _timeline(run: Run) -> None:
    """Dated warnings/errors and evidence lines for the html timeline (capped; diagnose/analysis/timeline_events.py)."""
    if run.settings.timeline:
        run.timeline = timeline_frame(run.parsed.records, run.findings, run.parsed.signals)


def _signatures(run: Run) -> None:
    """Errors no rule explains, grouped into signatures, minus suppressed ones (diagnose/analysis/triage.py)."""
    if run.settings.signatures:
        unrecognised(run)


def _triage(run: Run) -> None:
    """Fingerprints, suppressed findings, new/known against a findings baseline (diagnose/analysis/triage.py)."""
    # --select applies to a pass's own findings (the first failing rank) as to the rules that ran.
    ran = {r.id for r in run.rules}
    run.findings = [f for f in run.findings if f.rule_id in ran
                    or is_selected(run.settings.selection, RuleKey(f.rule_id, f.name, f.category))]
    triage(run)


def _ending(run: Run) -> None:
    """Did the run end abnormally, and which error ended it (diagnose/analysis/ending.py): rules first, then the
    message index, the code tables, the exception class, the raising module; ``END001`` when no rule said it."""
    p = run.parsed
    found = end.find_ending(p.records, exceptions(p.records, p.signals))
    run.ending = found
    if not found.abnormal:
        return
    error = found.error or end.sign_error(p.records, found)
    if error is None:
        return
    first_rank = bool(run.findings) and run.findings[0].rule_id == ROOT_ID  # the rank that failed first stays first
    if end.explained_by(error, run.findings, run.selected) is not None:
        return  # a rule said it: the ranking of the rules' findings (their causes and echoes) stands
    if found.error is None:
        what = end.Classified(end.ending_category(error.message) or "engine", "ending")
    else:
        what = end.classify(error, end.lookup_site(error), end.code_category(end.codes_near(p.records, error)))
    finding = end.ending_finding(error, what)
    # A rule's failure logged before it came first (the exception is its consequence); otherwise, known by its
    # message, code or class, it leads; known only by the module that raised it, the rules' specific findings
    # come first (they know more than a module name).
    causes = [i for i, f in enumerate(run.findings) if not f.consequence and not f.generic
              and SEVERITY_RANK[f.severity] >= SEVERITY_RANK["error"]]
    earlier = [i for i in causes if error.ts is not None and run.findings[i].first_seen is not None
               and run.findings[i].first_seen < error.ts]
    ahead = 1 if first_rank else 0
    if earlier:
        ahead = max(ahead, earlier[-1] + 1)
    elif not what.strong:
        ahead = max(ahead, causes[-1] + 1 if causes else 0)
    run.findings = [*run.findings[:ahead], finding, *run.findings[ahead:]]


def _origins(run: Run) -> None:
    """Findings on derived facts (preflight and validation) point at the files the facts came from
    (diagnose/analysis/provenance.py)."""
    items, more, new = run.unrecognised
    run.findings, items = relocate(run.findings, items, run.parsed.origins)
    run.unrecognised = (items, more, new)


ANALYSIS: list[tuple[Stage, str]] = [  # (stage, where its failure is recorded)
    (Stage("validate", _validate, failure="baseline comparison"), "parsed"),
    (Stage("rules", _rules), "run"),
    (Stage("silence", _silence, failure="silence check"), "run"),
    (Stage("rank", _rank), "run"),
    (Stage("root cause", _root_cause, failure="root cause across ranks"), "run"),
    (Stage("signatures", _signatures, failure="unrecognised error signatures"), "run"),
    (Stage("ending", _ending, failure="the error that ended the run"), "run"),
    (Stage("origins", _origins), "run"),  # before triage: fingerprints and suppressions see the real files
    (Stage("triage", _triage, failure="suppressions and the findings baseline"), "run"),
    (Stage("timeline", _timeline, failure="html timeline"), "run"),  # of the findings left after triage
]


def diagnose(parsed: Parsed, rules: list[Rule], rule_errors: list[str], settings: Settings,
             filters: RuleFilters | None = None, progress: Progress | None = None) -> Report:
    if progress is not None:
        progress.phase("rules")
    if settings.baseline and settings.earlier is None:  # decoded once, here or by the command
        settings = replace(settings, earlier=read_report(settings.baseline))
    run = Run(settings, filters or RuleFilters(), rules, rule_errors, parsed)
    for stage, where in ANALYSIS:
        _guarded(stage, run, run.parsed.errors if where == "parsed" else run.errors)
    unrecognised, more, new = run.unrecognised
    p = run.parsed

    findings = run.findings
    coverage = assess(p.inputs, p.derived, p.skipped, findings, p.window, p.roots)
    abnormal = bool(run.ending is not None and run.ending.abnormal)
    counted = is_selected(settings.selection, RuleKey(UNRECOGNISED_ID, UNRECOGNISED_NAME, "engine"))
    said = verdict(findings, unrecognised, abnormal and counted, settings.fail_on_unrecognised and counted)
    if coverage.status == NOTHING:  # never "No findings." for a run that looked at nothing
        said = NothingAnalysed(text=coverage.text)
    report = Report(
        verdict=said,
        coverage=coverage,
        derived=p.derived,
        unrecognised=unrecognised,
        unrecognised_more=more,
        unrecognised_new=new,
        comparisons=run.comparisons,
        findings=findings,
        inputs=p.inputs,
        skipped=p.skipped,
        errors=rule_errors + p.errors + run.errors,
        rules_checked=[r.info() for r in rules],
        signals=p.signals,
        series=p.series,
        panels=[(panel.title, panel.unit, panel.signals) for panel in registry.panels()],
        timeline=run.timeline,
        suppressed=run.suppressed,
        findings_new=run.findings_new,
        slow_rules=run.slow_rules,
    )
    report.gate = decide(report, settings.gate)
    return report

