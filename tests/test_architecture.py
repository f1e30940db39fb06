"""The package's shape: imports go one way (no cycle, imports inside functions counted), every module imports on
its own, and no module grows past what one reader holds in mind."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "diagnose"
MAX_LINES = 450


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _modules()


def _imported(module: str, path: Path) -> set[str]:
    """The project's modules ``module`` imports anywhere in its body (functions included), with the packages
    that importing them runs (``a.b.c`` runs ``a`` and ``a.b`` first)."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    found = set()
    for name in names:
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if not name:
            continue
        parts = name.split(".")
        found.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    # A module's own packages are already running when it is imported: no edge back to them.
    return {m for m in found if m != module and not module.startswith(m + ".")}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (iterative Tarjan)."""
    index, low, on_stack, stack, out, counter = {}, {}, set(), [], [], 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        comp.append(member)
                        if member == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_the_import_graph_has_no_cycle():
    graph = {m: _imported(m, p) for m, p in MODULES.items()}
    assert sum(len(v) for v in graph.values()) > len(graph)  # the graph was read (not every edge missed)
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_is_longer_than_one_reader_holds():
    long = {m: n for m, p in MODULES.items() if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


@pytest.mark.slow
def test_every_module_imports_on_its_own():
    """Each module in a fresh interpreter: an import that works only after another module was imported fails."""
    script = (
        "import importlib, subprocess, sys\n"
        "bad = []\n"
        "for name in sys.argv[1:]:\n"
        "    r = subprocess.run([sys.executable, '-c', 'import ' + name], capture_output=True, text=True)\n"
        "    if r.returncode: bad.append((name, r.stderr.strip().splitlines()[-1:]))\n"
        "print(bad)\n"
    )
    names = [m for m in MODULES if not m.endswith("__main__")]  # the entry point runs the CLI when imported
    out = subprocess.run([sys.executable, "-c", script, *names], capture_output=True, text=True, cwd=ROOT,
                         check=True)
    assert out.stdout.strip() == "[]"


# The expert-load rooms (shared/reference/architecture.md): the analysis is a pass, so it reads only the layers
# below it (parsers, knowledge, ingest, scan, the ground); its words are report/load's, which reads only model/,
# the message catalog and report's own helpers; the command alone wires the two with the pipeline.
ROOM_IMPORTS = {
    "diagnose.expertload": ("diagnose.expertload", "diagnose.parsers", "diagnose.knowledge", "diagnose.ingest",
                            "diagnose.scan", "diagnose.model", "diagnose.messages", "diagnose.cache"),
    "diagnose.report.load": ("diagnose.report", "diagnose.model", "diagnose.messages"),
}


@pytest.mark.parametrize("room", sorted(ROOM_IMPORTS))
def test_expert_load_rooms_import_only_what_lies_below_them(room):
    allowed = ROOM_IMPORTS[room]
    bad = {}
    for module, path in MODULES.items():
        if module == room or module.startswith(room + "."):
            wrong = sorted(m for m in _imported(module, path) if m != "diagnose"
                           and not any(m == a or m.startswith(a + ".") for a in allowed))
            if wrong:
                bad[module] = wrong
    assert bad == {}
