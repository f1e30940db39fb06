"""Command line: the click group and the routing of ``diagnose PATH...`` to ``check``; the commands live in
``diagnose.commands`` (exit codes: ``diagnose.commands.console``).

A first argument that names a subcommand runs it, unless a file or folder of that name exists here and
nothing follows it (``diagnose rules`` in a folder holding ``rules/`` reads the folder). ``diagnose check
PATH...`` and ``diagnose -- PATH...`` always read paths.
"""

from __future__ import annotations

import difflib
import gc
import importlib
import sys
from pathlib import Path

import click

from diagnose import __version__
from diagnose.commands.check import check
from diagnose.commands.console import COLOR_CHOICES, default_lang
from diagnose.commands.expert_load import expert_load
from diagnose.commands.extract import extract
from diagnose.commands.fleet import fleet_group
from diagnose.commands.interrupts import Stopped, report_stopped, stop_on_signals
from diagnose.commands.preflight import preflight
from diagnose.commands.rules import rules_group
from diagnose.messages import messages


def run(args: list[str] | None = None) -> None:
    """The console entry point (and ``python -m diagnose``): ``main``, with Ctrl-C and SIGTERM turned into one
    line and exit 130 / 143 (diagnose/commands/interrupts.py), then an exit without Python's last collection, which
    would walk every object of polars and of the run (30-40 ms, a tenth of a small run) when the process is
    about to give all its memory back anyway."""
    code = 0
    try:
        with stop_on_signals():
            try:
                main(args=args)
            except Stopped as stop:
                code = report_stopped(stop)
        sys.exit(code)
    finally:
        gc.freeze()


class DiagnoseGroup(click.Group):
    """Route ``diagnose PATH...`` to ``check`` without confusing paths and subcommands."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] == "--":
            args = ["check", "--", *args[1:]]
        elif not args or args[0] in ("--help", "-h", "--version"):
            pass
        elif args[0] in self.commands:
            if Path(args[0]).exists() and len(args) == 1:
                args = ["check", *args]
        else:
            near = _near_command(args[0], list(self.commands))
            if near is not None:
                ctx.fail(messages(default_lang())("cli.no_such_command", name=args[0], near=near))
            args = ["check", *args]
        return super().parse_args(ctx, _bare_color(args))


def _near_command(word: str, commands: list[str]) -> str | None:
    """The subcommand ``word`` is a typo of (``rulse`` for ``rules``), when ``word`` is no path that exists and
    looks like a command (a bare word, not a path or an option): ``diagnose rulse`` then says "did you mean",
    as click does, and exits 2, instead of reading a missing path."""
    if not word or word.startswith("-") or any(c in word for c in "/.\\") or Path(word).exists():
        return None
    found = difflib.get_close_matches(word, commands, n=1, cutoff=0.7)
    return found[0] if found else None


def _bare_color(args: list[str]) -> list[str]:
    """``--color`` takes an optional value: ``--color PATH`` (the flag, then a path) must not read the path
    as the value, so a bare ``--color`` not followed by a colour choice becomes ``--color=always``."""
    out = list(args)
    for i, arg in enumerate(out):
        if arg == "--":
            break
        if arg == "--color" and (i + 1 >= len(out) or out[i + 1] not in COLOR_CHOICES):
            out[i] = "--color=always"
    return out


@click.group(cls=DiagnoseGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="diagnose")
def main() -> None:
    """Diagnose DeepSeek-V3/R1 serving incidents on Ascend NPUs (vLLM, vllm-ascend, MindIE, CANN).

    \b
    Usage: diagnose [OPTIONS] PATH...        analyse logs (folders, files, .gz, .tar.gz, .zip, - for stdin)
           diagnose rules list|show|test|docs|new|signals   the rule catalog
           diagnose preflight MODEL_DIR ...  check weights metadata and launch settings before starting
           diagnose expert-load DUMPS ...    weekly expert-load report and a better expert placement
           diagnose watch PATH...            follow growing logs: findings as they open and resolve
           diagnose npd --check C PATH...    a node-problem-detector plugin; npd-config writes its monitor file
           diagnose collect [-o B.tar.gz]    gather an incident bundle from this node
           diagnose extract PATH... --out DATASET   one node's logs to a fleet dataset (Parquet)
           diagnose fleet DATASET            judge every node of a fleet dataset together
    Run `diagnose check --help` for the analysis options (--format, --fail-on, --rules, --select, ...).
    Defaults come from .diagnose.toml or [tool.diagnose] in pyproject.toml (see docs/ci.md).
    """


for _command in (check, rules_group, preflight, expert_load, extract, fleet_group):
    main.add_command(_command)


class _Lazy(click.Command):
    """A command whose module is imported when it runs (or shows its help): the live and collection commands
    bring modules a plain analysis never needs."""

    def __init__(self, name: str, module: str, attribute: str, summary: str):
        super().__init__(name, help=summary, short_help=summary)
        self._where = (module, attribute)

    def _real(self) -> click.Command:
        module, attribute = self._where
        return getattr(importlib.import_module(module), attribute)

    def make_context(self, info_name, args, parent=None, **extra):
        return self._real().make_context(info_name, args, parent=parent, **extra)

    def invoke(self, ctx):
        return self._real().invoke(ctx)

    def get_help(self, ctx):
        return self._real().get_help(ctx)


for _name, _module, _attribute, _summary in (
    ("watch", "diagnose.commands.watch", "watch", "Follow growing logs; say each finding when it opens and resolves."),
    ("npd", "diagnose.commands.npd", "npd", "One node-problem-detector plugin run (exit 0 OK, 1 problem)."),
    ("npd-config", "diagnose.commands.npd", "npd_config", "Write node-problem-detector's custom plugin monitor file."),
    ("collect", "diagnose.commands.collect", "collect", "Gather an incident bundle from this node's log places."),
):
    main.add_command(_Lazy(_name, _module, _attribute, _summary))
