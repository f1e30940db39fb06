"""One module per output format, declared in ``formats`` (the registry); ``render(name, report, **options)``
renders one. Renderers read the report (``diagnose.model``) and the message catalog, never the logs."""

from __future__ import annotations

from diagnose.report.formats import FORMATS, render

__all__ = ["FORMATS", "render"]
