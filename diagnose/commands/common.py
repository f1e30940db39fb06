"""What every command shares: exit codes, the language, the terminal width, writing outputs.

Exit codes (the linter convention of ruff and sqlfluff):
  0  no finding at or above --fail-on
  1  at least one finding at or above --fail-on
  2  usage or configuration error (bad option, invalid rule file), no input could be read at all, or an output
     could not be written (a full disk, a folder that does not exist)
  3  the run completed but is incomplete: a parser or rule failed internally (the report says which)
"""

from __future__ import annotations

import os
import sys
from datetime import datetime
from pathlib import Path

import click

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE, EXIT_INCOMPLETE = 0, 1, 2, 3
SEVERITY_CHOICES = ["info", "warning", "error", "critical"]


def default_lang() -> str:
    for var in ("DIAGNOSE_LANG", "LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(var, "")
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


def parse_time(value: str | None, name: str) -> datetime | None:
    if not value:
        return None
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"):
        try:
            return datetime.strptime(value, fmt)
        except ValueError:
            continue
    raise click.BadParameter(f"{value!r} is not a time like 2025-07-01 or '2025-07-01 09:30:00'", param_hint=name)


def write_output(target: str, text: str) -> None:
    try:
        Path(target).write_text(text, encoding="utf-8")
    except OSError as exc:
        click.echo(f"diagnose: error: cannot write {target}: {exc.strerror or exc}", err=True)
        sys.exit(EXIT_USAGE)


def echo_output(text: str, err: bool = False) -> None:
    """A report on standard output (or error). A full disk ends the run with one line that says so (exit 2); a
    reader that went away (``| head``) is no error: the rest of the output is dropped and the exit code stays."""
    stream = sys.stderr if err else sys.stdout
    try:
        click.echo(text, nl=False, err=err)
        stream.flush()
    except BrokenPipeError:
        _drop(stream)
    except OSError as exc:
        _drop(stream)
        where = "standard error" if err else "standard output"
        click.echo(f"diagnose: error: cannot write the report to {where}: {exc.strerror or exc}", err=True)
        sys.exit(EXIT_USAGE)


def _drop(stream) -> None:
    # What is still buffered would fail again when Python flushes at exit, with a traceback-like complaint.
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (a test runner's capture)
        pass


def width() -> int:
    try:
        return max(80, min(os.get_terminal_size().columns, 160))
    except OSError:
        return 110


def exit_code(report, fail_on: str, exit_zero: bool) -> int:
    from diagnose.model import SEVERITY_RANK

    if report.incomplete:
        return EXIT_INCOMPLETE
    if exit_zero:
        return EXIT_CLEAN
    floor = SEVERITY_RANK[fail_on]
    if any(SEVERITY_RANK[f.severity] >= floor for f in report.findings):
        return EXIT_FINDINGS
    # Errors that no rule explains are not a clean run: they fail the run from --fail-on error down.
    if (report.verdict or {}).get("kind") == "no-known-cause" and floor <= SEVERITY_RANK["error"]:
        return EXIT_FINDINGS
    return EXIT_CLEAN
