"""``diagnose watch PATH...``: follow the logs as they grow and say each finding once when it opens and once
when it resolves (diagnose/live/). Outputs: JSON lines (standard output or a file), the report on SIGUSR1 or
every ``--report-every``, a Prometheus textfile and ``/metrics``, MindCluster public faults."""

from __future__ import annotations

import signal
import sys
import threading
import time
from pathlib import Path

import click

from diagnose.commands import configured
from diagnose.commands.console import EXIT_INCOMPLETE, EXIT_OUTPUT_FAILED, EXIT_USAGE, exit_code
from diagnose.commands.outputs import failure_line
from diagnose.commands.live_options import (
    excluded, live_options, node_name as resolve_node, parse_duration, parse_npus, parse_size, say, settings_from,
)
from diagnose.live import state as live_state
from diagnose.live.sinks import JsonLines, MetricsServer, MindCluster, TextFile
from diagnose.live.watcher import Options, Watcher
from diagnose.messages import messages
from diagnose.report import render
from diagnose.writer import WriteFailed

REPORT_FORMATS = ["text", "concise", "markdown", "json"]


@click.command("watch")
@click.argument("paths", nargs=-1, required=True)
@live_options(str(live_state.default_folder()))
@click.option("--interval", default="5s", show_default=True, help="How often the files are read and judged.")
@click.option("--json-lines", "json_lines", default="-", show_default=True, metavar="FILE",
              help="Where each opened and resolved finding goes as one JSON line ('-': standard output).")
@click.option("--report", "report_out", default="-", show_default=True, metavar="FILE",
              help="Where the window's report goes on SIGUSR1 and every --report-every ('-': standard error).")
@click.option("--report-every", default=None, help="Also write the report this often (10m, 1h).")
@click.option("--report-format", type=click.Choice(REPORT_FORMATS), default="text", show_default=True)
@click.option("--metrics-port", type=click.IntRange(0, 65535), default=None,
              help="Serve the metrics on http://ADDRESS:PORT/metrics (0: a free port, said on standard error).")
@click.option("--metrics-address", default="127.0.0.1", show_default=True)
@click.option("--backlog", default="4M", show_default=True,
              help="At the first start, read this much of the end of each file already there.")
@click.option("--max-window-bytes", default="64M", show_default=True,
              help="The most log text the window holds; the oldest goes first.")
@click.option("--once", is_flag=True, help="One tick, then exit with the window's exit code (for cron).")
def watch(paths, state_dir, window, resolve_after, fail_on, prom_out, mindcluster_out, node_name, npus, rule_dirs,
          lang, interval, json_lines, report_out, report_every, report_format, metrics_port, metrics_address,
          backlog, max_window_bytes, once, config_file=None, no_config=False, select=(), ignore=()):
    """Follow the logs under PATH... as they grow (new files, rotation, truncation) and report each finding
    once when it opens and once when it resolves.

    \b
    Every --interval the new lines join a sliding --window of lines, judged by the same source kinds and rules
    as `diagnose PATH...`; a serving engine whose periodic lines stop is a hang (ENG020). The state folder
    keeps the offsets and open findings: a restart resumes without repeating or losing one.
    SIGUSR1 writes the window's report. Stops on Ctrl-C or SIGTERM (exit 130/143).
    """
    cfg = configured.file_config(config_file, no_config)
    fail_on = fail_on or cfg.fail_on or "error"
    settings = settings_from(cfg, rule_dirs, lang, select, ignore)
    msg = messages(settings.lang)
    folder = Path(state_dir) if state_dir else live_state.default_folder()
    options = Options(
        paths=list(paths), window_s=parse_duration(window, "--window"),
        resolve_after_s=parse_duration(resolve_after, "--resolve-after"),
        max_window_bytes=parse_size(max_window_bytes, "--max-window-bytes"),
        backlog_bytes=parse_size(backlog, "--backlog"),
        node=resolve_node(node_name),
        exclude=excluded(json_lines, report_out, prom_out, mindcluster_out, folder=folder),
    )
    every = parse_duration(interval, "--interval")
    report_every_s = parse_duration(report_every, "--report-every") if report_every else None
    devices = parse_npus(npus, "--npus")
    for path in paths:  # a log folder the server has not created yet is read once it appears
        if not Path(path).exists():
            say(msg("cli.warning", text=msg("live.no_path", path=path)))
    try:
        live_state.prepare(folder)
        with live_state.locked(folder, timeout_s=0):
            code = _run(folder, options, settings, fail_on, every, json_lines, report_out, report_every_s,
                        report_format, prom_out, mindcluster_out, devices, metrics_port, metrics_address, once, msg)
    except live_state.StateError as exc:
        click.echo(msg("cli.error", text=msg("live.state", reason=str(exc))), err=True)
        sys.exit(EXIT_USAGE)
    sys.exit(code)


def _run(folder, options, settings, fail_on, every, json_lines, report_out, report_every_s, report_format, prom_out,
         mindcluster_out, devices, metrics_port, metrics_address, once, msg) -> int:
    saved = live_state.load(folder)
    watcher = Watcher(options, settings, exit_code_of=lambda report: exit_code(report, fail_on))
    watcher.restore(saved)
    lines = JsonLines(json_lines, saved_seq=watcher.tracker.seq, lang=settings.lang)
    report_sink = TextFile(report_out, "--report")
    prom = TextFile(prom_out, "--prom") if prom_out else None
    form = "configmap" if mindcluster_out and mindcluster_out.lower().endswith((".yaml", ".yml")) else "json"
    faults = MindCluster(mindcluster_out, options.node, devices, render=lambda r, **kw: render("mindcluster", r, **kw),
                         form=form, lang=settings.lang) if mindcluster_out else None
    server = MetricsServer(metrics_port, metrics_address) if metrics_port is not None else None
    if server is not None:
        say(msg("live.metrics_at", address=metrics_address, port=server.port))
    asked = threading.Event()
    previous = signal.signal(signal.SIGUSR1, lambda *_: asked.set()) if hasattr(signal, "SIGUSR1") else None
    next_report = time.monotonic() + report_every_s if report_every_s else None
    failed = None
    try:
        while True:
            started = time.monotonic()
            try:
                code = _tick(watcher, lines, faults, prom, server, report_sink, asked, folder, settings, fail_on,
                             report_format, msg, next_report)
            except Exception as exc:  # noqa: BLE001 - a daemon says what failed, once, and tries again next tick
                reason = f"{type(exc).__name__}: {exc}"
                if reason != failed:
                    say(msg("cli.error", text=msg("live.tick_failed", reason=reason)))
                failed, code = reason, None
            else:
                failed = None
            if code is not None and code[1]:
                next_report = time.monotonic() + report_every_s
            if once:
                return code[0] if code is not None else EXIT_INCOMPLETE
            asked.wait(max(0.0, every - (time.monotonic() - started)))
    finally:
        if previous is not None:
            signal.signal(signal.SIGUSR1, previous)
        if server is not None:
            server.close()


def _tick(watcher, lines, faults, prom, server, report_sink, asked, folder, settings, fail_on, report_format, msg,
          next_report) -> tuple[int, bool]:
    """One tick and its outputs; (the window's exit code, whether the timed report was written)."""
    tick = watcher.tick()
    _emit(lines, tick.events, settings.lang)
    if faults is not None and tick.events:
        _put(lambda: faults.emit(tick.events, watcher.tracker.seq, int(time.time() * 1000)), msg)
    if tick.report is not None and (prom is not None or server is not None):
        text = render("prom", tick.report, status=tick.status, lang=settings.lang)
        if prom is not None:
            _put(lambda: prom.put(text), msg)
        if server is not None:
            server.text = text
    due = next_report is not None and time.monotonic() >= next_report
    if tick.report is not None and (asked.is_set() or due):
        asked.clear()
        _put(lambda: report_sink.put(_report(tick.report, report_format, settings, fail_on, watcher)), msg)
    _put(lambda: live_state.save(folder, watcher.state()), msg)
    return (tick.status.exit_code if tick.status is not None else 0), due


def _report(report, fmt: str, settings, fail_on: str, watcher: Watcher) -> str:
    return render(fmt, report, color=False, width=100, lang=settings.lang, paths=list(watcher.options.paths),
                  fail_on=fail_on, catalog=watcher.service.rules, allow_empty=True, allow_partial=True)


def _emit(lines: JsonLines, events, lang: str) -> None:
    """The events, the watch's own output: one that cannot be written is said as any output's failure and the
    watch exits 6 before it saves its state, so a restart says the events again (none is lost)."""
    try:
        lines.emit(events)
    except WriteFailed as exc:
        say(failure_line(exc, lang))
        raise SystemExit(EXIT_OUTPUT_FAILED) from None
    except BrokenPipeError:
        raise SystemExit(0) from None


def _put(write, msg) -> None:
    """A sink beside the events that fails (a full disk, a folder gone) is said on standard error; the watch
    goes on and writes it again at the next tick."""
    try:
        write()
    except WriteFailed as exc:
        say(msg("cli.error", text=msg("live.cannot_write", option=exc.what, target=exc.target, reason=exc.reason)))
    except BrokenPipeError:
        raise SystemExit(0) from None
