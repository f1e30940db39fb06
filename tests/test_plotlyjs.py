"""The plotly.js that the pages embed: the shipped cartesian bundle matches the installed Python plotly, holds
every trace type the pages draw, and anything else falls back to the full bundle (never a broken page)."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest

from diagnose.report.page import plotlyjs
from diagnose.report.page.plotlyjs import BUNDLE, CARTESIAN_TRACES, header_version, plotly_js

ROOT = Path(__file__).resolve().parent.parent
UPDATE = ("Update diagnose/report/assets/plotly-cartesian.min.js to plotly.js {want}: "
          "`npm pack plotly.js-cartesian-dist-min@{want}`, unpack it, copy package/plotly-cartesian.min.js (and "
          "package/LICENSE as LICENSE-plotly.js) into diagnose/report/assets/, and write the new version, npm shasum "
          "and sha256 into diagnose/report/assets/README.md. Until then every page embeds the full 4.8 MB bundle.")


def test_shipped_bundle_is_the_plotly_js_of_the_installed_plotly():
    from plotly.offline import get_plotlyjs, get_plotlyjs_version

    want = header_version(get_plotlyjs())
    assert want == get_plotlyjs_version(), "the full bundle's header and plotly's own version disagree"
    shipped = header_version(BUNDLE.read_text(encoding="utf-8"))
    assert shipped == want, f"shipped cartesian bundle is plotly.js {shipped}, plotly writes for {want}. " + \
        UPDATE.format(want=want)


def test_header_version_reads_both_headers():
    assert header_version("/**\n* plotly.js (cartesian - minified) v4.1.1\n* Copyright") == "4.1.1"
    assert header_version("/**\n* plotly.js v3.0.1\n*/") == "3.0.1"
    assert header_version("var Plotly = {}") is None


def test_readme_names_the_shipped_file():
    import hashlib

    readme = (BUNDLE.parent / "README.md").read_text(encoding="utf-8")
    version = header_version(BUNDLE.read_text(encoding="utf-8"))
    assert f"version {version}" in readme
    assert hashlib.sha256(BUNDLE.read_bytes()).hexdigest() in readme
    assert "MIT License" in (BUNDLE.parent / "LICENSE-plotly.js").read_text(encoding="utf-8")


def test_small_bundle_only_when_every_trace_fits(monkeypatch):
    small = BUNDLE.read_text(encoding="utf-8")
    assert plotly_js({"scatter", "bar", "heatmap"}) == small
    full = plotly_js({"scatter", "scatter3d"})  # a trace the cartesian bundle lacks: the whole plotly.js
    assert full != small and header_version(full) == header_version(small)
    assert "(cartesian" not in full[:200]


def test_version_drift_falls_back_to_the_full_bundle(monkeypatch):
    import plotly.offline

    plotlyjs._cartesian.cache_clear()
    monkeypatch.setattr(plotly.offline, "get_plotlyjs_version", lambda: "9.9.9")
    try:
        js = plotly_js({"scatter"})
        assert "(cartesian" not in js[:200] and len(js) > 3_000_000
    finally:
        plotlyjs._cartesian.cache_clear()


def test_missing_bundle_falls_back(monkeypatch, tmp_path: Path):
    plotlyjs._cartesian.cache_clear()
    monkeypatch.setattr(plotlyjs, "BUNDLE", tmp_path / "gone.js")
    try:
        assert "(cartesian" not in plotly_js({"scatter"})[:200]
    finally:
        plotlyjs._cartesian.cache_clear()


def test_pages_draw_only_cartesian_traces():
    """Every trace the page modules build is one the cartesian bundle holds (go.* classes, dict traces)."""
    import plotly.graph_objects as go

    used: set[str] = set()
    for path in sorted((ROOT / "diagnose" / "report").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for cls in re.findall(r"\bgo\.([A-Z]\w+)\(", text):
            if cls not in {"Figure"}:
                used.add(getattr(go, cls)().type)
        assert "plotly.express" not in text, f"{path.name}: a plotly.express figure may hold any trace type"
    assert used and used <= CARTESIAN_TRACES, used - CARTESIAN_TRACES


@pytest.mark.slow
def test_wheel_ships_the_bundle(tmp_path: Path):
    import subprocess
    import sys

    subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(tmp_path)],
                   check=True)
    wheel = next(tmp_path.glob("diagnose-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    for name in ("plotly-cartesian.min.js", "LICENSE-plotly.js", "README.md"):
        assert f"diagnose/report/assets/{name}" in names
