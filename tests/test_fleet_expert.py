"""Fleet mode and the expert load's decisions: the rows per block (model_gen_config.json on one node, the expert map
on another, MTP dumps one row longer than the map), the per-layer EPLB metrics of a node's /metrics snapshots and
the first window's policy reach ``diagnose fleet --expert-load`` through the dataset, so extract-then-fleet gives
the numbers of one ``diagnose expert-load`` over the same nodes; a node whose dumps were cut at rows per block the
fleet's inputs do not give is refused with both numbers, never counted at the wrong rows."""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path

from click.testing import CliRunner

from diagnose.cli import main
from test_expertload_gauges import ascend_snapshot
from test_expertload_layers import DAYS, HOT, L, R, make


def cli(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return res.exit_code, res.stdout, res.stderr


def split(root: Path, groups: tuple = ((0, 1), (2, 3)), configs: tuple = (L + 1, None)) -> list[Path]:
    """The MTP week of test_expertload_layers over nodes (``groups``: the ranks of each), each day's
    model_gen_config.json on the nodes ``configs`` gives rows for (None: no config there). node-a holds the
    expert map (one layer short of the 21-row blocks); node-b /metrics snapshots of two days after the dumps
    (vllm-ascend's per-layer gauges)."""
    week = root / "week"
    make(week)
    nodes = [root / f"node-{chr(ord('a') + i)}" for i in range(len(groups))]
    for csv in sorted(week.rglob("decode_*.csv")):
        n = next(i for i, ranks in enumerate(groups) if int(csv.stem.split("_")[1]) in ranks)
        dest = nodes[n] / "hotspot" / csv.relative_to(week)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(csv, dest)
        if configs[n]:
            config = json.loads((csv.parent / "model_gen_config.json").read_text())
            (dest.parent / "model_gen_config.json").write_text(json.dumps({**config, "num_moe_layers": configs[n]}))
    shutil.copyfile(week / "expert_map.json", nodes[0] / "hotspot" / "expert_map.json")
    for k in (1, 2):
        day = (DAYS[-1] + timedelta(days=k)).isoformat()
        values = [2.2 if li == HOT[0] else 1.05 + 0.01 * li for li in range(L)]
        folder = nodes[1] / "metrics" / day
        folder.mkdir(parents=True)
        (folder / "metrics.prom").write_text(ascend_snapshot(f"{day} 06:00:00", values))
    return nodes


def single(nodes: list[Path], out: Path) -> dict:
    code, _, err = cli("expert-load", *map(str, nodes), "-o", str(out))
    assert code == 0, err
    return json.loads(out.read_text())


def fleet(nodes: list[Path], tmp: Path) -> tuple[dict, str]:
    dataset = str(tmp / "ds")
    for node in nodes:
        code, _, err = cli("extract", str(node), "--node", node.name, "--out", dataset, "--no-config", "-q")
        assert code == 0, err
    out = tmp / "fleet-load.json"
    _, _, err = cli("fleet", dataset, "--no-config", "-q", "--exit-zero", "--expert-load", str(out))
    return json.loads(out.read_text()), err


def numbers(result: dict) -> dict:
    """The report's numbers (the inputs list names files by where they were read)."""
    return {k: v for k, v in result.items() if k not in ("inputs", "files", "generated")}


def test_the_rows_per_block_metrics_and_first_windows_agree_with_one_run(tmp_path: Path):
    nodes = split(tmp_path)
    one = single(nodes, tmp_path / "one.json")
    w = one["window"]
    # the config on node-a says 21 rows (20 MoE layers + MTP), the map on node-a has 20: one MTP layer
    assert (w["layers"], w["layers_source"], w["mtp_layers"]) == (L + 1, "config", 1)
    assert [(h["layer"], h["expert"]) for h in one["hot_experts"] if h["hot"]] == [HOT]
    assert len(w["gauge_days"]) == 2 and one["refused"] == [] and one["notes"] == []
    # node-a's dumps begin with their service (MindIE's config beside them), node-b's take the size test
    firsts = {(Path(f["path"]).parts[-5], f["first"]) for f in one["files"] if f["day"] == DAYS[0].isoformat()}
    assert firsts == {("node-a", "service"), ("node-b", "start")}
    got, err = fleet(nodes, tmp_path)
    assert numbers(got) == numbers(one), err
    assert [f["path"] for f in got["files"]] == [f["path"] for f in one["files"]]


def test_a_node_cut_at_other_rows_is_refused_not_counted(tmp_path: Path):
    nodes = split(tmp_path)
    # node-c: a rank whose dumps hold one block each, with neither config nor map: its own rows are unknown
    node_c = tmp_path / "node-c" / "hotspot" / DAYS[0].isoformat() / "decode"
    node_c.mkdir(parents=True)
    lines = (nodes[1] / "hotspot" / DAYS[0].isoformat() / "decode" / f"decode_{R - 1}.csv").read_text().splitlines()
    (node_c / f"decode_{R}.csv").write_text("\n".join(lines[:L + 1]) + "\n")
    got, _ = fleet([*nodes, tmp_path / "node-c"], tmp_path)
    assert [(Path(r["path"]).name, r["reason"]) for r in got["refused"]] == [(f"decode_{R}.csv", "node_rows")]
    assert any("node node-c decided its dumps' rows per block alone (-;" in n and "give 21" in n
               and "1 of its dumps are not counted" in n for n in got["notes"])
    assert got["window"]["layers"] == L + 1 and got["window"]["ranks"] == R
    assert numbers({**got, "refused": [], "notes": []}) == numbers(single(nodes, tmp_path / "one.json"))


def test_configs_that_disagree_across_nodes_refuse_the_same_dumps_as_one_run(tmp_path: Path):
    # node-b's config is of a run without MTP (20 rows); node-a's and node-c's, the majority, say 21
    nodes = split(tmp_path, ((0, 1), (2,), (3,)), (L + 1, L, L + 1))
    one = single(nodes, tmp_path / "one.json")
    assert {(Path(r["path"]).parts[-5], r["reason"]) for r in one["refused"]} == {("node-b", "layers_disagree")}
    assert any("dump(s) under a config whose num_moe_layers is not 21" in n for n in one["notes"])
    got, err = fleet(nodes, tmp_path)
    assert numbers(got) == numbers(one), err
