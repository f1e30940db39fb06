"""Bounded memory on hostile big inputs: a 2 GB decompression bomb and a file with one 2 GB line cost no more
memory than a small bundle, and the run says what it refused. The inputs are made on the fly (bench/bench_bombs.py);
the large cases are slow, a small bomb and a small long line run by default."""

from __future__ import annotations

import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
try:
    import bench_bombs
finally:
    sys.path.pop(0)

MAX_RSS_MB = 500


def _case(name: str, size: int, folder) -> dict:
    make, expect = bench_bombs.CASES[name]
    row = bench_bombs.run_case(name, make(folder, size), folder)
    assert "Traceback" not in row["said"]
    assert expect in row["said"], row  # it says what it refused
    # The CLI's own peak (bench/peak.py), not this pytest process's, which a child's ru_maxrss would start from.
    assert row["peak_rss_mb"] is not None and row["peak_rss_mb"] < MAX_RSS_MB, row
    if name.startswith("line") and name != "line-table":
        assert row["exit"] == 1 and row["oom_found"], row  # the line after the huge one is still read
    else:  # nothing else to read (4), or a table read in part (5): diagnose/commands/exitcodes.py
        assert row["exit"] == (4 if name.startswith("bomb") else 5), row
    return row


@pytest.mark.parametrize("name", ["bomb-gz", "line-plain"])
def test_a_small_bomb_or_long_line_is_refused_while_read(tmp_path, name):
    _case(name, 80 * 1024 * 1024, tmp_path)  # past the bomb floor (64 MiB) and 20 times the line limit


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(bench_bombs.CASES))
def test_two_gigabytes_stay_under_500_mb(tmp_path, name):
    _case(name, 2_000_000_000, tmp_path)
