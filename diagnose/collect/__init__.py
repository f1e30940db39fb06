"""``diagnose collect``: an incident bundle from one node, from the places the software writes by default.

"Where are the logs?" is the first question of an incident (vllm-ascend#4136: the server times out and its
standard output shows nothing). The answer is in the source kinds (``SourceKind.locations``: vllm-ascend's file
log, CANN plogs and device logs under ``ASCEND_PROCESS_LOG_PATH``/``ASCEND_WORK_PATH``/``~/ascend/log``,
MindIE and ATB logs, the install tree's version files, MindIE's ``config.json``, ``npu-smi info``), and in the
serving processes themselves: their launch commands, the variables that moved their logs, the configuration
and model description files they name.

    places.py   the default locations resolved (environment, home, system root) and the serving processes
    gather.py   the files under each root: the time window, links never followed out of a root
    bundle.py   the tar.gz: caps, redaction, the manifest of what was found and what was not

``collect(request, stream)`` writes the bundle to ``stream`` and returns its manifest.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from diagnose.collect.bundle import Bundle, Caps
from diagnose.collect.gather import Found, gather
from diagnose.collect.places import Launch, launches, model_files, roots
from diagnose.ingest.nodes import node_from_path
from diagnose.parsers import registry
from diagnose.report.redact import Redactor

COMMAND_TIMEOUT_S = 30.0


@dataclass
class Request:
    node: str
    home: Path
    sysroot: Path = Path("/")
    environ: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    since_s: float | None = None
    caps: Caps = field(default_factory=Caps)
    redact: bool = False
    now: float = field(default_factory=time.time)


def node_folder(name: str) -> str:
    """The bundle's top folder: the node's name when it reads as one (``worker-3``, ``10.0.0.12``), else
    ``node-<name>``, so that ``diagnose`` attributes every file to the node."""
    name = name.replace("/", "-") or "localhost"
    return name if node_from_path(f"{name}/x") == name else f"node-{name}"


def collect(request: Request, stream: BinaryIO) -> dict:
    redactor = None
    node = node_folder(request.node)
    if request.redact:
        redactor = Redactor()
        redactor.add_hosts([request.node])
        node = node_folder(redactor.text(request.node) or "localhost")
    since = request.now - request.since_s if request.since_s else None
    servers = launches(request.sysroot)
    found_roots, unresolved = roots(request.home, request.sysroot, request.environ, servers)
    files, passed = gather(found_roots, since)
    bundle = Bundle(stream, node, request.caps, redactor)
    if since is not None:
        bundle.manifest["since"] = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(since))
    # What the tools print and how the servers were started first: small, and what every incident needs.
    for kind, loc in registry.locations():
        if loc.command:
            _run(bundle, kind, loc.command, loc.save_as, request.environ)
    for server in servers:
        bundle.add_text(f"launch/launch-{server.pid}.sh", server.script(), {"kind": "launch", "pid": server.pid})
        _named_files(bundle, server, request)
    for item in files:
        bundle.add_file(item)
    if not servers:
        bundle.note("not_found", {"kind": "launch", "where": str(request.sysroot / "proc"),
                                  "reason": "no-server"})
    for entry in unresolved + passed:
        bundle.note("not_found", entry)
    bundle.close()
    return bundle.manifest


def _run(bundle: Bundle, kind: str, command: tuple[str, ...], save_as: str, environ: dict[str, str]) -> None:
    shown = " ".join(command)
    exe = shutil.which(command[0], path=environ.get("PATH"))
    if exe is None:
        bundle.note("not_found", {"kind": kind, "command": shown, "reason": "not-installed"})
        return
    try:
        done = subprocess.run([exe, *command[1:]], capture_output=True, timeout=COMMAND_TIMEOUT_S, env=environ,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        bundle.note("not_found", {"kind": kind, "command": shown, "reason": "timeout"})
        return
    except OSError as exc:
        bundle.note("not_found", {"kind": kind, "command": shown, "reason": "cannot-run",
                                  "detail": str(exc.strerror or exc)})
        return
    text = done.stdout.decode("utf-8", "replace")
    if done.returncode != 0 and not text.strip():
        bundle.note("not_found", {"kind": kind, "command": shown, "reason": "command-failed",
                                  "detail": done.stderr.decode("utf-8", "replace").strip()[-200:]
                                  or f"exit {done.returncode}"})
        return
    bundle.add_text(save_as, text, {"kind": kind, "command": shown})
    bundle.note("commands", {"command": shown, "exit": done.returncode,
                             "stderr": done.stderr.decode("utf-8", "replace")[-500:]})


def _named_files(bundle: Bundle, server: Launch, request: Request) -> None:
    """The model description files and configuration files a launch command names, each from its own folder
    (the folder the command chose), never through a link that leaves it."""
    picked: list[tuple[str, Path]] = [("model", p) for p in model_files(server, request.home, request.sysroot)]
    for named in server.config_files():
        path = Path(named)
        if path.is_absolute() and request.sysroot != Path("/"):
            path = request.sysroot / path.relative_to("/")
        picked.append(("config", path))
    for what, path in picked:
        try:
            real = path.resolve(strict=True)
            st = real.stat()
        except OSError:
            bundle.note("not_found", {"kind": what, "path": str(path), "reason": "named-not-found"})
            continue
        if real.parent != path.parent.resolve():
            bundle.note("not_found", {"kind": what, "path": str(path), "reason": "link-out-of-root"})
            continue
        bundle.add_file(Found(what, real, str(path), f"{what}/{server.pid}/{path.name}", st.st_size, st.st_mtime))
