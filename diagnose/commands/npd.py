"""``diagnose npd --check CHECK PATH...``: one node-problem-detector plugin run, and ``diagnose npd-config``,
which writes the monitor file that runs it (the contract: diagnose/live/npd_plugin.py).

One invocation is one watch tick with its state kept between invocations. NPD starts the checks of one
interval one after another (the monitor file sets ``concurrency`` 1); the first does the tick (reads what the
files gained, judges the window) and the others, finding a tick younger than ``--min-tick``, answer from the
state without reading or importing the analysis at all. Every failure to judge is one line and exit 3, which
NPD reads as unknown; a traceback never reaches it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import click

from diagnose.commands.console import exit_code, LANG_TYPE, lang_value

from diagnose.commands import configured
from diagnose.commands.exitcodes import EXIT_OUTPUT_FAILED
from diagnose.commands.outputs import failure_line
from diagnose.commands.live_options import (
    excluded, live_options, node_name as resolve_node, parse_duration, parse_npus, parse_size, settings_from,
)
from diagnose.live import state as live_state
from diagnose.live.faults import configuration, handling_of
from diagnose.live.npd_plugin import CHECKS, DEFAULT_MAX_OUTPUT, NPD_UNKNOWN, NPD_USAGE, answer, monitor_config, trim
from diagnose.live.sinks import MindCluster, TextFile
from diagnose.live.watcher import Options, Watcher
from diagnose.messages import messages
from diagnose.model.live import Tracked
from diagnose.report import render
from diagnose.writer import WriteFailed, write_file, write_stream

DEFAULT_STATE = Path(os.environ.get("XDG_STATE_HOME") or Path("~/.local/state").expanduser()) / "diagnose" / "npd"
LOCK_WAIT_S = 20.0


@click.command("npd")
@click.argument("paths", nargs=-1, required=True)
@click.option("--check", "check_name", type=click.Choice(sorted(CHECKS)), required=True,
              help="Which category this rule reports: device and hccl are node conditions, the others events.")
@live_options(str(DEFAULT_STATE))
@click.option("--max-output-length", type=click.IntRange(1, 4096), default=DEFAULT_MAX_OUTPUT, show_default=True,
              help="The monitor file's max_output_length: the standard output line fits it in bytes.")
@click.option("--details", "details_out", type=click.Path(dir_okay=False), default=None,
              help="Also write the details here [default: npd-CHECK.txt in the state folder].")
@click.option("--min-tick", default="15s", show_default=True,
              help="A tick younger than this is reused: the other checks of one interval answer from it.")
@click.option("--backlog", default="4M", show_default=True,
              help="At the first run, read this much of the end of each file already there.")
def npd(paths, check_name, state_dir, window, resolve_after, fail_on, prom_out, mindcluster_out, node_name, npus,
        rule_dirs, lang, max_output_length, details_out, min_tick, backlog, config_file=None, no_config=False,
        select=(), ignore=()):
    """Run as a node-problem-detector custom plugin: exit 0 when CHECK sees no problem in the logs under
    PATH..., 1 when it does, 3 when it cannot judge; one line on standard output, details on standard error
    and in a file. Write the monitor file with `diagnose npd-config`."""
    msg = messages(lang or "en")
    try:
        # The configuration file brings the rule model (and polars): read only when the tick needs it, or when
        # the command line leaves the language or the severity to it. npd-config's rules give both.
        config = _Config(config_file, no_config)
        if lang is None or fail_on is None:
            lang = configured.language(config.file, lang)
            fail_on = fail_on or config.file.fail_on or "error"
            msg = messages(lang)
        folder = Path(state_dir) if state_dir else DEFAULT_STATE
        live_state.prepare(folder)
        with live_state.locked(folder, timeout_s=LOCK_WAIT_S):
            code, line, details = _judge(folder, paths, check_name, config, lang, window, resolve_after, fail_on,
                                         prom_out, mindcluster_out, node_name, npus, rule_dirs, max_output_length,
                                         min_tick, backlog, select, ignore)
    except click.ClickException:
        raise
    except Exception as exc:  # noqa: BLE001 - NPD shows stdout and reads the code: one line, never a traceback
        reason = str(exc) if isinstance(exc, (live_state.StateError, WriteFailed)) else f"{type(exc).__name__}: {exc}"
        click.echo(trim(msg("npd.unknown", reason=reason), max_output_length))
        click.echo(msg("npd.unknown", reason=reason), err=True)
        sys.exit(NPD_UNKNOWN)
    click.echo(line)
    click.echo(details, nl=False, err=True)
    try:  # the answer stands without its details file: NPD reads the exit code
        write_file(details_out or folder / f"npd-{check_name}.txt", details, "--details")
    except WriteFailed as exc:
        click.echo(failure_line(exc, lang), err=True)
    sys.exit(code)


class _Config:
    """The configuration file, read the first time it is asked for."""

    def __init__(self, config_file, no_config):
        self._where, self._file = (config_file, no_config), None

    @property
    def file(self):
        if self._file is None:
            self._file = configured.file_config(*self._where)
        return self._file


def _judge(folder, paths, check_name, config, lang, window, resolve_after, fail_on, prom_out, mindcluster_out,
           node_name,
           npus, rule_dirs, max_output_length, min_tick, backlog, select, ignore) -> tuple[int, str, str]:
    saved = live_state.load(folder)
    fresh = time.time() - float(saved.get("tick_wall") or 0) < parse_duration(min_tick, "--min-tick")
    if not fresh:
        saved = _tick(folder, saved, paths, config.file, lang, window, resolve_after, fail_on, prom_out,
                      mindcluster_out,
                      node_name, npus, rule_dirs, backlog, select, ignore)
    tracker = saved.get("tracker") or {}
    marks = saved.setdefault("marks", {})
    open_findings = [_with_handling(f) for f in (tracker.get("open") or {}).values()]
    said = answer(CHECKS[check_name], open_findings, saved.get("recent") or [], int(marks.get(check_name) or 0),
                  fail_on, lang, max_output_length)
    marks[check_name] = said.mark
    live_state.save(folder, saved)
    return said.code, said.line, said.details


def _tick(folder, saved, paths, cfg, lang, window, resolve_after, fail_on, prom_out, mindcluster_out, node_name,
          npus, rule_dirs, backlog, select, ignore) -> dict:
    """One watch tick from the saved state; the new state (what the answer reads)."""
    node = resolve_node(node_name)
    options = Options(paths=list(paths), window_s=parse_duration(window, "--window"),
                      resolve_after_s=parse_duration(resolve_after, "--resolve-after"), judge_every_s=0.0,
                      backlog_bytes=parse_size(backlog, "--backlog"), node=node,
                      exclude=excluded(prom_out, mindcluster_out, folder=folder))
    settings = settings_from(cfg, rule_dirs, lang, select, ignore)
    watcher = Watcher(options, settings, exit_code_of=lambda report: exit_code(report, fail_on))
    watcher.restore(saved)
    tick = watcher.tick()
    if prom_out and tick.report is not None:
        TextFile(prom_out, "--prom").put(render("prom", tick.report, status=tick.status, lang=lang))
    if mindcluster_out and tick.events:
        form = "configmap" if mindcluster_out.lower().endswith((".yaml", ".yml")) else "json"
        MindCluster(mindcluster_out, node, parse_npus(npus, "--npus"),
                    render=lambda r, **kw: render("mindcluster", r, **kw),
                    form=form, lang=lang).emit(tick.events, watcher.tracker.seq, int(time.time() * 1000))
    return {**watcher.state(), "marks": saved.get("marks") or {}, "tick_wall": time.time()}


def _with_handling(item: dict) -> dict:
    """The MindCluster handling level of a hardware fault code the finding carries, for the details."""
    if not (item.get("facts") or {}).get("code"):
        return item

    try:
        handling = handling_of(Tracked.from_state(item))
    except (TypeError, ValueError):
        return item
    return {**item, "handling": handling} if handling else item


@click.command("npd-config")
@click.argument("paths", nargs=-1, required=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write the monitor file here (standard output without it).")
@click.option("--state", "state_dir", default="/var/lib/diagnose/npd", show_default=True,
              help="The state folder the plugin runs keep.")
@click.option("--interval", default="60s", show_default=True, help="NPD's invoke_interval.")
@click.option("--timeout", default="50s", show_default=True, help="NPD's timeout for one run.")
@click.option("--max-output-length", type=click.IntRange(1, 4096), default=DEFAULT_MAX_OUTPUT, show_default=True)
@click.option("--check", "checks", multiple=True, type=click.Choice(sorted(CHECKS)),
              help="Only these checks (repeatable) [default: all five].")
@click.option("--executable", default=None, help="The diagnose program NPD runs [default: this one].")
@click.option("--fail-on", type=click.Choice(["info", "warning", "error", "critical"]), default="error",
              show_default=True)
@click.option("--window", default="30m", show_default=True)
@click.option("--resolve-after", default="10m", show_default=True)
@click.option("--lang", type=LANG_TYPE, callback=lang_value, default="en", show_default=True,
              help="Language of the conditions' healthy messages and the plugin's lines.")
@click.option("--mindcluster-config", type=click.Path(dir_okay=False), default=None,
              help="Also write ClusterD's publicCustomization.json for diagnose's fault codes here.")
def npd_config(paths, output, state_dir, interval, timeout, max_output_length, checks, executable, fail_on, window,
               resolve_after, lang, mindcluster_config):
    """Write node-problem-detector's custom plugin monitor file: one rule per check (device and HCCL as
    permanent node conditions; engine, KV pressure and MoE imbalance as temporary events), each running
    `diagnose npd --check CHECK ... PATH...`."""
    interval_s = int(parse_duration(interval, "--interval"))
    timeout_s = int(parse_duration(timeout, "--timeout"))
    if timeout_s > interval_s:
        raise click.BadParameter("the timeout must not be longer than the interval", param_hint="--timeout")
    parse_duration(window, "--window")
    parse_duration(resolve_after, "--resolve-after")
    exe = executable or shutil.which("diagnose") or os.path.abspath(sys.argv[0])
    args = ["--state", state_dir, "--fail-on", fail_on, "--window", window, "--resolve-after", resolve_after,
            "--lang", lang, "--min-tick", f"{max(1, interval_s // 2)}s"]
    config = monitor_config(exe, args, [os.path.abspath(p) for p in paths], interval_s, timeout_s, max_output_length,
                            lang, list(checks) or None)
    text = json.dumps(config, ensure_ascii=False, indent=2) + "\n"
    msg = messages(lang)
    try:
        if output:
            write_file(output, text, "-o")
        else:
            write_stream(text)
        if mindcluster_config:
            write_file(mindcluster_config, json.dumps(configuration(), indent=2) + "\n", "--mindcluster-config")
    except WriteFailed as exc:
        click.echo(failure_line(exc, lang), err=True)
        sys.exit(EXIT_OUTPUT_FAILED)
    sys.exit(0)


__all__ = ["npd", "npd_config", "NPD_USAGE"]
