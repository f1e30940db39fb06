#!/usr/bin/env python3
"""The prefilter's invariant and its cost: every line-oriented file under PATH... read in chunks as the read
stage reads them, each chunk through ``select`` (diagnose/pipeline/chunks.py), the lines kept hashed with
their numbers and text, and the CPU of the split, ``select`` and the parse per kind, in process, one thread
of ours (polars' own threads count in the CPU: ``time.process_time``).

    python bench/bench_select.py /tmp/diagnose-bench/bundle-2G-s1-g4/bundle            # hash + CPU per kind
    python bench/bench_select.py NODE --parse                                          # the parsers' CPU too

Two codes keep the same lines when they print the same hash; the CPU columns say where the read stage's time
goes (run it before and after a change, back to back, on a quiet machine).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from collections import defaultdict
from pathlib import Path

import polars as pl

from diagnose.ingest.lines import TextInfo, head_lines, iter_line_chunks, peek_head, tune_allocator
from diagnose.parsers import registry
from diagnose.parsers.lineframe import FileContext, raw_lines_frame
from diagnose.pipeline import Settings, filters_for, load_catalog
from diagnose.pipeline import chunks


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="+", type=Path)
    ap.add_argument("--parse", action="store_true", help="also parse the kept lines (Selected's batches)")
    args = ap.parse_args()
    tune_allocator()
    rules, _ = load_catalog(Settings())
    filters = filters_for(rules)
    files = sorted(f for p in args.paths for f in ([p] if p.is_file() else p.rglob("*")) if f.is_file())
    digest, kept_lines = hashlib.sha256(), 0
    cpu: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    mb: dict[str, float] = defaultdict(float)
    for path in files:
        with path.open("rb", buffering=1024 * 1024) as stream:
            t = time.process_time()
            kind = registry.sniff(str(path), head_lines(peek_head(stream)))
            cpu[kind]["sniff"] += time.process_time() - t
            if not registry.line_oriented(kind):
                continue
            ctx = FileContext(path=str(path), node=None, kind=kind, mtime=None)
            pending: list[pl.DataFrame] = []
            info, first, scan = TextInfo(), 1, None
            t = time.process_time()
            for lines in iter_line_chunks(stream, info):
                t1 = time.process_time()
                cpu[kind]["split"] += t1 - t
                frame, scan = chunks.select_with(raw_lines_frame(lines, first), kind, filters, scan)  # as Selected
                t2 = time.process_time()
                cpu[kind]["select"] += t2 - t1
                first += lines.len()
                digest.update(str(path.name).encode())
                for line, text in frame.select("line", "text").iter_rows():
                    digest.update(f"{line}\0{text}\n".encode())
                kept_lines += frame.height
                pending.append(frame)
                t = time.process_time()
            cpu[kind]["split"] += time.process_time() - t
            mb[kind] += info.bytes / 1e6
            if args.parse and pending:
                t = time.process_time()
                errors: list[str] = []
                chunks.parse_selected(pl.concat(pending), ctx, filters, errors)
                cpu[kind]["parse"] += time.process_time() - t
    print(f"kept {kept_lines} lines, sha256 {digest.hexdigest()[:16]}")
    stages = ["sniff", "split", "select", "parse"]
    print(f"{'kind':12} {'MB':>8} " + " ".join(f"{s:>8}" for s in stages))
    for kind in sorted(cpu, key=lambda k: -sum(cpu[k].values())):
        print(f"{kind:12} {mb[kind]:8.1f} " + " ".join(f"{cpu[kind][s]:8.2f}" for s in stages))
    print(f"{'total':12} {sum(mb.values()):8.1f} " + " ".join(f"{sum(c[s] for c in cpu.values()):8.2f}" for s in stages))
    return 0


if __name__ == "__main__":
    sys.exit(main())
