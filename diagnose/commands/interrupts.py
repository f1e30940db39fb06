"""Ctrl-C and SIGTERM: stop at once with one line on standard error and the shell's exit code (130, 143).

Click turns KeyboardInterrupt into "Aborted!" and exit 1, which a pipeline cannot tell from "findings". So
``diagnose``'s entry point (``cli.run``) replaces the handlers of SIGINT and SIGTERM for the duration of the
command with one that raises ``Stopped``, a BaseException that neither click nor the stages' guards (which
catch ``Exception``) hold back. It unwinds from whatever phase the run is in (reading, parsing, the rules,
the reports); ``finally`` blocks close files and thread pools and remove temporary output files
(diagnose/commands/outputs.py), so no half-written report is left. A signal that arrives while polars works
inside one query takes effect when that query returns.
"""

from __future__ import annotations

import signal
import sys
from contextlib import contextmanager

from diagnose.commands.exitcodes import EXIT_INTERRUPTED, EXIT_TERMINATED
from diagnose.messages import locale_lang, messages

_NAMES = {signal.SIGINT: ("interrupted", "SIGINT, Ctrl-C", EXIT_INTERRUPTED),
          signal.SIGTERM: ("terminated", "SIGTERM", EXIT_TERMINATED)}
_SPEAKING: dict[str, str] = {}  # the run's language once the command knows it (``speak``)


def speak(lang: str) -> None:
    """The language of the line printed when the run is stopped (before this: the locale's)."""
    _SPEAKING["lang"] = lang


class Stopped(BaseException):
    """A stop signal arrived; ``code`` is the exit code, ``message`` the line to print.

    Raised from the signal handler, so it does nothing there but record the signal: the handler may run in the
    middle of any import (the message catalog's own, under a slow start), and importing or loading the
    catalog from inside it could fail and turn the stop into an ordinary error. The line is composed later,
    once the stack has unwound."""

    def __init__(self, signum: int):
        self.what, self.name, self.code = _NAMES.get(signum, ("stopped", f"signal {signum}", 128 + signum))
        super().__init__(self.name)

    @property
    def message(self) -> str:
        try:
            msg = messages(_SPEAKING.get("lang") or locale_lang())
            return msg(f"cli.stopped.{self.what}", signal=self.name)
        except Exception:  # noqa: BLE001 - the stop must be said whatever the catalog's state
            return f"diagnose: {self.what} ({self.name})"


def _raise(signum, _frame):
    raise Stopped(signum)


@contextmanager
def stop_on_signals():
    """Within the block, SIGINT and SIGTERM raise ``Stopped``; the handlers before it are restored after."""
    previous = {}
    try:
        for signum in _NAMES:
            previous[signum] = signal.signal(signum, _raise)
    except ValueError:  # not the main thread (an embedding application): leave its handlers alone
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        previous = {}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def report_stopped(stop: Stopped) -> int:
    """Print the one line and return the signal's exit code; a second signal meanwhile changes nothing (the
    handlers of ``stop_on_signals`` are restored when its block ends)."""
    for signum in _NAMES:
        try:
            signal.signal(signum, signal.SIG_IGN)
        except ValueError:
            pass
    try:
        sys.stderr.write(stop.message + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    return stop.code
