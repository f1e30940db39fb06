"""``diagnose rules list|show|test|new|docs|signals``: the rule catalog (built-in plus --rules folders); the
hidden ``rules schemas`` writes docs/schemas.md from the typed structs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from diagnose.authoring.docs import catalog_markdown, rule_markdown
from diagnose.commands import configured
from diagnose.commands.console import (
    EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE, LANG_TYPE, SEVERITY_CHOICES, default_lang, lang_value, write_output,
)
from diagnose.engine import builtin_rules_dir, load_rules
from diagnose.engine.match import SELECTOR_FIELDS
from diagnose.engine.match_kinds import SCHEMA
from diagnose.engine.match_kinds.code import families
from diagnose.knowledge.benign import builtin_entries
from diagnose.knowledge.code_tables import builtin_codes_dir, builtin_tables, CodeTableError, load_families
from diagnose.knowledge.endings import builtin_endings
from diagnose.model import CATEGORIES
from diagnose.pipeline import Settings
from diagnose.scan.fastregex import dfa_safe, probe, slow_constructs
from diagnose.scan.literals import cover, members


@click.group("rules")
def rules_group() -> None:
    """List, show and test rules (the built-in catalog plus --rules folders)."""


def _load_catalog(rule_dirs, builtin: bool = True):
    configured.warn_empty_rule_dirs(rule_dirs)
    dirs = ([builtin_rules_dir()] if builtin else []) + [Path(d) for d in rule_dirs]
    rules, errors = load_rules(dirs)
    for err in errors:
        click.echo(f"diagnose: error: {err}", err=True)
    return rules, errors


@rules_group.command("list")
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path(exists=True), help="Extra rule folders.")
@click.option("--category", help="Only this category (mtp, kv-cache, memory, communication, ...).")
@click.option("--lang", type=LANG_TYPE, callback=lang_value, default=None)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@configured.config_options
def rules_list(rule_dirs, category, lang, fmt, config_file=None, no_config=False, select=(), ignore=()):
    """One line per rule: id, category, severity, title.

    The rules `diagnose check` would run: the configuration file's rule folders and selection apply, as do
    --select and --ignore (ids, id prefixes, names, categories, ALL).
    """
    if category is not None and category not in CATEGORIES:  # checked here: the model imports polars
        raise click.BadParameter(f"{category!r} is not one of {', '.join(CATEGORIES)}", param_hint="--category")
    cfg = configured.file_config(config_file, no_config)
    lang = configured.language(cfg, lang)
    settings = Settings(rule_dirs=configured.rule_dirs(cfg, rule_dirs), lang=lang,
                        selection=configured.selection(cfg, select, ignore), suppressions=cfg.suppressions)
    rules, errors, _ = configured.catalog(settings)
    for err in errors:
        click.echo(f"diagnose: error: {err}", err=True)
    rows = [{"id": r.id, "name": r.name, "category": r.category, "severity": r.severity, "title": r.text("title", lang)}
            for r in sorted(rules, key=lambda r: (r.category, r.id)) if not category or r.category == category]
    if fmt == "json":
        click.echo(json.dumps(rows, ensure_ascii=False, indent=2))
    else:
        for row in rows:
            click.echo(f"{row['id']:<8} {row['category']:<14} {row['severity']:<9} {row['title']}")
        click.echo(f"{len(rows)} rules")
        tables = _code_tables(lang)
        if tables:
            click.echo("error-code tables (knowledge/codes/, read by the code rules): " + "; ".join(tables))
    sys.exit(EXIT_USAGE if errors else EXIT_CLEAN)


def _code_tables(lang: str) -> list[str]:
    try:
        fams = families()
    except Exception as exc:  # noqa: BLE001 - a broken table is reported, the listing stands
        return [f"cannot read: {exc}"]
    return [f"{name} {len(f.classes)} classes, {len(f.codes)} codes" for name, f in sorted(fams.items())]


@rules_group.command("index")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
def rules_index(fmt):
    """What the knowledge holds: the message index (templates per project and origin, and the releases they come
    from), the error-code tables, and the tables of benign messages and run endings."""
    from diagnose.knowledge.index import message_index  # deferred: the message index (rules index only)

    try:
        index = message_index()
        projects = [{"project": s.project, "origin": s.origin, "templates": s.templates,
                     "releases": list(s.releases),
                     "range": s.releases[0] if len(s.releases) == 1 else f"{s.releases[0]} .. {s.releases[-1]}"}
                    for s in index.stats()]
        tables = [{"family": name, "classes": len(f.classes), "codes": len(f.codes)}
                  for name, f in sorted(builtin_tables().items())]
        other = {"benign": len(builtin_entries()), "endings": len(builtin_endings())}
    except Exception as exc:  # noqa: BLE001 - a damaged knowledge file is said, not raised
        click.echo(f"diagnose: error: cannot read the knowledge files: {type(exc).__name__}: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    if fmt == "json":
        click.echo(json.dumps({"index": projects, "code_tables": tables, **other}, ensure_ascii=False, indent=2))
        sys.exit(EXIT_CLEAN)
    click.echo("message index (knowledge/index/, built from knowledge/sources.toml):")
    for row in projects:
        click.echo(f"  {row['project']:<16} {row['origin']:<7} {row['templates']:>7} templates   {row['range']} "
                   f"({len(row['releases'])} releases)")
    click.echo(f"  {'total':<16} {'':<7} {sum(r['templates'] for r in projects):>7} templates")
    click.echo("error-code tables (knowledge/codes/):")
    for row in tables:
        click.echo(f"  {row['family']:<16} {row['codes']:>5} codes, {row['classes']:>3} classes")
    click.echo(f"benign messages (knowledge/benign.toml): {other['benign']}; run endings (knowledge/endings.toml): "
               f"{other['endings']}")
    sys.exit(EXIT_CLEAN)


@rules_group.command("signals")
@click.argument("word", required=False)
@click.option("--kind", help="Only the signals of this source kind (vllm, plog, npu-smi, ..., or `any` for the "
                             "families every kind can carry).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
def rules_signals(word, kind, fmt):
    """Every signal a rule can read: name, source kind, unit and meaning (WORD: only names containing it).

    \b
    diagnose rules signals kv_cache          the KV-cache signals of every kind
    diagnose rules signals --kind npu-smi    what npu-smi output gives
    Threshold, absence and mismatch rules name these in `signal = "..."` (docs/writing-rules.md).
    """
    from diagnose.authoring.signals import kinds, signal_docs  # deferred: start-up (rules signals only)
    if kind and kind not in kinds():
        click.echo(f"diagnose: error: --kind {kind!r}: no such source kind with signals "
                   f"(one of {', '.join(kinds())})", err=True)
        sys.exit(EXIT_USAGE)
    docs = [d for d in signal_docs() if (not kind or d.kind == kind) and (not word or word.lower() in d.name.lower())]
    if not docs:
        click.echo(f"diagnose: error: no signal name contains {word!r}", err=True)
        sys.exit(EXIT_USAGE)
    if fmt == "json":
        click.echo(json.dumps([d.to_dict() for d in docs], ensure_ascii=False, indent=2))
        return
    name_w = max(len(d.name) for d in docs)
    kind_w = max(len(d.kind) for d in docs)
    unit_w = max(4, max(len(d.unit) for d in docs))
    click.echo(f"{'signal':<{name_w}}  {'kind':<{kind_w}}  {'unit':<{unit_w}}  meaning")
    for d in docs:
        click.echo(f"{d.name:<{name_w}}  {d.kind:<{kind_w}}  {d.unit or '-':<{unit_w}}  {d.meaning}")
    click.echo(f"{len(docs)} signals (kind `any`: CANN/HCCL error blocks, out-of-memory messages and Python "
               "tracebacks, in any kind of log)")


@rules_group.command("show")
@click.argument("rule_id")
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path(exists=True), help="Extra rule folders.")
@click.option("--lang", type=LANG_TYPE, callback=lang_value, default=None)
def rules_show(rule_id, rule_dirs, lang):
    """The full rule: what it detects, how, and what to do."""
    from rich.console import Console  # deferred: rich.markdown (0.2 s, rules show only)
    from rich.markdown import Markdown  # deferred: rich.markdown (0.2 s, rules show only)

    rules, _ = _load_catalog(rule_dirs)
    wanted = rule_id.upper()
    for rule in rules:
        if wanted in (rule.id, *[a.upper() for a in rule.aliases]) or rule_id == rule.name:
            md = rule_markdown(rule, lang or default_lang())
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
    from diagnose.authoring.fixtures import run_rule_tests  # deferred: start-up (rules test only)
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
    for line in _slow_pattern_warnings(rules):
        click.echo(line)
    if not dirs:  # the error-code tables: their examples, near misses and cross-checks
        try:
            load_families(builtin_codes_dir(), check=True)
            click.echo("PASS  code tables (knowledge/codes/): examples found, near misses not, every code classified")
        except CodeTableError as exc:
            for err in exc.errors:
                click.echo(f"FAIL  {err}")
            failed += 1
    passed = len(results) - failed
    untested = [r.id for r in rules if not any(t.fires for t in r.tests) or all(t.fires for t in r.tests)]
    if untested:
        click.echo(f"rules without both a firing and a quiet fixture: {', '.join(untested)}")
    click.echo(f"{passed} passed, {failed} failed")
    sys.exit(EXIT_FINDINGS if failed or errors or untested else EXIT_CLEAN)


def _slow_pattern_warnings(rules) -> list[str]:
    """Warnings for patterns that the ASCII boundary rewrite cannot keep equal, or that run far slower on
    non-ASCII text than on ASCII text (a probe over request-log lines with Chinese prompts)."""
    out = []
    for rule in rules:
        for name, pattern in sorted(set(_written_patterns(rule.match.raw))):
            notes = slow_constructs(pattern)
            cjk, ascii_only = probe(pattern)
            if cjk > 0.05 and cjk > 4 * ascii_only:
                notes.append(f"{cjk / max(ascii_only, 1e-6):.0f}x slower on non-ASCII text than on ASCII "
                             f"({cjk * 1000:.0f} ms against {ascii_only * 1000:.0f} ms on the probe): it leaves the "
                             "regex engine's fast path")
            out += [f"WARN  {rule.id:<8} match.{name}: {note}" for note in notes]
        for role, sel in rule.match.selectors():
            if sel.reads_records and sel.regex:  # the patterns the prefilter searches lines for
                where = "match.regex" if role == "match" else f"match.{role}.regex"
                out += [f"WARN  {rule.id:<8} {where}: {note}" for note in _unsearchable(sel.regex)]
    return out


def _unsearchable(pattern: str) -> list[str]:
    """A note for each alternative of ``pattern`` the prefilter cannot find by a literal search
    (diagnose/scan/literals.py): it is run on every line of every chunk instead."""
    return [f"`{m[:60]}` has no fixed text of {4} characters in every branch: the prefilter runs it on every "
            "line instead of searching for its text (slower on large logs; add a word the message always has)"
            for m in members(dfa_safe(pattern)) if cover(m) is None]


def _written_patterns(table, prefix: str = ""):
    """(field, pattern) of every regex field of a match table as written, nested selectors included."""
    fields = {**SELECTOR_FIELDS, **SCHEMA.get(table.get("kind", ""), {})}
    for name, value in table.items():
        kind = fields.get(name, ("", ""))[0]
        if kind == "regex" and isinstance(value, str):
            yield prefix + name, value
        elif kind == "selector" and isinstance(value, dict):
            yield from _written_patterns(value, f"{prefix}{name}.")
        elif kind == "selectors" and isinstance(value, list):
            for i, v in enumerate(value):
                if isinstance(v, dict):
                    yield from _written_patterns(v, f"{prefix}{name}[{i}].")
        elif kind == "classify" and isinstance(value, dict):
            yield from ((f"{prefix}{name}.{k}", v) for k, v in value.items() if isinstance(v, str))


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
    from diagnose.authoring.starter import write_starter_rule  # deferred: start-up (rules new only)

    code, messages = write_starter_rule(from_report=from_report, index=index, signature=signature, example=example,
                                        kind=kind, out_dir=out_dir, rule_id=rule_id, name=name, category=category,
                                        severity=severity)
    for msg, is_err in messages:
        click.echo(msg, err=is_err)
    sys.exit(code)


@rules_group.command("docs")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write here (default: standard output).")
@click.option("--lang", type=LANG_TYPE, callback=lang_value, default="en")
def rules_docs(output, lang):
    """Generate the catalog page (docs/rules.md) from the rule files."""
    rules, errors = _load_catalog([])
    text = catalog_markdown(rules, lang)
    if output:
        write_output(output, text)  # atomic (diagnose/commands/outputs.py)
    else:
        click.echo(text, nl=False)
    sys.exit(EXIT_USAGE if errors else EXIT_CLEAN)


@rules_group.command("schemas", hidden=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write here (default: standard output).")
@click.option("--json-schema", "as_schema", is_flag=True,
              help="The JSON report's JSON Schema (2020-12) instead of the page.")
def rules_schemas(output, as_schema):
    """Generate docs/schemas.md (or the JSON report's JSON Schema) from the typed structs."""
    import json  # deferred: start-up (only for rules schemas)

    from diagnose.authoring.schemas import json_schema, schemas_markdown  # deferred: start-up (only for rules schemas)
    from diagnose.fleet import schema as fleet_schema  # deferred: start-up (the fleet room)

    text = json.dumps(json_schema(), indent=1) + "\n" if as_schema else schemas_markdown(fleet_schema)
    if output:
        write_output(output, text)  # atomic (diagnose/commands/outputs.py)
    else:
        click.echo(text, nl=False)
    sys.exit(EXIT_CLEAN)
