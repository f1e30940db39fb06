#!/usr/bin/env python3
"""How well do the masks group the errors no rule explains, against Drain3 (the maintained log-template miner)?

    python bench/signature_groups.py [PATH ...] [--bundle 30M] [--json out.json]

For each input (default: every sample, and a generated bundle of bench/gen_bundle.py), the unexplained
warning and error records that the report's "Unrecognised errors" section groups (diagnose/analysis/
signatures.py, ``unexplained``) are grouped three ways:

  masks          the project's masks (diagnose/knowledge/masks.py): one signature per masked message
  drain3         Drain3's TemplateMiner with its defaults (similarity 0.4, depth 4, no masking)
  masks+drain3   Drain3 over the masked messages (does mining merge what the masks leave apart?)

and each grouping is scored by

  groups         how many groups the section would list (fewer: easier to read, steadier baselines)
  singletons     groups of one message
  mixed          groups holding messages whose heads differ (their first three words, from the tokens without a digit or a slash): two
                 different events merged into one, which hides an error
  mixed_msgs     how many messages sit in such groups

Drain3 is not a dependency of the project: `pip install drain3` to run this. Times are wall seconds.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

import polars as pl  # noqa: E402

import diagnose.analysis.signatures as sig  # noqa: E402
from diagnose.knowledge.masks import mask  # noqa: E402
from diagnose.pipeline import Settings, analyze  # noqa: E402

SAMPLES = ["healthy", "kv-exhaustion", "mindie-deepseek", "mtp-ineffective", "profiler-w8a8", "two-node-aicore",
           "vllm-metrics", "ci-artifact/nightly-bench-logs.tgz", "validation-regression/run"]
_WORD = re.compile(r"[A-Za-z][A-Za-z_]*[A-Za-z]")


def unexplained(path: str) -> pl.DataFrame:
    """The records the report's signatures group, for one input."""
    seen: list[pl.DataFrame] = []
    real = sig.unexplained

    def spy(records, keys):
        frame = real(records, keys)
        seen.append(frame)
        return frame

    sig.unexplained = spy
    try:
        analyze([path], Settings(timeline=False))
    finally:
        sig.unexplained = real
    if not seen or seen[-1].height == 0:
        return pl.DataFrame({"message": [], "level": [], "source": []}, schema={"message": pl.String, "level": pl.String,
                                                                               "source": pl.String})
    return seen[-1].with_columns(message=pl.col("message").fill_null(pl.col("text"))).select("message", "level", "source")


def head(message: str, level: str | None, source: str | None) -> str:
    plain = [t for t in message.split() if not any(c.isdigit() or c == "/" for c in t)]  # no ids, paths, numbers
    return " ".join(_WORD.findall(" ".join(plain))[:3])


def score(groups: list[int], heads: list[str]) -> dict:
    """``groups[i]``: the group of message i."""
    members: dict[int, set[str]] = {}
    sizes: dict[int, int] = {}
    for g, h in zip(groups, heads):
        members.setdefault(g, set()).add(h)
        sizes[g] = sizes.get(g, 0) + 1
    mixed = [g for g, hs in members.items() if len(hs) > 1]
    return {"groups": len(sizes), "singletons": sum(1 for n in sizes.values() if n == 1), "mixed": len(mixed),
            "mixed_msgs": sum(sizes[g] for g in mixed)}


def drain(messages: list[str]) -> list[int]:
    from drain3 import TemplateMiner
    from drain3.template_miner_config import TemplateMinerConfig

    config = TemplateMinerConfig()
    config.profiling_enabled = False
    miner = TemplateMiner(config=config)
    return [miner.add_log_message(m)["cluster_id"] for m in messages]


def compare(path: str) -> dict:
    started = time.perf_counter()
    frame = unexplained(path)
    read_s = time.perf_counter() - started
    messages = frame["message"].to_list()
    heads = [head(m or "", lv, src) for m, lv, src in frame.select("message", "level", "source").iter_rows()]
    out: dict = {"input": path, "messages": len(messages), "read_s": round(read_s, 2)}
    t = time.perf_counter()
    masked = frame.select(mask(pl.col("message"))).to_series().to_list()
    index = {s: i for i, s in enumerate(dict.fromkeys(masked))}
    out["masks"] = score([index[s] for s in masked], heads) | {"s": round(time.perf_counter() - t, 3)}
    t = time.perf_counter()
    out["drain3"] = score(drain(messages), heads) | {"s": round(time.perf_counter() - t, 3)}
    t = time.perf_counter()
    out["masks+drain3"] = score(drain(masked), heads) | {"s": round(time.perf_counter() - t, 3)}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--bundle", default="30M", help="also a generated bundle of this size (0: none)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    paths = args.paths or [str(REPO / "samples" / s) for s in SAMPLES]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.bundle != "0":
            import gen_bundle

            gen_bundle.generate(Path(tmp), gen_bundle.parse_size(args.bundle))
            paths.append(str(Path(tmp) / "bundle"))
        for path in paths:
            row = compare(path)
            row["input"] = (f"bundle {args.bundle}" if path.startswith(tmp) else
                            str(Path(path).relative_to(REPO)) if Path(path).is_relative_to(REPO) else path)
            rows.append(row)
    print(f"{'input':44} {'msgs':>6} | {'masks: groups single mixed(msgs)':>32} | {'drain3':>24} | {'masks+drain3':>24}")
    for r in rows:
        cells = [f"{r[k]['groups']:>6} {r[k]['singletons']:>6} {r[k]['mixed']:>5}({r[k]['mixed_msgs']})"
                 for k in ("masks", "drain3", "masks+drain3")]
        print(f"{r['input'][:44]:44} {r['messages']:>6} | {cells[0]:>32} | {cells[1]:>24} | {cells[2]:>24}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
