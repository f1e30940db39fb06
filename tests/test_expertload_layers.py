"""Rows per block when the map, model_gen_config.json and the dumps' own period disagree (expertload/layers.py).

MTP dumps have one row more per block than the MoE layers (MindIE's ``num_moe_layers`` counts the MTP layer), and
an expert map one layer short of them is normal (vllm-ascend accepts it). Cutting blocks at the map's count would
move every layer's load to another layer: a hot expert planted at layer 10 would show elsewhere with no warning.
When the witnesses cannot all be right the inconsistent input is refused and every format says so."""

from __future__ import annotations

import json
import random
from datetime import date, timedelta
from pathlib import Path

from click.testing import CliRunner

from diagnose.cli import main

R, L, S = 4, 20, 4  # ranks, MoE layers (the MTP row is one more), slots per rank
E = R * S
HOT = (10, 6)  # (layer, expert): 5x the others
DAYS = [date(2026, 11, 2) + timedelta(days=i) for i in range(3)]


def make(root: Path, config_layers: int | None = L + 1, map_layers: int = L, seed: int = 2) -> None:
    rng = random.Random(seed)
    perm = []
    for _ in range(L):
        ids = list(range(E))
        rng.shuffle(ids)
        perm.append([ids[r * S:(r + 1) * S] for r in range(R)])
    placed = perm + [perm[0]]  # the MTP row is placed as layer 0
    for day in DAYS:
        run = [[0] * E for _ in range(L + 1)]
        blocks = []
        for _ in range(3):
            for li in range(L + 1):
                for r in range(R):
                    for s in range(S):
                        e = placed[li][r][s]
                        run[li][r * S + s] += int((5.0 if (li, e) == HOT else 1.0) * 100 * (0.9 + 0.2 * rng.random()))
            blocks.append([list(x) for x in run])
        folder = root / day.isoformat() / "decode"
        folder.mkdir(parents=True)
        if config_layers:
            (folder / "model_gen_config.json").write_text(json.dumps({
                "num_moe_layers": config_layers, "collection_Interval": 8, "num_of_experts": E,
                "num_of_selected_experts": [8], "num_dangling_shared_experts": 0}))
        for r in range(R):
            (folder / f"decode_{r}.csv").write_text("".join(
                ",".join(map(str, b[li][r * S:(r + 1) * S])) + "\n" for b in blocks for li in range(L + 1)))
    (root / "expert_map.json").write_text(json.dumps({"moe_layer_count": map_layers, "layer_list": [
        {"layer_id": li, "device_count": R, "device_list": [{"device_id": r, "device_expert": perm[li % L][r]}
                                                            for r in range(R)]} for li in range(map_layers)]}))


def run(root: Path, fmt: str = "json", *extra: str):
    return CliRunner().invoke(main, ["expert-load", str(root), "--format", fmt, *extra])


def hot(data: dict) -> list[tuple[int, int]]:
    return [(h["layer"], h["expert"]) for h in data["hot_experts"] if h["hot"]]


def test_mtp_dumps_with_a_map_one_layer_short_and_the_config(tmp_path: Path):
    make(tmp_path)
    res = run(tmp_path)
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    w = data["window"]
    assert (w["layers"], w["layers_source"], w["mtp_layers"]) == (L + 1, "config", 1)
    assert hot(data) == [HOT] and data["refused"] == [] and data["notes"] == []
    assert "MTP layer 20 (a row of the dumps the map has none for)" in run(tmp_path, "markdown").stdout


def test_mtp_dumps_with_a_map_one_layer_short_and_no_config(tmp_path: Path):
    make(tmp_path, config_layers=None)
    data = json.loads(run(tmp_path).stdout)
    w = data["window"]
    assert (w["layers"], w["layers_source"], w["mtp_layers"]) == (L + 1, "detected", 1)
    assert hot(data) == [HOT]  # layer 10, not a layer the wrong cut would give


def test_a_config_that_disagrees_with_the_dumps_refuses_them_in_every_format(tmp_path: Path):
    make(tmp_path, config_layers=L)  # a config of a run without MTP beside 21-row blocks
    res = run(tmp_path)
    assert res.exit_code == 4  # nothing analysed: every dump was refused
    data = json.loads(res.stdout)
    assert {r["reason"] for r in data["refused"]} == {"layers_disagree"} and len(data["refused"]) == R * len(DAYS)
    assert any("says 20 rows per block" in n and "repeat every 21 rows" in n for n in data["notes"])
    assert data["layers"] == [] and data["hot_experts"] == []
    assert "says 20 rows per block" in res.stderr and "Traceback" not in res.stderr
    md = run(tmp_path, "markdown").stdout
    assert "says 20 rows per block" in md and "repeat every 21 rows" in md
    html = run(tmp_path, "html").stdout
    assert "says 20 rows per block" in html
    # --layers is the user's word: the blocks are cut as asked, and the disagreement is still said
    data = json.loads(run(tmp_path, "json", "--layers", str(L + 1)).stdout)
    assert hot(data) == [HOT] and data["window"]["layers_source"] == "option"


def test_a_map_two_layers_short_is_not_used(tmp_path: Path):
    make(tmp_path, map_layers=L - 1)
    res = run(tmp_path)
    assert res.exit_code == 0
    data = json.loads(res.stdout)
    assert [r["reason"] for r in data["refused"]] == ["map_layers"]
    assert any("has 19 layers but the dump blocks have 21 rows" in n for n in data["notes"])
    assert data["window"]["placement"] == "contiguous" and data["window"]["layers"] == L + 1
    assert "has 19 layers" in res.stderr
