"""The live sinks, one table: where each tick's events and state go.

    json-lines    each event on one line (standard output, or a file appended to)
    report        the window's report in a format, rewritten on demand (SIGUSR1) or every --report-every
    prom          the Prometheus textfile, rewritten each tick (node_exporter's textfile collector)
    metrics       the same text served on /metrics (--metrics-port)
    mindcluster   ClusterD's public-fault message of the tick's events (occur on open, recover on resolve)

Every file is replaced atomically by the one writer (diagnose/writer.py) except the JSON lines file, which grows
by whole lines (``append_line``); a failure raises the writer's ``WriteFailed``, named by the option. Exactly once across a restart: events carry an increasing ``seq``, the state remembers the last seq it
saved, and a JSON lines file is read back on start, so an event written just before a kill is not written
again when the restarted run judges the same lines (standard output cannot be read back: a reader there
deduplicates by ``seq``).
"""

from __future__ import annotations

import json
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable

from diagnose.bounded import json_loads
from diagnose.live.faults import to_fault
from diagnose.messages import messages
from diagnose.model.live import LiveEvent
from diagnose.writer import WriteFailed, append_line, write_file

TAIL_BYTES = 1 << 20


@dataclass
class JsonLines:
    """Events as JSON lines; ``target`` "-" is standard output."""

    target: str
    saved_seq: int = 0  # the last seq the state saved: later ones may already be in the file
    lang: str = "en"  # the language the findings' titles and summaries are said in
    # (event, fingerprint) of the events past saved_seq found in the file: written by a run killed before it
    # saved its state. The restarted run judges the same lines and makes the same events: each is skipped once.
    written: set[tuple[str, str]] = field(default_factory=set)

    def __post_init__(self) -> None:
        if self.target != "-" and Path(self.target).is_file():  # a device or a FIFO is never read back
            self.written = _tail_events(Path(self.target), self.saved_seq)
            _end_line(Path(self.target))

    def emit(self, events: list[LiveEvent]) -> None:
        for event in events:
            key = (event.event, event.finding.fingerprint)
            if key in self.written:
                self.written.discard(key)
                continue
            line = json.dumps(event.to_dict(messages(self.lang)), ensure_ascii=False, default=str)
            if self.target == "-":
                _to_stream(sys.stdout, line + "\n", "stdout")
            else:
                append_line(self.target, line, "--json-lines")


def _tail_events(path: Path, after: int) -> set[tuple[str, str]]:
    """(event, fingerprint) of the events past seq ``after`` at the end of an existing JSON lines file."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - TAIL_BYTES))
            lines = fh.read().splitlines()
    except OSError:
        return set()
    found = set()
    for raw in lines:
        try:
            item = json_loads(raw)  # bounded: a line nested 100,000 deep is no event, not a RecursionError
        except ValueError:
            continue
        if isinstance(item, dict) and isinstance(item.get("seq"), int) and item["seq"] > after:
            found.add((str(item.get("event")), str(item.get("fingerprint"))))
    return found


def _end_line(path: Path) -> None:
    """A line cut by a kill mid-write is ended, so the next event starts a line of its own."""
    try:
        with open(path, "rb+") as fh:
            fh.seek(0, 2)
            if fh.tell() and (fh.seek(-1, 2) or True) and fh.read(1) != b"\n":
                fh.write(b"\n")
    except OSError:
        pass


def _to_stream(stream, text: str, what: str) -> None:
    """A reader that went away (BrokenPipeError) ends the run; any other failure is the writer's WriteFailed."""
    try:
        stream.write(text)
        stream.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise WriteFailed(what, "", str(exc.strerror or exc)) from None


@dataclass
class TextFile:
    """A text rewritten whole (the report, the .prom file, the fault message); "-" is standard error.
    ``what``: the option that named it."""

    target: str
    what: str = "-o"

    def put(self, text: str) -> None:
        if self.target == "-":
            _to_stream(sys.stderr, text, "stderr")
        else:
            write_file(self.target, text, self.what)


@dataclass
class MindCluster:
    """The public-fault message of each tick's events, at most 100 faults per message (the rest wait)."""

    target: str
    node: str
    devices: list[int]
    render: Callable[..., str]
    form: str = "json"
    lang: str = "en"  # the language of the faults' descriptions
    pending: list = field(default_factory=list)

    def emit(self, events: list[LiveEvent], seq: int, now_ms: int) -> None:
        self.pending.extend(to_fault(e, self.node, self.devices) for e in events)
        if not self.pending:
            return
        batch, self.pending = self.pending[:100], self.pending[100:]
        text = self.render(None, faults=batch, message_id=f"diagnose-{self.node}-{seq}", timestamp_ms=now_ms,
                           form=self.form, lang=self.lang)
        write_file(self.target, text, "--mindcluster")


class MetricsServer:
    """``GET /metrics`` serves the latest text; anything else is 404. One daemon thread."""

    def __init__(self, port: int, address: str = "127.0.0.1"):
        self.text = "# no judgement yet\n"
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server name
                if self.path.split("?")[0] != "/metrics":
                    self.send_error(404)
                    return
                body = owner.text.encode("utf-8")
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:  # scrapes are not news
                pass

        self.server = ThreadingHTTPServer((address, port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, name="diagnose-metrics", daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


SINKS = {
    "json-lines": JsonLines,
    "report": TextFile,
    "prom": TextFile,
    "metrics": MetricsServer,
    "mindcluster": MindCluster,
}
