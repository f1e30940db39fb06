"""``diagnose expert-load PATH...``: the weekly expert-load report.

Reading (expertload/: the readers of each source, and the EPLB log lines through the normal parsers of the
pipeline), analysis (expertload/metrics.py, advise.py) and rendering (report/load/) are wired here and nowhere
else: the analysis gets the EPLB values as a frame and returns a typed result that the renderers put in words.
"""

from __future__ import annotations

import json
import sys
from datetime import date, datetime
from pathlib import Path

import click
import msgspec
import polars as pl

from diagnose.commands.console import (
    EXIT_CLEAN, EXIT_OUTPUT_FAILED, EXIT_USAGE, LANG_TYPE, default_lang, lang_value, write_output,
)
from diagnose.commands.exitcodes import EXIT_NOTHING_ANALYSED
from diagnose.commands.outputs import put_folder, put_stream
from diagnose.expertload import export, gauges
from diagnose.expertload.load import load
from diagnose.expertload.metrics import analyse
from diagnose.expertload.summaries import EPLB_SIGNALS
from diagnose.ingest.metered import SourceFile
from diagnose.messages import messages
from diagnose.model.expertload import FIRST_WINDOW_POLICIES
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
    """The EPLB values of the log files and /metrics snapshots (``EPLB_SIGNALS``: ts, signal, value, file, engine),
    through the normal parsers, dated as a batch run dates them."""
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
              help="Rows per dump block, MTP included (default: model_gen_config.json, else the period the dumps "
              "show, else the expert map's layers; they must agree).")
@click.option("--expert-map", "expert_map", type=click.Path(exists=True, dir_okay=False),
              help="Current expert map JSON (default: the *.json maps among the inputs, by day, else contiguous).")
@click.option("--first-window", "first_window", type=click.Choice(FIRST_WINDOW_POLICIES), default="auto",
              show_default=True,
              help="The first block of a dump chain: count it, skip it, or auto (count when the file begins with its "
              "service, as every dump in a folder with MindIE's model_gen_config.json does; else a size test).")
@click.option("--advise", is_flag=True, help="Answer whether an EPLB trial is worth running on this load.")
@click.option("--format", "fmt", type=click.Choice(["html", "json", "markdown"]), default=None,
              help="Output format (default: from the -o suffix, else markdown).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write the report here.")
@click.option("--map-out", type=click.Path(dir_okay=False, writable=True),
              help="Also write the suggested expert map JSON here (vllm-ascend expert_map_path, MindIE expert_map_file).")
@click.option("--sglang-out", type=click.Path(dir_okay=False, writable=True),
              help="Also write the suggested placement as SGLang --init-expert-location JSON (physical_to_logical_map).")
@click.option("--dense-layers", type=click.IntRange(0, 1000), default=None,
              help="Dense decoder layers before the MoE layers, for --sglang-out (default: none for SGLang loads, "
              "3 for 58 MoE layers: DeepSeek-V3/R1).")
@click.option("--msit-out", type=click.Path(file_okay=False, writable=True),
              help="Also write the window's load as an msit-ready folder (flat <stage>_<rank>.csv and model_gen_config.json).")
@click.option("--lang", type=LANG_TYPE, callback=lang_value, default=None, help="Language of the report (default: the locale).")
def expert_load(paths, since, until, top, target, stage, layers, expert_map, first_window, advise, fmt, output, map_out,
                sglang_out=None, dense_layers=None, msit_out=None, lang=None):
    """Weekly expert-load report from MindIE hotspot dumps (prefill/prefill_<rank>.csv, decode/decode_<rank>.csv,
    model_gen_config.json), SGLang expert-distribution dumps (expert_distribution_recorder_*.pt) and logical_count
    JSON, MindSpeed-RL token-collect JSON, expert maps, and the EPLB lines and /metrics snapshots of vLLM,
    vllm-ascend, SGLang and MindIE: hot experts, imbalance per layer and day, and a suggested placement for
    vllm-ascend and MindIE (--map-out), SGLang (--sglang-out) or msit (--msit-out).

    \b
    Example: diagnose expert-load /data/hotspot/ -o report.html
    """
    msg = messages(lang or default_lang())
    d_since, d_until = _day(since, "--since"), _day(until, "--until")
    if fmt is None:
        suffix = Path(output).suffix.lower() if output else ""
        fmt = {".html": "html", ".htm": "html", ".json": "json"}.get(suffix, "markdown")
    loaded = load(list(paths), layers=layers, expert_map=expert_map, first_window=first_window)
    for s in loaded.skipped:
        click.echo(msg("expertload.cli.skipped", path=s.path, reason=msg.say(s.reason)), err=True)
    for r in loaded.refused:
        click.echo(msg("expertload.cli.skipped", path=r.path, reason=refused_text(r.reason, r.params, msg)), err=True)
    eplb = eplb_lines(loaded.logs)
    by_gauge = eplb.filter(pl.col("signal").is_in(gauges.SIGNALS)).height > 0
    counted = bool(loaded.loads.height or loaded.logical.height or loaded.files or by_gauge)
    if not counted and not loaded.refused:
        click.echo(msg("expertload.cli.no_dumps"), err=True)
        sys.exit(EXIT_USAGE)
    for note in loaded.notes:  # a refusal of a whole source (rows per block, a map) is said here too
        click.echo(msg("cli.warning", text=msg(note.key, **note.params)), err=True)
    result = analyse(loaded, d_since, d_until, stage, top, target, eplb=eplb, advise=advise)
    if fmt == "html":
        from diagnose.report.load.load_page import render  # deferred: start-up (one renderer per --format)
    elif fmt == "json":
        from diagnose.report.load.load_json import render  # deferred: start-up (one renderer per --format)
    else:
        from diagnose.report.load.load_markdown import render  # deferred: start-up (one renderer per --format)
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
    _exports(loaded, result, sglang_out, dense_layers, msit_out, msg)
    # Inputs were given and every one of them was refused: the report says why, and nothing was analysed.
    sys.exit(EXIT_CLEAN if counted else EXIT_NOTHING_ANALYSED)


def _exports(loaded, result, sglang_out: str | None, dense_layers: int | None, msit_out: str | None, msg) -> None:
    """--sglang-out and --msit-out (expertload/export.py); what could not be written is said, exit 6."""
    if sglang_out:
        if dense_layers is None:
            sglang_numbered = any(f.source == "sglang" for f in loaded.files)
            main = result.window.layers - result.window.mtp_layers
            dense_layers = 0 if sglang_numbered else (export.DEEPSEEK_DENSE if main == 58 else 0)
            if not sglang_numbered:
                click.echo(msg("cli.warning", text=msg("expertload.cli.dense_layers", n=dense_layers)), err=True)
        data = export.sglang_location(result, dense_layers)
        if data is None:
            click.echo(msg("cli.warning", text=msg("expertload.cli.no_placement", option="--sglang-out")), err=True)
        else:
            write_output(sglang_out, json.dumps(data) + "\n", "--sglang-out", msg.lang)
            click.echo(msg("expertload.cli.wrote_sglang", path=sglang_out,
                           redundant=result.recommendation.redundant_experts, ranks=result.window.ranks), err=True)
    if msit_out:
        files = export.msit_folder(loaded, result)
        if not files:
            click.echo(msg("cli.warning", text=msg("expertload.cli.no_placement", option="--msit-out")), err=True)
            return
        failures: list[str] = []
        put_folder(msit_out, files, "--msit-out", msg.lang, failures)
        if failures:
            sys.exit(EXIT_OUTPUT_FAILED)
        click.echo(msg("expertload.cli.wrote_msit", path=msit_out, n=len(files)), err=True)
