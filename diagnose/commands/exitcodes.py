"""Exit codes of ``diagnose``, one place (README.md and docs/ci.md list the same table).

  0    no finding at or above --fail-on, and every input was read
  1    at least one finding at or above --fail-on (or errors no rule explains, from --fail-on error down)
  2    usage or configuration error: a bad option, an invalid rule file or baseline, a path that does not exist
  3    the run is incomplete: a parser or rule failed internally (the report says which)
  4    nothing was analysed: no input could be read, the inputs were empty, --since/--until exclude every
       record, or a folder held no file of a known kind (diagnose/analysis/coverage.py); --allow-empty accepts it
  5    partial coverage on an otherwise clean run: an input was not read or was read only in part (a reading
       budget, a truncated archive or .gz); findings still exit 1; --allow-partial accepts it
  6    an output file could not be written (-o, --json, --sarif, ...); the other outputs were written
  130  interrupted (Ctrl-C, SIGINT)
  143  terminated (SIGTERM)

When several apply, the first of 2, 6, 3, 4, 1, 5 wins: a run that could not be trusted never reports as one
that merely found something. ``--exit-zero`` turns only 1 into 0 (then 5 still shows partial coverage).
"""

from __future__ import annotations

from diagnose.analysis.gate import GateOptions, decide
from diagnose.model.exits import (  # noqa: F401 - the table lives with the report; re-exported for the commands
    EXIT_CLEAN, EXIT_FINDINGS, EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_NOTHING_ANALYSED, EXIT_OUTPUT_FAILED,
    EXIT_PARTIAL, EXIT_TERMINATED, EXIT_USAGE,
)


def exit_code(report, fail_on: str | None = None, exit_zero: bool = False, allow_empty: bool = False,
              allow_partial: bool = False, fail_on_new: bool = False) -> int:
    """The exit code of a finished run (usage errors and failed outputs are decided by the command): the report's
    gate (diagnose/analysis/gate.py) unless options are given here."""
    if fail_on is None and report.gate is not None:
        return report.gate.exit_code
    return decide(report, GateOptions(fail_on or "error", exit_zero, allow_empty, allow_partial, fail_on_new)).exit_code
