"""The expert-load page of a generated 58-layer week (one day without a dump) in headless Chromium, measured on
what the browser drew: a tick label for every layer on both heatmaps (and far enough apart to read), a colour
bar that says it is a log scale and capped, a gap in the weekly line for the missing day, and "now" cards
that equal the table's current-placement row and say which placement they measure."""

from __future__ import annotations

import html
import re
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from browser import CJK_FONT, NO_CJK_FONT
from diagnose.cli import main
from test_expertload_week import DAYS, L, make_week

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
# Every page drawn in headless Chromium: tens of seconds; the slow run (.ci/run) takes them.
pytestmark = [pytest.mark.slow, pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install -y chromium)")]
MISSING = DAYS[3]


@pytest.fixture(scope="module")
def dom(tmp_path_factory) -> str:
    tmp = tmp_path_factory.mktemp("el-browser")
    make_week(tmp / "dumps", missing_days=(MISSING,))
    out = tmp / "report.html"
    res = CliRunner().invoke(main, ["expert-load", str(tmp / "dumps"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp / 'profile'}",
           "--window-size=1400,1000", "--enable-logging=stderr", "--v=0", "--virtual-time-budget=15000",
           "--dump-dom", out.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert re.search(r'data-errors="0"', proc.stdout), proc.stderr[-2000:]
    console = [ln for ln in proc.stderr.splitlines() if "CONSOLE" in ln]
    assert not [ln for ln in console if re.search(r"error|Uncaught", ln, re.I)], console
    return proc.stdout


def _plot(dom: str, key: str) -> str:
    i = dom.index(f'id="plot-{key}"')
    j = dom.find('id="plot-', i + 10)
    return dom[i:j if j > 0 else None]


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def _yticks(svg: str) -> list[tuple[str, float]]:
    """(label, y offset) of every y-axis tick label plotly drew."""
    out = []
    for m in re.finditer(r'<g class="ytick">(<text[^>]*>)(.*?)</text></g>', svg):
        shift = re.search(r"translate\(([-\d.e]+),\s*([-\d.e]+)\)", m.group(1))
        out.append((_text(m.group(2)), float(shift.group(2)) if shift else float("nan")))
    return out


@pytest.mark.parametrize("key", ["heatmap", "trend"])
def test_every_layer_has_a_readable_label_on_the_heatmap_axis(dom: str, key: str):
    ticks = _yticks(_plot(dom, key))
    assert [t for t, _ in ticks] == [str(i) for i in range(L)]
    ys = sorted(y for _, y in ticks)
    assert min(b - a for a, b in zip(ys, ys[1:])) >= 11  # 10 px font: labels do not overlap
    # the hot layer (an 18.7x expert) is labelled, in bold
    assert re.search(r'<g class="ytick"><text[^>]*><tspan style="font-weight:\s*bold">7</tspan>', _plot(dom, key))


def test_colour_bar_says_log_scale_and_capped(dom: str):
    svg = _plot(dom, "heatmap")
    title = _text(re.search(r'<g class="cbtitle"[^>]*>(.*?)</g>', svg).group(1))
    assert "log scale" in title and "capped" in title
    drawn = [_text(t) for t in re.findall(r'<g class="ycb\w*tick"><text[^>]*>(.*?)</text></g>', svg)]
    assert drawn[0] == "≤1/4×" and {"1×", "2×", "4×", "8×", "16×", "32×"} <= set(drawn), drawn


def test_weekly_line_has_a_gap_for_the_missing_day(dom: str):
    svg = _plot(dom, "days")
    traces = re.findall(r'<g class="trace scatter[^"]*"[^>]*>(.*?)</g><g class="points"', svg, re.S)
    assert len(traces) == 2
    for trace in traces:
        paths = re.findall(r'<path class="js-line" d="([^"]*)"', trace)
        # one piece for the 3 days before the missing day, one for the 3 after: two subpaths, no line across
        pieces = [p for d in paths for p in d.split("M") if p]
        assert len(pieces) == 2, paths
        xs = [[float(pt.split(",")[0]) for pt in p.split("L")] for p in pieces]
        day = (xs[0][-1] - xs[0][0]) / 2  # px per day
        assert xs[1][0] - xs[0][-1] == pytest.approx(2 * day, rel=0.02), xs  # nothing drawn over the missing day
    assert "no dump" in _text(svg)
    assert MISSING.isoformat() in _text(dom[dom.index("<body"):]).replace("no dump on ", "")


def test_cards_and_placement_table_agree_and_are_labelled(dom: str):
    card = re.search(r'<div class="kpi[^"]*" id="kpi-now-worst"><b>([\d.]+)</b><span>(.*?)</span>', dom)
    mean = re.search(r'<div class="kpi[^"]*" id="kpi-now-mean"><b>([\d.]+)</b><span>(.*?)</span>', dom)
    row = re.search(r'<tr class="current" id="row-current">(.*?)</tr>', dom, re.S)
    assert card and mean and row
    cells = [_text(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1))]
    assert cells[0].startswith("current placement") and "measured" in cells[0]
    assert "current placement" in _text(card.group(2)) and "current placement" in _text(mean.group(2))
    assert f"{float(cells[2]):.2f}" == mean.group(1) and f"{float(cells[3]):.2f}" == card.group(1)
    # every other row is labelled as a re-arranged suggestion, and the page says why they differ
    table = re.search(r'<table id="tried">(.*?)</table>', dom, re.S).group(1)
    others = [_text(r) for r in re.findall(r"<tr>(<td.*?)</tr>", table, re.S)]
    assert others and all("suggested map" in r and "re-arranged" in r for r in others)
    assert "not because it is a different statistic" in _text(dom)


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> dict[str, tuple[str, dict]]:
    """The same week's page in both languages, measured by the browser (tests/browser.py)."""
    from browser import measure

    tmp = tmp_path_factory.mktemp("el-measured")
    make_week(tmp / "dumps", missing_days=(MISSING,))
    out = {}
    for lang in ("en", "zh"):
        page = tmp / f"report-{lang}.html"
        res = CliRunner().invoke(main, ["expert-load", str(tmp / "dumps"), "-o", str(page), "--lang", lang])
        assert res.exit_code == 0, res.output
        out[lang] = measure(page, tmp, height=1200)
    return out


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_text_is_cut_or_drawn_over_another(measured, lang):
    from browser import inside, overlap

    dom, m = measured[lang]
    assert m["errors"] == 0 and len(m["plots"]) >= 5
    for key, plot in m["plots"].items():
        drawn = plot["yticks"] + plot["xticks"] + plot["legend"] + plot["colorbar"] + plot["annotations"]
        for t in drawn:
            assert inside(t["box"], plot["svg"]), (key, t)
        ticks = plot["yticks"]
        for a, b in zip(ticks, ticks[1:]):
            assert not overlap(a["box"], b["box"]), (key, a, b)
        assert "Share chart..." not in plot["modebar"]


@pytest.mark.skipif(not CJK_FONT, reason=NO_CJK_FONT)
def test_chinese_page_is_chinese_in_a_cjk_font(measured):
    dom, m = measured["zh"]
    assert '<html lang="zh">' in dom and m["font"].startswith('"Noto Sans CJK SC"') and abs(m["cjk"] - 80) < 1.5
    body = _text(dom[dom.index("<body"):])
    for heading in ("专家负载", "计入的窗口", "热点专家", "建议", "层 × 专家负载", "一周内各层的不均衡度"):
        assert heading in body, heading
    for english in ("Expert load", "Counted windows", "Hot experts", "Recommendation", "current placement", "no dump"):
        assert english not in body, english
    assert "无统计文件" in _text(_plot(dom, "days"))  # the gap says why, in Chinese
    months = re.compile(r"\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\b")
    for key, plot in m["plots"].items():
        assert not [t for t in plot["xticks"] if months.search(t["text"])], key
        assert all(re.search(r"[\u4e00-\u9fff]", t or "") for t in plot["modebar"]), plot["modebar"]
    # the cards and the current-placement row say the same numbers in Chinese too
    card = re.search(r'id="kpi-now-worst"><b>([\d.]+)</b><span>(.*?)</span>', dom)
    row = re.search(r'<tr class="current" id="row-current">(.*?)</tr>', dom, re.S)
    cells = [_text(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1))]
    assert "当前部署" in _text(card.group(2)) and cells[0].startswith("当前部署")
    assert f"{float(cells[3]):.2f}" == card.group(1)
