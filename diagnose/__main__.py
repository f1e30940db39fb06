import sys
from importlib.util import find_spec

# `python -m diagnose` from a source checkout runs with whatever interpreter is at hand; without the package's
# dependencies (never installed into it) a run would end in a traceback part-way, so they are looked up first
# (without importing them) and a missing one is one line and exit 2 (usage). The list is pyproject.toml's.
_DEPENDENCIES = ("polars", "regex", "rich", "click", "plotly", "prometheus_client", "msgspec")
_missing = [name for name in _DEPENDENCIES if find_spec(name) is None]
if _missing:
    sys.stderr.write(f"diagnose: error: not installed for {sys.executable}: {', '.join(_missing)}; "
                     "install the package first (pip install .)\n")
    sys.exit(2)

from diagnose.cli import run  # noqa: E402

run()
