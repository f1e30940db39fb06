"""``diagnose extract PATH... --node NAME --out DATASET``: one node's logs read where they are, written as the
node's partition of a fleet dataset (diagnose/fleet/), for ``diagnose fleet`` to judge with every other node."""

from __future__ import annotations

import os
import socket
import sys

import click

from diagnose.analysis.coverage import NOTHING
from diagnose.commands import configured
from diagnose.commands.console import (
    EXIT_CLEAN, EXIT_NOTHING_ANALYSED, EXIT_OUTPUT_FAILED, EXIT_USAGE, LANG_TYPE, lang_value,
)
from diagnose.ingest.nodes import node_from_path
from diagnose.messages import messages
from diagnose.model import skip
from diagnose.pipeline import Settings, filters_for


@click.command("extract")
@click.argument("paths", nargs=-1, required=True)
@click.option("--node", help="This node's name in the dataset (default: the node the paths name, else the host name).")
@click.option("--cluster", default="default", show_default=True, help="The cluster this node belongs to.")
@click.option("--out", "out", required=True, metavar="DATASET",
              help="The dataset: a folder, or an object-store URI such as s3://bucket/prefix (diagnose[fleet]).")
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path(exists=True),
              help="Extra rule files or folders (repeatable): what they need is kept too.")
@click.option("--no-builtin-rules", is_flag=True, help="Use only the rules given with --rules.")
@click.option("--budget", "budget_items", multiple=True, metavar="KEY=SIZE",
              help="Raise or lower a reading limit, e.g. max_file_bytes=8G (repeatable; as for diagnose check).")
@click.option("--lang", type=LANG_TYPE, callback=lang_value, default=None, help="Language of the summary line.")
@click.option("--allow-empty", is_flag=True, help="Exit 0, not 4, when nothing was read (the partition is written).")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing; only the exit code.")
@configured.config_options
def extract(paths, node, cluster, out, rule_dirs, no_builtin_rules, budget_items, lang, allow_empty, quiet,
            config_file=None, no_config=False, select=(), ignore=()):
    """Read this node's logs under PATH... and write them to DATASET as the node's partition (Parquet, by date,
    cluster and node): the kept records, signals and series, coverage, the node's own findings and its expert
    load. Run it on every node, then `diagnose fleet DATASET`.

    \b
    Exit codes: 0 written, 2 usage (a bad name, a path that does not exist, a dataset of another schema
    version), 4 nothing was read (the partition is written: the fleet lists what was skipped), 6 not written.
    """
    from diagnose.fleet.dataset import NotADataset, SchemaMismatch, check_name  # deferred: start-up (the fleet room)
    from diagnose.fleet.runs import extract_node  # deferred: start-up (the fleet room)
    from diagnose.fleet.store import Store, StoreError  # deferred: start-up (the fleet room)

    cfg = configured.file_config(config_file, no_config)
    settings = Settings(rule_dirs=configured.rule_dirs(cfg, rule_dirs), builtin_rules=not no_builtin_rules,
                        lang=configured.language(cfg, lang), budget=configured.budget(cfg, budget_items),
                        selection=configured.selection(cfg, select, ignore))
    msg = messages(settings.lang)
    # As ``diagnose PATH...``: when no path given exists, that is a usage error and nothing is written (a typo
    # on one node must not look like a node that logged nothing).
    if all(p != "-" and not os.path.lexists(p) for p in paths):
        for p in paths:
            click.echo(msg("cli.error", text=f"{p}: {msg.say(skip('missing'))}"), err=True)
        sys.exit(EXIT_USAGE)
    named = {n for n in (node_from_path(p.rstrip("/") + "/x") for p in paths) if n}
    node = node or (named.pop() if len(named) == 1 else socket.gethostname().split(".")[0])
    try:
        check_name(node, "--node")
        check_name(cluster, "--cluster")
        store = Store(out)
    except (ValueError, StoreError) as exc:
        configured.fail(str(exc))
    rules, rule_errors, settings = configured.catalog(settings)
    try:
        done = extract_node(list(paths), store, node, cluster, settings, rules, rule_errors, filters_for(rules))
    except (SchemaMismatch, NotADataset) as exc:
        configured.refuse_dataset(msg, exc)
    except (StoreError, OSError) as exc:
        click.echo(msg("cli.error", text=msg("fleet.not_written", where=out, reason=str(exc))), err=True)
        sys.exit(EXIT_OUTPUT_FAILED)
    coverage = done.report.coverage
    empty = coverage is not None and coverage.status == NOTHING
    if not quiet:
        m = done.manifest
        click.echo(msg("fleet.extracted", node=node, cluster=cluster, date=m["date"],
                       files=msg("fleet.files", n=len(done.report.inputs)),
                       records=msg("fleet.records", n=m["tables"]["records"]["rows"]),
                       findings=msg("fleet.findings", n=len(done.report.findings)),
                       where=store.uri(f"date={m['date']}/cluster={cluster}/node={node}")), err=True)
        if empty and coverage.text:
            click.echo(f"diagnose: {msg.say(coverage.text)}", err=True)
    # Nothing read: the partition still says what was skipped and why, but a job that gates on the exit code
    # must not take an extraction of nothing for a node's logs (``diagnose PATH...`` exits 4 too).
    sys.exit(EXIT_NOTHING_ANALYSED if empty and not allow_empty else EXIT_CLEAN)
