"""The plotly.js that a page embeds: the small cartesian bundle shipped with the package when it fits, else the
whole plotly.js of the installed Python plotly.

The pages draw only scatter, bar and heatmap traces, which plotly.js's partial bundle "cartesian" holds
(``diagnose/report/assets/``, 1.5 MB against the 4.8 MB of the full bundle; its README says where it came from).
A page must never be broken, so the small bundle is used only when

* its version (the ``v4.1.1`` of its header comment) is the plotly.js version the installed Python plotly writes
  figures for (a plotly upgrade that moves plotly.js leaves the shipped file behind: tests/test_plotlyjs.py
  fails and says how to update it, and meanwhile the pages embed the full bundle), and
* every trace of the page is of a type the bundle holds.

The bundle is still embedded in the page (one ``<script>`` in ``<head>``): the page opens offline.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path

BUNDLE = Path(__file__).resolve().parent.parent / "assets" / "plotly-cartesian.min.js"
# The trace types of the cartesian bundle (its package README lists them).
CARTESIAN_TRACES = frozenset({"bar", "box", "contour", "heatmap", "histogram", "histogram2d", "histogram2dcontour",
                              "image", "pie", "scatter", "scatterternary", "violin"})
_VERSION = re.compile(r"\A\s*/\*\*?\s*\*\s*plotly\.js\b[^\n]*?\bv(\d+\.\d+\.\d+\S*)")


def header_version(js: str) -> str | None:
    """The version in a plotly.js bundle's header comment (``* plotly.js (cartesian - minified) v4.1.1``)."""
    m = _VERSION.match(js[:300])
    return m.group(1) if m else None


@cache
def _cartesian() -> str | None:
    """The shipped cartesian bundle when it matches the installed plotly's plotly.js, else None."""
    from plotly.offline import get_plotlyjs_version  # deferred: plotly (only for the HTML pages)

    try:
        js = BUNDLE.read_text(encoding="utf-8")
    except OSError:
        return None
    return js if header_version(js) == get_plotlyjs_version() else None


def plotly_js(trace_types: Iterable[str]) -> str:
    """The plotly.js source for a page whose plots have these trace types."""
    small = _cartesian()
    if small is not None and set(trace_types) <= CARTESIAN_TRACES:
        return small
    from plotly.offline import get_plotlyjs  # deferred: plotly (only for the HTML pages)

    return get_plotlyjs()


def plotly_script(trace_types: Iterable[str]) -> str:
    """The ``<script>`` element that defines ``Plotly`` for the page, embedded once in ``<head>``."""
    return f"<script type=\"text/javascript\">{plotly_js(trace_types)}</script>"
