#!/usr/bin/env python3
"""A generated week of expert load, written apart from the tests' generators, and its score: how far each layer's
max/mean in `diagnose expert-load`'s JSON is from the truth, and which planted hot experts it finds.

    python bench/bench_expertload_week.py /tmp/week          # generate, then score
    python bench/bench_expertload_week.py /tmp/week --score  # score an existing folder

MindIE part (``<root>/mindie``): DeepSeek-V3/R1's shape, 16 ranks, 58 MoE layers and an MTP row per block, 16
routed slots and the shared expert (id 256) last on every device, prefill and decode, 7 days, a restart every
morning, ``model_gen_config.json`` in every stage folder, ``_bak`` copies, the evening copy a snapshot of the
growing file (it repeats the morning's blocks), traffic varying 0.4-1.8x with a 3.5x burst in the first interval
of every third day, maps one layer short with the shared id, the placement changed on the fourth day.
SGLang part (``<root>/sglang``): stat dumps twice a day of 61 decoder layers (the first 3 dense, zero) and 256
experts, in a 16-row circular buffer partly filled, the same hot experts shifted by the dense layers.
The truth (``truth.json``): per day and layer, tokens per logical expert and per rank (routed slots only).
"""

from __future__ import annotations

import argparse
import json
import random
import struct
import subprocess
import sys
import zipfile
from array import array
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

R, L, S, E, SHARED = 16, 58, 16, 256, 256
DAYS = [date(2026, 12, 7) + timedelta(days=i) for i in range(7)]
HOT = {(10, 37): 4.38, (25, 200): 2.6, (44, 5): 9.0, (57, 128): 3.1}


def perm_map(rng):
    out = []
    for _ in range(L):
        ids = list(range(E))
        rng.shuffle(ids)
        out.append([ids[r * S:(r + 1) * S] for r in range(R)])
    return out


def weights(rng, hot):
    w = [[0.5 + rng.random() for _ in range(E)] for _ in range(L + 1)]
    for (li, e), f in hot.items():
        w[li][e] = f * (sum(w[li]) - w[li][e]) / (E - 1)
    return w


def mindie(root: Path, seed=101):
    rng = random.Random(seed)
    maps = {DAYS[0]: perm_map(rng), DAYS[3]: perm_map(rng)}
    w = {"decode": weights(rng, HOT), "prefill": weights(rng, {k: v * 0.9 for k, v in HOT.items()})}
    truth = {}
    for di, day in enumerate(DAYS):
        perm = maps[DAYS[3]] if day >= DAYS[3] else maps[DAYS[0]]
        placed = perm + [perm[0]]
        ex = [[0] * E for _ in range(L + 1)]
        rk = [[0] * R for _ in range(L + 1)]
        for stage in ("prefill", "decode"):
            run = [[[0] * (S + 1) for _ in range(R)] for _ in range(L + 1)]
            blocks = []
            for b in range(6):
                burst = b == 0 and di % 3 == 0  # a busy first interval after the morning start
                traffic = (3.5 if burst else 0.4 + 1.4 * rng.random()) * (40 if stage == "decode" else 120)
                for li in range(L + 1):
                    for r in range(R):
                        for s in range(S):
                            e = placed[li][r][s]
                            v = int(w[stage][li][e] * traffic * (0.85 + 0.3 * rng.random()))
                            run[li][r][s] += v
                            ex[li][e] += v
                            rk[li][r] += v
                        run[li][r][S] += int(traffic * E / R * 0.5 * (0.9 + 0.2 * rng.random()))
                blocks.append([[list(c) for c in lay] for lay in run])
            for hh, part in (("06", blocks[:3]), ("18", blocks)):  # the evening copy repeats the morning's blocks
                folder = root / "mindie" / f"{day.isoformat()}_{hh}" / stage
                folder.mkdir(parents=True, exist_ok=True)
                (folder / "model_gen_config.json").write_text(json.dumps({
                    "num_moe_layers": L + 1, "collection_Interval": 8, "num_of_experts": E,
                    "num_of_selected_experts": [8], "num_dangling_shared_experts": 0}, indent=4))
                for r in range(R):
                    text = "".join(",".join(map(str, blk[li][r])) + "\n" for blk in part for li in range(L + 1))
                    (folder / f"{stage}_{r}.csv").write_text(text)
                    (folder / f"{stage}_{r}_bak.csv").write_text(text)
        truth[day.isoformat()] = {"experts": ex, "ranks": rk}
    for day, perm in maps.items():
        m = {"moe_layer_count": L, "layer_list": [{"layer_id": li, "device_count": R, "device_list": [
            {"device_id": r, "device_expert": perm[li][r] + [SHARED]} for r in range(R)]} for li in range(L)]}
        f = root / "mindie" / "maps" / day.isoformat() / "expert_map.json"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(m, indent=4))
    return truth


def pickle_pt(path: Path, rows: int, counts):
    """A torch.save zip of {'rank': 0, 'logical_count': int32 tensor [rows, layers, experts], ...} by hand."""
    n_l, n_e = len(counts), len(counts[0])
    flat = [0] * (rows * n_l * n_e)
    filled = rows - 5
    for li in range(n_l):
        for e in range(n_e):
            v = counts[li][e]
            for r in range(filled):
                flat[(r * n_l + li) * n_e + e] = v // filled + (1 if r < v % filled else 0)

    def s(x: str) -> bytes:
        b = x.encode()
        return b"X" + struct.pack("<I", len(b)) + b

    def tup(t: tuple) -> bytes:
        return b"(" + b"".join(b"J" + struct.pack("<i", v) for v in t) + b"t"

    shape, stride = (rows, n_l, n_e), (n_l * n_e, n_e, 1)
    zero = b"J" + struct.pack("<i", 0)
    pid = (b"(" + s("storage") + b"ctorch\nIntStorage\n" + s("0") + s("cpu") + b"J" + struct.pack("<i", len(flat))
           + b"tQ")
    tensor = (b"ctorch._utils\n_rebuild_tensor_v2\n(" + pid + zero + tup(shape) + tup(stride)
              + b"\x89ccollections\nOrderedDict\n)Rt" + b"R")
    body = (b"\x80\x02}(" + s("rank") + zero + s("logical_count") + tensor
            + s("average_utilization_rate_over_window") + b"Nu.")
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", body)
        z.writestr("archive/byteorder", "little")
        z.writestr("archive/data/0", array("i", flat).tobytes())
        z.writestr("archive/version", "3\n")


def sglang(root: Path, seed=202):
    rng = random.Random(seed)
    hot = {(li + 3, e): f for (li, e), f in HOT.items()}
    moe = weights(rng, {(li - 3, e): f for (li, e), f in hot.items()})[:L]
    w = [[0.0] * E for _ in range(3)] + moe  # the 3 dense layers carry no expert load
    truth = {}
    folder = root / "sglang"
    folder.mkdir(parents=True, exist_ok=True)
    for day in DAYS:
        ex = [[0] * E for _ in range(L + 3)]
        for hh in (9, 21):
            traffic = 0.4 + 1.4 * rng.random()
            counts = [[int(w[li][e] * 500 * traffic * (0.85 + 0.3 * rng.random())) for e in range(E)]
                      for li in range(L + 3)]
            for li in range(L + 3):
                for e in range(E):
                    ex[li][e] += counts[li][e]
            ts = datetime(day.year, day.month, day.day, hh, tzinfo=timezone.utc).timestamp()
            pickle_pt(folder / f"expert_distribution_recorder_{ts:.6f}.pt", 16, counts)
        truth[day.isoformat()] = {"experts": ex}
    return truth, hot




def report(path, *extra):
    res = subprocess.run([sys.executable, "-m", "diagnose", "expert-load", str(path), "--format", "json", "--top", "20",
                          *extra], capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(res.stderr[-2000:])
    return json.loads(res.stdout), res.stderr
def score(name, data, t, hot, ranks=True):
    days = sorted(t)
    n = len(t[days[0]]["experts"])
    rows = {x["layer"]: x for x in data["layers"]}
    errs = {"imbalance_max_over_mean": [], "rank_max_over_mean": []}
    for li in range(n):
        ex = [sum(t[d]["experts"][li][e] for d in days) for e in range(len(t[days[0]]["experts"][0]))]
        if sum(ex) == 0:
            continue  # a dense layer: no load, no ratio
        want = max(ex) / (sum(ex) / len(ex))
        errs["imbalance_max_over_mean"].append(abs(rows[li]["imbalance_max_over_mean"] - want) / want)
        if ranks:
            rk = [sum(t[d]["ranks"][li][r] for d in days) for r in range(len(t[days[0]]["ranks"][0]))]
            want = max(rk) / (sum(rk) / len(rk))
            errs["rank_max_over_mean"].append(abs(rows[li]["rank_max_over_mean"] - want) / want)
    found = {(h["layer"], h["expert"]) for h in data["hot_experts"] if h["hot"]}
    planted = {tuple(x) for x in hot}
    print(f"{name}: layers scored {len(errs['imbalance_max_over_mean'])} (of {len(data['layers'])} in the report), "
          f"source {data['window']['layers_source']}, mtp {data['window']['mtp_layers']}, "
          f"placement {data['window']['placement']}")
    for k, v in errs.items():
        if v:
            print(f"  {k}: max error {max(v):.2e}, mean error {sum(v)/len(v):.2e}")
    print(f"  planted hot found {sorted(planted & found)} of {sorted(planted)}; spurious {sorted(found - planted)}")
    print(f"  refused {len(data['refused'])}, notes {data['notes']}")
    c = data.get("counting") or {}
    print(f"  windows counted {c.get('counted')} of {c.get('windows')}, first windows {c.get('first_windows')}")




def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("--score", action="store_true", help="score an existing folder, do not generate")
    args = ap.parse_args()
    root = args.root
    if not args.score:
        t1 = mindie(root)
        t2, hot2 = sglang(root)
        (root / "truth.json").write_text(json.dumps({"mindie": t1, "sglang": t2, "hot_mindie": [list(k) for k in HOT],
                                                    "hot_sglang": [list(k) for k in hot2]}))
    truth = json.loads((root / "truth.json").read_text())
    d, _ = report(root / "mindie")
    score("MindIE (MTP, shared routing, placement change)", d, truth["mindie"], truth["hot_mindie"])
    d, _ = report(root / "sglang")
    score("SGLang stat dumps (61 layers, 3 dense)", d, truth["sglang"], truth["hot_sglang"], ranks=False)
    d, _ = report(root / "mindie", "--first-window", "skip")
    score("MindIE with --first-window skip", d, truth["mindie"], truth["hot_mindie"])


if __name__ == "__main__":
    main()
