"""One module per output format. Each exposes ``render(report, **options) -> str``; formats are
imported only when used, so a heavy one (html with plotly) costs nothing to the others."""

from __future__ import annotations

import importlib

FORMATS = {
    "text": "diagnose.report.text",
    "concise": "diagnose.report.concise",
    "json": "diagnose.report.json_format",
    "sarif": "diagnose.report.sarif",
    "junit": "diagnose.report.junit",
    "markdown": "diagnose.report.markdown",
    "github": "diagnose.report.github",
    "gitlab": "diagnose.report.gitlab",
    "html": "diagnose.report.html",
    "prom": "diagnose.report.prom",  # the Prometheus textfile of watch and npd (status=RunStatus)
    "mindcluster": "diagnose.report.mindcluster",  # ClusterD's public-fault message (faults=[PublicFault])
}


def render(fmt: str, report, **options) -> str:
    module = importlib.import_module(FORMATS[fmt])
    return module.render(report, **options)
