"""``diagnose check PATH...`` (and plain ``diagnose PATH...``): analyse an incident and report."""

from __future__ import annotations

import os
import sys

import click

from diagnose.analysis.gate import GateOptions
from diagnose.analysis.known import read_report
from diagnose.commands import configured
from diagnose.commands.console import (
    EXIT_OUTPUT_FAILED, EXIT_USAGE, LANG_TYPE, SEVERITY_CHOICES, color_choice, color_option, default_lang, lang_value,
    parse_time, use_color, width,
)
from diagnose.commands.interrupts import speak
from diagnose.commands.outputs import MACHINE, deliver, extras_of, main_format, output_options, put_stream
from diagnose.commands.exitcodes import exit_code
from diagnose.commands.progress import progress_reporter
from diagnose.engine import load_rules
from diagnose.ingest.names import display
from diagnose.messages import messages
from diagnose.pipeline import Settings, diagnose, filters_for, read_paths
from diagnose.report import render


@click.command("check")
@click.argument("paths", nargs=-1, required=True)
@output_options
@click.option("--redact", is_flag=True,
              help="Mask IP addresses, host names, home paths and tokens in every output (same value, same mask).")
@click.option("--fail-on", type=click.Choice(SEVERITY_CHOICES), default=None,
              help="Exit 1 when a finding is at or above this severity (default: error, or the config's fail-on).")
@click.option("--fail-on-unrecognised", is_flag=True,
              help="Errors no rule explains fail the run even when it did not end abnormally (by default they are "
                   "listed and fail only a run that crashed).")
@click.option("--fail-on-new", is_flag=True,
              help="With --baseline REPORT.json: only findings (and error signatures) new since that report fail.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even with findings (errors reading input still fail).")
@click.option("--allow-empty", is_flag=True, help="Exit 0, not 4, when nothing was analysed (no input read, "
              "empty input, a time window holding no record, no file of a known kind).")
@click.option("--allow-partial", is_flag=True, help="Exit 0, not 5, on a clean run that could not read every "
              "input (a budget, a truncated archive or .gz); the reports still say what was not read.")
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path(exists=True),
              help="Extra rule files or folders (repeatable).")
@click.option("--no-builtin-rules", is_flag=True, help="Use only the rules given with --rules.")
@click.option("--since", help="Ignore records before this time (YYYY-MM-DD[ HH:MM[:SS]], ISO 8601; with an offset such "
              "as +08:00 or Z it is converted to local time).")
@click.option("--until", help="Ignore records after this time.")
@click.option("--lang", type=LANG_TYPE, callback=lang_value, default=None, help="Language of titles and remediation.")
@color_option
@click.option("-q", "--quiet", is_flag=True, help="Print nothing; only the exit code (and -o output).")
@click.option("--budget", "budget_items", multiple=True, metavar="KEY=SIZE",
              help="Raise or lower a reading limit, e.g. max_file_bytes=8G, max_total_bytes=200G, "
                   "max_line_bytes=16M, max_members=500000, max_ratio=500, bomb_floor=256M (repeatable).")
@click.option("--baseline", type=click.Path(exists=True),
              help="Compare benchmark/accuracy results with a baseline: an earlier run (folder or file), a TOML "
                   "of expected numbers with tolerances, or an earlier diagnose JSON report (which also marks each "
                   "finding and error signature new or known).")
@configured.config_options
def check(paths, fmt, output, redact, fail_on, exit_zero, rule_dirs, no_builtin_rules, since, until, lang, color,
          no_color, quiet, budget_items=(), baseline=None, fail_on_new=False, fail_on_unrecognised=False,
          config_file=None, no_config=False,
          select=(), ignore=(), allow_empty=False, allow_partial=False, output_lang=None, **outputs):
    """Analyse the logs under PATH... and report findings, most likely root cause first.

    \b
    CI: --json/--sarif/--junit/--markdown/--html/--gitlab FILE write more outputs in the same run. With
    GITHUB_ACTIONS=true, ::error/::warning/::notice annotations (at most 10 each) go to standard output, or
    to standard error when standard output carries a machine format (json, sarif, junit, gitlab); the
    runner reads both. The Markdown summary is appended to $GITHUB_STEP_SUMMARY when that variable is set.
    Exit codes: 0 clean, 1 findings, 2 usage, 3 incomplete, 4 nothing analysed, 5 partial coverage,
    6 an output not written, 130/143 interrupted (docs/ci.md).
    """
    fmt, extras = main_format(fmt, output, lang or default_lang()), extras_of(outputs)
    cfg = configured.file_config(config_file, no_config)  # command-line options win over the file
    fail_on = fail_on or cfg.fail_on or "error"
    settings = Settings(
        rule_dirs=configured.rule_dirs(cfg, rule_dirs),
        builtin_rules=not no_builtin_rules,
        since=parse_time(since, "--since"),
        until=parse_time(until, "--until"),
        lang=configured.language(cfg, lang),
        budget=configured.budget(cfg, budget_items),
        baseline=baseline,
        earlier=read_report(baseline),  # the earlier JSON report, decoded once for every stage
        timeline="html" in {fmt, *(f for f, _, _ in extras)},
        selection=configured.selection(cfg, select, ignore),
        suppressions=cfg.suppressions,
        fail_on_unrecognised=fail_on_unrecognised or bool(cfg.fail_on_unrecognised),
        gate=GateOptions(fail_on, exit_zero, allow_empty, allow_partial, fail_on_new),
    )
    langs = configured.languages(cfg, output_lang, settings.lang)  # each output's own (--output-lang)
    speak(settings.lang)  # a Ctrl-C from here on is reported in the run's language
    if fail_on_new and settings.earlier is None:
        configured.fail("--fail-on-new needs --baseline REPORT.json, an earlier diagnose JSON report")
    if baseline and baseline.lower().endswith(".toml"):  # a broken baseline TOML is a configuration error
        from diagnose.validation import load_baseline  # deferred: start-up (--baseline only)

        for err in load_baseline(baseline).errors:
            click.echo(f"diagnose: error: {err}", err=True)
            sys.exit(EXIT_USAGE)
    # A broken user rule file is a configuration error: say which file and field, run nothing.
    user_rules, user_errors = load_rules(list(settings.rule_dirs))
    if user_errors:
        for err in user_errors:
            click.echo(f"diagnose: error: {err}", err=True)
        sys.exit(EXIT_USAGE)
    said = messages(settings.lang)
    for rule in user_rules:  # patterns the regex engine's fast path cannot hold (scan/fastregex.py)
        for where, found in rule.slow_patterns:
            click.echo(said("cli.warning", text=said("cli.slow_pattern", rule=rule.id, path=rule.path, field=where,
                                                     repeat=found)), err=True)
    rules, rule_errors, settings = configured.catalog(settings)  # the selected rules; suppressions by rule id
    filters = filters_for(rules)

    # Progress on standard error (a terminal only): reading, parsing, rules, report; erased before any output.
    with progress_reporter(list(paths), enabled=not quiet, lang=settings.lang) as progress:
        parsed = read_paths(list(paths), settings, filters, progress)
        report = diagnose(parsed, rules, rule_errors, settings, filters, progress)
        if progress is not None:
            progress.phase("report")
        if redact:
            from diagnose.report.redact import redact_report  # deferred: start-up (only --redact needs it)

            report = redact_report(report)
        # Every path given is missing: a usage error, no report (checked below, once the line is erased).
        missing = not report.inputs and bool(report.skipped) and all(
            s.reason.key == "skip.missing" for s in report.skipped)
        colored = fmt == "text" and use_color(color_choice(color, no_color), to_file=bool(output))
        # Every format gets the same options; each takes what it needs (paths: the input roots for relative paths,
        # in the display form of the report's paths: diagnose/ingest/names.py), and its own language.
        opts = dict(lang=settings.lang, paths=[display(p) for p in paths], fail_on=fail_on, catalog=rules,
                    allow_empty=allow_empty, allow_partial=allow_partial)
        text = "" if missing else render(fmt, report, color=colored, width=width(to_file=bool(output)),
                                         **{**opts, "lang": langs.of(fmt)})
    github = os.environ.get("GITHUB_ACTIONS") == "true"

    msg = messages(settings.lang)
    if missing:
        for s in report.skipped:
            click.echo(msg("cli.error", text=f"{s.path}: {msg.say(s.reason)}"), err=True)
        if github:
            click.echo("::error title=diagnose::" + msg("cli.nothing_read"))
        sys.exit(EXIT_USAGE)

    failed = deliver(report, render, fmt=fmt, output=output, extras=extras, quiet=quiet, main_text=text, opts=opts,
                     color=colored, langs=langs)
    for slow in report.slow_rules:  # the rule that made the run slow, named (engine/run.py RULE_SECONDS)
        click.echo(msg("cli.warning", text=msg("cli.slow_rule", rule=slow.rule, path=slow.path, seconds=slow.seconds,
                                               budget=slow.budget)), err=True)
    if (not quiet and report.coverage is not None and report.coverage.text
            and (output or fmt in MACHINE or not sys.stdout.isatty())):
        click.echo(f"diagnose: {msg.say(report.coverage.text)}", err=True)  # what the report says, where a person looks
    if github and not quiet and fmt != "github":
        notes = render("github", report, **{**opts, "lang": langs.of("github")})
        # Annotations must not corrupt a machine-readable main output on stdout: then they go to stderr,
        # which the Actions runner scans for workflow commands as well.
        on_stdout = bool(output) or fmt not in MACHINE
        if notes:
            put_stream(notes, settings.lang or "en", failed, err=not on_stdout)
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        summary = text if fmt == "markdown" else render("markdown", report, **{**opts, "lang": langs.of("markdown")})
        try:
            with open(step_summary, "a", encoding="utf-8") as fh:
                fh.write(summary)
        except OSError as exc:
            click.echo(msg("cli.warning", text=msg("cli.step_summary", reason=exc.strerror or exc)), err=True)
    if failed:
        sys.exit(EXIT_OUTPUT_FAILED)
    sys.exit(exit_code(report))  # the report's gate: what every format stated
