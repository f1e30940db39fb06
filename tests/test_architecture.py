"""The package's shape: imports point down the layers declared here (imports inside functions counted), no
cycle, no two modules with one file name, every module imports on its own, and no module grows past what one
reader holds in mind."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from diagnose.knowledge.indexfile import harvester_files

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

# The layers, highest first (docs/architecture.md). A module imports only from layers below its own; rooms on one
# layer do not import each other, except on the entry layer and the ground (shared contracts and utilities).
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("entry", ("__main__", "cli")),
    ("commands", ("commands",)),
    ("programs", ("authoring", "live", "fleet", "collect")),
    ("service", ("pipeline",)),
    ("passes", ("analysis", "engine", "report", "preflight", "validation", "expertload")),
    ("parsers", ("parsers",)),
    ("knowledge", ("knowledge",)),
    ("ingest", ("ingest",)),
    ("scan", ("scan",)),
    ("ground", ("model", "messages", "cache", "writer", "bounded")),
]
OPEN_LAYERS = ("entry", "ground")
# The only top-level modules: the entry point and the ground. Everything else lives in a room.
TOP_LEVEL = {"diagnose", "diagnose.__main__", "diagnose.cli", "diagnose.messages", "diagnose.cache", "diagnose.writer",
             "diagnose.bounded"}


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


def _room(module: str) -> tuple[int, str, str] | None:
    """(layer index, layer name, room) of a module of the package; None for the package itself."""
    parts = module.split(".")
    if len(parts) < 2:
        return None
    for i, (layer, rooms) in enumerate(LAYERS):
        if parts[1] in rooms:
            return i, layer, parts[1]
    raise AssertionError(f"{module}: its room {parts[1]!r} is in no layer of LAYERS")


def _wrong_way(graph: dict[str, set[str]]) -> list[str]:
    out = []
    for module, targets in graph.items():
        here = _room(module)
        if here is None:
            continue
        for target in sorted(targets):
            there = _room(target)
            if there is None or there[2] == here[2]:
                continue
            if there[0] < here[0] or (there[0] == here[0] and here[1] not in OPEN_LAYERS):
                out.append(f"{module} -> {target} ({here[1]}/{here[2]} -> {there[1]}/{there[2]})")
    return out


def test_imports_point_down_the_layers():
    graph = {m: _imported(m, p) for m, p in MODULES.items()}
    assert _wrong_way(graph) == []


def test_the_direction_check_finds_an_import_that_points_up_or_sideways():
    graph = {"diagnose.parsers.kinds.vllm": {"diagnose.engine.run"},  # up
             "diagnose.report.text": {"diagnose.analysis.coverage"},  # sideways on one layer
             "diagnose.engine.run": {"diagnose.model.frames", "diagnose.engine.match"},  # down, and its own room
             "diagnose.model.report": {"diagnose.messages"}}  # the ground may use the ground
    assert _wrong_way(graph) == [
        "diagnose.parsers.kinds.vllm -> diagnose.engine.run (parsers/parsers -> passes/engine)",
        "diagnose.report.text -> diagnose.analysis.coverage (passes/report -> passes/analysis)",
    ]


def test_only_the_entry_point_and_the_ground_are_at_the_top():
    top = {m for m in MODULES if m.count(".") <= 1 and not (PACKAGE / m.split(".")[-1]).is_dir()}
    assert top <= TOP_LEVEL, top - TOP_LEVEL
    assert len(top) <= 8


def test_no_two_modules_share_a_file_name():
    seen: dict[str, list[str]] = {}
    for module, path in MODULES.items():
        if path.name not in ("__init__.py", "__main__.py"):
            seen.setdefault(path.name, []).append(module)
    assert {name: mods for name, mods in seen.items() if len(mods) > 1} == {}


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



# An import inside a function hides a dependency from the top of its module; it is allowed only where it defers a
# heavy or optional module (plotly, rich.markdown, Ray, fsspec, the message index, a room a command alone needs), and
# then says so on the same line, in one form: ``# deferred: <what> (<why>)`` or ``# deferred: cycle <a> -> <b>``.
DEFERRED = "# deferred:"
# Files whose bytes the committed message index pins (knowledge/indexfile.py harvester_sha256): editing one makes
# the index stale until `python -m diagnose.knowledge.harvest` runs again, so their imports move at the next harvest.
PINNED = {"diagnose/knowledge/harvest/__main__.py"}


def _unexplained_imports(path: Path) -> list[tuple[int, str]]:
    """(line, statement) of every import inside a function of ``path`` whose lines carry no ``# deferred:`` reason."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    out = []

    def walk(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if in_function and isinstance(child, (ast.Import, ast.ImportFrom)):
                if not any(DEFERRED in line for line in lines[child.lineno - 1:child.end_lineno]):
                    out.append((child.lineno, ast.unparse(child)))
            walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    walk(ast.parse(text), False)
    return out


def test_every_import_inside_a_function_says_why_it_is_deferred():
    bad = [f"{path.relative_to(ROOT)}:{line}: {stmt}" for path in MODULES.values()
           if path.relative_to(ROOT).as_posix() not in PINNED for line, stmt in _unexplained_imports(path)]
    assert not bad, (
        "imports inside functions without a reason; move each to the top of its module, or, when it defers a heavy "
        "or optional module, say why on the same line: `import plotly.graph_objects as go  # deferred: plotly "
        "(4 MB of JS, only for the page)`, `# deferred: start-up (diagnose --help stays fast)` or "
        "`# deferred: cycle <a> -> <b>`:\n" + "\n".join(bad))


def test_the_pinned_files_are_still_pinned():
    """An exemption that outlived its reason is dropped: each pinned file is still one the index hashes."""
    hashed = {p.resolve().relative_to(ROOT).as_posix() for p in harvester_files()}
    assert PINNED <= hashed


def test_the_reason_check_finds_an_import_without_a_reason(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("import os\n\n\ndef f():\n    import re\n    import json  # deferred: start-up (a test)\n"
                      "    from diagnose import (\n        cli,  # deferred: cycle m -> diagnose.cli\n    )\n\n\n"
                      "class C:\n    def g(self):\n        async def h():\n            import gzip\n",
                      encoding="utf-8")
    assert _unexplained_imports(module) == [(5, "import re"), (15, "import gzip")]


# The expert-load rooms (shared/reference/architecture.md): the analysis is a pass, so it reads only the layers
# below it (parsers, knowledge, ingest, scan, the ground); its words are report/load's, which reads only model/,
# the message catalog and report's own helpers; the command alone wires the two with the pipeline.
ROOM_IMPORTS = {
    "diagnose.expertload": ("diagnose.expertload", "diagnose.parsers", "diagnose.knowledge", "diagnose.ingest",
                            "diagnose.scan", "diagnose.model", "diagnose.messages", "diagnose.cache",
                            "diagnose.bounded"),
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
