"""The JSON sources of expert load, in their real layouts: SGLang's ``{"logical_count": ...}`` (the form
``--init-expert-location`` accepts back) and MindSpeed-RL's token-collect files (``token_collects_all.json``, 2025
layout; ``eplb_token_collects_<rank>.json``, current), whose counts are running totals across runs."""

from __future__ import annotations

import json
import random
from datetime import date, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from diagnose.cli import main

L, E, R = 8, 32, 4
DAYS = [date(2026, 11, 2) + timedelta(days=i) for i in range(4)]
HOT = {(3, 7): 6.0, (5, 30): 3.0}


def day_counts(rng: random.Random, scale: float = 1.0) -> list[list[int]]:
    return [[int(((HOT.get((li, e), 1.0)) * 200 + 40 * rng.random()) * scale) for e in range(E)] for li in range(L)]


def run(root: Path, *extra: str) -> dict:
    res = CliRunner().invoke(main, ["expert-load", str(root), "--format", "json", *extra])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def expert_ratio(counts: list[list[int]]) -> list[float]:
    return [max(row) / (sum(row) / len(row)) for row in counts]


def add(a: list[list[int]], b: list[list[int]]) -> list[list[int]]:
    return [[x + y for x, y in zip(ra, rb)] for ra, rb in zip(a, b)]


def hot(data: dict) -> set[tuple[int, int]]:
    return {(h["layer"], h["expert"]) for h in data["hot_experts"] if h["hot"]}


def collects(counts: list[list[int]]) -> dict:
    """MindSpeed-RL's file: layer -> expert -> tokens, string keys."""
    return {str(li): {str(e): v for e, v in enumerate(row)} for li, row in enumerate(counts)}


@pytest.mark.parametrize("passes", [None, 3])
def test_sglang_logical_count_json_in_both_shapes(tmp_path: Path, passes: int | None):
    rng = random.Random(1)
    counts = day_counts(rng)
    if passes is None:
        body = counts
    else:  # [passes][layers][experts]: the passes add up
        body = [[[v // passes + (1 if p < v % passes else 0) for v in row] for row in counts] for p in range(passes)]
    folder = tmp_path / "2026-11-05"
    folder.mkdir()
    (folder / "expert_load.json").write_text(json.dumps({"logical_count": body}))
    data = run(tmp_path)
    assert [x["tokens"] for x in data["layers"]] == [sum(r) for r in counts]
    assert [x["imbalance_max_over_mean"] for x in data["layers"]] == pytest.approx(expert_ratio(counts), rel=1e-6)
    assert hot(data) == set(HOT) and data["window"]["days_with_data"] == ["2026-11-05"]
    assert [f["source"] for f in data["files"]] == ["sglang"]


def test_a_sglang_placement_json_is_named_not_read(tmp_path: Path):
    (tmp_path / "2026-11-05").mkdir()
    (tmp_path / "2026-11-05" / "expert_load.json").write_text(json.dumps({"logical_count": day_counts(random.Random(2))}))
    (tmp_path / "init_expert_location.json").write_text(json.dumps({"physical_to_logical_map": [list(range(E))] * L}))
    data = run(tmp_path)
    assert any("physical_to_logical_map" in n and "not read" in n for n in data["notes"])


def test_mindspeed_snapshots_of_a_week_are_differenced(tmp_path: Path):
    """One token_collects_all.json copied out every evening: each copy holds everything since the folder's first
    use (a run before the week included), so a day's load is the copy minus the previous one."""
    rng = random.Random(3)
    before = day_counts(rng, scale=20.0)  # earlier runs into the same folder: not this week's load
    truth, total = {}, before
    for day in DAYS:
        today = day_counts(rng)
        truth[day.isoformat()] = today
        total = add(total, today)
        folder = tmp_path / day.isoformat()
        folder.mkdir()
        (folder / "token_collects_all.json").write_text(json.dumps(collects(total), indent=2))
    data = run(tmp_path)
    firsts = {f["day"]: f["first"] for f in data["files"]}
    assert firsts[DAYS[0].isoformat()] == "mid-run"  # 21 days of counts in the first copy: a baseline
    assert all(firsts[d.isoformat()] == "continues" for d in DAYS[1:])
    days = {d["day"]: d for d in data["days"]}
    assert set(days) == {d.isoformat() for d in DAYS[1:]}
    for d in DAYS[1:]:
        got = days[d.isoformat()]["layers"]
        assert [x["tokens"] for x in got] == [sum(r) for r in truth[d.isoformat()]]
    assert hot(data) == set(HOT)
    # --first-window count takes the first copy as the first day's load (it then holds the earlier runs too)
    counted = run(tmp_path, "--first-window", "count")
    first = next(d for d in counted["days"] if d["day"] == DAYS[0].isoformat())
    assert first["tokens"] == sum(map(sum, add(before, truth[DAYS[0].isoformat()])))


def test_mindspeed_per_rank_files_add_up_and_a_lone_snapshot_counts_whole(tmp_path: Path):
    rng = random.Random(4)
    per_rank = [day_counts(rng, 0.25) for _ in range(R)]
    for r, counts in enumerate(per_rank):
        (tmp_path / f"node{r // 2}").mkdir(exist_ok=True)
        (tmp_path / f"node{r // 2}" / f"eplb_token_collects_{r}.json").write_text(json.dumps(collects(counts)))
    data = run(tmp_path)
    total = per_rank[0]
    for c in per_rank[1:]:
        total = add(total, c)
    assert [x["tokens"] for x in data["layers"]] == [sum(r) for r in total]
    assert {(f["rank"], f["first"]) for f in data["files"]} == {(r, "whole") for r in range(R)}
    assert hot(data) == set(HOT)
    why = data["files"][0]["why"]
    assert why.startswith("a single snapshot of running totals")


@pytest.mark.parametrize("bad", ['{"0": {"0": -5}}', '{"0": {"0": NaN}}', '{"0": {"0": 1.5}}', '{"0": [1, 2]}',
                                 '{"0": {"0": 1' + "0" * 30 + '}}'])
def test_a_hostile_token_collect_file_is_refused(tmp_path: Path, bad: str):
    (tmp_path / "token_collects_all.json").write_text(bad)
    good = tmp_path / "2026-11-05"
    good.mkdir()
    (good / "expert_load.json").write_text(json.dumps({"logical_count": day_counts(random.Random(5))}))
    data = run(tmp_path)
    assert [r["path"].endswith("token_collects_all.json") for r in data["refused"]] == [True]
    assert data["window"]["days_with_data"] == ["2026-11-05"]
