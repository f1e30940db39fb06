"""What ``watch`` and ``npd`` share: durations and sizes on the command line, the state folder, the window, the
outputs for Prometheus and MindCluster, the node's name, and the Settings the service is called with."""

from __future__ import annotations

import os
import re
import socket
import sys

import click

from diagnose.commands import configured
from diagnose.commands.console import LANG_TYPE, lang_value, SEVERITY_CHOICES
from diagnose.pipeline import Settings

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$", re.IGNORECASE)
_SCALE = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}
_SIZE = re.compile(r"^\s*(\d+)\s*([KMG]i?B?|B)?\s*$", re.IGNORECASE)


def parse_duration(value: str, name: str) -> float:
    """Seconds of ``30s``, ``30m``, ``2h``, ``1d`` (a bare number is seconds)."""
    m = _DURATION.match(str(value))
    if not m or float(m.group(1)) <= 0:
        raise click.BadParameter(f"{value!r} is not a duration like 30s, 30m, 2h or 1d", param_hint=name)
    return float(m.group(1)) * _SCALE[(m.group(2) or "").lower() or None]


def parse_size(value: str, name: str) -> int:
    """Bytes of ``4M``, ``64MiB``, ``1G``, ``512K`` (a bare number is bytes)."""
    m = _SIZE.match(str(value))
    if not m:
        raise click.BadParameter(f"{value!r} is not a size like 512K, 4M or 1G", param_hint=name)
    unit = (m.group(2) or "B")[0].upper()
    return int(m.group(1)) * {"B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[unit]


def parse_npus(value: str, name: str) -> list[int]:
    """``0-7``, ``0,1,4-5``: the NPU ids a fault on this node is said to affect when no finding names one."""
    out: set[int] = set()
    try:
        for part in str(value).split(","):
            if "-" in part:
                a, b = part.split("-", 1)
                out.update(range(int(a), int(b) + 1))
            elif part.strip():
                out.add(int(part))
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a list of NPU ids like 0-7 or 0,1,4-5", param_hint=name) from None
    if not out or any(i < 0 or i > 31 for i in out):
        raise click.BadParameter(f"{value!r}: NPU ids go from 0 to 31", param_hint=name)
    return sorted(out)


def node_name(given: str | None) -> str:
    """The node the run describes: --node-name, else $NODE_NAME (a DaemonSet's downward API), else the host."""
    return given or os.environ.get("NODE_NAME") or socket.gethostname() or "localhost"


def live_options(default_state: str):
    """The options of watch and npd, as one decorator."""

    def wrap(command):
        options = [
            click.option("--state", "state_dir", default=None, metavar="DIR",
                         help=f"State folder: offsets, open findings, counters; a restart resumes from it "
                              f"[default: {default_state}]."),
            click.option("--window", "window", default="30m", show_default=True,
                         help="Judge the lines of this last span of time (30m, 2h)."),
            click.option("--resolve-after", "resolve_after", default="10m", show_default=True,
                         help="A finding resolves after this long without a new occurrence."),
            click.option("--fail-on", type=click.Choice(SEVERITY_CHOICES), default=None,
                         help="Severity that counts as a problem (default: error, or the config's fail-on)."),
            click.option("--prom", "prom_out", type=click.Path(dir_okay=False), default=None,
                         help="Write the Prometheus textfile here each tick (a .prom file in node_exporter's "
                              "--collector.textfile.directory)."),
            click.option("--mindcluster", "mindcluster_out", type=click.Path(dir_okay=False), default=None,
                         help="Write ClusterD's public-fault message here when findings open or resolve "
                              "(.yaml or .yml: as a ConfigMap to kubectl apply)."),
            click.option("--node-name", default=None, help="The Kubernetes node name faults and metrics name "
                                                           "[default: $NODE_NAME, else the host name]."),
            click.option("--npus", default="0-7", show_default=True,
                         help="NPU ids a fault affects when no finding names its NPU."),
            click.option("--rules", "rule_dirs", multiple=True, type=click.Path(exists=True),
                         help="Extra rule files or folders (repeatable)."),
            click.option("--lang", type=LANG_TYPE, callback=lang_value, default=None, help="Language of the texts."),
            configured.config_options,
        ]
        for option in reversed(options):
            command = option(command)
        return command

    return wrap


def settings_from(cfg, rule_dirs, lang, select, ignore):
    """The Settings of a live run (the window and the clock are set per tick)."""
    return Settings(rule_dirs=configured.rule_dirs(cfg, rule_dirs), lang=configured.language(cfg, lang),
                    budget=configured.budget(cfg, ()), selection=configured.selection(cfg, select, ignore),
                    suppressions=cfg.suppressions, timeline=False)


def excluded(*targets: str | None, folder=None) -> frozenset[str]:
    """The real paths of our own outputs and the state folder (with a trailing separator: all inside it): never
    read back as logs when they sit in a watched folder."""
    out = set()
    for t in targets:
        if t and t != "-":
            out.add(os.path.realpath(t))
    if folder is not None:
        out.add(os.path.realpath(folder) + os.sep)
    return frozenset(out)


def say(text: str) -> None:
    """One line on standard error (a failure the run goes on after)."""
    try:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
