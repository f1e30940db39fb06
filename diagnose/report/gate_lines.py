"""What the run's gate (``Report.gate``, diagnose/analysis/gate.py) says that every format must state: the
threshold findings are judged against, and whether the errors no rule explains fail the run (then every format
shows them as a failing result, so a red job never has green dashboards)."""

from __future__ import annotations

from diagnose.messages import Messages
from diagnose.model import Report

UNRECOGNISED_CHECK = "UNR001"  # the pseudo rule of the errors no rule explains (selectable, like a rule)


def fail_on(report: Report, option: str | None) -> str:
    """The severity findings fail at: the gate's, else the renderer's option."""
    return report.gate.fail_on if report.gate is not None else (option or "error")


def unrecognised_fail(report: Report) -> bool:
    return report.gate is not None and report.gate.unrecognised


def unrecognised_place(report: Report) -> tuple[str | None, int]:
    """(file, line) of the first error no rule explains, as the verdict names it."""
    v = report.verdict
    return getattr(v, "file", None), int(getattr(v, "line", None) or 1)


def unrecognised_text(report: Report, msg: Messages) -> str:
    """The sentence that says it: the verdict's."""
    return msg.say(report.verdict.text) if report.verdict is not None else ""
