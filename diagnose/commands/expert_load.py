"""``diagnose expert-load PATH...``: the weekly expert-load report.

Reading (expertload/: the readers of each source, and the EPLB log lines through the normal parsers of the
pipeline), analysis (expertload/metrics.py, advise.py) and rendering (report/load/) are wired here and nowhere
else: the analysis gets the EPLB values as a frame and returns a typed result that the renderers put in words.
"""

from __future__ import annotations

import sys
from datetime import date, datetime
from pathlib import Path

import click
import msgspec
import polars as pl

from diagnose.commands.console import (
    EXIT_CLEAN, EXIT_OUTPUT_FAILED, EXIT_USAGE, LANG_TYPE, default_lang, lang_value, write_output,
)
from diagnose.commands.outputs import put_stream
from diagnose.expertload.load import load
from diagnose.expertload.metrics import analyse
from diagnose.expertload.summaries import EPLB_SIGNALS
from diagnose.ingest.metered import SourceFile
from diagnose.messages import messages
from diagnose.pipeline import read_signals
from diagnose.report.load.load_texts import advice_lines, refused as refused_text


def _day(value: str | None, name: str) -> date | None:
    if not value:
        return None
    for fmt in ("%Y-%m-%d", "%Y%m%d"):
        try:
            return datetime.strptime(value, fmt).date()
        except ValueError:
            continue
    raise click.BadParameter(f"{value!r} is not a date like 2026-11-22", param_hint=name)


def eplb_lines(logs: list[SourceFile]) -> pl.DataFrame:
    """EPLB imbalance signals of the log files, through the normal parsers (dated as a batch run dates them)."""
    return read_signals(logs, EPLB_SIGNALS)


@click.command("expert-load")
@click.argument("paths", nargs=-1, required=True)
@click.option("--since", help="First day of the window (default: 6 days before --until).")
@click.option("--until", help="Last day of the window (default: the last day with data).")
@click.option("--top", type=click.IntRange(1, 10000), default=10, show_default=True, help="Hot experts to list.")
@click.option("--target", type=click.FloatRange(1.0, 100.0), default=1.15, show_default=True,
              help="Rank-level max/mean the suggested map must reach (worst layer).")
@click.option("--stage", type=click.Choice(["all", "prefill", "decode"]), default="all", show_default=True,
              help="Which dumps to count.")
@click.option("--layers", type=click.IntRange(1, 1000),
              help="MoE layers per dump block (default: model_gen_config.json, else the expert map's, else detected).")
@click.option("--expert-map", "expert_map", type=click.Path(exists=True, dir_okay=False),
              help="Current expert map JSON (default: the *.json maps among the inputs, by day, else contiguous).")
@click.option("--advise", is_flag=True, help="Answer whether an EPLB trial is worth running on this load.")
@click.option("--format", "fmt", type=click.Choice(["html", "json", "markdown"]), default=None,
              help="Output format (default: from the -o suffix, else markdown).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write the report here.")
@click.option("--map-out", type=click.Path(dir_okay=False, writable=True), help="Also write the suggested expert map JSON here.")
@click.option("--lang", type=LANG_TYPE, callback=lang_value, default=None, help="Language of the report (default: the locale).")
def expert_load(paths, since, until, top, target, stage, layers, expert_map, advise, fmt, output, map_out, lang=None):
    """Weekly expert-load report from MindIE hotspot dumps (prefill/prefill_<rank>.csv, decode/decode_<rank>.csv,
    model_gen_config.json), SGLang expert-distribution dumps (expert_distribution_recorder_*.pt), expert map JSON
    and EPLB log lines: hot experts, imbalance per layer and day, and a suggested expert map.

    \b
    Example: diagnose expert-load /data/hotspot/ -o report.html
    """
    msg = messages(lang or default_lang())
    d_since, d_until = _day(since, "--since"), _day(until, "--until")
    if fmt is None:
        suffix = Path(output).suffix.lower() if output else ""
        fmt = {".html": "html", ".htm": "html", ".json": "json"}.get(suffix, "markdown")
    loaded = load(list(paths), layers=layers, expert_map=expert_map)
    for s in loaded.skipped:
        click.echo(msg("expertload.cli.skipped", path=s.path, reason=msg.say(s.reason)), err=True)
    for r in loaded.refused:
        click.echo(msg("expertload.cli.skipped", path=r.path, reason=refused_text(r.reason, r.params, msg)), err=True)
    if loaded.loads.height == 0 and loaded.logical.height == 0 and not loaded.files:
        click.echo(msg("expertload.cli.no_dumps"), err=True)
        sys.exit(EXIT_USAGE)
    result = analyse(loaded, d_since, d_until, stage, top, target, eplb=eplb_lines(loaded.logs), advise=advise)
    if fmt == "html":
        from diagnose.report.load.load_page import render
    elif fmt == "json":
        from diagnose.report.load.load_json import render
    else:
        from diagnose.report.load.load_markdown import render
    text = render(result, msg.lang)
    if advise:
        for line in advice_lines(result, msg):
            click.echo(line, err=True)
    if output:
        write_output(output, text, "-o", msg.lang)
        click.echo(msg("expertload.cli.wrote", path=output), err=True)
    else:
        failures: list[str] = []
        put_stream(text, msg.lang, failures)
        if failures:
            sys.exit(EXIT_OUTPUT_FAILED)
    if map_out and result.recommendation.expert_map is not None:
        data = msgspec.json.format(msgspec.json.encode(result.recommendation.expert_map), indent=1)
        write_output(map_out, (data + b"\n").decode("utf-8"), "--map-out", msg.lang)
        click.echo(msg("expertload.cli.wrote", path=map_out), err=True)
    sys.exit(EXIT_CLEAN)
