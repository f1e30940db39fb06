"""Shared test helpers: run the CLI in-process, and evaluate one rule on an in-memory log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from diagnose.cli import main
from diagnose.engine import builtin_rules_dir, load_rules

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"


@pytest.fixture(scope="session", autouse=True)
def _catalog_cache_in_tmp(tmp_path_factory):
    # The parsed rule catalog is cached for the suite's runs, not in the user's home (diagnose/cache.py).
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path_factory.mktemp("catalog-cache")))
        yield


@pytest.fixture(scope="session", autouse=True)
def _no_inherited_terminal_size():
    # The text report is as wide as $COLUMNS (else 100 in a pipe): a runner that sets it (pytest-xdist's
    # workers set 80) must not change what the tests read. Tests of the width set it themselves.
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("COLUMNS", raising=False)
        mp.delenv("LINES", raising=False)
        yield


@pytest.fixture(scope="session")
def catalog():
    rules, errors = load_rules([builtin_rules_dir()])
    assert not errors, errors
    return {r.id: r for r in rules}


def run_cli(*args: str, input: str | bytes | None = None):
    """Run `diagnose ARGS` in-process; returns click's Result (exit_code, stdout, stderr)."""
    runner = CliRunner()
    return runner.invoke(main, list(args), input=input, catch_exceptions=False)


def run_json(*args: str, input: str | bytes | None = None) -> tuple[int, dict]:
    result = run_cli("--format", "json", *args, input=input)
    return result.exit_code, json.loads(result.stdout)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch) -> Path:
    """A repository root (holds .git) as the working directory: configuration discovery stops here."""
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def ids(report: dict) -> list[str]:
    """The rule ids of a JSON report's findings, in report order."""
    return [f["rule_id"] for f in report["findings"]]
