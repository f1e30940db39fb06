"""The outputs of a command: the main one (standard output, or ``-o FILE``) and the extra files (``--json``,
``--sarif``, ``--junit``, ``--markdown``, ``--html``, ``--gitlab``), so one CI run gives the text log, the
incident page and the machine formats. Formats come from the registry (diagnose/report/formats.py); every
file and stream goes through the one writer (diagnose/writer.py).

``-o FILE`` without ``--format`` takes the format from the file's suffix (the longest registered one:
``x.sarif.json`` is SARIF); a suffix no format has is a usage error that lists the known ones. A failed output
is named on standard error in the run's language, the others are still written, and the run exits 6
(diagnose/commands/exitcodes.py).

Each output is said in its own language: ``--output-lang FORMAT=LANG`` (repeatable or comma-separated; the
configuration's ``output-lang`` table) names a format's language, ``--lang`` is the language of every other
output and of what the command says on standard error. The report holds no words (facts, Phrases and
Templates in every language), so rendering it twice in two languages is all it takes.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Callable, Mapping

import click

from diagnose.commands.exitcodes import EXIT_OUTPUT_FAILED
from diagnose.messages import LANGS, messages
from diagnose.report import formats
from diagnose.writer import WriteFailed, write_file, write_folder, write_stream

FORMATS = formats.names()
MACHINE = tuple(f.name for f in formats.FORMATS if f.machine)
LANG_CHOICES = (*LANGS, "cn")  # as --lang takes them (commands/console.py): cn, Ascend's tools' name, is zh


def output_options(command):
    """--format, -o and the extra outputs, as click options (one decorator, so commands share them)."""
    for fmt in reversed(formats.extras()):
        command = click.option(fmt.extra, f"{fmt.name}_out", type=click.Path(dir_okay=False),
                               help=f"Also write {fmt.describes} here.")(command)
    command = click.option("--output-lang", "output_lang", multiple=True, metavar="FORMAT=LANG",
                           callback=output_lang_value,
                           help="The language of one format's output, e.g. html=zh or sarif=en (repeatable or "
                                "comma-separated); --lang is the language of the others.")(command)
    suffixes = " ".join(s for s in formats.known_suffixes() if s.count(".") == 1)
    command = click.option("-o", "--output", type=click.Path(dir_okay=False),
                           help=f"Write the main output here (its format from the suffix unless --format is "
                                f"given: {suffixes}).")(command)
    return click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
                        help="Main output format [default: from the -o suffix, else text].")(command)


@dataclass(frozen=True)
class Languages:
    """The language of each output: its format's own (``--output-lang``, then the file's ``output-lang``),
    else the run's (``--lang``, then the file's ``lang``, then the locale)."""

    default: str = "en"
    by_format: Mapping[str, str] = field(default_factory=dict)

    def of(self, fmt: str) -> str:
        return self.by_format.get(fmt, self.default)


def parse_output_langs(items) -> dict[str, str]:
    """``FORMAT=LANG`` items (each may hold several, comma-separated) -> {format: language}; a later item
    wins. ``cn`` is ``zh``, as for ``--lang``. A malformed item raises ValueError naming what is valid."""
    out: dict[str, str] = {}
    valid = (f"formats: {', '.join(FORMATS)}; languages: {', '.join(LANG_CHOICES)}")
    for item in (part.strip() for value in items for part in value.split(",")):
        if not item:
            continue
        fmt, eq, lang = (x.strip().lower() for x in item.partition("="))
        if not eq or not fmt or not lang:
            raise ValueError(f"{item!r} is not FORMAT=LANG, e.g. html=zh ({valid})")
        if fmt not in FORMATS:
            raise ValueError(f"{item!r}: unknown format {fmt!r} ({valid})")
        if lang not in LANG_CHOICES:
            raise ValueError(f"{item!r}: unknown language {lang!r} ({valid})")
        out[fmt] = "zh" if lang == "cn" else lang
    return out


def output_lang_value(_ctx, param, value) -> dict[str, str]:
    """The click callback of ``--output-lang``: a bad item is a usage error (exit 2) that lists what is valid."""
    try:
        return parse_output_langs(value or ())
    except ValueError as exc:
        raise click.BadParameter(str(exc), param=param) from None


def main_format(fmt: str | None, output: str | None, lang: str = "en") -> str:
    """The main output's format: --format, else the -o suffix, else text. A suffix no format has exits 2."""
    if fmt:
        return fmt
    if not output:
        return "text"
    found = formats.by_suffix(output)
    if found is None:
        msg = messages(lang)
        click.echo(msg("cli.error", text=msg("cli.unknown_suffix", target=output,
                                             suffixes=" ".join(formats.known_suffixes()))), err=True)
        sys.exit(2)
    return found.name


def extras_of(options: dict) -> list[tuple[str, str, str]]:
    """(format, target, option) of the extra outputs asked for."""
    return [(f.name, options[f"{f.name}_out"], f.extra) for f in formats.extras() if options.get(f"{f.name}_out")]


def failure_line(exc: WriteFailed, lang: str = "en") -> str:
    """The line for standard error, in the run's language."""
    msg = messages(lang)
    if exc.what in ("stdout", "stderr"):
        return msg("cli.error", text=msg(f"cli.cannot_write_stream.{exc.what}", reason=exc.reason))
    return msg("cli.error", text=msg("cli.cannot_write", option=exc.what, target=exc.target, reason=exc.reason))


def put_file(target: str, text: str, what: str, lang: str, failures: list[str]) -> None:
    """Write one file; a failure is said on standard error and kept in ``failures`` (in English)."""
    try:
        write_file(target, text, what)
    except WriteFailed as exc:
        _say(failure_line(exc, lang))
        failures.append(str(exc))


def put_folder(target: str, files: dict[str, str | bytes], what: str, lang: str, failures: list[str]) -> None:
    """Write a folder of files; a failure is said on standard error and kept in ``failures`` (in English)."""
    try:
        write_folder(target, files, what)
    except WriteFailed as exc:
        _say(failure_line(exc, lang))
        failures.append(str(exc))


def put_stream(text: str, lang: str, failures: list[str], err: bool = False, color: bool | None = None) -> None:
    try:
        write_stream(text, err=err, color=color)
    except WriteFailed as exc:
        _say(failure_line(exc, lang))
        failures.append(str(exc))


def _say(line: str) -> None:
    try:
        click.echo(line, err=True)
    except OSError:  # standard error is gone too: the exit code says it
        pass


def write_or_exit(target: str, text: str, what: str = "-o", lang: str = "en") -> None:
    """Write one output; on failure say which and exit 6 (commands with a single output)."""
    failures: list[str] = []
    put_file(target, text, what, lang, failures)
    if failures:
        sys.exit(EXIT_OUTPUT_FAILED)


def deliver(report, render: Callable[..., str], *, fmt: str, output: str | None,
            extras: list[tuple[str, str, str]], quiet: bool, main_text: str, opts: dict,
            color: bool = False, langs: Languages | None = None) -> list[str]:
    """Print or write the main output and write every extra one; returns the failures (already reported).
    ``color``: the main text on standard output carries colour (click strips it in a pipe unless told).
    ``opts["lang"]`` is the run's language (failures are said in it); each extra output is rendered in
    ``langs.of(its format)`` (``main_text`` was rendered in ``langs.of(fmt)``)."""
    failures: list[str] = []
    lang = opts.get("lang") or "en"
    langs = langs or Languages(lang)
    if output:
        put_file(output, main_text, "-o", lang, failures)
    elif not quiet:
        put_stream(main_text, lang, failures, color=color)
    for extra_fmt, target, option in extras:
        text = main_text if extra_fmt == fmt else render(extra_fmt, report, **{**opts, "lang": langs.of(extra_fmt)})
        put_file(target, text, option, lang, failures)
    return failures
