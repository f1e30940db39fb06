"""How many distinct error lines of a corpus resolve to something the tool knows: a rule that explains them, an
error code the tables list, or a source site of the message index; split into lines Python code wrote and lines
native code wrote (CANN, HCCL, torch_npu's C++ layer, MindIE's daemon).

    python bench/resolution.py CORPUS_DIR [--skip PREFIX] [--before CHECKOUT]

The distinct error lines are the signatures of every ERROR/CRITICAL line, coded line and exception line (the
masks of diagnose/knowledge/masks.py), benign lines left out. ``--before CHECKOUT`` also counts, with an earlier
checkout's ``python -m diagnose --format json``, the lines that version left unexplained (its unrecognised
signatures); a line is resolved "before" when that version explained it by a rule or a code. Prints one line per
origin and a total.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from diagnose.analysis import ending  # noqa: E402
from diagnose.analysis.signatures import candidates, compute  # noqa: E402
from diagnose.engine.hits import selected_rows  # noqa: E402
from diagnose.knowledge.benign import benign_mask  # noqa: E402
from diagnose.knowledge.index import message_index  # noqa: E402
from diagnose.knowledge.masks import mask  # noqa: E402
from diagnose.pipeline import Settings, diagnose, filters_for, load_catalog, read_paths  # noqa: E402

NATIVE = re.compile(r"\[(?:ERROR|WARNING|EVENT)\]\s+[A-Z_]+\(|\.(?:cc|cpp|c|h|hpp):\d+|\b(?:E[A-Z0-9]\d{4}|MIE\d\w+|ERR\d{5})\b"
                    r"|\b(?:ATB|ASCEND|HCCL|HCCP|RUNTIME|DRV|ACL|GE|aclnn\w*)\b")
EXCEPTION = re.compile(r"^\s*(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception)\b")


def origin(text: str) -> str:
    if EXCEPTION.search(text):
        return "python"
    return "native" if NATIVE.search(text) else "python"


def after(path: Path) -> dict[str, tuple[str, bool, bool]]:
    """signature -> (origin, resolved, resolved by the message index alone) with this checkout."""
    import polars as pl

    settings = Settings()
    rules, errors = load_catalog(settings)
    filters = filters_for(rules)
    parsed = read_paths([str(path)], settings, filters)
    report = diagnose(parsed, rules, errors, settings, filters)
    records = parsed.records
    cand = candidates(records)
    if cand.height == 0:
        return {}
    cand = cand.filter(~benign_mask(cand["message"].fill_null(cand["text"])))
    ruled = [f for f in report.findings if f.rule_id != ending.END_ID]
    sel = selected_rows([f.rule_id for f in ruled], rules, records, parsed.signals)
    unexplained = {s.signature for s in compute(ruled, sel, records, None)[0]}  # as the report lists them
    cand = cand.with_columns(signature=mask(pl.col("message").fill_null(pl.col("text"))))
    cand = cand.with_columns(_rule=~pl.col("signature").is_in(list(unexplained)))
    out: dict[str, tuple[str, bool, bool]] = {}
    rows = cand.unique("signature", keep="first").select("signature", "message", "text", "code", "_rule").rows()
    sites = message_index().lookup([m or t for _, m, t, _, _ in rows])
    for (sig, msg, text, code, rule), site in zip(rows, sites):
        known = bool(rule) or site is not None or _coded(code)
        out[sig] = (origin(text or msg or ""), known, site is not None)
    return out


def _coded(code: str | None) -> bool:
    """The code is one the tables know: a listed code, or one of a family's classes (the module it names)."""
    from diagnose.knowledge.code_tables import builtin_tables, classify

    if not code:
        return False
    family = next((name for form, name in ending._FAMILY_OF if form.fullmatch(code)), None)
    fam = builtin_tables().get(family) if family else None
    return fam is not None and any(classify(fam, code))


def before_unexplained(checkout: Path, path: Path) -> set[str]:
    """The signatures an earlier checkout left unexplained (its JSON report's unrecognised list, all of it)."""
    env = dict(os.environ, PYTHONPATH=str(checkout))
    done = subprocess.run([sys.executable, "-m", "diagnose", "--format", "json", str(path)], capture_output=True,
                          text=True, env=env, cwd=checkout, timeout=300)
    try:
        data = json.loads(done.stdout)
    except ValueError:
        return set()
    return {u["signature"] for u in data.get("unrecognised", [])}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus")
    parser.add_argument("--skip", action="append", default=[])
    parser.add_argument("--before")
    args = parser.parse_args()
    root = Path(args.corpus)
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".log", ".txt", ".json", ".csv")
                   and not any(str(p.relative_to(root)).startswith(s) for s in args.skip))
    totals = {o: [0, 0, 0, 0] for o in ("python", "native")}  # distinct, resolved after, before, by the index
    for f in files:
        found = after(f)
        gone = before_unexplained(Path(args.before), f) if args.before else set()
        for sig, (o, known, sited) in found.items():
            totals[o][0] += 1
            totals[o][1] += known
            totals[o][2] += sig not in gone if args.before else 0
            totals[o][3] += sited
    for o, (n, now, then, sited) in totals.items():
        extra = f", before {then}/{n} ({then / max(n, 1):.0%})" if args.before else ""
        print(f"{o:<7} distinct error lines {n}: resolved {now}/{n} ({now / max(n, 1):.0%}){extra}; "
              f"by the message index alone {sited}/{n} ({sited / max(n, 1):.0%})")
    n = sum(v[0] for v in totals.values())
    now = sum(v[1] for v in totals.values())
    print(f"total   distinct error lines {n}: resolved {now}/{n} ({now / max(n, 1):.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
