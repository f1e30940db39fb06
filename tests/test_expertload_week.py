"""`diagnose expert-load` on a generated full-size week with known loads: 16 ranks x 58 MoE layers x 16 slots,
7 days, two dumps a day, the service restarted every day (each day's counters start from zero), byte-identical
``*_bak.csv`` copies beside the dumps, a shuffled expert map. The weekly and the per-day per-layer max/mean of
the JSON report must equal the truth; files that begin mid-run must not be counted, and the reports say so.

``make_week`` is also used by the browser tests (tests/test_expertload_browser.py)."""

from __future__ import annotations

import json
import random
from datetime import date, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from diagnose.cli import main
from diagnose.expertload.load import load
from diagnose.expertload.metrics import analyse
from diagnose.report.load.load_json import render as render_json
from diagnose.report.load.load_markdown import render as render_markdown
from diagnose.report.load.load_page import render as render_html

R, L, S = 16, 58, 16
E = R * S
FIRST_DAY = date(2026, 11, 2)
DAYS = [FIRST_DAY + timedelta(days=i) for i in range(7)]
DUMPS = ("00", "12")  # folders <day>_00 and <day>_12: two dumps a day
BLOCKS = 3  # blocks (appends) per dump
HOT = {(7, 5): 18.7, (30, 100): 2.35, (41, 200): 6.0}  # (layer, expert): load over the others' mean


def make_week(root: Path, *, mode: str = "rotate", seed: int = 7, mid_run_first_day: bool = False,
              drop: tuple[tuple[date, str, int], ...] = (), missing_days: tuple[date, ...] = ()) -> dict:
    """Write the week under ``root``; return the truth: ``intervals[day]``, the load of each of the day's
    windows (``[layer][rank][slot]``, in order), and ``map`` (``[layer][rank][slot]`` -> logical expert).

    ``mode``: "rotate" (each dump holds the blocks written since the previous dump) or "snapshot" (each dump is a
    copy of the growing file: the second of a day repeats the first's blocks). ``mid_run_first_day``: the service
    had run for 40 windows before the first dump, so the first day's counters start at an unknown baseline.
    ``drop``: (day, dump, rank) files the collector lost. ``missing_days``: days with no dump at all.
    """
    rng = random.Random(seed)
    perm = []
    for _ in range(L):
        ids = list(range(E))
        rng.shuffle(ids)
        perm.append([ids[r * S:(r + 1) * S] for r in range(R)])
    base = [[0.6 + 0.8 * rng.random() for _ in range(E)] for _ in range(L)]
    for (li, e), f in HOT.items():
        base[li][e] = f * (sum(base[li]) - base[li][e]) / (E - 1)

    def interval() -> list[list[list[int]]]:
        traffic = 0.6 + 0.8 * rng.random()
        return [[[int(base[li][perm[li][r][s]] * traffic * 40 * (0.9 + 0.2 * rng.random())) for s in range(S)]
                 for r in range(R)] for li in range(L)]

    intervals: dict[str, list] = {}
    dropped = set(drop)
    for day in DAYS:
        if day in missing_days:
            continue
        run = [[[0] * S for _ in range(R)] for _ in range(L)]  # the service restarts: counters from zero
        if mid_run_first_day and day == DAYS[0]:
            run = add_cells(*[interval() for _ in range(40)])
        steps, blocks = [], []
        for _ in range(2 * BLOCKS):
            steps.append(interval())
            run = add_cells(run, steps[-1])
            blocks.append(run)
        intervals[day.isoformat()] = steps
        for k, hh in enumerate(DUMPS):
            part = blocks[k * BLOCKS if mode == "rotate" else 0:(k + 1) * BLOCKS]
            folder = root / f"{day.isoformat()}_{hh}" / "decode"
            folder.mkdir(parents=True, exist_ok=True)
            for r in range(R):
                if (day, hh, r) in dropped:
                    continue
                text = "".join(",".join(map(str, b[li][r])) + "\n" for b in part for li in range(L))
                (folder / f"decode_{r}.csv").write_text(text)
                (folder / f"decode_{r}_bak.csv").write_text(text)
    placement = {"moe_layer_count": L, "layer_list": [
        {"layer_id": li, "device_count": R,
         "device_list": [{"device_id": r, "device_expert": perm[li][r]} for r in range(R)]} for li in range(L)]}
    (root / "expert_map.json").write_text(json.dumps(placement))
    return {"intervals": intervals, "map": perm}


def add_cells(*cells: list) -> list:
    return [[[sum(c[li][r][s] for c in cells) for s in range(S)] for r in range(R)] for li in range(L)]


def windows(steps: list, which: dict[int, range] | None = None) -> list:
    """The load of the chosen windows of a day: ``which`` maps a rank to its counted windows (default all)."""
    which = which or {}
    return [[[sum(steps[i][li][r][s] for i in which.get(r, range(len(steps)))) for s in range(S)] for r in range(R)]
            for li in range(L)]


def truth_layers(cells: list, perm: list) -> list[dict]:
    """Per layer: tokens, expert-level and rank-level max/mean of ``cells[layer][rank][slot]``."""
    out = []
    for li in range(L):
        experts = [0] * E
        for r in range(R):
            for s in range(S):
                experts[perm[li][r][s]] += cells[li][r][s]
        ranks = [sum(cells[li][r]) for r in range(R)]
        total = sum(experts)
        out.append({"tokens": total, "imbalance_max_over_mean": max(experts) / (total / E),
                    "rank_max_over_mean": max(ranks) / (total / R)})
    return out


def report(root: Path, fmt: str = "json", *extra: str) -> str:
    res = CliRunner().invoke(main, ["expert-load", str(root), "--format", fmt, *extra])
    assert res.exit_code == 0, res.output
    return res.output


def assert_layers_match(got: list[dict], want: list[dict], where: str) -> None:
    assert len(got) == len(want) == L, where
    for g, w in zip(got, want):
        li = g["layer"]
        assert g["tokens"] == w["tokens"], (where, li)
        for key in ("imbalance_max_over_mean", "rank_max_over_mean"):
            assert g[key] == pytest.approx(w[key], rel=1e-6), (where, li, key)


@pytest.mark.parametrize("mode", ["rotate", "snapshot"])
def test_week_of_daily_restarts_is_exact_on_every_layer_and_day(tmp_path: Path, mode: str):
    truth = make_week(tmp_path, mode=mode)
    data = json.loads(report(tmp_path))
    assert data["window"]["since"] == DAYS[0].isoformat() and data["window"]["until"] == DAYS[-1].isoformat()
    assert data["window"]["layers"] == L and data["window"]["ranks"] == R and data["window"]["placement"].startswith("map:")
    perm, per_day = truth["map"], {d: windows(steps) for d, steps in truth["intervals"].items()}
    assert_layers_match(data["layers"], truth_layers(add_cells(*per_day.values()), perm), "week")
    assert [d["day"] for d in data["days"]] == [d.isoformat() for d in DAYS]
    for d in data["days"]:
        assert_layers_match(d["layers"], truth_layers(per_day[d["day"]], perm), d["day"])
        assert d["tokens"] == sum(x["tokens"] for x in d["layers"])
        ratios = [x["rank_max_over_mean"] for x in d["layers"]]
        assert d["rank_max_over_mean_worst_layer"] == pytest.approx(max(ratios), rel=1e-9)
    # the trend cells are the per-day numbers
    trend = {(t["day"], t["layer"]): t["rank_max_over_mean"] for t in data["trend"]}
    assert all(trend[(d["day"], x["layer"])] == x["rank_max_over_mean"] for d in data["days"] for x in d["layers"])
    c = data["counting"]
    files = 7 * 2 * R
    assert c["files"] == files and c["not_counted"] == 0 and c["first_windows_not_counted"] == []
    # the first dump of the week starts with the service; every later first dump of a day follows a restart
    if mode == "rotate":
        assert c["first_windows"] == {"continues": 7 * R, "restart": 6 * R, "start": R}
        assert c["windows"] == c["counted"] == files * BLOCKS
    else:  # the second dump of a day repeats the first dump's 3 blocks, then adds 3
        assert c["first_windows"] == {"repeat": 7 * R, "restart": 6 * R, "start": R}
        assert c["counted"] == files * BLOCKS and c["repeated"] == 7 * R * BLOCKS
    starts = [f for f in data["files"] if f["first"] == "start"]
    assert {f["day"] for f in starts} == {DAYS[0].isoformat()} and all(0 < f["ratio"] <= 2 for f in starts)
    # the byte-identical *_bak.csv copies are not counted twice (the numbers above are exact)
    assert not any(f["path"].endswith("_bak.csv") for f in data["files"])
    # the hot experts are found through the shuffled map
    assert [(h["layer"], h["expert"]) for h in data["hot_experts"][:3]] == [(7, 5), (41, 200), (30, 100)]


@pytest.mark.slow  # a week of dumps read three ways: about 10 s
def test_files_that_begin_mid_run_are_not_counted_and_the_reports_say_so(tmp_path: Path):
    # The collector started on a service that had run for 40 windows: the first day's first dumps begin
    # mid-run, their first block covers an unknown span. Rank 9 also lost its first dump of that day, so its
    # second dump is its first file: its first block holds the baseline and windows 1-4.
    truth = make_week(tmp_path, mid_run_first_day=True, drop=((DAYS[0], "00", 9),))
    result = analyse(load([str(tmp_path)]))
    data = json.loads(render_json(result))
    day0 = DAYS[0].isoformat()
    c = data["counting"]
    nc = {(x["day"], x["rank"]): x for x in c["first_windows_not_counted"]}
    assert set(nc) == {(day0, r) for r in range(R)}
    assert all(x["first"] == "mid-run" and "unknown span" in x["why"] and x["ratio"] > 2 for x in nc.values())
    assert nc[(day0, 9)]["path"].endswith(f"{day0}_12/decode/decode_9.csv")
    assert c["not_counted"] == R and c["counted"] == c["windows"] - R
    # every day is exact on the windows that can be counted: day 1 from window 2 (rank 9 from window 5)
    perm = truth["map"]
    want = {d: windows(steps) for d, steps in truth["intervals"].items()}
    want[day0] = windows(truth["intervals"][day0], {r: range(4, 6) if r == 9 else range(1, 6) for r in range(R)})
    for d in data["days"]:
        assert_layers_match(d["layers"], truth_layers(want[d["day"]], perm), d["day"])
    assert_layers_match(data["layers"], truth_layers(add_cells(*want.values()), perm), "week")
    # the Markdown and the HTML page name the files and the reason
    md = render_markdown(result)
    assert "not counted" in md and "begins mid-run" in md and f"{day0}_00/decode/decode_3.csv" in md
    html = render_html(result)
    assert 'id="not-counted"' in html and "begins mid-run" in html and f"{day0}_12/decode/decode_9.csv" in html
