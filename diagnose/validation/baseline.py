"""Loading a ``--baseline``: a TOML of expected numbers, an earlier diagnose JSON report, or an earlier run
(a folder or result file, read with the same parsers through the reader the pipeline hands in)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from diagnose.bounded import REPORT_BYTES, SMALL_FILE, Malformed, json_loads, read_capped, toml_loads
from diagnose.validation.tolerances import QUANT_IN_NAME, SETUP_METRICS, Baseline, group_of, metric_rows, quant_policy


# Reads an earlier run (a folder or result file): path -> (its signals frame, whether anything was read).
ReadRun = Callable[[str], tuple[Any, bool]]


def load_baseline(path: str, read_run: ReadRun | None = None, earlier: dict | None = None) -> Baseline:
    """``earlier``: the baseline as an earlier diagnose JSON report, already decoded (``Settings.earlier``)."""
    p = Path(path)
    if p.is_file() and p.suffix.lower() == ".toml":
        return _toml_baseline(p)
    if earlier is None and p.is_file() and p.suffix.lower() == ".json":
        try:
            earlier = json_loads(read_capped(p, REPORT_BYTES, follow=True))
        except (OSError, ValueError):
            earlier = None
    if earlier is not None:
        data = earlier
        if isinstance(data, dict) and "findings" in data and "inputs" in data:
            rows = [{"metric": r["metric"], "scope": r.get("scope") or "", "value": r.get("this"), "tol": None}
                    for r in data.get("comparisons", []) if isinstance(r, dict) and r.get("this") is not None]
            return Baseline(rows, "report", quantization=data.get("quantization"))
    if read_run is None:
        return Baseline([], "run", errors=[f"baseline {path}: an earlier run cannot be read here"])
    signals, read_any = read_run(path)
    rows = metric_rows(signals)
    base = Baseline([{**r, "tol": None} for r in rows if group_of(r["metric"])], "run",
                    quantization=quant_policy(signals))
    base.setup = {(r["metric"], r["scope"]): r["value"] for r in rows if r["metric"] in SETUP_METRICS}
    if not read_any:
        base.errors.append(f"baseline {path}: nothing could be read")
    return base


def _toml_baseline(p: Path) -> Baseline:
    try:
        data = toml_loads(read_capped(p, SMALL_FILE, follow=True).decode("utf-8"), "invalid TOML")
    except (OSError, UnicodeDecodeError, Malformed) as exc:
        return Baseline([], "toml", errors=[f"baseline {p}: {exc}"])
    base = Baseline([], "toml")
    tol = data.get("tolerance", {})
    if isinstance(tol, dict):
        for key, group in (("accuracy_points", "accuracy"), ("latency_pct", "latency"), ("throughput_pct", "throughput"),
                           ("failed_requests", "failed")):
            if isinstance(tol.get(key), (int, float)):
                base.tolerance[group] = float(tol[key])
    model = str(data.get("model", ""))
    q = data.get("quantization")
    base.quantization = str(q).upper() if q else (QUANT_IN_NAME.search(model).group(1).upper() if QUANT_IN_NAME.search(model) else None)

    def entry(metric: str, scope: str, spec: Any) -> None:
        if isinstance(spec, (int, float)) and not isinstance(spec, bool):
            base.rows.append({"metric": metric, "scope": scope, "value": float(spec), "tol": None})
        elif isinstance(spec, dict) and isinstance(spec.get("value"), (int, float)):
            t = spec.get("tol", spec.get("tol_pct", spec.get("tol_points")))
            base.rows.append({"metric": metric, "scope": scope, "value": float(spec["value"]),
                              "tol": float(t) if isinstance(t, (int, float)) else None})
        else:
            base.errors.append(f"baseline {p}: {metric} {scope}: expected a number or {{ value = …, tol = … }}")

    for name, spec in (data.get("accuracy") or {}).items():
        if isinstance(spec, dict) and "value" not in spec:  # a model table of datasets
            if not base.quantization and QUANT_IN_NAME.search(name):
                base.quantization = QUANT_IN_NAME.search(name).group(1).upper()
            for ds, s in spec.items():
                entry("accuracy", ds, s)
        else:
            entry("accuracy", name, spec)
    for name, spec in (data.get("performance") or {}).items():
        metric = name.removeprefix("bench_")
        if group_of(metric):
            entry(metric, "", spec)
        else:
            base.errors.append(f"baseline {p}: performance.{name}: unknown metric")
    return base


