"""``diagnose expert-load PATH...``: the weekly expert-load report."""

from __future__ import annotations

import sys
from datetime import date, datetime
from pathlib import Path

import click

from diagnose.commands.console import EXIT_CLEAN, EXIT_USAGE, LANG_TYPE, default_lang, lang_value


def _day(value: str | None, name: str) -> date | None:
    if not value:
        return None
    for fmt in ("%Y-%m-%d", "%Y%m%d"):
        try:
            return datetime.strptime(value, fmt).date()
        except ValueError:
            continue
    raise click.BadParameter(f"{value!r} is not a date like 2026-11-22", param_hint=name)


@click.command("expert-load")
@click.argument("paths", nargs=-1, required=True)
@click.option("--since", help="First day of the window (default: 6 days before --until).")
@click.option("--until", help="Last day of the window (default: the last day with data).")
@click.option("--top", type=click.IntRange(1, 10000), default=10, show_default=True, help="Hot experts to list.")
@click.option("--target", type=click.FloatRange(1.0, 100.0), default=1.15, show_default=True,
              help="Rank-level max/mean the suggested map must reach (worst layer).")
@click.option("--stage", type=click.Choice(["all", "prefill", "decode"]), default="all", show_default=True,
              help="Which dumps to count.")
@click.option("--layers", type=click.IntRange(1, 1000), help="MoE layers per dump block (default: the expert map's, else detected).")
@click.option("--expert-map", "expert_map", type=click.Path(exists=True, dir_okay=False),
              help="Current expert map JSON (default: a *.json with layer_list among the inputs, else contiguous).")
@click.option("--format", "fmt", type=click.Choice(["html", "json", "markdown"]), default=None,
              help="Output format (default: from the -o suffix, else markdown).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write the report here.")
@click.option("--map-out", type=click.Path(dir_okay=False, writable=True), help="Also write the suggested expert map JSON here.")
@click.option("--lang", type=LANG_TYPE, callback=lang_value, default=None, help="Language of the report (default: the locale).")
def expert_load(paths, since, until, top, target, stage, layers, expert_map, fmt, output, map_out, lang=None):
    """Weekly expert-load report from MindIE hotspot dumps (prefill/prefill_<rank>.csv, decode/decode_<rank>.csv),
    the expert map JSON and EPLB log lines: hot experts, imbalance per layer and day, and a suggested expert map.

    \b
    Example: diagnose expert-load /data/hotspot/ -o report.html
    """
    from diagnose.expertload.load import load
    from diagnose.expertload.metrics import analyse
    from diagnose.messages import messages
    from diagnose.report.reasons import skip_reason

    msg = messages(lang or default_lang())

    d_since, d_until = _day(since, "--since"), _day(until, "--until")
    if fmt is None:
        suffix = Path(output).suffix.lower() if output else ""
        fmt = {".html": "html", ".htm": "html", ".json": "json"}.get(suffix, "markdown")
    loaded = load(list(paths), layers=layers, expert_map=expert_map)
    for s in loaded.skipped:
        click.echo(msg("expertload.cli.skipped", path=s.path, reason=skip_reason(s.reason, msg)), err=True)
    if loaded.loads.height == 0 and not loaded.files:
        click.echo(msg("expertload.cli.no_dumps"), err=True)
        sys.exit(EXIT_USAGE)
    result = analyse(loaded, d_since, d_until, stage, top, target, lang=msg.lang)
    if fmt == "html":
        from diagnose.expertload.report_html import render
    elif fmt == "json":
        from diagnose.expertload.report_json import render
    else:
        from diagnose.expertload.report_markdown import render
    text = render(result)
    if output:
        Path(output).write_text(text, encoding="utf-8")
        click.echo(msg("expertload.cli.wrote", path=output), err=True)
    else:
        click.echo(text, nl=False)
    if map_out and "expert_map" in result.get("recommendation", {}):
        import json

        Path(map_out).write_text(json.dumps(result["recommendation"]["expert_map"], indent=1) + "\n", encoding="utf-8")
        click.echo(msg("expertload.cli.wrote", path=map_out), err=True)
    sys.exit(EXIT_CLEAN)
