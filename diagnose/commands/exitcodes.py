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

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_INCOMPLETE = 3
EXIT_NOTHING_ANALYSED = 4
EXIT_PARTIAL = 5
EXIT_OUTPUT_FAILED = 6
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it
EXIT_TERMINATED = 143  # 128 + SIGTERM


def exit_code(report, fail_on: str, exit_zero: bool = False, allow_empty: bool = False,
              allow_partial: bool = False) -> int:
    """The exit code of a finished run (usage errors and failed outputs are decided by the command)."""
    from diagnose.model import SEVERITY_RANK, NoKnownCause, Status

    if report.incomplete:
        return EXIT_INCOMPLETE
    if report.status == Status.NOTHING and not allow_empty:
        return EXIT_NOTHING_ANALYSED
    floor = SEVERITY_RANK[fail_on]
    failing = any(SEVERITY_RANK[f.severity] >= floor for f in report.findings)
    # Errors that no rule explains are not a clean run: they fail the run from --fail-on error down.
    failing = failing or (isinstance(report.verdict, NoKnownCause) and floor <= SEVERITY_RANK["error"])
    if failing and not exit_zero:
        return EXIT_FINDINGS
    if report.status == Status.PARTIAL and not allow_partial:  # also under --exit-zero: coverage is not a finding
        return EXIT_PARTIAL
    return EXIT_CLEAN
