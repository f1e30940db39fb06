"""Every sample's incident page in headless Chromium, measured on what the browser drew (tests/browser.py):
the labels beside the timeline's marks inside the plot and apart, one lane per rank, the unrecognised errors
explained when there are any, references as links a click reaches, no literal backticks, curves on axes from
zero, a sane time axis for a bundle of one event, and the Chinese page in Chinese with a CJK font."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from click.testing import CliRunner

from browser import CHROMIUM, CJK_FONT, NO_CJK_FONT, inside, measure, overlap
from crowd_bundle import write_dp_bundle
from diagnose.cli import main
from test_zh_outputs import RUNS

# Every page drawn in headless Chromium: tens of seconds; the slow run (.ci/run) takes them.
pytestmark = [pytest.mark.slow, pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install -y chromium fonts-noto-cjk)")]
REF = re.compile(r"https?://|\b(?:vllm-ascend|vllm-omni|vllm)\b[^#]*#\d+|\bPR #\d+")


def _write(tmp: Path, name: str, paths: list, baseline, lang: str = "en") -> tuple[Path, dict]:
    page, data = tmp / f"{name}.{lang}.html", tmp / f"{name}.{lang}.json"
    args = [str(p) for p in paths] + ["--format", "html", "-o", str(page), "--json", str(data), "--quiet", "--lang", lang]
    if baseline:
        args += ["--baseline", str(baseline)]
    res = CliRunner().invoke(main, args)
    assert res.exit_code in (0, 1), res.output
    return page, json.loads(data.read_text(encoding="utf-8"))


# The default run measures these pages; the slow run (.ci/run) every sample's.
CORE = ("two-node-aicore", "profiler-w8a8", "one-event", "two-node-aicore.zh", "dp-engines")


class Pages:
    """name -> (DOM, what the browser measured, the JSON report), drawn on first use: every sample's English
    page, the Chinese pages of two samples, a bundle of one event and one of twelve data-parallel engines."""

    def __init__(self, tmp: Path):
        self.tmp, self.done = tmp, {}
        one = tmp / "one-event" / "node-0"
        one.mkdir(parents=True)
        (one / "vllm-serve.log").write_text(
            "INFO 03-15 03:02:41 [api_server.py:1880] vLLM API server version 0.11.0\n"
            "WARNING 03-15 03:02:45 [config.py:412] Chunked prefill is enabled with max_num_batched_tokens=8192.\n",
            encoding="utf-8")
        self.jobs = {name: (paths, baseline, "en") for name, (paths, baseline) in RUNS.items()}
        self.jobs["one-event"] = ([one.parent], None, "en")
        self.jobs["dp-engines"] = ([write_dp_bundle(tmp / "dp-engines", engines=12, slow=7)], None, "en")
        self.jobs["two-node-aicore.zh"] = (RUNS["two-node-aicore"][0], None, "zh")
        self.jobs["healthy.zh"] = (RUNS["healthy"][0], None, "zh")

    def draw(self, names) -> None:
        todo = [n for n in names if n not in self.done]
        written = {n: _write(self.tmp, n.split(".")[0], *self.jobs[n]) for n in todo}
        with ThreadPoolExecutor(max_workers=2) as pool:
            for n, (dom, measured) in zip(written, pool.map(lambda item: measure(item[0], self.tmp), written.values())):
                self.done[n] = (dom, measured, written[n][1])

    def __getitem__(self, name: str) -> tuple[str, dict, dict]:
        self.draw([name])
        return self.done[name]


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> Pages:
    drawn = Pages(tmp_path_factory.mktemp("pages"))
    drawn.draw(CORE)
    return drawn


SAMPLE_PAGES = [n if n in CORE else pytest.param(n, marks=pytest.mark.slow)
                for n in [*RUNS, "one-event", "dp-engines"]]


@pytest.mark.parametrize("name", SAMPLE_PAGES + ["two-node-aicore.zh"])
def test_timeline_labels_inside_the_plot_and_apart(pages, name):
    dom, m, _ = pages[name]
    assert m["errors"] == 0 and 'data-errors="0"' in dom
    for key, plot in m["plots"].items():
        for label in plot["labels"]:
            assert inside(label["box"], plot["area"]), f"{name} {key}: label {label['text']!r} cut at the plot's edge"
        boxes = plot["labels"] + plot["annotations"]
        for i, a in enumerate(boxes):
            for b in boxes[i + 1:]:
                assert not overlap(a["box"], b["box"]), f"{name} {key}: {a['text']!r} drawn over {b['text']!r}"
        for t in plot["yticks"] + plot["xticks"] + plot["legend"] + plot["annotations"] + plot["colorbar"]:
            assert inside(t["box"], plot["svg"]), f"{name} {key}: {t['text']!r} outside the figure"
        assert "Share chart..." not in plot["modebar"]  # no upload button on a page of logs


@pytest.mark.parametrize("name", SAMPLE_PAGES)
def test_one_lane_per_rank(pages, name):
    _, m, _ = pages[name]
    timeline = m["plots"].get("plot-timeline")
    if timeline is None:
        return
    lanes = [t["text"] for t in timeline["yticks"]]
    assert lanes and "?" not in lanes, lanes
    ranks = [(lane.split(" · ")[0], int(r)) for lane in lanes for r in re.findall(r"\brank (\d+)$", lane)]
    assert len(ranks) == len(set(ranks)), lanes
    # a worker whose name carries its rank has no lane of its own beside the rank's lane
    assert not [lane for lane in lanes if re.search(r"Worker_\w*(?:EP|TP)\d+", lane)], lanes


@pytest.mark.parametrize("name", SAMPLE_PAGES)
def test_unrecognised_errors_have_their_section(pages, name):
    dom, _, data = pages[name]
    if data.get("unrecognised"):
        assert 'id="unrecognised"' in dom and dom.count('id="unrecognised-') >= len(data["unrecognised"])
        first = data["unrecognised"][0]["signature"][:40]
        section = dom[dom.index('id="unrecognised"'):]
        assert first.replace("<", "&lt;").replace(">", "&gt;")[:20] in section
    else:
        assert 'id="unrecognised"' not in dom


@pytest.mark.parametrize("name", SAMPLE_PAGES)
def test_references_are_links_a_click_reaches(pages, name):
    _, m, data = pages[name]
    refs = [r for f in data["findings"] for r in f["references"] if REF.search(r)]
    assert len(m["links"]) >= len(refs)
    for link in m["links"]:
        assert link["clickable"], link
        assert re.match(r"https?://", link["href"]), link
        if "github.com/vllm-project/" in link["href"]:
            assert link["href"].rsplit("/", 1)[-1] == re.search(r"#(\d+)", link["text"]).group(1), link


@pytest.mark.parametrize("name", SAMPLE_PAGES)
def test_no_literal_backticks_and_no_zero_milliseconds(pages, name):
    _, m, data = pages[name]
    prose = "\n".join(m["prose"])
    assert "`" not in prose
    assert not re.search(r"\d\d:\d\d:\d\d\.000\b", prose)
    if data["findings"]:
        assert "- · first seen -" not in prose and "first seen -" not in prose.replace("first seen -\n", "")


@pytest.mark.parametrize("name", SAMPLE_PAGES)
def test_curves_show_the_scale_and_the_thresholds(pages, name):
    dom, m, _ = pages[name]
    for key, plot in m["plots"].items():
        if key == "plot-timeline" or plot["yrange"] is None or not key.startswith("plot-curve"):
            continue
        lo, hi = plot["yrange"]
        assert lo <= 0 < hi, (name, key, plot["yrange"])


@pytest.mark.slow
def test_mean_acceptance_length_is_not_a_square_wave(pages):
    _, m, _ = pages["healthy"]
    panel = next(p for p in m["plots"].values() if any("acceptance length" in t["text"] for t in p["titles"]))
    lo, hi = panel["yrange"]
    assert lo <= 0 and 1.8 < hi < 2.5  # values 1.80-1.84 on a 0-2 axis


def test_a_bundle_of_one_event_gets_a_readable_axis(pages):
    _, m, data = pages["one-event"]
    timeline = m["plots"]["plot-timeline"]
    x0, x1 = (re.sub(r"\.\d+$", "", t) for t in timeline["xrange"])
    from datetime import datetime

    span = (datetime.fromisoformat(x1) - datetime.fromisoformat(x0)).total_seconds()
    assert 50 <= span <= 120, timeline["xrange"]
    ticks = [t["text"] for t in timeline["xticks"]]
    assert len(ticks) >= 3 and len(set(ticks)) == len(ticks), ticks
    assert data["unrecognised"] and 'id="unrecognised"' in pages["one-event"][0]


def test_profiler_page_names_its_lane_and_where_the_root_cause_is(pages):
    dom, m, _ = pages["profiler-w8a8"]
    lanes = [t["text"] for t in m["plots"]["plot-timeline"]["yticks"]]
    assert lanes == ["profiler"]
    root = dom[dom.index('id="root-cause"'):]
    root = root[:root.index("</div></div>")]
    assert "- · " not in root and "first seen -" not in root and "kernel_details.csv:35" in root


@pytest.mark.skipif(not CJK_FONT, reason=NO_CJK_FONT)
@pytest.mark.parametrize("name", ["two-node-aicore.zh", pytest.param("healthy.zh", marks=pytest.mark.slow)])
def test_chinese_page_is_chinese_in_a_cjk_font(pages, name):
    dom, m, _ = pages[name]
    assert '<html lang="zh">' in dom and m["font"].startswith('"Noto Sans CJK SC"')
    assert abs(m["cjk"] - 80) < 1.5, m["cjk"]  # four ideographs at 20 px, 1 em each: a CJK font drew them
    months = re.compile(r"\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\b")
    for key, plot in m["plots"].items():
        drawn = [t["text"] for t in plot["xticks"] + plot["titles"] + plot["legend"] + plot["annotations"]]
        assert not [t for t in drawn if months.search(t)], (key, drawn)
        assert plot["modebar"] and all(re.search(r"[\u4e00-\u9fff]", t or "") for t in plot["modebar"]), plot["modebar"]
    assert "根因" in dom and "时间线" in dom and "Incident report" not in dom


def test_many_engines_draw_a_legend_that_fits(pages):
    """Twelve engines: each curve panel's legend names the band, the median and the odd engine out, all inside
    the figure and apart (one line per engine would be 24 entries in the throughput panel)."""
    _, m, _ = pages["dp-engines"]
    curves = {k: p for k, p in m["plots"].items() if k.startswith("plot-curve")}
    assert curves
    for key, plot in curves.items():
        names = [t["text"] for t in plot["legend"]]
        assert len(names) <= 8, (key, names)
        for i, a in enumerate(plot["legend"]):
            assert inside(a["box"], plot["svg"]), (key, a["text"])
            for b in plot["legend"][i + 1:]:
                assert not overlap(a["box"], b["box"]), (key, a["text"], b["text"])
    assert any("node-0 Engine 007" in t["text"] for p in curves.values() for t in p["legend"])
