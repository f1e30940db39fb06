"""The incident page: one self-contained HTML file (plotly.js embedded once; opens offline, fetches nothing).

Sections: the root cause (the first finding) highlighted; the ranked findings with the same content as the
text report (summary, evidence lines with file:line, remediation, references as links); the timeline with
one lane per node/rank (page/timeline.py); the signal curves with the rule thresholds (page/curves.py);
the errors no rule explains; the inputs. Every heading and label comes from the message catalog in the
report's language (diagnose/messages.toml), so ``--lang zh`` gives a Chinese page, plotly's words included.

Safety: every string from the logs is HTML-escaped before it goes into the page, including the hover texts
given to plotly (plotly renders a few tags in them); figure data is embedded as JSON in
``<script type="application/json">`` blocks whose ``<``, ``>`` and ``&`` are JSON-escaped, and drawn by one
small script with ``JSON.parse`` — never string-built JavaScript.

Large bundles: curves are downsampled to ``max_points`` per trace, the timeline to ``max_marks`` marks and
evidence to ``max_evidence`` lines per finding; the page says what it left out. plotly is imported only in
``render``.
"""

from __future__ import annotations

import json
from typing import Any

from diagnose.report.comparison import comparison_html
from diagnose.report.coverage_lines import coverage_lines
from diagnose.messages import messages
from diagnose.model import Report, RootCause, Status
from diagnose.report.page import sections
from diagnose.report.page.crowd import MANY
from diagnose.report.page.curves import curve_figures, downsample, thresholds
from diagnose.report.page.kit import ERROR_HOOK, LOADED_MARK, MONO, e, font_stack, plot_config, plot_font, plotly_locale, script_json
from diagnose.report.page.plotlyjs import plotly_script
from diagnose.report.page.timeline import timeline_figure

__all__ = ["render", "downsample"]

CSS = """
body{font-family:%(font)s;margin:24px auto;max-width:1320px;color:#222;padding:0 16px}
h1{font-size:1.5em;margin-bottom:4px}h2{margin-top:32px;border-bottom:1px solid #ddd;padding-bottom:4px}
.meta{color:#666;font-size:.9em}
.root{border:3px solid #ff7f0e;background:#fff6ec;border-radius:8px;padding:12px 18px;margin:18px 0}
.root h2{border:0;margin:0 0 6px 0;color:#b35900}
table{border-collapse:collapse;font-size:.92em;width:100%%}
th,td{border-bottom:1px solid #eee;padding:4px 8px;text-align:left;vertical-align:top}
.sev{color:#fff;border-radius:4px;padding:1px 6px;font-size:.85em;font-weight:600;white-space:nowrap}
.finding{border:1px solid #ddd;border-radius:8px;padding:10px 16px;margin:14px 0}
.finding.first{border:3px solid #ff7f0e}
code{font-family:%(mono)s;font-size:.9em;background:#f2f2f2;border-radius:3px;padding:0 3px}
.ev{font-family:%(mono)s;font-size:.82em;background:#f7f7f7;padding:6px 8px;
overflow-x:auto;white-space:pre-wrap;word-break:break-all}
.ev .loc{color:#777}
.note{background:#f4f4ff;border-left:4px solid #88a;padding:6px 10px;margin:6px 0;font-size:.9em}
.plot{margin:12px 0}
tr.regressed td{color:#b00;font-weight:600}
"""

# Draws every figure from its JSON block; registers plotly's words in the page's language first.
DRAW = ("<script>(function(){var cfg=JSON.parse(document.getElementById('plot-config').textContent);"
        "document.querySelectorAll('script.fig-data').forEach(function(s){"
        "try{var f=JSON.parse(s.textContent);var div=document.getElementById(s.id.replace(/^fig-/,'plot-'));"
        "Plotly.newPlot(div,f.data,f.layout,cfg);}catch(err){window.__errors.push(String(err));}});"
        "window.addEventListener('load',function(){document.body.setAttribute('data-plots',"
        "String(document.querySelectorAll('.js-plotly-plot').length));"
        "document.body.setAttribute('data-errors',String(window.__errors.length));});})();</script>")


def render(report: Report, lang: str = "en", catalog=None, max_points: int = 1500, max_marks: int = 5000,
           max_evidence: int = 20, **_options) -> str:
    import plotly.io as pio  # deferred: plotly (4 MB of JS, only for the incident page)

    msg = messages(lang)
    findings = report.findings
    notes: list[str] = []
    figs: list[tuple[str, Any]] = []
    try:  # a drawing problem must not cost the findings: say so on the page instead
        timeline = timeline_figure(report, msg, max_marks, notes)
    except Exception as exc:  # noqa: BLE001
        timeline = None
        notes.append(msg("page.notes.timeline_failed", error=f"{type(exc).__name__}: {exc}"))
    if timeline is not None:
        figs.append(("timeline", timeline))
    try:
        curves = curve_figures(report, thresholds(report), findings, max_points, notes, msg)
    except Exception as exc:  # noqa: BLE001
        curves = []
        notes.append(msg("page.notes.curves_failed", error=f"{type(exc).__name__}: {exc}"))
    for n, (_, fig) in enumerate(curves):
        figs.append((f"curve-{n}", fig))

    plot_html: dict[str, str] = {}
    traces: set[str] = set()
    for key, fig in figs:
        fig.update_layout(template="plotly_white", margin={"l": 60, "r": 30, "t": 40 if key == "timeline" else 60,
                                                           "b": 50}, font=plot_font(msg.lang))
        try:
            spec = json.loads(pio.to_json(fig, validate=False))
            data = script_json(spec)
        except (TypeError, ValueError) as exc:  # e.g. a NaN that JSON cannot carry
            notes.append(msg("page.notes.plot_failed", plot=key, error=f"{type(exc).__name__}: {exc}"))
            continue
        traces |= {t.get("type", "scatter") for t in spec.get("data", [])}
        plot_html[key] = (f"<div class=\"plot\" id=\"plot-{key}\"></div>"
                          f"<script type=\"application/json\" id=\"fig-{key}\" class=\"fig-data\">{data}</script>")

    lines = sum(i.lines for i in report.inputs)
    css = CSS % {"font": font_stack(msg.lang), "mono": MONO}
    parts = [f"<!DOCTYPE html><html lang=\"{e(msg.lang)}\"><head><meta charset=\"utf-8\">",
             "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
             f"<title>{e(msg('page.html_title'))}</title><style>{css}</style>", ERROR_HOOK]
    if plot_html:
        parts += [plotly_script(traces), plotly_locale(msg),
                  f"<script type=\"application/json\" id=\"plot-config\">{script_json(plot_config(msg.lang))}</script>"]
    parts += ["</head><body>", f"<h1>{e(msg('page.title'))}</h1>",
              f"<div class=\"meta\" id=\"subtitle\">{e(msg('page.subtitle', files=len(report.inputs), lines=lines, skipped=len(report.skipped), findings=len(findings)))}</div>"]
    # A run that analysed nothing, or not every input, says so first (diagnose/analysis/coverage.py).
    parts += [f"<div class=\"note\" id=\"coverage\">{e(t)}</div>" for _, t in coverage_lines(report, msg, 10)]
    # The root-cause box only when the verdict names one: a healthy run's informational notes are no cause.
    rooted = isinstance(report.verdict, RootCause) and bool(findings)
    if rooted:
        parts.append(sections.root_box(report, msg))
    elif report.status != Status.NOTHING:  # the coverage note said it
        verdict = msg.say(report.verdict.text) if report.verdict is not None else msg("page.none")
        parts.append(f"<p id=\"verdict\">{e(verdict)}</p>")
    if findings:
        parts.append(sections.findings_table(findings, msg))
    parts.append(comparison_html(report, msg))
    details = [sections.finding_details(i, f, max_evidence, notes, msg, root=rooted) for i, f in enumerate(findings, 1)]
    if notes:
        parts.append(f"<h2>{e(msg('page.left'))}</h2>" + "".join(f"<div class=\"note\">{e(n)}</div>" for n in notes))
    if "timeline" in plot_html:
        parts.append(f"<h2 id=\"timeline\">{e(msg('page.timeline.title'))}</h2>"
                     f"<div class=\"meta\">{e(msg('page.timeline.hint'))}</div>" + plot_html["timeline"])
    curves_html = [v for k, v in plot_html.items() if k != "timeline"]
    if curves_html:
        heading = "page.curves.title" if findings else "page.curves.title_no_findings"
        parts.append(f"<h2 id=\"signals\">{e(msg(heading))}</h2><div class=\"meta\">{e(msg('page.curves.hint', many=MANY))}</div>")
        parts += curves_html
    if getattr(report, "unrecognised", None):
        parts.append(sections.unrecognised(report, msg))
    if details:
        parts.append(f"<h2 id=\"details\">{e(msg('page.details'))}</h2>")
        parts += details
    if report.skipped:
        parts.append(sections.skipped(report, msg))
    if report.errors:
        parts.append(sections.internal_errors(report, msg))
    if report.inputs:
        parts.append(sections.inputs(report, msg))
    if plot_html:
        parts.append(DRAW)
    else:
        parts.append(LOADED_MARK)
    parts.append("</body></html>")
    return "\n".join(p for p in parts if p)
