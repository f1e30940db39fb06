"""The outputs of ``diagnose check``: the main one (standard output, or ``-o FILE``) and the extra files
(``--json``, ``--sarif``, ``--junit``, ``--markdown``, ``--html``, ``--gitlab``), so one CI run gives the text
log, the incident page and the machine formats.

``-o FILE`` without ``--format`` takes the format from the file's suffix (``.html``, ``.json``, ``.sarif`` and
``.sarif.json``, ``.xml`` JUnit, ``.md``; ``.txt``, ``.log`` or none for text; any other suffix is refused). Every file is written atomically: to a temporary file beside
the target, then renamed over it, so a reader never sees half a report and a failed write (an unwritable
folder, a full disk) leaves the target as it was. A failed output is named on standard error, the others
are still written, and the run exits 6 (diagnose/commands/exitcodes.py).
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path

import click

FORMATS = ["text", "concise", "json", "sarif", "junit", "markdown", "github", "gitlab", "html"]
BY_SUFFIX = {".html": "html", ".htm": "html", ".json": "json", ".sarif": "sarif", ".sarif.json": "sarif",
             ".xml": "junit", ".junit.xml": "junit", ".md": "markdown", ".markdown": "markdown"}
# (format, parameter name, option): the extra outputs, in the order they are written.
EXTRAS = (("json", "json_out", "--json"), ("sarif", "sarif_out", "--sarif"), ("junit", "junit_out", "--junit"),
          ("markdown", "markdown_out", "--markdown"), ("html", "html_out", "--html"),
          ("gitlab", "gitlab_out", "--gitlab"))
_EXTRA_HELP = {"json": "the JSON report", "sarif": "a SARIF 2.1.0 report", "junit": "a JUnit XML report",
               "markdown": "a Markdown summary", "html": "the incident page (HTML)",
               "gitlab": "a GitLab Code Quality report"}
# Formats that are read by programs: GitHub annotations must not go into them on standard output.
MACHINE = ("json", "sarif", "junit", "gitlab", "html")


def output_options(command):
    """--format, -o and the extra outputs, as click options (one decorator, so commands share them)."""
    for fmt, name, option in reversed(EXTRAS):
        command = click.option(option, name, type=click.Path(dir_okay=False),
                               help=f"Also write {_EXTRA_HELP[fmt]} here.")(command)
    command = click.option("-o", "--output", type=click.Path(dir_okay=False),
                           help="Write the main output here (its format from the suffix unless --format is "
                                "given: .html .json .sarif(.json) .xml .md; .txt .log or none: text).")(command)
    return click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
                        help="Main output format [default: from the -o suffix, else text].")(command)


TEXT_SUFFIXES = ("", ".txt", ".text", ".log", ".out")


def main_format(fmt: str | None, output: str | None, lang: str | None = None) -> str:
    """The format of the main output: ``--format``, else the suffix of ``-o`` (the longest known one:
    ``x.sarif.json`` is SARIF), text for a text suffix or none. Any other suffix (``x.csv``) is a usage error
    (exit 2) naming the suffixes known, not a text report under a name that promises something else."""
    if fmt:
        return fmt
    if not output:
        return "text"
    name = Path(output).name.lower()
    for suffix in sorted(BY_SUFFIX, key=len, reverse=True):
        if name.endswith(suffix):
            return BY_SUFFIX[suffix]
    suffix = Path(output).suffix.lower()
    if suffix in TEXT_SUFFIXES:
        return "text"
    from diagnose.messages import locale_lang, messages

    known = " ".join(sorted(BY_SUFFIX, key=lambda s: (BY_SUFFIX[s], s)))
    raise click.BadParameter(messages(lang or locale_lang())("cli.unknown_suffix", suffix=suffix, known=known,
                                                             text=" ".join(s for s in TEXT_SUFFIXES if s)),
                             param_hint="'-o'")


def extras_of(options: dict) -> list[tuple[str, str, str]]:
    """(format, target, option) of the extra outputs asked for."""
    return [(fmt, options[name], option) for fmt, name, option in EXTRAS if options.get(name)]


class OutputError(Exception):
    """An output that could not be written; the message names the option, the file and the reason."""

    def __init__(self, option: str, target: str, reason: str):
        self.option, self.target, self.reason = option, target, reason
        super().__init__(f"cannot write {option} {target}: {reason}")

    def said(self, lang: str = "en") -> str:
        """The line for standard error, in the run's language."""
        from diagnose.messages import messages

        msg = messages(lang)
        return msg("cli.error", text=msg("cli.cannot_write", option=self.option, target=self.target, reason=self.reason))


def write_atomic(target: str, text: str, option: str = "-o") -> None:
    """Write ``text`` to ``target`` through a temporary file in the same folder and a rename. A target that
    is no regular file (``/dev/null``, ``/dev/stdout``, a FIFO) is written as it is: a rename would put a
    regular file in place of the device, which root may do."""
    path = Path(target)
    folder = path.parent if str(path.parent) else Path(".")
    if _special(path):
        try:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            raise OutputError(f"cannot write {option} {target}: {exc.strerror or exc}") from None
        return
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=folder)
    except OSError as exc:
        raise OutputError(option, target, str(exc.strerror or exc)) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, _mode_for(path))
        os.replace(tmp, path)
    except BaseException as exc:  # an interrupt too: never leave the temporary file behind
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise OutputError(option, target, str(exc.strerror or exc)) from None
        raise


def _special(path: Path) -> bool:
    try:
        return not stat.S_ISREG(path.stat().st_mode)  # the link's target, for /dev/stdout
    except OSError:  # not there yet (or not reachable: the temporary file says why)
        return False


def _mode_for(path: Path) -> int:
    """The target's own permissions when it exists, else what a plain open() would give (0666 & ~umask)."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def echo_output(text: str, err: bool = False, color: bool | None = None, lang: str = "en") -> str | None:
    """A report on standard output (or error); returns the failure, already reported, or None. A full disk
    is said in one line in the run's language (no traceback); a reader that went away (``| head``) is no
    failure: the rest of the output is dropped. ``color``: as click.echo's (None: colour only on a terminal)."""
    stream = sys.stderr if err else sys.stdout
    try:
        click.echo(text, nl=False, err=err, color=color)
        stream.flush()
    except BrokenPipeError:
        _drop(stream)
    except OSError as exc:
        _drop(stream)
        from diagnose.messages import messages

        msg = messages(lang)
        key = f"cli.cannot_write_stream.{'stderr' if err else 'stdout'}"
        failure = messages("en")(key, reason=exc.strerror or exc)
        click.echo(msg("cli.error", text=msg(key, reason=exc.strerror or exc)), err=True)
        return failure
    return None


def _drop(stream) -> None:
    # What is still buffered would fail again when Python flushes at exit, with a complaint of its own.
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (a test runner's capture)
        pass


def deliver(report, render, *, fmt: str, output: str | None, extras: list[tuple[str, str, str]], quiet: bool,
            main_text: str, opts: dict, color: bool = False) -> list[str]:
    """Print or write the main output and write every extra one; returns the failures (already reported).
    ``color``: the main text on standard output carries colour (click strips it in a pipe unless told)."""
    failures = []

    def put(target: str, text: str, option: str) -> None:
        try:
            write_atomic(target, text, option)
        except OutputError as exc:
            click.echo(exc.said(opts.get("lang") or "en"), err=True)
            failures.append(str(exc))

    if output:
        put(output, main_text, "-o")
    elif not quiet and (failure := echo_output(main_text, color=color, lang=opts.get("lang") or "en")):
        failures.append(failure)
    for extra_fmt, target, option in extras:
        put(target, main_text if extra_fmt == fmt else render(extra_fmt, report, **opts), option)
    return failures
