"""What both HTML pages share: escaping, JSON for ``<script>`` blocks, the font stack, plotly's language.

Fonts: the stacks name a CJK face before the generic family, so Chinese text renders with Debian's
``fonts-noto-cjk`` ("Noto Sans CJK SC"), macOS's PingFang or Windows' Microsoft YaHei, and the plots (SVG
text drawn by plotly) get the same stack through ``layout.font``.

plotly's own words (the mode bar's tooltips, month and day names on date axes) come from a locale that the
page registers from the catalog (``[plotly]`` in messages.toml), so a Chinese page has Chinese dates.
"""

from __future__ import annotations

import html
import json
from typing import Any

from diagnose.messages import Messages

LATIN_FIRST = ('system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","Noto Sans CJK SC","Source Han Sans SC",'
               '"PingFang SC","Microsoft YaHei",sans-serif')
CJK_FIRST = ('"Noto Sans CJK SC","Source Han Sans SC","PingFang SC","Microsoft YaHei",system-ui,-apple-system,'
             '"Segoe UI",Roboto,sans-serif')
MONO = 'ui-monospace,Menlo,Consolas,"Noto Sans Mono CJK SC",monospace'
PLOTLY_LOCALE = {"en": "en", "zh": "zh-CN"}

ERROR_HOOK = ("<script>window.__errors=[];window.addEventListener('error',"
              "function(e){window.__errors.push(String(e.message))});</script>")
# After load: how many plots were drawn and how many script errors occurred (the browser tests read these).
LOADED_MARK = ("<script>window.addEventListener('load',function(){document.body.setAttribute('data-plots',"
               "String(document.querySelectorAll('.js-plotly-plot').length));"
               "document.body.setAttribute('data-errors',String(window.__errors.length));});</script>")


def e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def script_json(obj: Any) -> str:
    """JSON safe inside a <script> element (``<``, ``>`` and ``&`` escaped)."""
    text = json.dumps(obj, ensure_ascii=False, default=str, allow_nan=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def font_stack(lang: str) -> str:
    return CJK_FIRST if lang == "zh" else LATIN_FIRST


def plot_font(lang: str) -> dict[str, Any]:
    """``layout.font`` of every plot (plotly draws SVG text with its own default stack otherwise)."""
    return {"family": font_stack(lang).replace('"', "'"), "size": 12}


# plotly's message ids (its English texts) -> catalog keys
_DICTIONARY = {
    "Zoom in": "plotly.zoom_in", "Zoom out": "plotly.zoom_out", "Autoscale": "plotly.autoscale",
    "Reset axes": "plotly.reset_axes", "Pan": "plotly.pan", "Zoom": "plotly.zoom", "Box Select": "plotly.box_select",
    "Lasso Select": "plotly.lasso_select", "Download plot as a PNG": "plotly.download_png",
    "Download plot": "plotly.download", "Show closest data on hover": "plotly.closest",
    "Compare data on hover": "plotly.compare", "Toggle Spike Lines": "plotly.toggle_spikes",
    "Produced with Plotly.js": "plotly.produced_with", "Double-click to zoom back out": "plotly.double_click_out",
    "Double-click on legend to isolate one trace": "plotly.double_click_legend",
}


def plotly_locale(msg: Messages) -> str:
    """A script that registers plotly's words in the page's language (nothing for English)."""
    if msg.lang == "en":
        return ""
    words = {plotly_id: msg(key) for plotly_id, key in _DICTIONARY.items()}
    fmt = {
        "days": msg("plotly.days").split(","), "shortDays": msg("plotly.short_days").split(","),
        "months": msg("plotly.months").split(","), "shortMonths": msg("plotly.short_months").split(","),
        "periods": msg("plotly.periods").split(","),
        "dateTime": "%Y-%m-%d %H:%M:%S", "date": "%Y-%m-%d", "time": "%H:%M:%S",
        "decimal": ".", "thousands": ",", "grouping": [3], "currency": ["¥", ""],
        "year": msg("plotly.year_format"), "month": msg("plotly.month_format"),
        "dayMonth": msg("plotly.day_month_format"), "dayMonthYear": msg("plotly.day_month_year_format"),
    }
    locale = {"moduleType": "locale", "name": PLOTLY_LOCALE[msg.lang], "dictionary": words, "format": fmt}
    return f"<script>Plotly.register({script_json(locale)});</script>"


def plot_config(lang: str) -> dict[str, Any]:
    """No plotly logo, no "Share chart" button (plotly 7 offers to upload the chart, logs in its hover texts
    included, to Plotly Cloud: a page that fetches nothing must not offer that), plotly's words in ``lang``."""
    return {"displaylogo": False, "responsive": True, "showSendToCloud": False, "locale": PLOTLY_LOCALE.get(lang, "en")}
