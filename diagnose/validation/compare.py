"""Comparing this run's results with the baseline: pairing rows, judging them against tolerances, and the
validation facts that join the bundle (``apply_validation``, the pipeline's validate stage)."""

from __future__ import annotations

import math
import re
from typing import Any, NamedTuple

import polars as pl

from diagnose.model import Comparison, InputFile, note
from diagnose.model.derived import add as add_origins
from diagnose.parsers.kinds import validation_facts as comparison
from diagnose.validation.baseline import load_baseline
from diagnose.validation.tolerances import (
    SETUP_METRICS, DEFAULT_TOL, VIRTUAL_FILE, Baseline, fmt, group_of, metric_rows, norm_dataset, quant_policy,
)


def _pair(run: list[dict], base: list[dict]) -> list[tuple[dict | None, dict | None]]:
    """Pair run and baseline rows: same metric and scope (datasets normalised); a scope-less baseline row
    (TOML) or a metric that both sides have exactly once pairs regardless of scope."""
    def key(r):
        return (r["metric"], norm_dataset(r["scope"]) if r["metric"] == "accuracy" else r["scope"])

    pairs, used = [], set()
    by_key = {key(b): i for i, b in enumerate(base)}
    for r in run:
        i = by_key.get(key(r))
        if i is None and r["metric"] == "accuracy":
            k = key(r)[1]
            cands = [j for j, b in enumerate(base) if b["metric"] == "accuracy" and j not in used
                     and (norm_dataset(b["scope"]).startswith(k) or k.startswith(norm_dataset(b["scope"])))]
            i = cands[0] if len(cands) == 1 else None
        if i is None and r["metric"] != "accuracy":
            same = [j for j, b in enumerate(base) if b["metric"] == r["metric"]]
            mine = [x for x in run if x["metric"] == r["metric"]]
            if len(same) == 1 and (base[same[0]]["scope"] == "" or len(mine) == 1):
                i = same[0]
        if i is not None:
            used.add(i)
        pairs.append((r, base[i] if i is not None else None))
    for j, b in enumerate(base):
        if j not in used:
            pairs.append((None, b))
    return pairs


def compare_rows(run: list[dict], baseline: Baseline | None, not_comparable: set[str]) -> list[dict[str, Any]]:
    """The comparison table; ``not_comparable`` holds scopes (or ``*``) whose rows must not be judged."""
    out = []
    run = [r for r in run if group_of(r["metric"])]
    pairs = _pair(run, baseline.rows) if baseline else [(r, None) for r in run]
    for r, b in pairs:
        metric = (r or b)["metric"]
        scope = (r or b)["scope"] if r is None or r["metric"] != "accuracy" else r["scope"]
        group = group_of(metric)
        tol = (b or {}).get("tol")
        tol = baseline.tolerance[group] if tol is None and baseline else (tol if tol is not None else DEFAULT_TOL[group])
        row = {"metric": metric, "scope": scope or None, "baseline": b["value"] if b else None,
               "this": r["value"] if r else None, "change": None,
               "unit": {"accuracy": "pt", "failed": ""}.get(group, "%"), "tolerance": tol, "verdict": "-",
               "file": r["file"] if r else None, "line": r["line"] if r else None}
        if b is None:
            row["verdict"] = "no baseline" if baseline else "-"
        elif r is None:
            row["verdict"] = "missing in this run"
        elif "*" in not_comparable or (group != "accuracy" and (scope or "") in not_comparable):
            row["verdict"] = "not comparable"
        else:
            row.update(_judge(group, b["value"], r["value"], tol))
        out.append(row)
    return out


def _judge(group: str, base: float, this: float, tol: float) -> dict[str, Any]:
    if group in ("accuracy", "failed"):
        change = this - base
        worse = -change if group == "accuracy" else change
    else:
        if base == 0:
            return {"change": None, "verdict": "ok" if this == base else "changed"}
        change = (this - base) / abs(base) * 100.0
        worse = change if group == "latency" else -change
    verdict = "regressed" if worse > tol + 1e-9 else ("improved" if worse < -tol - 1e-9 else "ok")
    return {"change": round(change, 4), "verdict": verdict}


def _setup_differences(run: list[dict], baseline: Baseline) -> list[tuple[str, str, float, float]]:
    diffs = []
    for r in run:
        if r["metric"] in SETUP_METRICS:
            b = baseline.setup.get((r["metric"], r["scope"]))
            if b is not None and not math.isclose(b, r["value"], rel_tol=1e-6):
                diffs.append((r["metric"], r["scope"], b, r["value"]))
    return diffs


HEADER = "# diagnose validation facts v1"  # what a facts text starts with (its size is the derived input's size)

# --- facts -----------------------------------------------------------------------------------------------------

def _token(text: str) -> str:
    text = re.sub(r"\s+", "_", str(text).replace('"', "'"))
    return text or "-"


class Fact(NamedTuple):
    """One validation fact: its verb, its fields as written, and the result file and line the compared value
    was read from (``None``: no single place), where findings on it point (diagnose/analysis/provenance.py)."""

    verb: str
    fields: dict[str, str]
    origin: tuple[str, int] | None = None

    def line(self) -> str:
        return " ".join([self.verb, *(f"{k}={v}" for k, v in self.fields.items())])


def comparison_facts(rows: list[dict], notes: list[Fact]) -> list[Fact]:
    """The notes, then a ``compare`` fact per row with both values."""
    facts = list(notes)
    for row in rows:
        if row["baseline"] is None or row["this"] is None:
            continue
        where = ({"dataset": _token(row["scope"])} if row["metric"] == "accuracy"
                 else ({"run": _token(row["scope"])} if row["scope"] else {}))
        change = "-" if row["change"] is None else (f"{row['change']:+.2f}{row['unit']}" if row["unit"]
                                                     else f"{row['change']:+g}")
        facts.append(Fact("compare", {"metric": row["metric"], **where, "baseline": fmt(row["baseline"]),
                                      "this": fmt(row["this"]), "change": change,
                                      "tolerance": f"{fmt(row['tolerance'])}{row['unit']}",
                                      "verdict": row["verdict"].replace(" ", "-")},
                          (row["file"], row["line"]) if row.get("file") else None))
    return facts


def _first_place(sig: pl.DataFrame, names: list[str]) -> tuple[str, int] | None:
    """(file, line) of the first row of these signals (where a fact about them came from)."""
    rows = sig.filter(pl.col("signal").is_in(names)).select("file", "line").head(1).rows()
    return (rows[0][0], int(rows[0][1] or 1)) if rows else None


def _server_mismatches(parsed) -> list[Fact]:
    """The benchmark's TP and model name against what the server logs in the same bundle say."""
    sig = parsed.signals
    notes = []
    bench_tp = set(sig.filter(pl.col("signal") == "bench_tp")["value"].drop_nulls().to_list())
    server_tp = set(sig.filter(pl.col("signal") == "tensor_parallel_size")["value"].drop_nulls().to_list())
    if bench_tp and server_tp and not bench_tp & server_tp:
        notes.append(Fact("mismatch", {"what": "tp", "bench": fmt(min(bench_tp)), "server": fmt(min(server_tp))},
                          _first_place(sig, ["bench_tp"])))
    bench_models = {_base(t) for t in sig.filter(pl.col("signal") == "bench_model")["text"].drop_nulls().to_list()}
    names = {_base(t) for t in sig.filter(pl.col("signal") == "served_model")["text"].drop_nulls().to_list()}
    names.discard("")
    if bench_models and names and not bench_models & names:
        notes.append(Fact("mismatch", {"what": "model", "bench": _token(sorted(bench_models)[0]),
                                       "server": _token(sorted(names)[0])}, _first_place(sig, ["bench_model"])))
    return notes


def _base(name: str) -> str:
    return name.strip().strip("'\"").rstrip("/").rsplit("/", 1)[-1].lower()


def apply_validation(parsed, baseline_path: str | None, read_run=None,
                     earlier: dict | None = None) -> tuple[Any, list[dict[str, Any]]]:
    """The validate stage: returns the parsed bundle with the validation facts joined, and the table.
    ``read_run`` reads an earlier run's folder (see ``load_baseline``)."""
    run = metric_rows(parsed.signals)
    mismatch_notes = _server_mismatches(parsed) if run else []
    if not run and not baseline_path:
        return parsed, []
    baseline = load_baseline(baseline_path, read_run, earlier) if baseline_path else None
    notes = list(mismatch_notes)
    not_comparable: set[str] = set()
    if baseline:
        parsed.errors.extend(baseline.errors)
        mine = quant_policy(parsed.signals)
        if mine and baseline.quantization and mine != baseline.quantization:
            notes.append(Fact("not-comparable", {"what": "quantization", "baseline": baseline.quantization, "this": mine},
                              _first_place(parsed.signals, ["bench_model", "bench_quantization", "quantization"])))
            not_comparable.add("*")
        for metric, scope, b, t in _setup_differences(run, baseline):
            place = next(((r["file"], r["line"]) for r in run if (r["metric"], r["scope"]) == (metric, scope)), None)
            notes.append(Fact("not-comparable", {"what": metric, "run": _token(scope or "-"), "baseline": fmt(b),
                                                 "this": fmt(t)}, place))
            not_comparable.add(scope)
    rows = compare_rows(run, baseline, not_comparable)
    facts = comparison_facts(rows, notes)
    if facts:
        lines = [HEADER, *(f.line() for f in facts)]
        records, signals = comparison.from_facts(VIRTUAL_FILE, [(f.verb, f.fields, f.line()) for f in facts])
        parsed.records = pl.concat([parsed.records, records], how="vertical_relaxed")
        parsed.signals = pl.concat([parsed.signals, signals], how="vertical_relaxed")
        add_origins(parsed.origins, VIRTUAL_FILE, [f.origin for f in facts])
        parsed.derived.append(InputFile(path=VIRTUAL_FILE, kind=comparison.KIND, lines=len(facts),
                                        bytes=sum(len(x.encode()) + 1 for x in lines), note=note("comparison")))
    table = [Comparison(**{k: v for k, v in r.items() if k not in ("file", "line")}) for r in rows]
    return parsed, table


