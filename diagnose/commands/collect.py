"""``diagnose collect [--since 2h] [-o bundle.tar.gz]``: gather what an incident needs from this node into one
bundle (diagnose/collect/), written atomically, and say what was found and what was not."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from diagnose.commands.console import default_lang, LANG_TYPE, lang_value

from diagnose.collect import Request, collect as gather_bundle
from diagnose.collect.bundle import Caps
from diagnose.commands.exitcodes import EXIT_OUTPUT_FAILED
from diagnose.commands.outputs import failure_line
from diagnose.commands.live_options import node_name as resolve_node, parse_duration, parse_size
from diagnose.messages import messages
from diagnose.writer import WriteFailed, replacing


@click.command("collect")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="The bundle to write [default: diagnose-<node>-<time>.tar.gz here].")
@click.option("--since", default=None, help="Only files written in this last span of time (2h, 30m, 1d).")
@click.option("--redact", is_flag=True, help="Mask secrets, IP addresses, host names and home paths in every file "
                                             "taken (the same value gets the same mask throughout).")
@click.option("--max-file-bytes", default="64M", show_default=True,
              help="A larger file keeps only its last part (from a line start).")
@click.option("--max-total-bytes", default="1G", show_default=True, help="Stop taking files past this much.")
@click.option("--home", type=click.Path(file_okay=False), default=None,
              help="The home folder of the user that runs the server [default: yours].")
@click.option("--sysroot", type=click.Path(file_okay=False), default="/", show_default=True,
              help="Read absolute places (/usr/local/Ascend, /proc) under this folder (a mounted host).")
@click.option("--node-name", default=None, help="The node's name in the bundle [default: $NODE_NAME, else the host].")
@click.option("--lang", type=LANG_TYPE, callback=lang_value, default=None, help="Language of the summary.")
def collect(output, since, redact, max_file_bytes, max_total_bytes, home, sysroot, node_name, lang):
    """Gather an incident bundle from this node: vLLM / vllm-ascend logs, CANN plogs and device logs, MindIE
    and ATB logs, `npu-smi info`, version files, the serving processes' launch commands and the configuration
    and model description files they name. Sizes are capped, links are never followed out of the folders
    collected, and a manifest inside says what was found and what was not. Read it back with
    `diagnose BUNDLE.tar.gz`."""
    msg = messages(lang or default_lang())
    node = resolve_node(node_name)
    request = Request(node=node, home=Path(home).expanduser() if home else Path.home(), sysroot=Path(sysroot),
                      since_s=parse_duration(since, "--since") if since else None,
                      caps=Caps(parse_size(max_file_bytes, "--max-file-bytes"), parse_size(max_total_bytes,
                                                                                           "--max-total-bytes")),
                      redact=redact)
    target = output or f"diagnose-{node}-{time.strftime('%Y%m%d-%H%M%S')}.tar.gz"
    try:
        with replacing(target, "-o") as stream:
            manifest = gather_bundle(request, stream)
    except WriteFailed as exc:
        click.echo(failure_line(exc, msg.lang), err=True)
        sys.exit(EXIT_OUTPUT_FAILED)
    kinds = sorted({f["kind"] for f in manifest["found"]})
    click.echo(msg("collect.done", target=target, n=len(manifest["found"]), kinds=", ".join(kinds) or "-",
                   missing=len(manifest["not_found"])), err=True)
    for entry in manifest["not_found"]:
        where = entry.get("path") or entry.get("command") or entry.get("where") or ""
        reason = msg(f"collect.reason.{entry['reason']}")
        if entry.get("detail"):
            reason += f" ({entry['detail']})"
        click.echo(msg("collect.missing", kind=entry.get("kind", ""), where=where, reason=reason), err=True)
    sys.exit(0)
