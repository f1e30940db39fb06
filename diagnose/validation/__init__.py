"""Validation runs: compare this bundle's benchmark and accuracy results with a baseline.

Runs between parsing and the rules (the pipeline's validate stage). It reads the ``bench_*`` and
``accuracy_pct`` signals of the result-file parsers (``parsers.bench_results``, ``parsers.accuracy``), pairs
them with the baseline's, and

- builds the comparison table (metric, scope, baseline, this run, change, tolerance, verdict) that goes on
  ``Report.comparisons`` and into the text, JSON and Markdown reports (``diagnose.report.comparison``);
- writes what it concluded as validation facts (format in ``parsers.comparison``) into a virtual file
  ``<validation>`` that joins the records and signals, so the VAL rules are plain threshold rules whose
  evidence lines carry the numbers;
- adds facts that need the whole bundle: the benchmark's TP / model differing from the server's
  (``tensor_parallel_size`` and ``served_model`` of the vLLM parser). An accuracy drop in a bundle whose
  server log shows a fallback to float weights is rule VAL002 (the log line and the drop fact together).

A baseline (``--baseline``) is one of:
- a folder or result file of an earlier run (read with the same parsers);
- a TOML file of expected numbers::

      model = "DeepSeek-R1-W8A8"          # optional
      quantization = "W8A8"               # optional: compared with this run's policy (like for like)
      [tolerance]                         # optional defaults
      accuracy_points = 3.0               # absolute percentage points
      latency_pct = 10.0                  # relative, lower is better (TTFT, TPOT, ITL, E2EL)
      throughput_pct = 5.0                # relative, higher is better
      [accuracy."DeepSeek-R1-W8A8"]       # datasets, optionally under a model name
      AIME2024 = { value = 80.0, tol = 3 }
      GPQA = { value = 72.2, tol = 3 }
      [performance]                       # metrics by canonical name; tol in percent
      p99_tpot_ms = { value = 50.0, tol = 10 }
      output_throughput = 650.0

- a previous ``diagnose --format json`` report: its ``comparisons`` rows (``this`` column) are the
  baseline values. Reports list the rows whenever result files were read, with or without a baseline.

Tolerances: accuracy ±3 points, latencies +10 %, throughputs −5 % unless the TOML says otherwise; failed
requests compare absolutely (any increase). A comparison between different quantization policies (FP8 vs
W8A8 in the model names, ``quantization`` keys) or different load settings (concurrency, prompts, request
rate) is marked "not comparable" and raises no regression.
"""

from __future__ import annotations

from diagnose.validation.baseline import load_baseline
from diagnose.validation.compare import apply_validation

__all__ = ["apply_validation", "load_baseline"]
