"""``diagnose collect`` on a fake node (a fake home, a fake system root with /proc and /usr/local/Ascend, a fake
``npu-smi`` on PATH): every planted file found where the software writes it by default, the caps and the time
window respected, links never followed out of a collected folder, a manifest of what was and was not taken,
and a bundle that ``diagnose`` reads back to the same findings as the files themselves."""

from __future__ import annotations

import json
import os
import shutil
import stat
import tarfile
import time
from pathlib import Path

from diagnose.collect import Request, collect, node_folder
from diagnose.collect.bundle import Caps
from diagnose.parsers import registry
from diagnose.pipeline import Settings, analyze
from tests.conftest import SAMPLES, run_cli

TWO = SAMPLES / "two-node-aicore" / "node-0"
MINDIE = SAMPLES / "mindie-deepseek" / "node-0"
MODEL = SAMPLES / "models" / "deepseek-r1-w8a8"
SECRET = "sk-" + "a1B2c3D4e5F6g7H8i9J0"


class Node:
    """A fake node: files where the software writes them, a fake npu-smi, optionally a serving process."""

    def __init__(self, base: Path):
        self.home, self.sysroot, self.bin = base / "home", base / "root", base / "bin"
        self.planted: dict[str, Path] = {}  # bundle-relative name -> the planted file
        self.env = {"PATH": str(self.bin)}
        vllm = self.home / "ascend/log/vllm_ascend/vllm_ascend_20260315_030200_4390.log"
        self.put(vllm, (TWO / "vllm-serve.log").read_bytes())
        for plog in sorted((TWO / "plog").iterdir()):
            self.put(self.home / "ascend/log/debug/plog" / plog.name, plog.read_bytes())
        self.put(self.sysroot / "usr/local/Ascend/driver/version.info",
                 b"Version=24.1.rc3\nascendhal_version=7.35.23\n")
        self.bin.mkdir(parents=True)
        npu_smi = self.bin / "npu-smi"
        npu_smi.write_text(f"#!/bin/sh\n[ \"$1\" = info ] && exec /bin/cat '{TWO / 'npu-smi-info.txt'}'\nexit 3\n")
        npu_smi.chmod(npu_smi.stat().st_mode | stat.S_IXUSR)

    def put(self, path: Path, data: bytes, age_s: float = 60.0) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        when = time.time() - age_s
        os.utime(path, (when, when))
        self.planted[path.name] = path
        return path

    def server(self, pid: int = 4390, env: dict[str, str] | None = None) -> None:
        proc = self.sysroot / "proc" / str(pid)
        proc.mkdir(parents=True)
        argv = ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "/models/dsr1",
                "--tensor-parallel-size", "16", "--api-key", SECRET, "--config", "/etc/vllm/serve.yaml"]
        (proc / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
        environ = {"HOME": str(self.home), "ASCEND_RT_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7", "AWS_SECRET": "x",
                   **(env or {})}
        (proc / "environ").write_bytes(b"\0".join(f"{k}={v}".encode() for k, v in environ.items()) + b"\0")
        for name in ("config.json", "quant_model_description_w8a8_dynamic.json"):
            src = MODEL / name
            if src.exists():
                self.put(self.sysroot / "models/dsr1" / name, src.read_bytes())
        self.put(self.sysroot / "etc/vllm/serve.yaml", b"max-num-seqs: 64\n")
        (self.sysroot / "models/dsr1/model-00001.safetensors").symlink_to("/nonexistent/blob")

    def run(self, tmp: Path, **over) -> tuple[dict, Path]:
        request = Request(node="worker-3", home=self.home, sysroot=self.sysroot, environ=self.env, **over)
        out = tmp / "bundle.tar.gz"
        with open(out, "wb") as fh:
            manifest = collect(request, fh)
        return manifest, out


def _members(bundle: Path) -> dict[str, bytes]:
    with tarfile.open(bundle) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def test_every_planted_file_is_found_where_the_software_writes_it(tmp_path):
    node = Node(tmp_path)
    manifest, bundle = node.run(tmp_path)
    members = _members(bundle)
    names = {Path(name).name for name in members}
    assert set(node.planted) <= names
    assert "worker-3/npu-smi-info.txt" in members and "worker-3/manifest.json" in members
    assert members["worker-3/npu-smi-info.txt"] == (TWO / "npu-smi-info.txt").read_bytes()
    for name, path in node.planted.items():
        inside = next(m for m in members if m.endswith("/" + name))
        assert members[inside] == path.read_bytes(), name
    kinds = {f["kind"] for f in manifest["found"]}
    assert {"vllm", "plog", "version-info", "npu-smi"} <= kinds
    reasons = {(e["kind"], e["reason"]) for e in manifest["not_found"]}
    assert ("launch", "no-server") in reasons and ("mindie", "not-found") in reasons
    assert json.loads(members["worker-3/manifest.json"]) == manifest


def test_the_bundle_reads_back_to_the_same_findings(tmp_path):
    node = Node(tmp_path)
    _, bundle = node.run(tmp_path)
    smi = tmp_path / "npu-smi-info.txt"
    shutil.copy(TWO / "npu-smi-info.txt", smi)
    originals = analyze([*map(str, node.planted.values()), str(smi)], Settings())
    again = analyze([str(bundle)], Settings())
    assert originals.findings and [(f.rule_id, f.severity, f.count) for f in again.findings] == \
        [(f.rule_id, f.severity, f.count) for f in originals.findings]
    assert {n for f in again.findings for n in f.nodes} == {"worker-3"}


def test_the_window_the_caps_and_links(tmp_path):
    node = Node(tmp_path)
    old = node.put(node.home / "ascend/log/vllm_ascend/vllm_ascend_20260314_010000_1.log", b"INFO old\n",
                   age_s=3 * 3600)
    del node.planted[old.name]
    big_line = b"[2025-11-03 10:22:05.298+08:00] [51230] [51230] [llm] [INFO] [llm_engine.cpp:12] step done\n"
    big = node.put(node.home / "mindie/log/debug/mindie-llm_51230_20251103102205298.log", big_line * 4000)
    outside = tmp_path / "outside.log"
    outside.write_text("password=hunter2hunter2\n")
    (node.home / "mindie/log/debug/leak.log").symlink_to(outside)
    (node.home / "mindie/log/debug/latest.log").symlink_to(big)
    (node.home / "ascend/log/debug/plog/linked").symlink_to(tmp_path, target_is_directory=True)
    manifest, bundle = node.run(tmp_path, since_s=2 * 3600, caps=Caps(max_file_bytes=100_000, max_total_bytes=10 << 20))
    members = _members(bundle)
    assert not any(old.name in m or "leak.log" in m or "linked" in m for m in members)
    reasons = {(Path(e.get("path", "")).name, e["reason"]) for e in manifest["not_found"]}
    assert (old.name, "older-than-window") in reasons and ("leak.log", "link-out-of-root") in reasons
    cut = next(v for k, v in members.items() if k.endswith(big.name))
    assert len(cut) <= 100_000 and cut.startswith(b"[2025-11-03") and cut.endswith(b"step done\n")
    assert next(f for f in manifest["found"] if f.get("path", "").endswith(big.name))["cut"].startswith("last ")
    assert sum(1 for m in members if m.endswith(big.name) or m.endswith("latest.log")) == 1  # one copy
    # The total cap: the newest files first, the rest listed.
    manifest, bundle = node.run(tmp_path, caps=Caps(max_file_bytes=100_000, max_total_bytes=30_000))
    assert sum(len(v) for k, v in _members(bundle).items() if not k.endswith("manifest.json")) <= 30_000
    assert any(e["reason"] == "total-cap" for e in manifest["not_found"])


def test_the_servers_launch_environment_and_named_files(tmp_path):
    node = Node(tmp_path)
    moved = tmp_path / "root/data/plogs"
    plog = next((TWO / "plog").iterdir())
    node.put(moved / "debug/plog" / ("moved-" + plog.name).replace("moved-", ""), plog.read_bytes())
    node.server(env={"ASCEND_PROCESS_LOG_PATH": "/data/plogs"})
    manifest, bundle = node.run(tmp_path)
    members = _members(bundle)
    script = members["worker-3/launch/launch-4390.sh"].decode()
    assert "vllm.entrypoints.openai.api_server" in script and "export ASCEND_RT_VISIBLE_DEVICES=" in script
    assert "AWS_SECRET" not in script and "HOME=" not in script
    assert "worker-3/model/4390/config.json" in members and "worker-3/config/4390/serve.yaml" in members
    assert not any("safetensors" in m for m in members)
    plogs = [m for m in members if "/plog/" in m]
    assert plogs and all("ASCEND_PROCESS_LOG_PATH" in m for m in plogs)  # the server's variable moved them
    assert any(e["reason"] == "not-found" or e.get("kind") for e in manifest["not_found"])


def test_redaction_masks_secrets_hosts_and_homes_throughout(tmp_path):
    node = Node(tmp_path)
    node.server()
    node.put(node.home / "ascend/log/vllm_ascend/vllm_ascend_20260315_040000_9.log",
             f"INFO 03-15 04:00:00 [api_server.py:1] token={SECRET} on worker-3 at 10.0.0.11\n".encode())
    _, bundle = node.run(tmp_path, redact=True)
    members = _members(bundle)
    text = b"\n".join(v for k, v in members.items() if not k.endswith("manifest.json")).decode("utf-8", "replace")
    assert SECRET not in text and "10.0.0.11" not in text and "worker-3" not in text
    assert all(m.startswith("node-host-1/") or m.startswith("host-1/") for m in members), sorted(members)[:3]


def test_the_command_writes_atomically_and_says_what_it_took(tmp_path, monkeypatch):
    node = Node(tmp_path)
    monkeypatch.setenv("PATH", node.env["PATH"] + os.pathsep + os.environ.get("PATH", ""))
    out = tmp_path / "out" / "b.tar.gz"
    out.parent.mkdir()
    result = run_cli("collect", "-o", str(out), "--home", str(node.home), "--sysroot", str(node.sysroot),
                     "--node-name", "worker-3", "--since", "2h", "--lang", "en")
    assert result.exit_code == 0, result.output
    assert "wrote " in result.stderr and "not taken: launch" in result.stderr
    assert sorted(p.name for p in out.parent.iterdir()) == ["b.tar.gz"]
    result = run_cli("collect", "-o", str(tmp_path / "missing" / "b.tar.gz"), "--home", str(node.home))
    assert result.exit_code == 6 and "Traceback" not in result.output
    result = run_cli("collect", "--since", "soon")
    assert result.exit_code == 2


def test_every_kind_with_default_places_declares_where_it_comes_from():
    places = registry.locations()
    assert {kind for kind, _ in places} >= {"vllm", "plog", "mindie", "npu-smi", "version-info", "mindie-config"}
    for kind, loc in places:
        assert loc.source and (loc.roots or loc.command), kind
    assert node_folder("worker-3") == "worker-3" and node_folder("dsr1-a3-07") == "node-dsr1-a3-07"
