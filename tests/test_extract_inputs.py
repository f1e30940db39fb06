"""``diagnose extract`` on inputs that hold nothing to read: a path that does not exist is a usage error and
writes nothing; a folder with nothing readable writes the node's partition (what was skipped, and why, for the
fleet step) and exits 4, as ``diagnose PATH...`` does, unless --allow-empty."""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl
from click.testing import CliRunner

from diagnose.cli import main

SAMPLES = Path(__file__).resolve().parents[1] / "samples"


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["extract", *args, "--no-config"], catch_exceptions=False)
    return result.exit_code, result.stderr


def partition(dataset: Path) -> Path:
    found = list(dataset.glob("date=*/cluster=default/node=n1"))
    assert len(found) == 1, list(dataset.rglob("*"))
    return found[0]


def test_a_path_that_does_not_exist_is_a_usage_error_and_writes_nothing(tmp_path: Path):
    dataset = tmp_path / "ds"
    code, err = run(str(tmp_path / "no-such-logs"), "--node", "n1", "--out", str(dataset))
    assert code == 2
    assert "no-such-logs: no such file or directory" in err
    assert not dataset.exists()


def test_one_missing_path_beside_a_readable_one_is_read_as_far_as_it_goes(tmp_path: Path):
    dataset = tmp_path / "ds"
    code, err = run(str(tmp_path / "no-such-logs"), str(SAMPLES / "healthy"), "--node", "n1", "--out", str(dataset))
    assert code == 0, err
    skipped = pl.read_parquet(next(partition(dataset).glob("skipped-*.parquet")))
    assert skipped.filter(pl.col("path").str.ends_with("no-such-logs")).height == 1


def test_a_folder_with_nothing_readable_exits_4_and_keeps_what_was_skipped(tmp_path: Path):
    logs = tmp_path / "logs"
    logs.mkdir()
    target = tmp_path / "elsewhere.log"
    target.write_text("ERROR 12-06 10:00:00 [engine.py:1] EngineCore failed\n")
    os.symlink(target, logs / "server.log")  # links inside a folder are not followed
    dataset = tmp_path / "ds"
    code, err = run(str(logs), "--node", "n1", "--out", str(dataset))
    assert code == 4
    assert "Nothing was analysed" in err and "symbolic link" in err
    skipped = pl.read_parquet(next(partition(dataset).glob("skipped-*.parquet")))
    assert skipped["path"].to_list() == [str(logs / "server.log")]
    code, err = run(str(logs), "--node", "n1", "--out", str(tmp_path / "ds2"), "--allow-empty", "-q")
    assert (code, err) == (0, "")


def test_an_empty_folder_exits_4(tmp_path: Path):
    (tmp_path / "logs").mkdir()
    code, err = run(str(tmp_path / "logs"), "--node", "n1", "--out", str(tmp_path / "ds"))
    assert code == 4
    assert "Nothing was analysed" in err
