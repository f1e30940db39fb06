"""The per-layer EPLB metrics give the expert-load report a per-layer daily trend where no dump exists:
vllm-ascend's ``eplb:expert_hotness:imbalance{layer,phase,rank}`` gauges and SGLang's
``sglang:eplb_gpu_physical_count{layer}`` histogram, scraped into ``/metrics`` snapshot files (``date; curl``)."""

from __future__ import annotations

import json
import random
from datetime import date, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from diagnose.cli import main
from test_expertload_layers import make as make_dumps

L = 12
DAYS = [date(2026, 11, 2) + timedelta(days=i) for i in range(5)]


def ascend_snapshot(when: str, values: list[float]) -> str:
    body = [f"{when}", "# HELP eplb:expert_hotness:current_max EPLB expert hotness",
            "# TYPE eplb:expert_hotness:current_max gauge",
            f'eplb:expert_hotness:current_max{{phase="all",rank="0"}} {max(values)}',
            "# HELP eplb:expert_hotness:imbalance EPLB per-layer imbalance", "# TYPE eplb:expert_hotness:imbalance gauge"]
    for li, v in enumerate(values):
        body.append(f'eplb:expert_hotness:imbalance{{layer="{li}",phase="current",rank="0"}} {v}')
        body.append(f'eplb:expert_hotness:imbalance{{layer="{li}",phase="update",rank="0"}} {round(1 + (v - 1) / 4, 4)}')
    return "\n".join(body) + "\n"


def write_ascend_week(root: Path, days: list[date], seed: int = 1) -> dict[str, list[float]]:
    """Four scrapes a day of one EPLB cycle each; layer 5 is persistently skewed. Truth: the day's mean per layer."""
    rng = random.Random(seed)
    truth = {}
    for day in days:
        scrapes = [[round((2.4 if li == 5 else 1.04) + 0.08 * rng.random(), 4) for li in range(L)] for _ in range(4)]
        truth[day.isoformat()] = [sum(s[li] for s in scrapes) / 4 for li in range(L)]
        folder = root / "metrics" / day.isoformat()
        folder.mkdir(parents=True)
        text = "".join(ascend_snapshot(f"{day.isoformat()} {6 * k:02d}:00:00", s) for k, s in enumerate(scrapes))
        (folder / "metrics.prom").write_text(text)
    return truth


def run(root: Path, fmt: str = "json", *extra: str):
    res = CliRunner().invoke(main, ["expert-load", str(root), "--format", fmt, *extra])
    assert res.exit_code == 0, res.output
    return res


def test_vllm_ascend_gauges_alone_give_a_per_layer_week(tmp_path: Path):
    truth = write_ascend_week(tmp_path, DAYS)
    data = json.loads(run(tmp_path).stdout)
    w = data["window"]
    assert w["gauge_days"] == [d.isoformat() for d in DAYS] and w["layers"] == L and w["layers_source"] == "gauge"
    cells = {(t["day"], t["layer"]): t for t in data["trend"]}
    for d, values in truth.items():
        for li, v in enumerate(values):
            assert cells[(d, li)]["rank_max_over_mean"] == pytest.approx(v, rel=1e-6)
            assert cells[(d, li)]["source"] == "gauge"
    week = [sum(truth[d][li] for d in truth) / len(truth) for li in range(L)]
    assert [x["rank_max_over_mean"] for x in data["layers"]] == pytest.approx(week, rel=1e-6)
    assert data["summary"]["layers_over_target"] == [5]
    assert data["missing"]["days"] == ["2026-10-31", "2026-11-01"] and data["hot_experts"] == []  # a 7-day window
    # the summary gauge stays in the EPLB table; the per-layer series does not flood it
    assert set(data["eplb"]["signals"]) == {"eplb_imbalance_current_max"}
    md = run(tmp_path, "markdown").stdout
    assert "from the EPLB metrics" in md and DAYS[0].isoformat() in md
    html = run(tmp_path, "html").stdout
    assert "from the EPLB metrics" in html and 'id="plot-trend"' in html


def test_days_without_a_dump_take_the_gauges(tmp_path: Path):
    make_dumps(tmp_path)  # MindIE dumps on 2026-11-02 .. 04, 20 MoE layers + MTP, hot expert at layer 10
    gauge_days = [date(2026, 11, 5), date(2026, 11, 6)]
    write_ascend_week(tmp_path, gauge_days)
    data = json.loads(run(tmp_path).stdout)
    w = data["window"]
    assert w["days_with_data"] == ["2026-11-02", "2026-11-03", "2026-11-04"]
    assert w["gauge_days"] == ["2026-11-05", "2026-11-06"] and w["layers_source"] == "config"
    sources = {d["day"]: d["source"] for d in data["days"]}
    assert sources == {"2026-11-02": "dump", "2026-11-03": "dump", "2026-11-04": "dump", "2026-11-05": "gauge",
                       "2026-11-06": "gauge"}
    assert data["missing"]["days"] == ["2026-10-31", "2026-11-01"]  # not 11-05, 11-06: they have the metrics
    assert [(h["layer"], h["expert"]) for h in data["hot_experts"] if h["hot"]] == [(10, 6)]  # from the dumps alone


def sglang_snapshot(when: str, counts: list[list[int]]) -> str:
    lines = [when, "# HELP sglang:eplb_gpu_physical_count The selected count of physical experts on each layer and GPU rank.",
             "# TYPE sglang:eplb_gpu_physical_count histogram"]
    for li, row in enumerate(counts):
        acc = 0
        for r, c in enumerate(row):
            acc += c
            lines.append(f'sglang:eplb_gpu_physical_count_bucket{{layer="{li}",le="{float(r)}"}} {float(acc)}')
        lines.append(f'sglang:eplb_gpu_physical_count_bucket{{layer="{li}",le="+Inf"}} {float(acc)}')
        lines.append(f'sglang:eplb_gpu_physical_count_count{{layer="{li}"}} {float(acc)}')
        lines.append(f'sglang:eplb_gpu_physical_count_sum{{layer="{li}"}} {float(sum(r * c for r, c in enumerate(row)))}')
    return "\n".join(lines) + "\n"


def test_sglang_histogram_increments_per_day(tmp_path: Path):
    """Counts since the server started: a day's load per layer and rank is the day's increase; a restart on the
    third day starts the counts again."""
    rng = random.Random(7)
    ranks = 8
    total = [[0] * ranks for _ in range(L)]
    truth: dict[str, list[list[int]]] = {}
    text = ""
    for k, day in enumerate(DAYS[:4]):
        if k == 2:
            total = [[0] * ranks for _ in range(L)]  # the server restarted overnight
        for hh in ("08", "20"):
            inc = [[int((3.0 if (li, r) == (4, 1) else 1.0) * 1000 * (0.95 + 0.1 * rng.random())) for r in range(ranks)]
                   for li in range(L)]
            total = [[a + b for a, b in zip(x, y)] for x, y in zip(total, inc)]
            if k or hh == "20":  # the first scrape is the baseline: its counts span an unknown time
                day_inc = truth.setdefault(day.isoformat(), [[0] * ranks for _ in range(L)])
                for li in range(L):
                    for r in range(ranks):
                        day_inc[li][r] += inc[li][r] if not (k == 2 and hh == "08") else total[li][r]
            text += sglang_snapshot(f"{day.isoformat()} {hh}:00:00", total)
    (tmp_path / "sglang_metrics.txt").write_text(text)
    data = json.loads(run(tmp_path).stdout)
    cells = {(t["day"], t["layer"]): t["rank_max_over_mean"] for t in data["trend"]}
    for d, rows in truth.items():
        for li, row in enumerate(rows):
            assert cells[(d, li)] == pytest.approx(max(row) / (sum(row) / ranks), rel=1e-6), (d, li)
    assert data["summary"]["layers_over_target"] == [4]
