"""Whether a run fails, and why: one decision, made once, that the exit code follows and every format states.

A run fails (exit 1) when a finding is at or above ``--fail-on`` (with ``--fail-on-new``, a new one), or when
errors no rule explains fail it: the verdict is ``no-known-cause`` (the run ended abnormally with nothing to say
what ended it, or ``--fail-on-unrecognised``; with ``--fail-on-new``, only a new signature), ``--fail-on`` is
``error`` or lower, and the selection counts them (``UNR001 unrecognised-errors``, selectable like a rule).
Before that, a run that is incomplete (an internal error) exits 3 and one that analysed nothing 4
(``--allow-empty`` accepts it); after it, partial coverage on an otherwise clean run exits 5
(``--allow-partial``). ``--exit-zero`` turns only 1 into 0.
"""

from __future__ import annotations

from dataclasses import dataclass

from diagnose.model import SEVERITY_RANK, Gate, NoKnownCause, Report, Status
from diagnose.model.exits import EXIT_CLEAN, EXIT_FINDINGS, EXIT_INCOMPLETE, EXIT_NOTHING_ANALYSED, EXIT_PARTIAL

UNRECOGNISED_ID, UNRECOGNISED_NAME = "UNR001", "unrecognised-errors"


@dataclass(frozen=True)
class GateOptions:
    fail_on: str = "error"
    exit_zero: bool = False
    allow_empty: bool = False
    allow_partial: bool = False
    fail_on_new: bool = False


def decide(report: Report, options: GateOptions) -> Gate:
    floor = SEVERITY_RANK.get(options.fail_on, SEVERITY_RANK["error"])
    findings = [f for f in report.findings if not (options.fail_on_new and f.baseline_state == "known")]
    failing = [f.rule_id for f in findings if SEVERITY_RANK[f.severity] >= floor]
    unrecognised = (isinstance(report.verdict, NoKnownCause) and floor <= SEVERITY_RANK["error"]
                    and not (options.fail_on_new and not any(u.new is True for u in report.unrecognised)))
    fails: list[str] = []
    if report.incomplete:
        fails.append("incomplete")
    if report.status == Status.NOTHING and not options.allow_empty:
        fails.append("nothing-analysed")
    if failing:
        fails.append("findings")
    if unrecognised:
        fails.append("unrecognised")
    partial = report.status == Status.PARTIAL and not options.allow_partial
    if partial:
        fails.append("partial")
    if report.incomplete:
        code = EXIT_INCOMPLETE
    elif report.status == Status.NOTHING and not options.allow_empty:
        code = EXIT_NOTHING_ANALYSED
    elif (failing or unrecognised) and not options.exit_zero:
        code = EXIT_FINDINGS
    elif partial:  # also under --exit-zero: coverage is not a finding
        code = EXIT_PARTIAL
    else:
        code = EXIT_CLEAN
    return Gate(exit_code=code, fails=fails, fail_on=options.fail_on, failing=list(dict.fromkeys(failing)),
                unrecognised=unrecognised)
