"""``diagnose preflight MODEL_DIR [--serve-cmd ... | --serve-script FILE | --mindie-config FILE]``.

Same output formats, JSON schema and exit codes as ``diagnose``: the facts (diagnose/preflight/facts.py) enter
the run as records (diagnose/preflight/factsource.py), the rules whose ``sources`` name ``preflight`` judge
them, and the report is rendered by diagnose.report.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from diagnose.commands.outputs import put_file, put_stream
from diagnose.commands.console import (
    EXIT_OUTPUT_FAILED, EXIT_USAGE, LANG_TYPE, SEVERITY_CHOICES, color_choice, color_option, default_lang, exit_code,
    lang_value, use_color, width, write_output,
)
from diagnose.pipeline import Settings, diagnose, load_catalog, read_facts
from diagnose.report import render


@click.command("preflight")
@click.argument("model_dir", required=False, type=click.Path(file_okay=False))
@click.option("--serve-cmd", help="The launch command line, e.g. \"vllm serve /models/DeepSeek-R1-W8A8 --tensor-parallel-size 8 ...\".")
@click.option("--serve-script", type=click.Path(exists=True, dir_okay=False),
              help="A shell script holding `vllm serve ...` (or a log with vLLM's `non-default args:` line).")
@click.option("--mindie-config", type=click.Path(exists=True, dir_okay=False), help="MindIE service config.json.")
@click.option("--npus", type=click.IntRange(1), help="NPUs the deployment gets, all nodes (e.g. 16 for 2 x 8).")
@click.option("--npu-mem-gb", type=click.FloatRange(1), default=64.0, show_default=True, help="HBM per NPU, GiB.")
@click.option("--reserve-gb", type=click.FloatRange(0), default=4.0, show_default=True,
              help="Per-NPU memory that is neither weights nor KV cache (activations, HCCL buffers, graphs), GiB.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "sarif", "junit", "markdown"]), default="text",
              show_default=True, help="Output format (as for `diagnose`).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the report here.")
@click.option("--facts", "facts_out", type=click.Path(dir_okay=False, allow_dash=True),
              help="Also write the facts, with the capacity arithmetic (`-`: print them); `diagnose FILE.facts` re-checks them.")
@click.option("--fail-on", type=click.Choice(SEVERITY_CHOICES), default="error", show_default=True)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even with findings.")
@click.option("--allow-empty", is_flag=True, help="Exit 0, not 4, when no model file and no launch was found.")
@click.option("--lang", type=LANG_TYPE, callback=lang_value, default=None)
@color_option
@click.option("-q", "--quiet", is_flag=True)
def preflight(model_dir, serve_cmd, serve_script, mindie_config, npus, npu_mem_gb, reserve_gb, fmt, output, facts_out,
              fail_on, exit_zero, lang, color, no_color, quiet, allow_empty=False):
    """Check a model directory and its launch configuration before the service starts.

    Reads config.json, model.safetensors.index.json and quant_model_description.json (metadata only) and the
    launch settings; reports MTP weights missing, quantization descriptions that do not cover the weights,
    parallel layouts the MLA/MoE kernels reject, and the KV capacity at max-model-len (with the arithmetic).
    """
    from diagnose.preflight.facts import LaunchUnreadable, build_facts  # deferred: start-up (the preflight room)
    from diagnose.preflight.checks import Target  # deferred: start-up (the preflight room)
    if sum(bool(x) for x in (serve_cmd, serve_script, mindie_config)) > 1:
        click.echo("diagnose: error: give one of --serve-cmd, --serve-script, --mindie-config", err=True)
        sys.exit(EXIT_USAGE)
    if not model_dir and not (serve_cmd or serve_script or mindie_config):
        click.echo("diagnose: error: give MODEL_DIR and/or a launch (--serve-cmd, --serve-script, --mindie-config)", err=True)
        sys.exit(EXIT_USAGE)
    if model_dir and not Path(model_dir).is_dir():
        click.echo(f"diagnose: error: {model_dir}: not a directory", err=True)
        sys.exit(EXIT_USAGE)
    target = Target(npus=npus, npu_mem_gib=npu_mem_gb, reserve_gib=reserve_gb)
    facts_path = facts_out if facts_out and facts_out != "-" else str(Path(model_dir or ".") / "preflight.facts")
    try:
        facts, text = build_facts(model_dir, serve_cmd, serve_script, mindie_config, target, facts_path)
    except LaunchUnreadable as exc:
        for problem in str(exc).splitlines():
            click.echo(f"diagnose: error: {problem}", err=True)
        sys.exit(EXIT_USAGE)
    if facts_out == "-":  # show the facts (capacity arithmetic included); stderr when stdout is machine-readable
        click.echo(text, err=fmt != "text")
    elif facts_out:
        write_output(facts_out, text, "--facts")
    settings = Settings(lang=lang or default_lang())
    rules, rule_errors = load_catalog(settings)
    rules = [r for r in rules if "preflight" in r.sources]
    # The facts enter as records with their origins: findings on them point at the files they came from.
    parsed = read_facts(facts)
    report = diagnose(parsed, rules, rule_errors, settings)
    colored = fmt == "text" and use_color(color_choice(color, no_color), to_file=bool(output))
    out = render(fmt, report, color=colored, width=width(to_file=bool(output)),
                 lang=settings.lang, paths=[model_dir or "."], fail_on=fail_on, catalog=rules)
    failures: list[str] = []
    if output:
        put_file(output, out, "-o", settings.lang, failures)
    elif not quiet:
        put_stream(out, settings.lang, failures, color=colored)
    if failures:
        sys.exit(EXIT_OUTPUT_FAILED)
    sys.exit(exit_code(report, fail_on, exit_zero, allow_empty))
