"""``diagnose fleet DATASET``: every node's extracted Frames judged together, in every format ``diagnose``
writes, plus the fleet's weekly expert-load report; ``diagnose fleet run --ray ADDRESS``: the extractions
fanned out on a Ray cluster, one pinned to each node, then the same."""

from __future__ import annotations

import re
import sys
from datetime import datetime, timedelta
from pathlib import Path

import click

from diagnose.commands import configured
from diagnose.commands.console import (
    LANG_TYPE, EXIT_OUTPUT_FAILED, SEVERITY_CHOICES, color_choice, color_option, parse_time, use_color, width, lang_value,
)
from diagnose.commands.exitcodes import exit_code
from diagnose.commands.outputs import deliver, extras_of, MACHINE, main_format, output_options, put_file
from diagnose.expertload.metrics import analyse
from diagnose.messages import messages
from diagnose.pipeline import Settings, filters_for
from diagnose.report import render


class FleetGroup(click.Group):
    """``diagnose fleet DATASET`` judges a dataset; ``diagnose fleet run ...`` fans the extractions out."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["report", *args]
        return super().parse_args(ctx, args)


@click.group("fleet", cls=FleetGroup)
def fleet_group() -> None:
    """Judge every node's extracted logs together (diagnose fleet DATASET), or extract and judge on a Ray
    cluster (diagnose fleet run --ray ADDRESS DATASET PATH...). See docs/fleet.md."""


_RELATIVE = re.compile(r"^(\d+)([dh])$")


def since_value(value: str | None, name: str) -> datetime | None:
    """``7d`` / ``12h`` (before now) or a time as ``diagnose --since`` takes it."""
    if value and (m := _RELATIVE.match(value.strip())):
        n, unit = int(m.group(1)), m.group(2)
        return datetime.now().replace(microsecond=0) - (timedelta(days=n) if unit == "d" else timedelta(hours=n))
    return parse_time(value, name)


def judging_options(fn):
    """The options of the fleet step, shared by ``fleet DATASET`` and ``fleet run``."""
    options = [
        click.option("--since", help="Only records from this time on: 7d, 12h (before now) or YYYY-MM-DD[ HH:MM[:SS]]; "
                                     "older partitions are not opened."),
        click.option("--until", help="Only records up to this time (YYYY-MM-DD[ HH:MM[:SS]])."),
        click.option("--cluster", help="Only this cluster's partitions (default: every cluster)."),
        click.option("--expect", "expect", multiple=True, metavar="NODE",
                     help="A node that should be in the dataset (repeatable or comma-separated): one without data "
                          "is listed as not read."),
        click.option("--expert-load", "expert_out", type=click.Path(dir_okay=False),
                     help="Also write the fleet's weekly expert-load report here (.html, .json, else Markdown)."),
        click.option("--fail-on", type=click.Choice(SEVERITY_CHOICES), default="error", show_default=True,
                     help="Exit 1 when a finding is at or above this severity."),
        click.option("--exit-zero", is_flag=True, help="Exit 0 even with findings."),
        click.option("--allow-empty", is_flag=True, help="Exit 0, not 4, when nothing was analysed."),
        click.option("--allow-partial", is_flag=True, help="Exit 0, not 5, when a node's partition was not read."),
        click.option("--rules", "rule_dirs", multiple=True, type=click.Path(exists=True),
                     help="Extra rule files or folders (repeatable)."),
        click.option("--no-builtin-rules", is_flag=True, help="Use only the rules given with --rules."),
        click.option("--lang", type=LANG_TYPE, callback=lang_value, default=None, help="Language of the reports."),
        click.option("-q", "--quiet", is_flag=True, help="Print nothing; only the exit code (and -o output)."),
    ]
    fn = configured.config_options(color_option(output_options(fn)))
    for option in reversed(options):
        fn = option(fn)
    return fn


@fleet_group.command("report")
@click.argument("dataset")
@judging_options
def report_command(dataset, **opts):
    """Judge every node of DATASET together: the same rules, root cause and formats as `diagnose PATH...`
    over every node's logs at once.

    \b
    Exit codes as for diagnose check: 0 clean, 1 findings, 2 usage (a dataset of another schema version),
    4 nothing analysed, 5 a node's partition not read, 6 an output not written.
    """
    judge_and_report(dataset, **opts)


def judge_and_report(dataset, since=None, until=None, cluster=None, expect=(), expert_out=None, fail_on="error",
                     exit_zero=False, allow_empty=False, allow_partial=False, rule_dirs=(), no_builtin_rules=False,
                     lang=None, quiet=False, color=None, no_color=False, fmt=None, output=None, config_file=None,
                     no_config=False, select=(), ignore=(), output_lang=None, **outputs):
    from diagnose.fleet.dataset import NotADataset, SchemaMismatch  # deferred: start-up (the fleet room)
    from diagnose.fleet.runs import judge_fleet, read_fleet  # deferred: start-up (the fleet room)
    from diagnose.fleet.store import Store, StoreError  # deferred: start-up (the fleet room)

    fmt, extras = main_format(fmt, output), extras_of(outputs)
    cfg = configured.file_config(config_file, no_config)
    settings = Settings(rule_dirs=configured.rule_dirs(cfg, rule_dirs), builtin_rules=not no_builtin_rules,
                        since=since_value(since, "--since"), until=parse_time(until, "--until"),
                        lang=configured.language(cfg, lang), timeline="html" in {fmt, *(f for f, _, _ in extras)},
                        selection=configured.selection(cfg, select, ignore), suppressions=cfg.suppressions)
    msg = messages(settings.lang)
    langs = configured.languages(cfg, output_lang, settings.lang)  # each output's own (--output-lang)
    rules, rule_errors, settings = configured.catalog(settings)
    nodes = [n for item in expect for n in item.split(",") if n]
    try:
        store = Store(dataset)
        if not store.exists():
            configured.fail(msg("fleet.no_dataset", where=dataset))
        fleet = read_fleet(store, settings.since, cluster, nodes)
    except (SchemaMismatch, NotADataset) as exc:
        configured.refuse_dataset(msg, exc)
    except StoreError as exc:
        configured.fail(str(exc))
    report = judge_fleet(fleet, settings, rules, rule_errors, filters_for(rules))
    colored = fmt == "text" and use_color(color_choice(color, no_color), to_file=bool(output))
    opts = dict(lang=settings.lang, paths=fleet.parsed.roots, fail_on=fail_on, catalog=rules,
                allow_empty=allow_empty, allow_partial=allow_partial)
    text = render(fmt, report, color=colored, width=width(to_file=bool(output)), **{**opts, "lang": langs.of(fmt)})
    failed = deliver(report, render, fmt=fmt, output=output, extras=extras, quiet=quiet, main_text=text, opts=opts,
                     color=colored, langs=langs)
    if expert_out and (problem := _expert_report(fleet, settings, expert_out, msg)):
        failed.append(problem)
    if (not quiet and report.coverage is not None and report.coverage.text
            and (output or fmt in MACHINE or not sys.stdout.isatty())):
        click.echo(f"diagnose: {msg.say(report.coverage.text)}", err=True)
    if failed:
        sys.exit(EXIT_OUTPUT_FAILED)
    sys.exit(exit_code(report, fail_on, exit_zero, allow_empty, allow_partial))


def _expert_report(fleet, settings, target: str, msg) -> str | None:
    """The weekly expert-load report over every node's loads (as ``diagnose expert-load``, in its formats);
    a failure (already said on standard error), or None."""
    if fleet.loaded is None:
        click.echo(msg("cli.warning", text=msg("fleet.no_expert_load", target=target)), err=True)
        return None
    since = settings.since.date() if settings.since else None
    until = settings.until.date() if settings.until else None
    result = analyse(fleet.loaded, since, until, "all", 10, 1.15, eplb=fleet.eplb)
    suffix = Path(target).suffix.lower()
    if suffix in (".html", ".htm"):
        from diagnose.report.load.load_page import render  # deferred: start-up (one renderer per --format)
    elif suffix == ".json":
        from diagnose.report.load.load_json import render  # deferred: start-up (one renderer per --format)
    else:
        from diagnose.report.load.load_markdown import render  # deferred: start-up (one renderer per --format)
    failures: list[str] = []
    put_file(target, render(result, settings.lang), "--expert-load", settings.lang, failures)
    return failures[0] if failures else None


@fleet_group.command("run")
@click.option("--ray", "address", required=True, metavar="ADDRESS",
              help="The Ray cluster: auto, ray://HOST:10001, or HOST:6379 (diagnose[ray]).")
@click.option("--nodes", "nodes", multiple=True, metavar="NODE",
              help="Ray node ids or addresses to extract on (repeatable or comma-separated; default: every alive node).")
@click.option("--node-name", "naming", type=click.Choice(["hostname", "address", "id"]), default="hostname",
              show_default=True, help="What names a node in the dataset.")
@click.argument("dataset")
@click.argument("paths", nargs=-1, required=True)
@judging_options
def run_command(address, nodes, naming, dataset, paths, **opts):
    """Extract PATH... on every node of a Ray cluster into DATASET (one task pinned to each node with Ray's
    node affinity), then judge the fleet as `diagnose fleet DATASET` does. DATASET must be reachable from every
    node: a shared folder or an object store.
    """
    from diagnose.fleet.fanout import FanoutError, fan_out  # deferred: start-up (only fleet run --ray)

    msg = messages(configured.language(configured.file_config(opts.get("config_file"), opts.get("no_config")),
                                       opts.get("lang")))
    wanted = [n for item in nodes for n in item.split(",") if n]
    try:
        done = fan_out(address, dataset, list(paths), wanted, naming, cluster=opts.get("cluster") or "default")
    except FanoutError as exc:
        configured.fail(str(exc))
    for name, problem in done.failed:
        click.echo(msg("cli.warning", text=msg("fleet.task_failed", node=name, reason=problem)), err=True)
    opts["expect"] = tuple(opts.get("expect") or ()) + tuple(done.nodes)
    judge_and_report(dataset, **opts)
