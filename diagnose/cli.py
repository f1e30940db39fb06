"""Command line. ``diagnose PATH...`` analyses an incident; subcommands manage rules.

Exit codes (the linter convention of ruff and sqlfluff):
  0  no finding at or above --fail-on
  1  at least one finding at or above --fail-on
  2  usage or configuration error (bad option, invalid rule file), or no input could be read at all
  3  the run completed but is incomplete: a parser or rule failed internally (the report says which)

A first argument that names a subcommand runs it, unless a file or folder of that name exists here and
nothing follows it (``diagnose rules`` in a folder holding ``rules/`` reads the folder). ``diagnose check
PATH...`` and ``diagnose -- PATH...`` always read paths.
"""

from __future__ import annotations

import gc
import os
import sys
from datetime import datetime
from pathlib import Path

import click

from diagnose import __version__

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE, EXIT_INCOMPLETE = 0, 1, 2, 3
SEVERITY_CHOICES = ["info", "warning", "error", "critical"]


def _default_lang() -> str:
    for var in ("DIAGNOSE_LANG", "LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(var, "")
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


def _parse_time(value: str | None, name: str) -> datetime | None:
    if not value:
        return None
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"):
        try:
            return datetime.strptime(value, fmt)
        except ValueError:
            continue
    raise click.BadParameter(f"{value!r} is not a time like 2025-07-01 or '2025-07-01 09:30:00'", param_hint=name)


def run() -> None:
    """The console entry point (and ``python -m diagnose``): ``main``, then an exit without Python's last
    collection, which would walk every object of polars and of the run (30-40 ms, a tenth of a small run)
    when the process is about to give all its memory back anyway."""
    try:
        main()
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
            args = ["check", *args]
        return super().parse_args(ctx, args)


@click.group(cls=DiagnoseGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="diagnose")
def main() -> None:
    """Diagnose DeepSeek-V3/R1 serving incidents on Ascend NPUs (vLLM, vllm-ascend, MindIE, CANN).

    \b
    Usage: diagnose [OPTIONS] PATH...        analyse logs (folders, files, .gz, .tar.gz, .zip, - for stdin)
           diagnose rules list|show|test|docs|new   the rule catalog
           diagnose preflight MODEL_DIR ...  check weights metadata and launch settings before starting
           diagnose expert-load DUMPS ...    weekly expert-load report and a better expert placement
    Run `diagnose check --help` for the analysis options (--format, --fail-on, --rules, ...).
    """


@main.command("check")
@click.argument("paths", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(["text", "json", "sarif", "junit", "markdown", "github", "html"]),
              default="text", show_default=True, help="Main output format.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write the main output here.")
@click.option("--sarif", "sarif_out", type=click.Path(dir_okay=False), help="Also write a SARIF 2.1.0 report here.")
@click.option("--junit", "junit_out", type=click.Path(dir_okay=False), help="Also write a JUnit XML report here.")
@click.option("--markdown", "markdown_out", type=click.Path(dir_okay=False), help="Also write a Markdown summary here.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False), help="Also write the JSON report here.")
@click.option("--redact", is_flag=True,
              help="Mask IP addresses, host names, home paths and tokens in every output (same value, same mask).")
@click.option("--fail-on", type=click.Choice(SEVERITY_CHOICES), default="error", show_default=True,
              help="Exit 1 when a finding is at or above this severity.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even with findings (errors reading input still fail).")
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path(exists=True),
              help="Extra rule files or folders (repeatable).")
@click.option("--no-builtin-rules", is_flag=True, help="Use only the rules given with --rules.")
@click.option("--since", help="Ignore records before this time (YYYY-MM-DD[ HH:MM[:SS]]).")
@click.option("--until", help="Ignore records after this time.")
@click.option("--lang", type=click.Choice(["en", "zh"]), default=None, help="Language of titles and remediation.")
@click.option("--color/--no-color", default=None, help="Colour (default: only on a terminal).")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing; only the exit code (and -o output).")
@click.option("--budget", "budget_items", multiple=True, metavar="KEY=SIZE",
              help="Raise or lower a reading limit, e.g. max_file_bytes=8G, max_total_bytes=200G, "
                   "max_members=500000, max_ratio=500, bomb_floor=256M (repeatable).")
@click.option("--baseline", type=click.Path(exists=True),
              help="Compare benchmark/accuracy results with a baseline: an earlier run (folder or file), a TOML "
                   "of expected numbers with tolerances, or an earlier diagnose JSON report.")
def check(paths, fmt, output, sarif_out, junit_out, markdown_out, json_out, redact, fail_on, exit_zero, rule_dirs,
          no_builtin_rules, since, until, lang, color, quiet, budget_items=(), baseline=None):
    """Analyse the logs under PATH... and report findings, most likely root cause first.

    \b
    CI: --sarif/--junit/--markdown/--json FILE write more outputs in the same run. With GITHUB_ACTIONS=true,
    ::error/::warning/::notice annotations (at most 10 each) go to standard output, or to standard error
    when standard output carries a machine format (json, sarif, junit); the runner reads both. The
    Markdown summary is appended to $GITHUB_STEP_SUMMARY when that variable is set.
    """
    from diagnose.engine import load_rules
    from diagnose.pipeline import Options, catalog, diagnose_parsed, read_inputs, use_rules
    from diagnose.progress import progress_reporter
    from diagnose.report import render

    options = Options(
        rule_dirs=[Path(d) for d in rule_dirs],
        builtin_rules=not no_builtin_rules,
        since=_parse_time(since, "--since"),
        until=_parse_time(until, "--until"),
        lang=lang or _default_lang(),
        baseline=baseline,
        timeline=fmt == "html",
    )
    try:
        from diagnose.ingest.budget import parse_budget

        options.budget = parse_budget(list(budget_items))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--budget") from None
    if baseline and baseline.lower().endswith(".toml"):  # a broken baseline TOML is a configuration error
        from diagnose.compare import load_baseline

        for err in load_baseline(baseline, options).errors:
            click.echo(f"diagnose: error: {err}", err=True)
            sys.exit(EXIT_USAGE)
    # A broken user rule file is a configuration error: say which file and field, run nothing.
    _, user_errors = load_rules(options.rule_dirs)
    if user_errors:
        for err in user_errors:
            click.echo(f"diagnose: error: {err}", err=True)
        sys.exit(EXIT_USAGE)
    rules, rule_errors = catalog(options)
    use_rules(options, rules)

    with progress_reporter(enabled=not quiet) as progress:
        parsed = read_inputs(list(paths), options, progress)
    report = diagnose_parsed(parsed, rules, rule_errors, options)
    if redact:
        from diagnose.redact import redact_report

        report = redact_report(report)
    github = os.environ.get("GITHUB_ACTIONS") == "true"

    if not report.inputs:
        for s in report.skipped:
            click.echo(f"diagnose: error: {s.path}: {s.reason}", err=True)
        if not report.skipped:
            click.echo("diagnose: error: no input files found", err=True)
        if github:
            click.echo("::error title=diagnose::no input could be read; nothing was diagnosed")
        sys.exit(EXIT_USAGE)

    use_color = color if color is not None else (output is None and sys.stdout.isatty())
    # Every format gets the same options; each takes what it needs (paths: the input roots for relative paths).
    opts = dict(lang=options.lang, paths=list(paths), fail_on=fail_on, catalog=rules)
    text = render(fmt, report, color=use_color if fmt == "text" else False,
                  width=_width() if use_color else 110, **opts)
    if output:
        _write_output(output, text)
    elif not quiet:
        click.echo(text, nl=False)
    for extra_fmt, target in (("sarif", sarif_out), ("junit", junit_out), ("markdown", markdown_out),
                              ("json", json_out)):
        if target:
            _write_output(target, text if extra_fmt == fmt else render(extra_fmt, report, **opts))
    if github and not quiet and fmt != "github":
        notes = render("github", report, **opts)
        # Annotations must not corrupt a machine-readable main output on stdout: then they go to stderr,
        # which the Actions runner scans for workflow commands as well.
        on_stdout = bool(output) or fmt in ("text", "markdown")
        if notes:
            click.echo(notes, nl=False, err=not on_stdout)
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        summary = text if fmt == "markdown" else render("markdown", report, **opts)
        try:
            with open(step_summary, "a", encoding="utf-8") as fh:
                fh.write(summary)
        except OSError as exc:
            click.echo(f"diagnose: warning: cannot append to $GITHUB_STEP_SUMMARY: {exc.strerror or exc}", err=True)
    sys.exit(exit_code(report, fail_on, exit_zero))


def _write_output(target: str, text: str) -> None:
    try:
        Path(target).write_text(text, encoding="utf-8")
    except OSError as exc:
        click.echo(f"diagnose: error: cannot write {target}: {exc.strerror or exc}", err=True)
        sys.exit(EXIT_USAGE)


def _width() -> int:
    try:
        return max(80, min(os.get_terminal_size().columns, 160))
    except OSError:
        return 110


def exit_code(report, fail_on: str, exit_zero: bool) -> int:
    from diagnose.model import SEVERITY_RANK

    if report.incomplete:
        return EXIT_INCOMPLETE
    if exit_zero:
        return EXIT_CLEAN
    floor = SEVERITY_RANK[fail_on]
    return EXIT_FINDINGS if any(SEVERITY_RANK[f.severity] >= floor for f in report.findings) else EXIT_CLEAN


@main.group("rules")
def rules_group() -> None:
    """List, show and test rules (the built-in catalog plus --rules folders)."""


def _load_catalog(rule_dirs, builtin: bool = True):
    from diagnose.engine import builtin_rules_dir, load_rules

    dirs = ([builtin_rules_dir()] if builtin else []) + [Path(d) for d in rule_dirs]
    rules, errors = load_rules(dirs)
    for err in errors:
        click.echo(f"diagnose: error: {err}", err=True)
    return rules, errors


@rules_group.command("list")
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path(exists=True), help="Extra rule folders.")
@click.option("--category", help="Only this category.")
@click.option("--lang", type=click.Choice(["en", "zh"]), default=None)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
def rules_list(rule_dirs, category, lang, fmt):
    """One line per rule: id, category, severity, title."""
    import json

    rules, errors = _load_catalog(rule_dirs)
    lang = lang or _default_lang()
    rows = [r.brief(lang) for r in sorted(rules, key=lambda r: (r.category, r.id)) if not category or r.category == category]
    if fmt == "json":
        click.echo(json.dumps(rows, ensure_ascii=False, indent=2))
    else:
        for row in rows:
            click.echo(f"{row['id']:<8} {row['category']:<14} {row['severity']:<9} {row['title']}")
        click.echo(f"{len(rows)} rules")
    sys.exit(EXIT_USAGE if errors else EXIT_CLEAN)


@rules_group.command("show")
@click.argument("rule_id")
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path(exists=True), help="Extra rule folders.")
@click.option("--lang", type=click.Choice(["en", "zh"]), default=None)
def rules_show(rule_id, rule_dirs, lang):
    """The full rule: what it detects, how, and what to do."""
    from rich.console import Console
    from rich.markdown import Markdown

    from diagnose.docs import rule_markdown

    rules, _ = _load_catalog(rule_dirs)
    wanted = rule_id.upper()
    for rule in rules:
        if wanted in (rule.id, *[a.upper() for a in rule.aliases]) or rule_id == rule.name:
            md = rule_markdown(rule, lang or _default_lang())
            if sys.stdout.isatty():
                Console().print(Markdown(md))
            else:
                click.echo(md)
            return
    click.echo(f"diagnose: error: no rule {rule_id!r}; see `diagnose rules list`", err=True)
    sys.exit(EXIT_USAGE)


@rules_group.command("test")
@click.argument("dirs", nargs=-1, type=click.Path(exists=True))
@click.option("--no-builtin-rules", is_flag=True, help="Do not test the built-in catalog when DIRS are given.")
def rules_test(dirs, no_builtin_rules):
    """Run every rule's fixtures ([[test]] tables) and print a pass/fail table.

    With DIRS, test the rules there (the built-in rules still load, so ids must not clash).
    """
    from diagnose.engine.fixtures import run_rule_tests

    if dirs:
        rules, errors = _load_catalog(dirs, builtin=False)
    else:
        rules, errors = _load_catalog([])
    results = run_rule_tests(rules)
    failed = 0
    for res in results:
        mark = "PASS" if res.ok else "FAIL"
        click.echo(f"{mark}  {res.rule_id:<8} {res.name:<44} {res.detail}")
        failed += not res.ok
    passed = len(results) - failed
    untested = [r.id for r in rules if not any(t.fires for t in r.tests) or all(t.fires for t in r.tests)]
    if untested:
        click.echo(f"rules without both a firing and a quiet fixture: {', '.join(untested)}")
    click.echo(f"{passed} passed, {failed} failed")
    sys.exit(EXIT_FINDINGS if failed or errors or untested else EXIT_CLEAN)


@rules_group.command("new")
@click.option("--from-report", "from_report", type=click.Path(exists=True, dir_okay=False),
              help="A diagnose JSON report (--json FILE); take its unrecognised signature --index N.")
@click.option("--index", type=int, default=1, show_default=True,
              help="Which signature of the report's Unrecognised errors (1 = the top one, as printed).")
@click.option("--from-signature", "signature", help="A signature as printed (masked parts like <N>, <HEX>, <IP>).")
@click.option("--example", help="With --from-signature: a real log line of it (default: one made from the signature).")
@click.option("--kind", help="With --example: the file kind of that line (vllm, plog, mindie, ...); default: sniffed.")
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Folder to write the rule file into (created if missing).")
@click.option("--id", "rule_id", help="Rule id (default: the next free USR<nnn> in the folder).")
@click.option("--name", help="Kebab-case rule name (default: from the signature's words).")
@click.option("--category", default="engine", show_default=True, help="Rule category.")
@click.option("--severity", type=click.Choice(SEVERITY_CHOICES), default=None,
              help="Default: from the level of the lines (WARNING -> warning, else error).")
def rules_new(from_report, index, signature, example, kind, out_dir, rule_id, name, category, severity):
    """Write a starter rule for an unrecognised error signature, with a firing and a near-miss fixture.

    \b
    diagnose LOGS --json report.json; diagnose rules new --from-report report.json --index 1 -o my-rules
    diagnose rules new --from-signature 'qp create failed ret(<N>)' -o my-rules
    Then fill in the TODOs and run `diagnose rules test my-rules`.
    """
    from diagnose.signatures import write_starter_rule

    code, messages = write_starter_rule(from_report=from_report, index=index, signature=signature, example=example,
                                        kind=kind, out_dir=out_dir, rule_id=rule_id, name=name, category=category,
                                        severity=severity)
    for msg, is_err in messages:
        click.echo(msg, err=is_err)
    sys.exit(code)


@rules_group.command("docs")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write here (default: standard output).")
@click.option("--lang", type=click.Choice(["en", "zh"]), default="en")
def rules_docs(output, lang):
    """Generate the catalog page (docs/rules.md) from the rule files."""
    from diagnose.docs import catalog_markdown

    rules, errors = _load_catalog([])
    text = catalog_markdown(rules, lang)
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)
    sys.exit(EXIT_USAGE if errors else EXIT_CLEAN)


from diagnose.expertload.command import expert_load  # noqa: E402

main.add_command(expert_load)

from diagnose.preflight.command import preflight  # noqa: E402

main.add_command(preflight)
