"""Write the synthetic expert-load week (deterministic; run from anywhere: python samples/expert-load-week/make.py).

MindIE hotspot dumps of a DeepSeek-V3-like deployment, shrunk to 6 MoE layers so the sample stays small:
256 routed experts, 16 ranks with 16 expert slots each (no redundancy), top-8 routing, prefill and decode.
Each day's folder holds that day's dump files; every file has 3 blocks (6 rows x 16 columns each) of
running totals. Story:

* 2026-11-19 .. 2026-11-21: end of the previous week (the report compares against it);
* 2026-11-22 .. 2026-11-28: the week the report covers;
* planted hot experts: layer 3 expert 97 (20x the layer mean this week, 6x the week before),
  layer 1 expert 12 (6x), layer 5 expert 200 (5x), and layer 0 expert 45 hot in decode only (8x);
* 2026-11-23: the service restarted after the second block, so the counters restart from zero (a reset);
* 2026-11-25: no dump at all (maintenance); the service restarted on 2026-11-26 with fresh counters;
* 2026-11-27: the decode file of rank 11 is missing (the collector lost it);
* one ``_bak.csv`` duplicate (MindIE writes them) that the report must ignore;
* ``expert_map.json``: the current placement (contiguous, expert 16*r+s on rank r slot s).
"""

from __future__ import annotations

import json
import random
import shutil
from datetime import date, timedelta
from pathlib import Path

LAYERS, EXPERTS, RANKS, TOPK, BLOCKS = 6, 256, 16, 8, 3
SLOTS = EXPERTS // RANKS
DAYS = [date(2026, 11, 19) + timedelta(days=i) for i in range(10)]
MISSING_DAY = date(2026, 11, 25)
RESTART_DAY = date(2026, 11, 26)  # fresh counters after the missing day
RESET = (date(2026, 11, 23), 2)  # counters restart from zero before this block
MISSING_FILE = (date(2026, 11, 27), "decode", 11)
WEEK_START = date(2026, 11, 22)
# (layer, expert, factor this week, factor the week before, stages)
HOT = [(3, 97, 20.0, 6.0, ("prefill", "decode")), (1, 12, 6.0, 6.0, ("prefill", "decode")),
       (5, 200, 5.0, 5.0, ("prefill", "decode")), (0, 45, 8.0, 8.0, ("decode",))]
TOKENS = {"prefill": 24000, "decode": 6000}  # tokens per block and layer (each routed to TOPK experts)


def weights(rng: random.Random, day: date, stage: str) -> list[list[float]]:
    out = []
    for layer in range(LAYERS):
        w = [0.6 + 0.8 * rng.random() for _ in range(EXPERTS)]
        for hl, he, now, before, stages in HOT:
            if hl == layer and stage in stages:
                # Factor over the mean of the others: w_e = f * mean(w) approximately.
                w[he] = (now if day >= WEEK_START else before) * sum(w) / EXPERTS
        out.append(w)
    return out


def block_counts(rng: random.Random, w: list[list[float]], stage: str) -> list[list[int]]:
    rows = []
    for layer in range(LAYERS):
        total = sum(w[layer])
        scale = TOKENS[stage] * TOPK / total
        rows.append([int(x * scale * (0.95 + 0.1 * rng.random())) for x in w[layer]])
    return rows


def main() -> None:
    here = Path(__file__).resolve().parent
    out = here / "dumps"
    if out.exists():
        shutil.rmtree(out)
    rng = random.Random(20261129)
    running = {(s, r): [[0] * SLOTS for _ in range(LAYERS)] for s in TOKENS for r in range(RANKS)}
    for day in DAYS:
        if day == MISSING_DAY:
            continue
        if day == RESTART_DAY:
            running = {k: [[0] * SLOTS for _ in range(LAYERS)] for k in running}
        for stage in TOKENS:
            w = weights(random.Random(f"{day}-{stage}"), day, stage)
            blocks = {r: [] for r in range(RANKS)}
            for b in range(BLOCKS):
                counts = block_counts(rng, w, stage)
                for r in range(RANKS):
                    cur = running[(stage, r)]
                    if (day, b) == RESET:
                        cur = [[0] * SLOTS for _ in range(LAYERS)]
                    cur = [[cur[l][s] + counts[l][r * SLOTS + s] for s in range(SLOTS)] for l in range(LAYERS)]
                    running[(stage, r)] = cur
                    blocks[r].append(cur)
            folder = out / day.isoformat() / stage
            folder.mkdir(parents=True, exist_ok=True)
            for r in range(RANKS):
                if (day, stage, r) == MISSING_FILE:
                    continue
                text = "".join(",".join(map(str, row)) + "\n" for blk in blocks[r] for row in blk)
                (folder / f"{stage}_{r}.csv").write_text(text)
                if day == DAYS[-1] and r == 0:
                    (folder / f"{stage}_{r}_bak.csv").write_text(text)
    placement = {"moe_layer_count": LAYERS, "layer_list": [
        {"layer_id": l, "device_count": RANKS,
         "device_list": [{"device_id": r, "device_expert": list(range(r * SLOTS, (r + 1) * SLOTS))} for r in range(RANKS)]}
        for l in range(LAYERS)]}
    (out / "expert_map.json").write_text(json.dumps(placement, indent=1) + "\n")


if __name__ == "__main__":
    main()
