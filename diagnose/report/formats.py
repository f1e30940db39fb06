"""The output formats, each declared once: its name, the renderer module, the file suffixes that choose it,
whether programs read it, and the option that writes it beside the main output. Commands, their help, suffix
detection and the tests read this table; a new format is its module and one entry here.

Renderers are imported only when used, so a heavy one (html with plotly) costs nothing to the others. Each
exposes ``render(report, **options) -> str`` and takes from the options what it needs.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Format:
    name: str
    module: str
    suffixes: tuple[str, ...] = ()  # -o FILE without --format: the longest suffix of the name that matches
    machine: bool = False  # read by programs: annotations and notes go to standard error, not into it
    extra: str | None = None  # the option that writes it beside the main output (--json FILE)
    describes: str = ""  # for that option's help: "Also write <describes> here."
    of_report: bool = True  # renders a Report (the live outputs render the live state instead)


FORMATS: tuple[Format, ...] = (
    Format("text", "diagnose.report.text", (".txt", ".text", ".log")),
    Format("concise", "diagnose.report.concise"),
    Format("json", "diagnose.report.json_format", (".json",), machine=True, extra="--json",
           describes="the JSON report"),
    Format("sarif", "diagnose.report.sarif", (".sarif", ".sarif.json"), machine=True, extra="--sarif",
           describes="a SARIF 2.1.0 report"),
    Format("junit", "diagnose.report.junit", (".xml", ".junit.xml"), machine=True, extra="--junit",
           describes="a JUnit XML report"),
    Format("markdown", "diagnose.report.markdown", (".md", ".markdown"), extra="--markdown",
           describes="a Markdown summary"),
    Format("github", "diagnose.report.github"),
    Format("gitlab", "diagnose.report.gitlab", (".gitlab.json",), machine=True, extra="--gitlab",
           describes="a GitLab Code Quality report"),
    Format("html", "diagnose.report.html", (".html", ".htm"), machine=True, extra="--html",
           describes="the incident page (HTML)"),
    # The live outputs of watch and npd: the Prometheus textfile (status=RunStatus) and ClusterD's public-fault
    # message (faults=[PublicFault]); not a --format of a report.
    Format("prom", "diagnose.report.prom", (".prom",), machine=True, of_report=False),
    Format("mindcluster", "diagnose.report.mindcluster", machine=True, of_report=False),
)
_BY_NAME = {f.name: f for f in FORMATS}
# The extra outputs in the order they are written (the order of their options in --help).
EXTRA_ORDER = ("json", "sarif", "junit", "markdown", "html", "gitlab")


def names() -> list[str]:
    """The formats a report can be written in (``--format``)."""
    return [f.name for f in FORMATS if f.of_report]


def get(name: str) -> Format:
    return _BY_NAME[name]


def extras() -> list[Format]:
    return [_BY_NAME[n] for n in EXTRA_ORDER]


def by_suffix(filename: str) -> Format | None:
    """The format a file name asks for: the longest registered suffix it ends with (``x.sarif.json`` is
    SARIF, ``x.json`` JSON); a name without a suffix is text; None for a suffix no format has."""
    name = filename.lower().rsplit("/", 1)[-1]
    best: tuple[int, Format] | None = None
    for fmt in (f for f in FORMATS if f.of_report):
        for suffix in fmt.suffixes:
            if name.endswith(suffix) and len(name) > len(suffix) and (best is None or len(suffix) > best[0]):
                best = (len(suffix), fmt)
    if best is not None:
        return best[1]
    return _BY_NAME["text"] if "." not in name.lstrip(".") else None


def known_suffixes() -> list[str]:
    return sorted({s for f in FORMATS if f.of_report for s in f.suffixes})


def render(name: str, report, **options) -> str:
    return importlib.import_module(get(name).module).render(report, **options)
