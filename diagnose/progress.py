"""A progress bar on standard error, shown only on a terminal and only once reading takes over a second."""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager


@contextmanager
def progress_reporter(enabled: bool = True):
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    start = time.monotonic()
    state = {"bar": None, "task": None, "files": 0, "bytes": 0}

    def update(nbytes: int, path: str) -> None:
        state["files"] += 1
        state["bytes"] += nbytes
        if state["bar"] is None:
            if time.monotonic() - start < 1.0:
                return
            bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                           console=Console(stderr=True), transient=True)
            bar.start()
            state["bar"], state["task"] = bar, bar.add_task("reading")
        mb = state["bytes"] / 1e6
        state["bar"].update(state["task"], description=f"read {state['files']} files, {mb:.0f} MB: {path[-60:]}")

    try:
        yield update
    finally:
        if state["bar"] is not None:
            state["bar"].stop()
