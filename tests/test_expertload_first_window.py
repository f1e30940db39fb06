"""``--first-window count|skip|auto``: the first block of a dump chain, on MindIE dumps in their real layout.

A MindIE dump folder must be empty at start-up (MindIE raises "There should be no CSV files in the hotpot dump
path." otherwise) and rank 0 writes ``model_gen_config.json`` into it (MindIE-LLM flash_causal_deepseekv2.py:
432-457): a dump beside that file begins with its service and its first block is the load of its first append
interval. The week here restarts every day, its first interval after the first start is a burst (3x the usual
traffic, which the old size test took for a file that begins mid-run), and a day is missing, so two dumps start
a chain. ``auto`` counts every window when the config is there, and keeps the size test only without it."""

from __future__ import annotations

import json
import random
from datetime import date, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from diagnose.cli import main

R, L, S = 4, 6, 4
DAYS = [date(2026, 11, 2) + timedelta(days=i) for i in (0, 1, 3, 4)]  # 2026-11-04 has no dump
BLOCKS = 4


def make(root: Path, config: bool = True, seed: int = 3) -> dict[str, list[list[int]]]:
    """Dumps of a service restarted every day; the truth per day: tokens per [layer][slot of all ranks]."""
    rng = random.Random(seed)
    base = [[1.0 + rng.random() for _ in range(R * S)] for _ in range(L)]
    truth = {}
    for di, day in enumerate(DAYS):
        run = [[0] * (R * S) for _ in range(L)]
        blocks, total = [], [[0] * (R * S) for _ in range(L)]
        for b in range(BLOCKS):
            traffic = 3.0 if (di, b) == (0, 0) else 0.9 + 0.2 * rng.random()
            for li in range(L):
                for c in range(R * S):
                    v = int(base[li][c] * traffic * 100)
                    run[li][c] += v
                    total[li][c] += v
            blocks.append([list(row) for row in run])
        truth[day.isoformat()] = total
        folder = root / day.isoformat() / "decode"
        folder.mkdir(parents=True)
        if config:
            (folder / "model_gen_config.json").write_text(json.dumps({
                "num_moe_layers": L, "collection_Interval": 8, "num_of_experts": R * S,
                "num_of_selected_experts": [8], "num_dangling_shared_experts": 0}, indent=4))
        for r in range(R):
            text = "".join(",".join(map(str, blk[li][r * S:(r + 1) * S])) + "\n" for blk in blocks for li in range(L))
            (folder / f"decode_{r}.csv").write_text(text)
            (folder / f"decode_{r}_bak.csv").write_text(text)
    return truth


def run(root: Path, *extra: str) -> dict:
    res = CliRunner().invoke(main, ["expert-load", str(root), "--format", "json", *extra])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def day_tokens(data: dict) -> dict[str, int]:
    return {d["day"]: d["tokens"] for d in data["days"]}


@pytest.fixture
def week(tmp_path: Path) -> tuple[Path, dict]:
    return tmp_path, make(tmp_path)


def test_auto_counts_every_first_block_of_dumps_beside_their_config(week):
    root, truth = week
    data = run(root)
    assert day_tokens(data) == {d: sum(map(sum, t)) for d, t in truth.items()}
    firsts = {(f["day"], f["rank"]): f["first"] for f in data["files"]}
    assert firsts[(DAYS[0].isoformat(), 0)] == "service"  # the burst: 3x the usual first window, still counted
    assert firsts[(DAYS[2].isoformat(), 0)] == "service"  # after the missing day
    assert firsts[(DAYS[1].isoformat(), 0)] == "restart"
    c = data["counting"]
    assert (c["first_window"], c["not_counted"], c["counted"]) == ("auto", 0, c["windows"])
    assert "model_gen_config.json" in c["rule"]
    why = next(f["why"] for f in data["files"] if f["first"] == "service")
    assert why.startswith("begins with its service")


def test_without_the_config_the_size_test_drops_the_burst(tmp_path: Path):
    truth = make(tmp_path, config=False)
    data = run(tmp_path, "--layers", str(L))
    day0 = DAYS[0].isoformat()
    not_counted = {(x["day"], x["rank"]): x for x in data["counting"]["first_windows_not_counted"]}
    assert set(not_counted) == {(day0, r) for r in range(R)}
    assert all(x["first"] == "mid-run" and x["ratio"] > 2 for x in not_counted.values())
    got = day_tokens(data)
    assert got[day0] < sum(map(sum, truth[day0])) and got[DAYS[1].isoformat()] == sum(map(sum, truth[DAYS[1].isoformat()]))


def test_skip_and_count_are_the_user_s_choice(week):
    root, truth = week
    skip = run(root, "--first-window", "skip")
    nc = {(x["day"], x["first"]) for x in skip["counting"]["first_windows_not_counted"]}
    assert nc == {(DAYS[0].isoformat(), "skip"), (DAYS[2].isoformat(), "skip")}
    assert skip["counting"]["not_counted"] == 2 * R and "--first-window skip" in skip["counting"]["rule"]
    count = run(root, "--first-window", "count")
    assert day_tokens(count) == {d: sum(map(sum, t)) for d, t in truth.items()}
    assert {f["first"] for f in count["files"]} == {"count", "restart"}
    md = CliRunner().invoke(main, ["expert-load", str(root), "--first-window", "skip"]).stdout
    assert "first block not counted (--first-window skip)" in md


def test_a_bad_choice_is_a_usage_error(week):
    res = CliRunner().invoke(main, ["expert-load", str(week[0]), "--first-window", "sometimes"])
    assert res.exit_code == 2 and "Traceback" not in res.output
