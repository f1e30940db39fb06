"""`diagnose expert-load`: loading MindIE hotspot dumps (running totals, resets, gaps), metrics, placement,
reports, the hotspot parser and EPLB signals of the normal pipeline, and the HTML page in headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from datetime import date
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from diagnose.cli import main
from diagnose.expertload.load import load
from diagnose.expertload.metrics import analyse as analyse_typed
from diagnose.expertload.placement import place_layer, rank_loads, recommend
from diagnose.expertload.readers.maps import map_json
from diagnose.report.load.load_json import render as render_json
from diagnose.parsers.registry import sniff
from diagnose.parsers.lineframe import FileContext, lines_frame
from diagnose.parsers.kinds.expert_hotspot import parse as parse_hotspot
from diagnose.pipeline import RuleFilters, Settings, read
from diagnose.ingest.walk import iter_sources

ROOT = Path(__file__).resolve().parents[1]


def analyse(loaded, *args, **kw) -> dict:
    """The result as the JSON report has it (English words)."""
    return json.loads(render_json(analyse_typed(loaded, *args, **kw)))
SAMPLE = ROOT / "samples" / "expert-load-week" / "dumps"


def _write(root: Path, day: str, stage: str, rank: int, blocks: list[list[list[int]]]) -> None:
    folder = root / day / stage
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{stage}_{rank}.csv").write_text("".join(",".join(map(str, row)) + "\n" for b in blocks for row in b))


@pytest.fixture()
def tiny(tmp_path: Path) -> Path:
    """2 layers, 2 ranks x 2 slots (experts 0-3 contiguous), decode; 11-03 missing; rank 1 missing on 11-02;
    rank 0 restarts (counter reset) inside 11-02."""
    root = tmp_path / "dumps"
    _write(root, "2026-11-01", "decode", 0, [[[10, 20], [5, 5]], [[30, 50], [15, 9]]])
    _write(root, "2026-11-02", "decode", 0, [[[40, 70], [20, 12]], [[5, 6], [1, 2]], [[9, 10], [3, 4]]])
    _write(root, "2026-11-04", "decode", 0, [[[100, 100], [50, 50]], [[110, 130], [52, 58]]])
    _write(root, "2026-11-01", "decode", 1, [[[1, 1], [2, 2]], [[11, 5], [6, 3]]])
    _write(root, "2026-11-04", "decode", 1, [[[0, 0], [0, 0]], [[40, 0], [1, 1]]])
    return root


def _cells(loads: pl.DataFrame, day: str, rank: int) -> list[list[int]]:
    """The day's tokens of one rank per layer and slot (all its dumps of the day summed)."""
    f = (loads.filter((pl.col("day") == date.fromisoformat(day)) & (pl.col("rank") == rank))
         .group_by("layer", "slot").agg(pl.col("tokens").sum()).sort("layer", "slot"))
    return [f.filter(pl.col("layer") == li)["tokens"].to_list() for li in range(2)]


def test_window_loads_are_block_differences_with_reset_and_gaps(tiny: Path):
    loaded = load([str(tiny)])
    assert loaded.n_layers == 2 and loaded.layers_source == "detected"
    # first file of a rank: its first block (total 40) is under twice the next increment (64): the file starts
    # with the service, whose counters run from warm-up, so the first block is load and counts whole
    assert _cells(loaded.loads, "2026-11-01", 0) == [[30, 50], [15, 9]]
    # continues 11-01's last block, then a reset: the block after the reset counts whole
    assert _cells(loaded.loads, "2026-11-02", 0) == [[19, 30], [8, 7]]
    # after the missing day the counters ran on: the first window (274) spans the gap, 5.5x the increment (50)
    assert _cells(loaded.loads, "2026-11-04", 0) == [[10, 30], [2, 8]]
    assert _cells(loaded.loads, "2026-11-01", 1) == [[11, 5], [6, 3]]
    # rank 1 on 11-04: the counters fell (a restart) and the first block is all zeros
    assert _cells(loaded.loads, "2026-11-04", 1) == [[40, 0], [1, 1]]
    assert loaded.loads["tokens"].min() >= 0
    assert sum(f.resets for f in loaded.files) == 1
    first = {(f.day, f.rank): (f.first, f.first_counted, f.chained) for f in loaded.files}
    assert first == {("2026-11-01", 0): ("start", True, False), ("2026-11-02", 0): ("continues", True, True),
                     ("2026-11-04", 0): ("gap", False, False), ("2026-11-01", 1): ("start", True, False),
                     ("2026-11-04", 1): ("start", True, False)}
    stats = {(f.day, f.rank): f for f in loaded.files}
    assert stats[("2026-11-01", 0)].ratio == 0.625 and stats[("2026-11-04", 0)].ratio == 5.48
    assert [(f.windows, f.counted) for f in loaded.files] == [(2, 2), (3, 3), (2, 1), (2, 2), (2, 2)]


def test_metrics_exact_numbers(tiny: Path):
    r = analyse(load([str(tiny)]), since=date(2026, 11, 1), target=1.15, top=3)
    assert r["window"]["since"] == "2026-11-01" and r["window"]["until"] == "2026-11-04"
    assert r["window"]["days_with_data"] == ["2026-11-01", "2026-11-02", "2026-11-04"]
    assert r["missing"] == {"days": ["2026-11-03"], "rank_files": [{"day": "2026-11-02", "stage": "decode", "rank": 1}]}
    l0, l1 = r["layers"]
    # layer 0 experts: 59, 110, 51, 5 (mean 56.25); ranks: 169, 56
    assert l0["tokens"] == 225 and l0["imbalance_max_over_mean"] == pytest.approx(110 / 56.25, rel=1e-7)
    assert l0["cv"] == pytest.approx(0.662253, abs=1e-5)
    assert l0["rank_max_over_mean"] == pytest.approx(169 / 112.5, rel=1e-7)
    # layer 1 experts: 25, 24, 7, 4; ranks 49, 11
    assert l1["imbalance_max_over_mean"] == pytest.approx(25 / 15, rel=1e-7)
    assert l1["rank_max_over_mean"] == pytest.approx(49 / 30, rel=1e-7)
    hot = [(h["layer"], h["expert"], h["tokens"]) for h in r["hot_experts"]]
    assert hot == [(0, 1, 110), (1, 0, 25), (1, 1, 24)]
    assert r["hot_experts"][0]["share"] == pytest.approx(110 / 225, abs=1e-6)
    assert r["hot_experts"][0]["ranks"] == [0]
    # per day, the same per-layer numbers: 11-01 layer 0 experts 30, 50, 11, 5; ranks 80, 16
    d1 = r["days"][0]
    assert d1["day"] == "2026-11-01" and d1["layers"][0]["tokens"] == 96
    assert d1["layers"][0]["imbalance_max_over_mean"] == pytest.approx(50 / 24, rel=1e-7)
    assert d1["layers"][0]["rank_max_over_mean"] == pytest.approx(80 / 48, rel=1e-7)
    assert set(d1["layers"][0]) == set(l0) - {"previous_rank_max_over_mean"}
    c = r["counting"]
    assert (c["windows"], c["counted"], c["not_counted"]) == (11, 10, 1)
    assert c["first_windows"] == {"continues": 1, "gap": 1, "start": 3}
    assert [x["first"] for x in c["first_windows_not_counted"]] == ["gap"]
    rec = r["recommendation"]
    # LPT without replicas: layer 0 -> {110,5} vs {59,51}: 115/112.5; layer 1 -> {25,4} vs {24,7}: 31/30
    assert rec["redundant_experts"] == 0 and rec["reached"]
    assert rec["after"]["max_over_mean_worst_layer"] == pytest.approx(31 / 30, abs=1e-4)
    assert rec["before"]["max_over_mean_worst_layer"] == pytest.approx(49 / 30, abs=1e-6)
    assert rec["current"]["max_over_mean_worst_layer"] == rec["before"]["max_over_mean_worst_layer"]
    assert rec["expert_map"]["layer_list"][0]["device_list"] == [
        {"device_id": 0, "device_expert": [1, 3]}, {"device_id": 1, "device_expert": [0, 2]}]


def test_placement_replicates_hot_expert_on_distinct_ranks():
    loads = [400.0] + [10.0] * 15
    maps = place_layer(loads, 4, 4)
    assert all(len(d) == 5 and len(set(d)) == 5 for d in maps)
    assert sum(d.count(0) for d in maps) == 4  # expert 0 on every rank, once
    assert sorted({e for d in maps for e in d}) == list(range(16))
    rec = recommend([loads], 4, 1.1)
    assert rec["redundant_experts"] == 4 and rec["reached"]
    assert max(rank_loads(loads, rec["maps"][0])) / (sum(loads) / 4) <= 1.1
    assert map_json(rec["maps"])["moe_layer_count"] == 1


def test_sample_week_planted_hot_experts_and_recommendation():
    r = analyse(load([str(SAMPLE)]))
    assert r["window"]["since"] == "2026-11-22" and r["window"]["until"] == "2026-11-28"
    assert r["window"]["layers"] == 6 and r["window"]["ranks"] == 16 and r["window"]["experts"] == 256
    assert r["window"]["placement"].startswith("map:")
    assert [(h["layer"], h["expert"]) for h in r["hot_experts"][:4]] == [(3, 97), (1, 12), (5, 200), (0, 45)]
    assert r["hot_experts"][0]["load_over_mean"] > 15 and r["hot_experts"][0]["previous_load_over_mean"] < 7
    assert r["hot_experts"][3]["decode_tokens"] > r["hot_experts"][3]["prefill_tokens"]  # decode-only hot expert
    assert r["missing"]["days"] == ["2026-11-25"]
    assert r["missing"]["rank_files"] == [{"day": "2026-11-27", "stage": "decode", "rank": 11}]
    assert r["resets"] == 32  # every file of 2026-11-23 restarts its counters once
    # the numbers of the sample's README
    c = r["counting"]
    assert (c["counted"], c["windows"]) == (572, 573)
    assert [(x["day"], x["stage"], x["rank"], x["first"]) for x in c["first_windows_not_counted"]] == [
        ("2026-11-28", "decode", 11, "gap")]
    # the first dumps (11-19, the previous week) and the fresh counters after the missing day start with the service
    assert {f["day"] for f in r["files"] if f["first"] == "start"} == {"2026-11-19", "2026-11-26"}
    assert {f["first"] for f in r["files"] if f["day"] in ("2026-11-19", "2026-11-26")} == {"start"}
    assert c["first_windows"] == {"continues": 158, "gap": 1, "start": 32}
    assert [round(h["load_over_mean"], 2) for h in r["hot_experts"][:4]] == [18.69, 5.93, 4.98, 2.34]
    assert round(r["recommendation"]["before"]["max_over_mean_layer_mean"], 2) == 1.30
    assert round(r["recommendation"]["before"]["max_over_mean_worst_layer"], 2) == 2.05
    assert r["recommendation"]["tried"][0]["redundant_experts"] == 0
    assert r["recommendation"]["tried"][0]["label"].startswith("suggested map, 0 redundant experts (re-arranged")
    rec = r["recommendation"]
    assert rec["redundant_experts"] == 16 and rec["slots_per_rank"] == 17
    assert rec["before"]["max_over_mean_worst_layer"] > 2.0
    assert rec["after"]["max_over_mean_worst_layer"] < 1.05
    for layer in rec["expert_map"]["layer_list"]:
        devs = [d["device_expert"] for d in layer["device_list"]]
        assert all(len(d) == 17 and len(set(d)) == 17 for d in devs)
        assert sorted({e for d in devs for e in d}) == list(range(256))


def test_full_size_58_layers_16_ranks(tmp_path: Path):
    # 58 layers x 256 experts x 16 ranks, no map, layers detected (58 rows per block).
    for day, base in (("2026-11-01", 0), ("2026-11-02", 3)):
        for r in range(16):
            blocks = [[[(base + b + 1) * (1 + (li + s + r) % 5) * (40 if (li, r, s) == (7, 3, 2) else 1)
                        for s in range(16)] for li in range(58)] for b in range(3)]
            _write(tmp_path, day, "prefill", r, blocks)
    loaded = load([str(tmp_path)])
    assert loaded.n_layers == 58
    r = analyse(loaded, top=1)
    assert (r["hot_experts"][0]["layer"], r["hot_experts"][0]["expert"]) == (7, 3 * 16 + 2)
    assert len(r["recommendation"]["expert_map"]["layer_list"]) == 58


def test_cli_formats_and_escaping(tmp_path: Path, tiny: Path):
    evil = tmp_path / '<img src=x onerror=alert(1)>'
    shutil.copytree(tiny, evil)
    runner = CliRunner()
    out = tmp_path / "r.html"
    res = runner.invoke(main, ["expert-load", str(evil), "--since", "2026-11-01", "-o", str(out),
                               "--map-out", str(tmp_path / "map.json")])
    assert res.exit_code == 0, res.output
    page = out.read_text()
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    # plotly.js is inside; nothing is fetched (no script src, no stylesheet link)
    assert not re.search(r"<script[^>]*\ssrc=|<link[^>]*href=", page) and len(page) > 1_000_000
    assert page.count('class="plotly-graph-div"') >= 4
    from diagnose.report.page.plotlyjs import BUNDLE

    assert page.count(BUNDLE.read_text(encoding="utf-8")) == 1  # the cartesian plotly.js, once
    assert json.loads((tmp_path / "map.json").read_text())["moe_layer_count"] == 2
    res = runner.invoke(main, ["expert-load", str(tiny), "--format", "json", "--top", "2"])
    data = json.loads(res.output)
    assert {"window", "layers", "hot_experts", "recommendation"} <= set(data)
    assert {"layer", "imbalance_max_over_mean", "cv"} <= set(data["layers"][0])
    assert {"layer", "expert", "share", "load_over_mean"} <= set(data["hot_experts"][0])
    res = runner.invoke(main, ["expert-load", str(tiny), "--format", "markdown"])
    assert "| 0 | 1 | 1.96 |" in res.output and "2026-11-03" in res.output
    assert "Counted windows: 10 of 11" in res.output and "counters ran on across missing days" in res.output
    res = runner.invoke(main, ["expert-load", str(tmp_path / "nothing-here")])
    assert res.exit_code == 2


def test_layers_from_map_and_bad_input(tmp_path: Path):
    _write(tmp_path, "2026-11-01", "prefill", 0, [[[1, 2], [3, 4], [5, 6]], [[2, 3], [4, 5], [6, 7]]])
    (tmp_path / "2026-11-01" / "prefill" / "prefill_1.csv").write_text("1,2\nnot,numbers,at,all\n")
    m = {"moe_layer_count": 3, "layer_list": [
        {"layer_id": i, "device_count": 2, "device_list": [{"device_id": 0, "device_expert": [3, 2]},
                                                           {"device_id": 1, "device_expert": [1, 0]}]} for i in range(3)]}
    (tmp_path / "expert_map.json").write_text(json.dumps(m))
    loaded = load([str(tmp_path)])
    assert loaded.n_layers == 3 and loaded.layers_source == "map"
    r = analyse(loaded)
    # rank 0 slots hold experts 3 and 2: each got one token per layer in the window
    assert r["heatmap"][0] == [0, 0, 1, 1]


# --- the normal pipeline: hotspot parser and EPLB signals --------------------------------------------

def test_hotspot_parser_last_block_per_layer():
    text = ["100,120,110,90", "50,400,60,70", "210,230,220,200", "100,1200,120,130"]
    ctx = FileContext(path="d/decode/decode_3.csv", node=None, kind="expert-hotspot", mtime=None)
    records, signals = parse_hotspot(lines_frame(text), ctx)
    assert records.height == 4 and records["parsed"].all() and records["rank"].to_list() == [3] * 4
    ratio = signals.filter(pl.col("signal") == "expert_hotspot_max_over_mean").sort("line")
    assert ratio["line"].to_list() == [3, 4]
    assert ratio["engine"].to_list() == ["decode rank 3 layer 0", "decode rank 3 layer 1"]
    assert ratio["value"][1] == pytest.approx(1200 / 387.5)
    bak = FileContext(path="d/decode/decode_3_bak.csv", node=None, kind="expert-hotspot", mtime=None)
    assert parse_hotspot(lines_frame(text), bak)[1].height == 0
    assert sniff("d/prefill/prefill_12.csv", text) == "expert-hotspot"


EPLB_LINES = """\
INFO 05-12 08:40:02 [eplb_worker.py:140] [Expert Hotness] Current: mean=1.233, max=1.870, Updated: mean=1.020, max=1.090
INFO 11-24 10:12:11 [eplb_worker.py:318] [eplb/worker] Expert hotness imbalance, current: mean=1.372 max=2.410, updated: mean=1.041 max=1.122
(APIServer pid=90) INFO 10-02 13:10:00 [eplb_state.py:512] EPLB step: 6000 for model 0: avg_tokens=10388.20, max_tokens=19977, balancedness=0.5200, steps until the next rearrangement: 3000
"""


def test_eplb_signals_both_formats(tmp_path: Path):
    p = tmp_path / "vllm_server.log"
    p.write_text(EPLB_LINES)
    sig = read(iter_sources([str(p)]), Settings(), RuleFilters()).signals
    got = {(r["line"], r["signal"]): r["value"] for r in sig.iter_rows(named=True) if r["signal"].startswith("eplb_")}
    assert got == {
        (1, "eplb_imbalance_current_mean"): 1.233, (1, "eplb_imbalance_current_max"): 1.87,
        (1, "eplb_imbalance_updated_mean"): 1.02, (1, "eplb_imbalance_updated_max"): 1.09,
        (2, "eplb_imbalance_current_mean"): 1.372, (2, "eplb_imbalance_current_max"): 2.41,
        (2, "eplb_imbalance_updated_mean"): 1.041, (2, "eplb_imbalance_updated_max"): 1.122,
        (3, "eplb_balancedness"): 0.52, (3, "eplb_avg_tokens"): 10388.2, (3, "eplb_max_tokens"): 19977.0,
        (3, "eplb_steps_to_rearrangement"): 3000.0,
    }
    from diagnose.commands.expert_load import eplb_lines

    loaded_eplb = eplb_lines(load([str(tmp_path)]).logs)
    assert loaded_eplb.height == 11 - 2  # avg/max tokens are not part of the report's EPLB series


def test_sample_in_normal_report_has_moe_finding():
    res = CliRunner().invoke(main, ["check", str(SAMPLE), "--format", "json"])
    data = json.loads(res.output)
    moe = [f for f in data["findings"] if f["category"] == "moe-load"]
    assert moe and moe[0]["rule_id"] == "MOE001"
    assert "decode rank 6 layer 3" in moe[0]["summary"] or "prefill rank 6 layer 3" in moe[0]["summary"]


# --- the page in a real browser ----------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install -y chromium chromium-driver)")
def test_html_renders_in_headless_chromium(tmp_path: Path, tiny: Path):
    out = tmp_path / "report.html"
    res = CliRunner().invoke(main, ["expert-load", str(tiny), "--since", "2026-11-01", "-o", str(out)])
    assert res.exit_code == 0, res.output
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
           "--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000", "--dump-dom", out.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    dom = proc.stdout
    plots = dom.count('class="js-plotly-plot"') + len(re.findall(r'class="[^"]*js-plotly-plot', dom))
    assert re.search(r'data-plots="(\d+)"', dom), proc.stderr[-2000:]
    assert int(re.search(r'data-plots="(\d+)"', dom).group(1)) == 5  # heatmap, trend, days, ranks, before/after
    assert plots >= 4
    assert dom.count("main-svg") >= 8  # plotly drew its svg layers
    assert re.search(r'data-errors="0"', dom)
    console = [ln for ln in proc.stderr.splitlines() if "CONSOLE" in ln]
    assert not [ln for ln in console if re.search(r"error|Uncaught", ln, re.I)], console


def test_current_map_with_redundant_replicas(tmp_path: Path):
    # 1 layer, 4 experts, 2 ranks x 3 slots; experts 0 and 1 have a replica on each rank.
    m = {"moe_layer_count": 1, "layer_list": [{"layer_id": 0, "device_count": 2, "device_list": [
        {"device_id": 0, "device_expert": [0, 1, 2]}, {"device_id": 1, "device_expert": [3, 0, 1]}]}]}
    (tmp_path / "map.json").write_text(json.dumps(m))
    _write(tmp_path, "2026-11-01", "decode", 0, [[[0, 0, 0]], [[30, 5, 10]]])
    _write(tmp_path, "2026-11-01", "decode", 1, [[[0, 0, 0]], [[1, 20, 7]]])
    r = analyse(load([str(tmp_path)], expert_map=str(tmp_path / "map.json")))
    assert r["heatmap"] == [[50, 12, 10, 1]]  # replicas summed per logical expert
    assert r["layers"][0]["rank_max_over_mean"] == pytest.approx(45 / 36.5, abs=1e-4)  # measured per rank: 45, 28
    assert r["recommendation"]["current_redundant_experts"] == 2
    assert r["hot_experts"][0]["ranks"] == [0, 1]


def test_several_dumps_a_day_chain_in_time_order_even_when_names_sort_the_other_way(tmp_path: Path):
    # 1 layer x 2 slots; the counters run from 0 through both dumps of the day; "evening" sorts before "morning"
    for name, blocks in (("morning", [[[1, 1]], [[3, 2]]]), ("evening", [[[5, 6]], [[9, 7]]])):
        folder = tmp_path / "2026-11-01" / name / "decode"
        folder.mkdir(parents=True)
        (folder / "decode_0.csv").write_text("".join(",".join(map(str, r)) + "\n" for b in blocks for r in b))
        (folder / "decode_0_bak.csv").write_text((folder / "decode_0.csv").read_text())
    loaded = load([str(tmp_path)], layers=1)
    assert _cells(loaded.loads, "2026-11-01", 0)[:1] == [[9, 7]]  # every window of the day, once
    assert [(Path(f.path).parent.parent.name, f.first) for f in loaded.files] == [("evening", "continues"), ("morning", "start")]


def test_snapshot_copies_and_duplicates_add_nothing_twice(tmp_path: Path):
    # the second dump is a longer copy of the first (the collector copies the growing file); a third is identical
    rows = [[[2, 1]], [[4, 3]], [[7, 5]], [[8, 9]]]
    for name, blocks in (("a", rows[:2]), ("b", rows), ("c", rows)):
        folder = tmp_path / "2026-11-01" / name / "prefill"
        folder.mkdir(parents=True)
        (folder / "prefill_0.csv").write_text("".join(",".join(map(str, r)) + "\n" for b in blocks for r in b))
    loaded = load([str(tmp_path)], layers=1)
    assert _cells(loaded.loads, "2026-11-01", 0)[:1] == [[8, 9]]
    assert [(f.first, f.repeated, f.counted) for f in loaded.files] == [("start", 0, 2), ("repeat", 2, 2), ("repeat", 4, 0)]


def test_first_window_threshold_is_a_parameter(tiny: Path):
    # 11-04 rank 0: the window across the missing day is 5.48x the file's increment: counted only above that
    strict = {(f.day, f.rank): f.first for f in load([str(tiny)]).files}
    loose = load([str(tiny)], first_window_max=6.0)
    assert strict[("2026-11-04", 0)] == "gap"
    assert {(f.day, f.rank): f.first for f in loose.files}[("2026-11-04", 0)] == "continues"
    assert _cells(loose.loads, "2026-11-04", 0) == [[101, 120], [49, 54]]  # 110-9, 130-10, 52-3, 58-4
    assert analyse(loose)["counting"]["max_intervals"] == 6.0
