"""Headless Chromium for the page tests: open a page, let plotly draw it, and read back what the browser drew.

``measure`` writes a copy of the page with one more script, which after the load (and the fonts) records in
``body[data-measure]`` the boxes of every text plotly drew (labels beside the marks, tick labels, legend,
annotations, colour bar), each plot's area and axis ranges, every reference link and whether a click at its
centre lands on it, the text of the prose (summaries, titles, table cells, notes), and how wide four ideographs are in the page's font (a CJK font draws each 1 em wide);
``--dump-dom`` prints the DOM with that attribute.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def _has_cjk_font() -> bool:
    try:
        out = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "Noto Sans CJK" in out


CJK_FONT = _has_cjk_font()
NO_CJK_FONT = "fonts-noto-cjk not installed (apt-get install -y fonts-noto-cjk)"

MEASURE = r"""<script>(function(){
function box(el){var r=el.getBoundingClientRect();return [r.left+scrollX,r.top+scrollY,r.right+scrollX,r.bottom+scrollY];}
function texts(div,sel){return Array.prototype.map.call(div.querySelectorAll(sel),function(t){
  return {text:t.textContent,box:box(t)};});}
function run(){
  var out={plots:{},links:[],cjk:null,errors:window.__errors.length};
  document.querySelectorAll('.js-plotly-plot').forEach(function(div){
    var bg=div.querySelector('.draglayer .nsewdrag')||div.querySelector('.bglayer rect');
    var fl=div._fullLayout||{};
    out.plots[div.id]={area:bg?box(bg):null,svg:box(div.querySelector('svg.main-svg')),
      labels:texts(div,'.textpoint text'),yticks:texts(div,'.yaxislayer-above .ytick text'),
      xticks:texts(div,'.xaxislayer-above .xtick text'),legend:texts(div,'.legendtext'),
      annotations:texts(div,'.annotation-text'),colorbar:texts(div,'.colorbar text'),
      titles:texts(div,'.gtitle, .g-xtitle text, .g-ytitle text'),
      xrange:fl.xaxis?fl.xaxis.range:null,yrange:fl.yaxis?fl.yaxis.range:null,
      modebar:Array.prototype.map.call(div.querySelectorAll('.modebar-btn'),function(b){return b.getAttribute('data-title');})};
  });
  document.querySelectorAll('a.ref').forEach(function(a){
    a.scrollIntoView({block:'center'});var r=a.getBoundingClientRect();
    var hit=document.elementFromPoint(r.left+r.width/2,r.top+r.height/2);
    out.links.push({href:a.getAttribute('href'),text:a.textContent,clickable:!!hit&&(hit===a||a.contains(hit))});
  });
  var s=document.createElement('span');s.textContent='\u6839\u56e0\u5206\u6790';s.style.fontSize='20px';
  s.style.whiteSpace='nowrap';document.body.appendChild(s);out.cjk=s.getBoundingClientRect().width;s.remove();
  out.font=getComputedStyle(document.body).fontFamily;
  out.prose=Array.prototype.map.call(document.querySelectorAll(
    '#findings-table td, .summary, .finding h3, .root h2, .fix, h1, h2, .meta, .kpi, .note'),function(el){return el.textContent;});
  document.body.setAttribute('data-measure',JSON.stringify(out));
}
window.addEventListener('load',function(){document.fonts.ready.then(function(){setTimeout(run,800);});});
})();</script>"""


def measure(page: Path, tmp: Path, width: int = 1400, height: int = 1000, budget_ms: int = 15000) -> tuple[str, dict]:
    """The DOM of ``page`` after drawing, and what MEASURE recorded."""
    probe = tmp / f"{page.stem}.measure.html"
    text = page.read_text(encoding="utf-8")
    probe.write_text(text.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
           f"--user-data-dir={tmp / ('profile-' + page.stem)}", f"--window-size={width},{height}",
           "--enable-logging=stderr", "--v=0", f"--virtual-time-budget={budget_ms}", "--dump-dom", probe.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    m = re.search(r'data-measure="([^"]*)"', proc.stdout)
    assert m, proc.stderr[-3000:]
    return proc.stdout, json.loads(html.unescape(m.group(1)))


def screenshot(page: Path, out: Path, tmp: Path, width: int = 1280, height: int = 1600, budget_ms: int = 15000) -> None:
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           f"--user-data-dir={tmp / ('shot-' + page.stem)}", f"--window-size={width},{height}",
           f"--virtual-time-budget={budget_ms}", f"--screenshot={out}", page.as_uri()]
    subprocess.run(cmd, capture_output=True, text=True, timeout=240, check=True)


def inside(inner: list[float], outer: list[float], slack: float = 1.0) -> bool:
    return (inner[0] >= outer[0] - slack and inner[1] >= outer[1] - slack
            and inner[2] <= outer[2] + slack and inner[3] <= outer[3] + slack)


def overlap(a: list[float], b: list[float], slack: float = 0.5) -> bool:
    return a[0] < b[2] - slack and b[0] < a[2] - slack and a[1] < b[3] - slack and b[1] < a[3] - slack
