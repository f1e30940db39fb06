"""`diagnose expert-load` on hostile inputs: values that are not token counts (nan, inf, negative, 1e400, a
5,000-digit number), a million experts in a 7 MB CSV or a map, and .pt files that try to run code or claim absurd
shapes. Each is refused with its reason, listed in the report (counted in its inputs), the rest is counted as if
it were absent, nothing is executed, and the CLI's own peak memory (bench/peak.py) stays small."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl
import pytest

from conftest import ROOT
from expertload_sources import Global, Tensor, save_pt, stat_dump

sys.path.insert(0, str(ROOT / "bench"))
try:
    import peak
finally:
    sys.path.pop(0)

MAX_RSS_MB = 500
DAY = "2026-11-03"


def _good(root: Path) -> None:
    """Two ranks of 2 layers x 2 slots, two blocks: a small healthy dump to count beside the hostile one."""
    for r in range(2):
        folder = root / DAY / "decode"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"decode_{r}.csv").write_text("1,2\n3,4\n5,9\n7,8\n")


def _cli(root: Path, *extra: str) -> tuple[dict, str, dict]:
    proc, own = peak.run([sys.executable, "-m", "diagnose", "expert-load", str(root), "--format", "json",
                          "--layers", "2", *extra], capture_output=True, text=True, cwd=root)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert own is not None and own["maxrss_mb"] < MAX_RSS_MB, own
    return json.loads(proc.stdout), proc.stderr, own


CELLS = {
    "nan": ("1,2\n3,nan\n5,9\n7,8\n", "bad_cell"),
    "inf": ("1,2\n3,4\ninf,9\n7,8\n", "bad_cell"),
    "negative": ("1,2\n3,-4\n5,9\n7,8\n", "negative"),
    "1e400": ("1,2\n3,4\n5,1e400\n7,8\n", "bad_cell"),
    "5000 digits": ("1,2\n3,4\n5," + "9" * 5000 + "\n7,8\n", "huge"),
    "ragged": ("1,2\n3,4,5\n5,9\n7,8\n", "ragged"),
}


@pytest.mark.parametrize("case", sorted(CELLS))
def test_a_value_that_is_not_a_token_count_refuses_its_file_and_changes_nothing_else(tmp_path: Path, case: str):
    text, code = CELLS[case]
    _good(tmp_path / "clean")
    _good(tmp_path / "hostile")
    (tmp_path / "hostile" / DAY / "decode" / "decode_2.csv").write_text(text)
    clean, _, _ = _cli(tmp_path / "clean")
    data, err, _ = _cli(tmp_path / "hostile")
    assert [(Path(r["path"]).name, r["reason"]) for r in data["refused"]] == [("decode_2.csv", code)]
    assert "decode_2.csv" in err and "not counted" in err  # said on standard error too
    # the loads and the suggested map are those of the clean inputs: the bad file adds nothing
    assert data["layers"] == clean["layers"] and data["heatmap"] == clean["heatmap"]
    assert data["recommendation"]["expert_map"] == clean["recommendation"]["expert_map"]


def test_a_million_experts_in_a_7_mb_csv_is_refused_from_its_first_line(tmp_path: Path):
    _good(tmp_path)
    row = ",".join(["0"] * 1_000_000) + "\n"
    (tmp_path / DAY / "decode" / "decode_2.csv").write_text(row * 4)  # 8 MB
    data, _, own = _cli(tmp_path)
    assert [(Path(r["path"]).name, r["reason"]) for r in data["refused"]] == [("decode_2.csv", "too_wide")]
    assert data["window"]["ranks"] == 2 and own["maxrss_mb"] < 300


def test_a_map_of_a_million_experts_is_refused(tmp_path: Path):
    _good(tmp_path)
    m = {"moe_layer_count": 2, "layer_list": [{"layer_id": i, "device_count": 2, "device_list": [
        {"device_id": 0, "device_expert": list(range(0, 1_000_000, 2))},
        {"device_id": 1, "device_expert": list(range(1, 1_000_000, 2))}]} for i in range(2)]}
    (tmp_path / "expert_map.json").write_text(json.dumps(m))
    data, _, _ = _cli(tmp_path)
    assert [r["reason"] for r in data["refused"]] == ["bad_map"]
    assert data["window"]["placement"] == "contiguous" and data["window"]["experts"] == 4


def test_a_pt_file_that_names_a_function_is_refused_and_nothing_runs(tmp_path: Path):
    marker = tmp_path / "ran"
    save_pt(tmp_path / "expert_distribution_recorder_1764000000.0.pt",
            {"rank": 0, "logical_count": Global("os", "system"), "x": f"touch {marker}"})
    save_pt(tmp_path / "expert_distribution_recorder_1764000100.0.pt",
            {"rank": 0, "logical_count": Tensor([0] * 8, (1_000_000_000, 2, 4))})  # a shape its bytes do not hold
    stat_dump(tmp_path, 1764000200.0, [[5, 1, 1, 1], [1, 1, 1, 5]])
    data, err, _ = _cli(tmp_path)
    assert not marker.exists()
    assert sorted(r["reason"] for r in data["refused"]) == ["pt_global", "pt_shape"]
    assert "os.system" in err
    assert data["heatmap"] == [[5, 1, 1, 1], [1, 1, 1, 5]]  # the good dump is counted


def test_sglang_per_pass_dumps_of_every_rank_add_up_through_their_map(tmp_path: Path):
    # 1 layer, 3 physical slots over 2 logical experts (expert 0 replicated); two ranks, two passes each
    from diagnose.expertload.load import load

    phys_map = Tensor([0, 1, 0], (1, 3), "LongStorage")
    for rank, passes in ((0, ([4, 1, 2], [1, 0, 1])), (1, ([0, 3, 0], [2, 2, 2]))):
        records = [{"forward_pass_id": i, "rank": rank, "gatherer_key": "primary",
                    "global_physical_count": Tensor(list(p), (1, 3))} for i, p in enumerate(passes)]
        save_pt(tmp_path / f"expert_distribution_recorder_1764000000.5_{rank}.pt",
                {"records": records, "last_physical_to_logical_map": phys_map})
    loaded = load([str(tmp_path)])
    assert loaded.refused == []
    got = loaded.logical.group_by("expert").agg(pl.col("tokens").sum()).sort("expert")["tokens"].to_list()
    assert got == [12, 6]  # expert 0: slots 0 and 2, 4+2+1+1 + 0+0+2+2; expert 1: 1+0 + 3+2
