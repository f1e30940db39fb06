"""Writers for the tools users feed next: SGLang's ``--init-expert-location`` JSON, an msit-ready folder, and the
vllm-ascend / MindIE expert map (``--map-out``). Each output is read back the way its tool reads it (the sources
are named in expertload/export.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from diagnose.cli import main
from test_expertload_layers import DAYS, E, L, R, make

TOP_K = 8


@pytest.fixture(scope="module")
def week(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("mtp-week")
    make(root)  # MindIE dumps, 20 MoE layers + MTP, model_gen_config.json, a map one layer short
    return root


def run(*args: str):
    return CliRunner().invoke(main, ["expert-load", *args])


def test_sglang_init_expert_location_json(week: Path, tmp_path: Path):
    out, mp = tmp_path / "init_expert_location.json", tmp_path / "expert_map.json"
    res = run(str(week), "--format", "json", "--sglang-out", str(out), "--map-out", str(mp), "--dense-layers", "3")
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert list(data) == ["physical_to_logical_map"]  # init_by_mapping(**data) takes this key only
    rows = data["physical_to_logical_map"]
    report = json.loads(res.stdout)
    red = report["recommendation"]["redundant_experts"]
    assert len(rows) == 3 + L and all(len(r) == E + red for r in rows)
    assert rows[0] == [p % E for p in range(E + red)]  # a dense layer: SGLang's trivial placement
    per_gpu = (E + red) // R
    the_map = json.loads(mp.read_text())
    for li, row in enumerate(rows[3:]):
        assert set(row) == set(range(E))  # every logical expert placed
        devices = the_map["layer_list"][li]["device_list"]
        assert row == [e for d in sorted(devices, key=lambda d: d["device_id"]) for e in d["device_expert"]]
        for e in set(row):  # replicas of one expert sit on different GPUs
            gpus = [p // per_gpu for p, x in enumerate(row) if x == e]
            assert len(gpus) == len(set(gpus))
    assert f"--ep-num-redundant-experts {red}" in res.stderr
    # without --dense-layers (and not 58 MoE layers) none is added, and stderr says how to add them
    res = run(str(week), "--format", "json", "--sglang-out", str(out))
    assert len(json.loads(out.read_text())["physical_to_logical_map"]) == L and "--dense-layers" in res.stderr


def msit_reads(folder: Path) -> dict[str, list[list[list[int]]]]:
    """What msit elb's split-CSV loader and runner make of the folder: per stage, the iterations it keeps, each
    [layers][experts] (mindie_csv_loader.py; speculative_moe_runner.py process_split_data)."""
    config = json.loads((folder / "model_gen_config.json").read_text())
    n_layers, k, interval = config["num_moe_layers"], config["num_of_selected_experts"][0], config["collection_Interval"]
    out = {}
    for stage in ("prefill", "decode"):
        files = sorted((int(m.group(1)), f) for f in folder.iterdir() if (m := re.match(rf"{stage}_(\d+)\.csv", f.name)))
        if not files:
            continue
        ranks = [[[int(v) for v in line.split(",")] for line in f.read_text().splitlines()] for _, f in files]
        rows = [sum((r[i] for r in ranks), []) for i in range(len(ranks[0]))]  # ranks joined along the slots
        blocks = [rows[i:i + n_layers] for i in range(0, len(rows) // n_layers * n_layers, n_layers)]
        assert len(blocks) > 1  # msit refuses a single iteration
        iters = [blocks[0]] + [[[b - a for a, b in zip(ra, rb)] for ra, rb in zip(x, y)] for x, y in zip(blocks, blocks[1:])]
        threshold = 2 * len(ranks) * k * interval * n_layers
        out[stage] = [it for it in iters if sum(map(sum, it)) > threshold]
    return out


def test_msit_folder_holds_each_day_of_the_window(week: Path, tmp_path: Path):
    folder = tmp_path / "msit"
    res = run(str(week), "--format", "json", "--msit-out", str(folder))
    assert res.exit_code == 0, res.output
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["decode_0.csv", "decode_1.csv", "decode_2.csv", "decode_3.csv", "model_gen_config.json"]
    config = json.loads((folder / "model_gen_config.json").read_text())
    assert config == {"num_moe_layers": L + 1, "collection_Interval": 8, "num_of_experts": E,
                      "num_of_selected_experts": [TOP_K], "num_dangling_shared_experts": 0}
    iterations = msit_reads(folder)["decode"]
    report = json.loads(res.stdout)
    assert len(iterations) == len(DAYS)  # the block of zeros is dropped, one iteration per day remains
    for it, day in zip(iterations, report["days"]):
        assert [sum(row) for row in it] == [x["tokens"] for x in day["layers"]]
    week_total = [[sum(it[li][e] for it in iterations) for e in range(E)] for li in range(L + 1)]
    assert week_total[:L] == report["heatmap"][:L]


def test_an_unwritable_msit_folder_is_said_and_exits_6(week: Path, tmp_path: Path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    res = run(str(week), "--format", "json", "--msit-out", str(blocker / "msit"))
    assert res.exit_code == 6 and "--msit-out" in res.stderr and "Traceback" not in res.stderr
