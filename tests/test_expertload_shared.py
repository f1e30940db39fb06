"""The shared expert and dangling devices as their own class (MindIE-LLM moe_utils.py:171-216): with
``mix_shared_routing`` every device's slot list ends with id ``n_routed``, and a table may start with dangling
devices (``[0]``) that hold only the shared expert. They are never hot, never in the routed-expert numbers, and shown
apart, with the map and without one (then model_gen_config.json tells them: ``num_of_experts``,
``num_dangling_shared_experts``)."""

from __future__ import annotations

import json
import random
from datetime import date, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from diagnose.cli import main

DANGLING, R, S, L = 2, 4, 4, 6  # dangling devices, routed devices, routed slots per device, MoE layers
E = R * S
HOT = (2, 9)
DAYS = [date(2026, 11, 2) + timedelta(days=i) for i in range(2)]


def make(root: Path, with_map: bool) -> int:
    """Dumps of dangling + routed devices (the shared slot last on each routed one); returns the shared tokens."""
    rng = random.Random(5)
    perm = []
    for _ in range(L):
        ids = list(range(E))
        rng.shuffle(ids) if with_map else None
        perm.append([ids[r * S:(r + 1) * S] for r in range(R)])
    shared_tokens = 0
    for day in DAYS:
        run = {d: [[0] * (1 if d < DANGLING else S + 1) for _ in range(L)] for d in range(DANGLING + R)}
        blocks = {d: [] for d in run}
        for _ in range(3):
            for li in range(L):
                for d in range(DANGLING):
                    v = 900 + int(100 * rng.random())  # the shared expert on a dangling device
                    run[d][li][0] += v
                    shared_tokens += v
                for r in range(R):
                    for s in range(S):
                        e = perm[li][r][s]
                        run[DANGLING + r][li][s] += int((6.0 if (li, e) == HOT else 1.0) * 100 * (0.9 + 0.2 * rng.random()))
                    v = 700 + int(100 * rng.random())  # its shared slot: busier than any routed expert
                    run[DANGLING + r][li][S] += v
                    shared_tokens += v
            for d in run:
                blocks[d].append([list(row) for row in run[d]])
        folder = root / day.isoformat() / "decode"
        folder.mkdir(parents=True)
        (folder / "model_gen_config.json").write_text(json.dumps({
            "num_moe_layers": L, "collection_Interval": 8, "num_of_experts": E, "num_of_selected_experts": [8],
            "num_dangling_shared_experts": DANGLING}, indent=4))
        for d, bl in blocks.items():
            (folder / f"decode_{d}.csv").write_text("".join(",".join(map(str, row)) + "\n" for b in bl for row in b))
    if with_map:
        (root / "expert_map.json").write_text(json.dumps({"moe_layer_count": L, "layer_list": [
            {"layer_id": li, "device_count": DANGLING + R, "device_list":
                [{"device_id": d, "device_expert": [0]} for d in range(DANGLING)]
                + [{"device_id": DANGLING + r, "device_expert": perm[li][r] + [E]} for r in range(R)]}
            for li in range(L)]}, indent=4))
    return shared_tokens


@pytest.mark.parametrize("with_map", [True, False])
def test_shared_expert_and_dangling_devices_are_kept_apart(tmp_path: Path, with_map: bool):
    shared_tokens = make(tmp_path, with_map)
    res = CliRunner().invoke(main, ["expert-load", str(tmp_path), "--format", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    w = data["window"]
    assert (w["experts"], w["ranks"], w["shared_slots"], w["dangling_devices"]) == (E, R, R, DANGLING)
    assert w["shared_tokens"] == shared_tokens
    assert [(h["layer"], h["expert"]) for h in data["hot_experts"] if h["hot"]] == [HOT]
    assert all(h["expert"] < E for h in data["hot_experts"])  # id 16 (the shared one) is no expert of the list
    assert all(len(row) == E for row in data["heatmap"])
    md = CliRunner().invoke(main, ["expert-load", str(tmp_path)]).stdout
    assert "Kept apart" in md and f"{shared_tokens:,} tokens" in md and "2 dangling device(s)" in md
    html = CliRunner().invoke(main, ["expert-load", str(tmp_path), "--format", "html"]).stdout
    assert 'id="apart-0"' in html and "Kept apart" in html
    if with_map:  # the suggested map keeps MindIE's layout: the dangling devices first, the shared id on the others
        devs = data["recommendation"]["expert_map"]["layer_list"][0]["device_list"]
        assert [d["device_expert"] for d in devs[:DANGLING]] == [[0], [0]]
        assert all(d["device_expert"][-1] == E for d in devs[DANGLING:])
