"""Curve panels of many engines (data parallel): a band of the middle 80%, the median and the odd engine out by
name, instead of one line per engine; a few engines keep their own lines."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from crowd_bundle import write_dp_bundle
from diagnose.cli import main
from diagnose.report.page.crowd import MANY, buckets, furthest


def _page(tmp: Path, bundle: Path, lang: str = "en") -> str:
    out = tmp / f"dp.{lang}.html"
    res = CliRunner().invoke(main, [str(bundle), "--format", "html", "-o", str(out), "--quiet", "--lang", lang])
    assert res.exit_code in (0, 1), res.output
    return out.read_text(encoding="utf-8")


def _curves(page: str) -> list[dict]:
    blocks = r'<script type="application/json" id="fig-curve-\d+" class="fig-data">(.*?)</script>'
    return [json.loads(body) for body in re.findall(blocks, page, re.S)]


@pytest.fixture(scope="module")
def dp(tmp_path_factory) -> str:
    tmp = tmp_path_factory.mktemp("dp")
    return _page(tmp, write_dp_bundle(tmp / "bundle", engines=12, slow=7))


def _panel(page: str, signal: str) -> dict:
    return next(f for f in _curves(page) if any(t["meta"].get("signal") == signal for t in f["data"]))


def test_twelve_engines_are_a_band_a_median_and_the_slow_engine(dp: str):
    kv = _panel(dp, "kv_cache_usage_pct")
    kinds = [t["meta"]["kind"] for t in kv["data"]]
    assert kinds.count("band") == 1 and kinds.count("median") == 1
    lines = [t for t in kv["data"] if t["meta"]["kind"] == "curve"]
    assert [t["name"] for t in lines] == ["node-0 Engine 007"]  # the one engine out, alone: the others agree
    assert len(lines[0]["y"]) == 90 and max(lines[0]["y"]) > 90  # every sample of it
    band = next(t for t in kv["data"] if t["meta"]["kind"] == "band")
    assert band["name"] == "middle 80% of 12 engines" and band["meta"]["engines"] == 12
    median = next(t for t in kv["data"] if t["meta"]["kind"] == "median")
    assert max(median["y"]) < 60  # the median does not follow the slow engine up
    throughput = _panel(dp, "gen_throughput")
    named = [t["name"] for t in throughput["data"] if t["meta"]["kind"] == "curve"]
    assert named == ["prompt_throughput node-0 Engine 007", "gen_throughput node-0 Engine 007"]
    assert len(throughput["data"]) <= 8  # against 24 lines, one per signal and engine
    assert "Throughput: 12 engines, drawn as their median and the band of the middle 80% of engines" in dp
    assert "have their own lines: node-0 Engine 007." in dp


def test_the_scale_still_shows_the_thresholds_and_starts_at_zero(dp: str):
    for fig in _curves(dp):
        lo, hi = fig["layout"]["yaxis"]["range"]
        ys = [y for t in fig["data"] for y in t["y"] if y is not None]
        assert lo <= 0 and hi >= max(ys)


def test_a_value_once_per_engine_is_dots_named_on_hover(dp: str):
    derived = [f for f in _curves(dp) if any(t["meta"]["kind"] == "threshold" for t in f["data"])]
    assert derived  # PRF005's panel: one value per engine
    dots = [t for t in derived[0]["data"] if t["meta"]["kind"] == "curve"]
    assert len(dots) == 1 and dots[0]["mode"] == "markers" and dots[0]["name"] == "12 engines"
    assert "node-0 Engine 007" in dots[0]["text"]


def test_the_chinese_page_says_it_in_chinese(tmp_path: Path):
    page = _page(tmp_path, write_dp_bundle(tmp_path / "bundle", engines=8, slow=3), lang="zh")
    kv = _panel(page, "kv_cache_usage_pct")
    assert next(t for t in kv["data"] if t["meta"]["kind"] == "band")["name"] == "8 个引擎的中间 80%"
    assert "画出其中位数和中间 80% 引擎所在的带" in page


def test_a_few_engines_keep_one_line_each(tmp_path: Path):
    page = _page(tmp_path, write_dp_bundle(tmp_path / "bundle", engines=MANY, slow=2))
    kv = _panel(page, "kv_cache_usage_pct")
    assert [t["meta"]["kind"] for t in kv["data"]] == ["curve"] * MANY
    assert "drawn as their median" not in page


def _frame(values: dict[str, list[float]]) -> pl.DataFrame:
    t0 = datetime(2026, 3, 15, 3)
    rows = [{"signal": "s", "node": "n", "engine": who, "ts": t0 + timedelta(seconds=10 * i), "value": v}
            for who, vs in values.items() for i, v in enumerate(vs)]
    return pl.DataFrame(rows, schema={"signal": pl.String, "node": pl.String, "engine": pl.String,
                                      "ts": pl.Datetime("us"), "value": pl.Float64})


def test_furthest_names_only_engines_that_stray():
    same = {f"e{i}": [10.0] * 40 for i in range(9)}
    stats, per = buckets(_frame(same))
    assert furthest(stats, per) == {}  # nobody leaves the median: nobody is named
    two = same | {"hot": [30.0] * 40, "warm": [20.0] * 40, "tepid": [11.0] * 40}
    stats, per = buckets(_frame(two))
    assert furthest(stats, per) == {"s": ["n hot", "n warm"]}  # tepid is a tenth as far as hot: not named
    assert stats["median"].to_list() == [10.0] * stats.height and stats.height == 20  # two samples a bucket
