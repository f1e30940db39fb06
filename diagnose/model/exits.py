"""The exit codes of ``diagnose``, one table (README.md and docs/ci.md list the same): what a finished run says
to a pipeline that gates on it. The run's decision is ``Report.gate`` (diagnose/analysis/gate.py)."""

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_INCOMPLETE = 3
EXIT_NOTHING_ANALYSED = 4
EXIT_PARTIAL = 5
EXIT_OUTPUT_FAILED = 6
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it
EXIT_TERMINATED = 143  # 128 + SIGTERM
