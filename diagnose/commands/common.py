"""What every command shares: exit codes, the language, the terminal width, writing outputs.

Exit codes (the linter convention of ruff and sqlfluff):
  0  no finding at or above --fail-on
  1  at least one finding at or above --fail-on
  2  usage or configuration error (bad option, invalid rule file), or no input could be read at all
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


PIPE_WIDTH = 100  # columns of the text report when it goes to a pipe or a file and $COLUMNS is not set
MIN_WIDTH, MAX_TTY_WIDTH = 40, 160
COLOR_CHOICES = ["auto", "always", "never"]


def width(to_file: bool = False, stream=None) -> int:
    """Columns of the text report: $COLUMNS when set (at least 40), else the terminal's (40 to 160: prose
    wider than that is hard to read), else 100 for a pipe or a file (-o)."""
    value = os.environ.get("COLUMNS", "").strip()
    if value.isdigit() and int(value) > 0:
        return max(MIN_WIDTH, int(value))
    stream = stream or sys.stdout
    try:
        if not to_file and stream.isatty():
            return max(MIN_WIDTH, min(os.get_terminal_size(stream.fileno()).columns, MAX_TTY_WIDTH))
    except (AttributeError, OSError, ValueError):
        pass
    return PIPE_WIDTH


def use_color(choice: str | None, to_file: bool = False, stream=None) -> bool:
    """``--color always|never`` decide; ``auto`` (the default) colours a terminal only, unless $NO_COLOR is
    set (no colour; no-color.org) or $FORCE_COLOR is (colour in a pipe too; force-color.org; "0" does not
    force). A report written to a file (-o) is coloured only with --color always."""
    if choice in ("always", "never"):
        return choice == "always"
    if to_file or os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR", "0") not in ("", "0"):
        return True
    stream = stream or sys.stdout
    try:
        return stream.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False


def color_option(command):
    """``--color [auto|always|never]`` (a bare ``--color`` is ``always``) and ``--no-color`` (= never)."""
    command = click.option("--no-color", "no_color", is_flag=True, help="Same as --color never.")(command)
    return click.option("--color", "color", type=click.Choice(COLOR_CHOICES), default=None, is_flag=False,
                        flag_value="always", metavar="[auto|always|never]",
                        help="Colour: auto (default: a terminal only; honours NO_COLOR and FORCE_COLOR), "
                             "always, never.")(command)


def color_choice(color: str | None, no_color: bool) -> str:
    return "never" if no_color else (color or "auto")


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
