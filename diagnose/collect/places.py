"""Where to look on this node: the source kinds' default locations resolved against the environment, the home
folder and the system root, and the serving processes' own launch commands and environments.

A location's roots are tried in order (``SourceKind.locations``): ``$VAR`` and ``$VAR/sub`` need the variable
set, ``~`` is the home folder, an absolute path is read under ``sysroot`` (``/`` on a node; a mounted host or a
test's fake tree otherwise). The variables come from this process's environment and from the serving
processes' (``/proc/<pid>/environ``): the plogs go where the server's ``ASCEND_PROCESS_LOG_PATH`` says, not
where the shell running ``collect`` says. MindIE's ``MINDIE_LOG_PATH`` may name a path per component
(``llm:/a;llmmodels:/b``): each is a root.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from diagnose.parsers import registry
from diagnose.parsers.kind import Location

# Processes whose command line says they serve a model (vLLM, vllm-ascend, MindIE).
_SERVER = re.compile(r"vllm(?:\.entrypoints|\s+serve|/bin/vllm)|\bvllm\b.*\bserve\b|mindieservice_daemon|mindie_llm"
                     r"|mindie-service|api_server")
# Environment variables of a server worth keeping with its launch command (never the whole environment).
_ENV_KEEP = re.compile(r"^(?:ASCEND_|HCCL_|VLLM_|MINDIE_|MIES_|ATB_|PYTORCH_NPU|TASK_QUEUE_ENABLE|CPU_AFFINITY"
                       r"|OMP_NUM_THREADS|HF_ENDPOINT|LD_PRELOAD)")
_MODEL_FILES = ("config.json", "generation_config.json")
_QUANT = re.compile(r"^quant_model_description.*\.json$")


@dataclass
class Root:
    kind: str
    path: Path  # where to look (real path resolved once: the chosen root)
    patterns: tuple[str, ...]
    named: str  # the root as declared (~/ascend/log, $ASCEND_PROCESS_LOG_PATH), for the manifest


@dataclass
class Launch:
    pid: int
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)

    def script(self) -> str:
        """A shell script that says how the server was started: the kept variables, then the command."""
        lines = ["#!/bin/sh"]
        lines += [f"export {k}={shlex.quote(v)}" for k, v in sorted(self.env.items())]
        lines.append(shlex.join(self.argv))
        return "\n".join(lines) + "\n"

    def model_dir(self) -> str | None:
        """The model folder the command names (``--model DIR``, ``vllm serve DIR``, ``--model=DIR``)."""
        args = self.argv
        for i, arg in enumerate(args):
            if arg in ("--model", "--model-path") and i + 1 < len(args):
                return args[i + 1]
            if arg.startswith(("--model=", "--model-path=")):
                return arg.split("=", 1)[1]
            if arg == "serve" and i + 1 < len(args) and not args[i + 1].startswith("-"):
                return args[i + 1]
        return None

    def config_files(self) -> list[str]:
        """Files the command names as configuration (``--config X.yaml``, ``--additional-config FILE``)."""
        out = []
        for i, arg in enumerate(self.argv):
            if arg in ("--config", "--additional-config", "--config-file") and i + 1 < len(self.argv):
                value = self.argv[i + 1]
                if not value.lstrip().startswith("{"):
                    out.append(value)
        return out

    def ascend_log_path(self) -> str | None:
        """vllm-ascend's ``additional_config.ascend_log_path`` override, when the command sets it."""
        m = re.search(r"""["']?ascend_log_path["']?\s*:\s*["']([^"']+)""", " ".join(self.argv))
        return m.group(1) if m else None


def launches(sysroot: Path) -> list[Launch]:
    """The serving processes of this node, from ``<sysroot>/proc``."""
    out = []
    proc = sysroot / "proc"
    try:
        entries = sorted((e for e in os.scandir(proc) if e.name.isdigit()), key=lambda e: int(e.name))
    except OSError:
        return []
    for entry in entries:
        try:
            argv = [a.decode("utf-8", "replace") for a in Path(entry.path, "cmdline").read_bytes().split(b"\0") if a]
        except OSError:
            continue
        if not argv or not _SERVER.search(" ".join(argv)):
            continue
        env = {}
        try:
            for item in Path(entry.path, "environ").read_bytes().split(b"\0"):
                key, _, value = item.decode("utf-8", "replace").partition("=")
                if key and _ENV_KEEP.match(key):
                    env[key] = value
        except OSError:
            pass
        out.append(Launch(int(entry.name), argv, env))
    return out


def roots(home: Path, sysroot: Path, environ: dict[str, str], servers: list[Launch]) -> tuple[list[Root], list[dict]]:
    """The roots to gather from, and the locations that resolved to nothing (for the manifest)."""
    envs = [environ] + [s.env for s in servers]
    found, missing = [], []
    for kind, loc in registry.locations():
        if loc.command:
            continue
        chosen = _first(loc, home, sysroot, envs)
        if not chosen:
            missing.append({"kind": kind, "where": " | ".join(loc.roots), "reason": "not-found"})
        for named, path in chosen:
            found.append(Root(kind, path, loc.patterns, named))
    for server in servers:  # vllm-ascend's file log moved by the launch command
        moved = server.ascend_log_path()
        if moved:
            path = _place(moved, home, sysroot)
            if path is not None and path.is_dir():
                found.append(Root("vllm", path.resolve(), ("vllm_ascend_*.log",), "ascend_log_path"))
    return found, missing


def model_files(server: Launch, home: Path, sysroot: Path) -> list[Path]:
    """The model folder's small description files the launch command points at (not the weights)."""
    named = server.model_dir()
    if not named:
        return []
    folder = _place(named, home, sysroot)
    if folder is None or not folder.is_dir():
        return []
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [folder / n for n in names if n in _MODEL_FILES or _QUANT.match(n)]


def _first(loc: Location, home: Path, sysroot: Path, envs: list[dict[str, str]]) -> list[tuple[str, Path]]:
    for named in loc.roots:
        paths = []
        for value in _expand(named, envs):
            path = _place(value, home, sysroot)
            if path is not None and path.is_dir():
                paths.append((named, path.resolve()))
        if paths:
            return list(dict.fromkeys(paths))
    return []


def _expand(named: str, envs: list[dict[str, str]]) -> list[str]:
    """The values a declared root takes: ``$VAR/sub`` for each environment that sets VAR (MindIE's per-component
    form split); a root without a variable as it is."""
    m = re.match(r"^\$(\w+)(.*)$", named)
    if not m:
        return [named]
    out = []
    for env in envs:
        value = env.get(m.group(1))
        if not value:
            continue
        for part in value.split(";"):
            part = part.split(":", 1)[1] if re.match(r"^[A-Za-z_]+:", part) else part
            if part.strip():
                out.append(part.strip() + m.group(2))
    return list(dict.fromkeys(out))


def _place(value: str, home: Path, sysroot: Path) -> Path | None:
    if value.startswith("~"):
        return home / value[1:].lstrip("/")
    path = Path(value)
    if path.is_absolute():
        return sysroot / path.relative_to("/") if sysroot != Path("/") else path
    return None
