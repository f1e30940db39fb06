"""`diagnose PATH --format html`: the incident page (timeline across nodes/ranks, signal curves with rule
thresholds, findings), escaping of log text, offline self-containment, large-bundle caps, and the page in
headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from diagnose.cli import main
from diagnose.model import Evidence, Finding, InputFile, Report, conform_records, conform_signals
from diagnose.report.html import downsample, render
from diagnose.analysis.timeline_events import timeline_frame
from diagnose.engine import builtin_rules_dir, load_rules

RULES_INFO = [r.info() for r in load_rules([builtin_rules_dir()])[0]]  # what a run hands the page

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
PLANT = "<script>document.title='pwned'</script>"


def _page(tmp: Path, *paths: str) -> str:
    out = tmp / "incident.html"
    res = CliRunner().invoke(main, [*paths, "--format", "html", "-o", str(out), "--quiet"])
    assert res.exit_code in (0, 1), res.output
    return out.read_text(encoding="utf-8")


def _kv_fig(page: str) -> dict:
    return next(f for f in _figs(page).values()
                if any(t["meta"].get("signal") == "kv_cache_usage_pct" for t in f["data"]))


def _figs(page: str) -> dict[str, dict]:
    found = re.findall(r'<script type="application/json" id="fig-([\w-]+)" class="fig-data">(.*?)</script>', page, re.S)
    return {key: json.loads(body) for key, body in found}


@pytest.fixture(scope="module")
def two_node(tmp_path_factory) -> str:
    return _page(tmp_path_factory.mktemp("two"), str(SAMPLES / "two-node-aicore"))


@pytest.fixture(scope="module")
def kv(tmp_path_factory) -> str:
    return _page(tmp_path_factory.mktemp("kv"), str(SAMPLES / "kv-exhaustion"))


def _planted_bundle(root: Path) -> Path:
    """A vLLM log whose OOM line (MEM001 fires) and a later error carry HTML; the node folder name too."""
    node = root / "<img src=x onerror=alert(1)>"
    node.mkdir(parents=True)
    (node / "vllm-serve.log").write_text(
        "INFO 06-30 21:00:01 [api_server.py:1880] vLLM API server version 0.11.0\n"
        "(Worker_TP5 pid=4410) ERROR 06-30 21:05:11 [multiproc_executor.py:585] RuntimeError: NPU out of memory. "
        "Tried to allocate 30.00 MiB (NPU 5; 60.96 GiB total capacity; 60.34 GiB already allocated; 60.34 GiB current "
        f"active; 15.87 MiB free; 60.60 GiB reserved in total by PyTorch) {PLANT}\n"
        "(APIServer pid=4301) ERROR 06-30 21:05:12 [serving_chat.py:1160] "
        f"request \"</script><b>x</b>\" failed {PLANT}\n",
        encoding="utf-8",
    )
    return root


# --- the two acceptance scenarios ---------------------------------------------------------------------

def test_two_node_failing_rank_errors_come_first_on_the_timeline(two_node: str):
    tl = _figs(two_node)["timeline"]
    root = next(t for t in tl["data"] if t["meta"]["kind"] == "root")
    assert root["meta"]["rule"] == "DEV010" and root["y"] == ["node-1 · rank 13"]
    findings = {t["meta"]["rules"][i]: t["y"][i] for t in tl["data"] if t["meta"]["kind"] == "findings"
                for i in range(len(t["x"]))}
    assert {"ENG001", "COMM003"} <= set(findings)
    # error marks that are evidence of the incident (root cause DEV010 and its consequences ENG001, COMM003)
    incident = {"DEV010", "ENG001", "COMM003"}
    marks = [(x, y, rules) for t in tl["data"] if t["meta"]["kind"] == "records" and t["meta"]["level"] != "WARNING"
             for x, y, rules in zip(t["x"], t["y"], t["customdata"]) if set(rules.split(",")) & incident]
    lanes = {y for _, y, _ in marks}
    assert len(lanes) >= 6 and {y.split(" · ")[0] for y in lanes} == {"node-0", "node-1"}  # both nodes, many ranks
    earliest = min(marks)
    assert earliest[1] == "node-1 · rank 13" and earliest[0].startswith("2026-03-15 03:10:31.338")
    node0 = [x for x, y, _ in marks if y.startswith("node-0")]
    assert node0 and min(node0) > earliest[0]  # node-0 errs only after node-1's rank 13
    # the failing lane is drawn on top (plotly lists category axes bottom-up)
    assert tl["layout"]["yaxis"]["categoryarray"][-1] == "node-1 · rank 13"
    # root cause highlighted, findings with remediation and evidence file:line in the page
    assert 'id="root-cause"' in two_node and "VER001" in two_node.split('id="root-cause"')[1][:400]  # the chain's start
    assert "Rank 13 on node-1 failed first" in two_node
    assert "What to do" in two_node and "ASCEND_LAUNCH_BLOCKING=1" in two_node
    assert re.search(r"node-1/plog/plog-9501_\d+\.log:10:</span>", two_node)


def test_kv_page_usage_curve_crosses_the_threshold(kv: str):
    figs = _figs(kv)
    kv_fig = next(f for f in figs.values() if any(t["meta"].get("signal") == "kv_cache_usage_pct" for t in f["data"]))
    curve = next(t for t in kv_fig["data"] if t["meta"]["kind"] == "curve")
    line = next(t for t in kv_fig["data"] if t["meta"]["kind"] == "threshold" and t["meta"]["rule"] == "KV001")
    th = line["meta"]["value"]
    assert line["meta"]["fired"] and line["y"] == [th, th] and th == pytest.approx(94.99)
    above = [y for y in curve["y"] if y > th]
    assert len(above) >= 80 and max(curve["y"]) == pytest.approx(99.8)
    assert min(curve["y"]) < 60  # it crosses: below before, above after
    first_above = curve["x"][next(i for i, y in enumerate(curve["y"]) if y > th)]
    assert curve["x"][0] < first_above
    # the threshold line spans the curve
    assert line["x"][0] <= curve["x"][0] and line["x"][-1] >= curve["x"][-1]
    # running / waiting and throughput panels are there too, per engine
    signals = {t["meta"].get("signal") for f in figs.values() for t in f["data"]}
    assert {"running_reqs", "waiting_reqs", "gen_throughput"} <= signals
    assert "KV001" in kv and "--max-num-seqs" in kv


# --- safety -------------------------------------------------------------------------------------------

def test_log_html_stays_text(tmp_path: Path):
    page = _page(tmp_path, str(_planted_bundle(tmp_path / "bundle")))
    assert "MEM001" in page
    assert PLANT not in page and "<img src=x" not in page and "<b>x</b>" not in page
    assert "&lt;script&gt;document.title=&#x27;pwned&#x27;&lt;/script&gt;" in page  # evidence line, as text
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    # only our own script elements: the error hook, plotly.js, the plot config, one JSON block per figure, the
    # drawing script
    figs = _figs(page)
    assert len(re.findall(r"<script\b", page, re.I)) == 4 + len(figs)
    # in the figure data the planted text is escaped, not markup (hover texts are rendered by plotly)
    blob = json.dumps(figs, ensure_ascii=False)
    assert "<script>" not in blob and "&lt;script&gt;" in blob


def test_page_is_offline(two_node: str):
    from diagnose.report.page.plotlyjs import BUNDLE

    bundle = BUNDLE.read_text(encoding="utf-8")
    assert two_node.count(bundle) == 1  # plotly.js (the cartesian bundle shipped in the package) embedded once
    rest = two_node.replace(bundle, "")
    assert not re.search(r"<script[^>]*\ssrc\s*=", rest, re.I)
    assert not re.search(r"<link\b|@import|url\(|<iframe|<img\b", rest, re.I)
    assert not re.search(r"cdn\.plot\.ly|jsdelivr|unpkg|cdnjs|googleapis", rest, re.I)
    assert not re.search(r"src=[\"']?https?://", rest, re.I)


def test_redact_masks_the_timeline_too(tmp_path: Path):
    from diagnose.report.page.plotlyjs import BUNDLE

    out = tmp_path / "red.html"
    res = CliRunner().invoke(main, [str(SAMPLES / "two-node-aicore"), "--format", "html", "--redact", "-o", str(out),
                                    "--quiet"])
    assert res.exit_code == 1, res.output
    page = out.read_text(encoding="utf-8").replace(BUNDLE.read_text(encoding="utf-8"), "")
    assert "DEV010" in page and _figs(page)["timeline"]["data"]
    assert not re.search(r"10\.0\.0\.1[12]|node-1", page)  # node IPs and host names masked, hover texts included


def test_plotly_is_imported_only_when_rendering():
    code = "import sys, diagnose.cli, diagnose.report.html, diagnose.pipeline; print('plotly' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


# --- large bundles ------------------------------------------------------------------------------------

def _finding(evidence: list[Evidence], first: datetime) -> Finding:
    return Finding(rule_id="KV001", name="kv-cache-saturated", category="kv-cache", severity="error",
                   title="KV cache saturated", summary="usage high", count=len(evidence), first_seen=first,
                   last_seen=first, nodes=["node-0"], ranks=[], evidence=evidence,
                   remediation="- lower `--max-num-seqs`", references=[])


def test_large_bundle_is_capped_and_says_so():
    t0 = datetime(2026, 3, 1, 10, 0, 0)
    n = 20_000
    # a 20k-point KV curve with one short spike to 99.9 in the middle
    values = [40.0 + (i % 50) / 10 for i in range(n)]
    values[12_345] = 99.9
    signals = conform_signals(pl.DataFrame({
        "file": ["big.log"] * n, "line": list(range(1, n + 1)), "source": ["vllm"] * n, "node": ["node-0"] * n,
        "ts": [t0 + timedelta(seconds=10 * i) for i in range(n)], "engine": ["Engine 000"] * n,
        "signal": ["kv_cache_usage_pct"] * n, "value": values,
    }))
    # 3000 error records in one lane, 50 in another
    m = 3050
    records = conform_records(pl.DataFrame({
        "file": ["err.log"] * m, "line": list(range(1, m + 1)), "source": ["vllm"] * m,
        "node": ["node-0"] * 3000 + ["node-1"] * 50, "ts": [t0 + timedelta(seconds=i) for i in range(m)],
        "proc": ["Worker_TP0"] * 3000 + ["Worker_TP1"] * 50, "rank": [0] * 3000 + [1] * 50,
        "level": ["ERROR"] * m, "message": [f"boom {i}" for i in range(m)], "text": [f"boom {i}" for i in range(m)],
        "parsed": [True] * m, "event": list(range(1, m + 1)),
    }))
    evidence = [Evidence("err.log", 2999, "boom 2998")] + [Evidence("big.log", i, "x") for i in range(1, 60)]
    finding = _finding(evidence, t0)
    tl = timeline_frame(records, [finding], signals, per_lane=200)
    lanes = tl.group_by("node").len().sort("node")["len"].to_list()
    assert lanes[0] <= 200 + 60 and lanes[1] == 50  # capped lane: 200 + the evidence lines
    assert 2999 in tl.filter(pl.col("node") == "node-0")["line"].to_list()  # evidence always kept
    report = Report(findings=[finding], inputs=[InputFile("big.log", "vllm", n, 10 * n)], skipped=[], signals=signals,
                    rules_checked=RULES_INFO,
                    timeline=tl)
    page = render(report, max_points=1000, max_evidence=20)
    kv_fig = _kv_fig(page)
    curve = next(t for t in kv_fig["data"] if t["meta"]["kind"] == "curve")
    assert len(curve["y"]) <= 1000 and max(curve["y"]) == 99.9 and min(curve["y"]) == 40.0  # extremes kept
    assert "points left out by downsampling" in page
    assert "2799 of 3050 warning/error events left out" in page  # 200 first + 1 evidence + 50
    assert "40 more evidence lines left out" in page
    assert len(page) < 2_500_000  # plotly.js's cartesian bundle (1.5 MB) plus a light page


def test_downsample_keeps_extremes_and_order():
    xs = list(range(10_000))
    ys = [float((i * 7919) % 1000) for i in xs]
    ys[5000] = -5.0
    dx, dy = downsample(xs, ys, 200)
    assert len(dx) <= 200 and dx == sorted(dx) and -5.0 in dy and 999.0 in dy
    assert downsample([1, 2], [3.0, 4.0], 200) == ([1, 2], [3.0, 4.0])


def test_odd_data_never_breaks_the_page():
    t0 = datetime(2026, 3, 1, 10, 0, 0)
    signals = conform_signals(pl.DataFrame({
        "file": ["a.log"] * 5, "line": [1, 2, 3, 4, 7], "source": ["vllm"] * 5, "node": [None] * 5,
        "ts": [t0, None, t0 + timedelta(seconds=5), t0 + timedelta(seconds=9), t0 + timedelta(seconds=19)],
        "engine": [None] * 5, "signal": ["kv_cache_usage_pct"] * 5,
        "value": [float("nan"), 50.0, float("inf"), 97.0, 20.0],
    }))
    records = conform_records(pl.DataFrame({
        "file": ["a.log"] * 2, "line": [5, 6], "source": [None, "plog"], "node": [None, "n"], "ts": [t0, t0],
        "level": ["ERROR", "CRITICAL"], "message": ["", "x" * 10_000], "text": ["", ""], "parsed": [False, True],
    }))
    finding = _finding([Evidence("a.log", 5, ""), Evidence("gone.log", 1, "y")], t0)
    no_time = _finding([], None)
    report = Report(findings=[finding, no_time], inputs=[], skipped=[], signals=signals, rules_checked=RULES_INFO,
                    timeline=timeline_frame(records, [finding], signals))
    page = render(report)
    figs = _figs(page)
    assert "timeline" in figs and "could not be drawn" not in page
    curve = next(t for t in _kv_fig(page)["data"] if t["meta"]["kind"] == "curve")
    assert curve["y"] == [97.0, 20.0]  # NaN, inf and the undated value are left out


def test_no_findings_no_signals_still_a_page():
    page = render(Report(findings=[], inputs=[], skipped=[]))
    assert "No findings." in page and "</html>" in page
    assert "未发现问题。" in render(Report(findings=[], inputs=[], skipped=[]), lang="zh")


# --- the page in a real browser -----------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install -y chromium chromium-driver)")
def test_page_renders_in_headless_chromium(tmp_path: Path):
    bundle = _planted_bundle(tmp_path / "bundle")
    shutil.copytree(SAMPLES / "two-node-aicore", bundle / "two-node-aicore")
    out = tmp_path / "incident.html"
    out.write_text(_page(tmp_path, str(bundle)), encoding="utf-8")
    n_figs = len(_figs(out.read_text(encoding="utf-8")))
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
           "--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000", "--dump-dom", out.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    dom = proc.stdout
    m = re.search(r'data-plots="(\d+)"', dom)
    assert m, proc.stderr[-2000:]
    assert int(m.group(1)) == n_figs >= 3  # timeline + curves
    assert len(re.findall(r'class="[^"]*js-plotly-plot', dom)) == n_figs
    assert dom.count('class="main-svg"') >= 2 * n_figs  # plotly drew its svg layers
    assert re.search(r'data-errors="0"', dom)
    assert "<title>diagnose: incident report</title>" in dom  # the planted script did not run
    assert "&lt;script&gt;document.title=" in dom
    console = [ln for ln in proc.stderr.splitlines() if "CONSOLE" in ln]
    assert not [ln for ln in console if re.search(r"error|Uncaught", ln, re.I)], console


def test_a_healthy_page_has_no_root_cause_box_and_a_validation_page_has_its_table(tmp_path):
    (tmp_path / "h").mkdir()
    healthy = _page(tmp_path / "h", str(SAMPLES / "healthy"))
    assert 'id="root-cause"' not in healthy and 'id="verdict"' in healthy and "No problem found" in healthy
    assert 'class="finding first"' not in healthy
    out = tmp_path / "v.html"
    res = CliRunner().invoke(main, [str(SAMPLES / "validation-regression" / "run"), "--baseline",
                                    str(SAMPLES / "validation-regression" / "baseline"), "--format", "html", "-o", str(out)])
    assert res.exit_code == 1, res.output
    page = out.read_text(encoding="utf-8")
    table = page.split('id="comparison"')[1].split("</table>")[0]
    assert "regressed" in table and 'class="regressed"' in table


def test_the_timeline_opens_on_the_incident_with_the_whole_span_a_click_away(two_node: str):
    tl = _figs(two_node)["timeline"]
    layout = tl["layout"]
    incident, whole = layout["meta"]["incident"], layout["meta"]["whole"]
    assert layout["xaxis"]["range"] == incident and whole[0] < incident[0]
    buttons = layout["updatemenus"][0]["buttons"]
    assert [b["args"][0]["xaxis.range"] for b in buttons] == [incident, whole]
    assert "Led to:" in two_node.split('id="root-cause"')[1].split("</div></div>")[0]
