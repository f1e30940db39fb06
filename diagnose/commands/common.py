"""What every command shares: the language, the terminal width, writing outputs; the exit codes are in
``diagnose.exitcodes`` (re-exported here).
"""

from __future__ import annotations

import os
import sys
from datetime import datetime

import click

from diagnose.exitcodes import (  # noqa: F401 - re-exported for the commands
    EXIT_CLEAN, EXIT_FINDINGS, EXIT_INCOMPLETE, EXIT_NOTHING_ANALYSED, EXIT_OUTPUT_FAILED, EXIT_PARTIAL, EXIT_USAGE,
    exit_code,
)

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


def write_output(target: str, text: str, option: str = "-o") -> None:
    """Write one output atomically (diagnose/commands/outputs.py); on failure say which and exit 6."""
    from diagnose.commands.outputs import OutputError, write_atomic

    try:
        write_atomic(target, text, option)
    except OutputError as exc:
        click.echo(f"diagnose: error: {exc}", err=True)
        sys.exit(EXIT_OUTPUT_FAILED)


def width() -> int:
    try:
        return max(80, min(os.get_terminal_size().columns, 160))
    except OSError:
        return 110
