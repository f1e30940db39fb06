"""The configuration file and the command line, merged: the options ``check`` and ``rules list`` share
(``--config``, ``--no-config``, ``--select``, ``--ignore``), the run's Settings, and the catalog narrowed to
the selected rules. Every configuration problem ends here as ``diagnose: error: ...`` and exit 2.

Only click is imported at the top: the command line is built at every start (``diagnose --help`` too), and
the configuration reads the model, which brings polars."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import click

from diagnose.analysis.suppression import resolve_rules
from diagnose.commands.config import ConfigError, find
from diagnose.commands.console import EXIT_USAGE, default_lang
from diagnose.commands.outputs import Languages
from diagnose.engine.rulefile import CODES_DIR
from diagnose.engine.selection import RuleKey, RuleSelection, select_rules, split_selectors, UnknownSelector
from diagnose.ingest.budget import parse_budget
from diagnose.pipeline import SYNTHETIC_RULES, load_all_rules


def config_options(fn):
    """--config/--no-config/--select/--ignore, in that order in --help."""
    options = [
        click.option("--config", "config_file", type=click.Path(dir_okay=False),
                     help="Read defaults from this file (default: the nearest .diagnose.toml or pyproject.toml with "
                          "[tool.diagnose], looking up from here to the repository root)."),
        click.option("--no-config", is_flag=True, help="Read no configuration file."),
        click.option("--select", "select", multiple=True, metavar="SELECTOR",
                     help="Run only these rules: ids (KV001), id prefixes (KV, COMM0), names (kv-cache-saturated), "
                          "categories (kv-cache) or ALL; repeatable or comma-separated. Replaces the file's selection."),
        click.option("--ignore", "ignore", multiple=True, metavar="SELECTOR",
                     help="Do not run these rules (same selectors as --select; repeatable or comma-separated)."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def fail(messages) -> None:
    for message in [messages] if isinstance(messages, str) else messages:
        click.echo(f"diagnose: error: {message}", err=True)
    sys.exit(EXIT_USAGE)


def refuse_dataset(msg, exc) -> None:
    """A fleet dataset that is not one, or of another schema version (diagnose/fleet/dataset.py's
    ``SchemaMismatch`` carries ``found``/``expected``, ``NotADataset`` a ``reason``): one line, exit 2."""
    if hasattr(exc, "found"):
        text = msg("fleet.schema_refused", where=exc.where, found=exc.found, expected=exc.expected)
    else:
        text = msg("fleet.not_dataset", where=exc.where, reason=exc.reason)
    click.echo(msg("cli.error", text=text), err=True)
    sys.exit(EXIT_USAGE)


def file_config(config_file: str | None, no_config: bool):
    """The diagnose.commands.config.FileConfig that applies (an empty one with --no-config)."""
    if config_file and no_config:
        fail("--config and --no-config exclude each other")
    if config_file and not Path(config_file).is_file():
        fail(f"--config {config_file}: no such file")
    try:
        return find(config_file, no_config)
    except ConfigError as exc:
        fail(exc.errors)


def selection(cfg, select, ignore) -> tuple:
    """The layers, lowest priority first: the file's select/ignore, then the command line's."""
    layers = []
    if cfg.select is not None or cfg.ignore:
        layers.append(RuleSelection(cfg.select, cfg.ignore, origin=cfg.origin))
    cli_select, cli_ignore = split_selectors(select), split_selectors(ignore)
    if cli_select or cli_ignore:
        layers.append(RuleSelection(cli_select or None, cli_ignore))
    return tuple(layers)


def rule_dirs(cfg, cli_dirs) -> tuple[Path, ...]:
    """The file's rule folders, then those of --rules."""
    dirs = tuple(cfg.rule_dirs) + tuple(Path(d) for d in cli_dirs)
    warn_empty_rule_dirs(dirs)
    return dirs


def warn_empty_rule_dirs(dirs) -> None:
    """A rules folder without a rule file is most likely the wrong folder: say so, on standard error."""
    for folder in map(Path, dirs):
        if folder.is_dir() and not any(CODES_DIR not in p.relative_to(folder).parts[:-1] for p in folder.rglob("*.toml")):
            click.echo(f"diagnose: warning: {folder}: no rule files (*.toml) in this rules folder", err=True)


def budget(cfg, items):
    """The file's budget with each --budget KEY=SIZE over it."""
    try:
        return parse_budget(list(cfg.budget) + list(items))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--budget") from None


def language(cfg, lang: str | None) -> str:
    return lang or cfg.lang or default_lang()


def languages(cfg, output_lang: dict[str, str], lang: str):
    """Each output's language: the command line's ``--output-lang`` over the file's ``output-lang``, and the
    run's language (``lang``, already merged by ``language``) for the formats neither names."""
    return Languages(lang, {**dict(cfg.output_lang), **dict(output_lang or {})})


def catalog(settings):
    """The selected rules and the rule-file errors; the settings with suppressed rules named by their ids.
    A selector or a suppression naming no rule is a usage error."""
    rules, errors = load_all_rules(settings)
    suppressions, problems = resolve_rules(settings.suppressions, [RuleKey.of(r) for r in rules] + list(SYNTHETIC_RULES))
    if problems:
        fail(problems)
    try:
        chosen = select_rules(rules, settings.selection, SYNTHETIC_RULES)
    except UnknownSelector as exc:
        fail(exc.lines())
    if settings.selection and not chosen:
        click.echo("diagnose: warning: the selection leaves no rule to run", err=True)
    return chosen, errors, replace(settings, suppressions=suppressions)
