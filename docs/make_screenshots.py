"""Redraw the screenshots of the README and docs: the incident page of samples/two-node-aicore and the expert-load
page of samples/expert-load-week, each in English and in Chinese.

    python docs/make_screenshots.py

Needs headless Chromium and Debian's fonts-noto-cjk (``apt-get install -y chromium fonts-noto-cjk``); when
``pngquant`` is installed the PNGs are quantised to 256 colours, which keeps each well under 400 KB.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SHOTS = {  # file -> (command arguments after `diagnose`, window height)
    "incident.png": (["samples/two-node-aicore", "--format", "html", "--lang", "en"], 1500),
    "incident-zh.png": (["samples/two-node-aicore", "--format", "html", "--lang", "zh"], 1500),
    "expert-load.png": (["expert-load", "samples/expert-load-week/dumps", "--lang", "en"], 3000),
    "expert-load-zh.png": (["expert-load", "samples/expert-load-week/dumps", "--lang", "zh"], 3000),
}


def main() -> int:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if chromium is None:
        print("chromium not found (apt-get install -y chromium fonts-noto-cjk)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        for name, (args, height) in SHOTS.items():
            page = Path(tmp) / (Path(name).stem + ".html")
            # exit 1 is "findings": the incident sample has them
            subprocess.run([sys.executable, "-m", "diagnose", *args, "-o", str(page)], cwd=ROOT, capture_output=True)
            out = DOCS / name
            subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                            f"--user-data-dir={Path(tmp) / 'profile'}", f"--window-size=1280,{height}",
                            "--virtual-time-budget=15000", f"--screenshot={out}", page.as_uri()],
                           check=True, capture_output=True)
            if shutil.which("pngquant"):
                subprocess.run(["pngquant", "--force", "--skip-if-larger", "--output", str(out), "256", str(out)],
                               check=False)
            print(f"{out.relative_to(ROOT)}: {out.stat().st_size // 1024} KB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
