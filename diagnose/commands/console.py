"""What every command shares: the language, the terminal width and colour, writing outputs; the exit codes
are in ``diagnose.commands.exitcodes`` (re-exported here).
"""

from __future__ import annotations

import os
import sys
from datetime import datetime

import click

from diagnose.commands.exitcodes import (  # noqa: F401 - re-exported for the commands
    EXIT_CLEAN, EXIT_FINDINGS, EXIT_INCOMPLETE, EXIT_NOTHING_ANALYSED, EXIT_OUTPUT_FAILED, EXIT_PARTIAL, EXIT_USAGE,
    exit_code,
)
from diagnose.commands.outputs import write_or_exit
from diagnose.messages import locale_lang

SEVERITY_CHOICES = ["info", "warning", "error", "critical"]


def default_lang() -> str:
    return locale_lang()


def parse_time(value: str | None, name: str) -> datetime | None:
    """A time of ``--since``/``--until``: ``2025-07-01``, ``2025-07-01 09:30[:00[.123]]``, ISO 8601 with ``T``,
    and with an offset (``+08:00``, ``Z``). The logs' times are wall-clock times without a zone, compared in this
    machine's local time, so a time with an offset is converted to local time (``TZ`` sets the zone)."""
    if not value:
        return None
    text = value.strip()
    try:
        when = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in "zZ" else text)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a time like 2025-07-01, '2025-07-01 09:30:00' or "
                                 "2025-07-01T09:30:00+08:00", param_hint=name) from None
    if when.tzinfo is not None:
        when = when.astimezone().replace(tzinfo=None)
    return when


LANG_CHOICES = ["en", "zh", "cn"]  # cn: what Ascend's own tools call Chinese; read as zh


def lang_value(_ctx, _param, value: str | None) -> str | None:
    """The click callback of ``--lang``: ``cn`` (as Ascend's tools spell it) is ``zh``."""
    return "zh" if value is not None and value.lower() == "cn" else value


LANG_TYPE = click.Choice(LANG_CHOICES, case_sensitive=False)


def write_output(target: str, text: str, option: str = "-o", lang: str | None = None) -> None:
    """Write one output atomically (diagnose/writer.py); on failure say which and exit 6."""
    write_or_exit(target, text, option, lang or default_lang())


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

