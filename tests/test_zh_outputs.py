"""`--lang zh` on every bundled sample: no format (text, Markdown, JUnit, SARIF, GitHub annotations, the
incident page) holds an English word that is not from the logs or an identifier.

What may stay English is known from the report itself: the words of the log lines it quotes (evidence,
unrecognised signatures and examples, timeline messages), paths, node, process and engine names, fact values
read from the inputs, the rules' own Chinese texts (which keep technical terms such as ``worker`` or
``notify``), the references (titles of English sources), and the catalog's Chinese texts. Every other Latin
word in the output is a string that bypassed the message catalog.
"""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from helpers import said

from diagnose.messages import catalog
from diagnose.pipeline import Settings, analyze, load_catalog
from diagnose.report import render

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
RUNS = {
    "healthy": ([SAMPLES / "healthy"], None),
    "kv-exhaustion": ([SAMPLES / "kv-exhaustion"], None),
    "mtp-ineffective": ([SAMPLES / "mtp-ineffective"], None),
    "two-node-aicore": ([SAMPLES / "two-node-aicore"], None),
    "mindie-deepseek": ([SAMPLES / "mindie-deepseek"], None),
    "profiler-w8a8": ([SAMPLES / "profiler-w8a8"], None),
    "vllm-metrics": ([SAMPLES / "vllm-metrics"], None),
    "ci-artifact": ([SAMPLES / "ci-artifact" / "nightly-bench-logs.tgz"], None),
    "validation-regression": ([SAMPLES / "validation-regression" / "run"], SAMPLES / "validation-regression" / "baseline"),
    "models": ([SAMPLES / "models"], None),
}
FORMATS = ("text", "concise", "markdown", "junit", "sarif", "github", "gitlab", "html")
WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?")
# A chunk with one of these is an identifier, a path, a flag, a number or a code: never a translation miss.
IDENTIFIER = re.compile(r"[\d/_=.@\\<>#`$:*{}\[\]~|+-]|[a-z][A-Z]|^[A-Z][a-z]+[A-Z]")
CUTS = (200, 300, 400, 499, 600, 1000)  # where the formats cut a quoted log line


def _words(text: str) -> set[str]:
    """Latin words of prose: chunks split on whitespace, CJK and punctuation, identifiers dropped."""
    out = set()
    text = re.sub(r"\w+…", "…", text)  # a word cut by an ellipsis is a fragment, not a word
    for chunk in re.split(r"[\s\u3000-\u303f\uff00-\uffef\u3400-\u9fff,;()\"“”‘’…·←→×•–—?!]+", text):
        chunk = chunk.strip("'-")
        if not chunk or IDENTIFIER.search(chunk):
            continue
        out.update(w.lower() for w in WORD.findall(chunk) if len(w) > 1)
    return out


def _allowed(report, rules) -> set[str]:
    """Words that may stay English in a Chinese report (module docstring)."""
    texts: list[str] = []
    by_id = {r.id: r for r in rules}
    for f in report.findings:
        texts += [said(f.title, "zh"), said(f.remediation, "zh"), f.name, *f.references, *(e.file for e in f.evidence)]
        texts += [e.text[:k] for e in f.evidence for k in (*CUTS, None)]
        texts += [str(v) for k, v in f.facts.items() if v is not None and k != "where"]
        rule = by_id.get(f.rule_id)
        if rule is not None:
            texts += [rule.text(k, "zh") for k in ("title", "summary", "remediation", "description")]
    for u in report.unrecognised or []:
        ex = u.example
        texts += [u.signature, u.signature[:300], ex.message or "", ex.file or ""]
        texts += [(ex.text or "")[:k] for k in (*CUTS, None)]
    if report.timeline is not None and report.timeline.height:
        for col in ("message", "proc", "node", "file", "code"):
            texts += [str(v)[:k] for v in report.timeline[col].drop_nulls().unique().to_list() for k in (*CUTS, None)]
    if report.signals is not None and report.signals.height:
        texts += [str(v) for v in report.signals["engine"].drop_nulls().unique().to_list()]
    texts += [i.path for i in report.inputs] + [i.kind for i in report.inputs] + [i.node or "" for i in report.inputs]
    # what the operating system or a library said: the values in a reason, never its sentence
    texts += [f"{s.path} {' '.join(_values(s.reason))}" for s in report.skipped] + list(report.errors)
    for item in (report.coverage.incomplete if report.coverage is not None else []):
        texts += [item.path, *_values(item.reason)]
    for c in report.comparisons:
        texts += [str(c.metric), str(c.scope)]
    texts += [str(e["zh"]) for e in catalog().values()]
    words = set()
    for t in texts:
        words |= {w.lower() for w in WORD.findall(t or "")}
    return words | {"diagnose"}


def _values(words) -> list[str]:
    """The text values inside a phrase (and the phrases it holds): what came from outside the catalog."""
    from diagnose.messages import Joined, Phrase

    if isinstance(words, Phrase):
        return [x for v in words.values.values() for x in (_values(v) if not isinstance(v, str) else [v])]
    if isinstance(words, Joined):
        return [x for p in words.parts for x in _values(p)]
    return [words] if isinstance(words, str) else []


class _Text(HTMLParser):
    def __init__(self):
        super().__init__()
        self.parts, self._skip = [], 0

    def handle_starttag(self, tag, attrs):
        self._skip += tag in ("script", "style")

    def handle_endtag(self, tag):
        self._skip -= tag in ("script", "style")

    def handle_data(self, data):
        if not self._skip:
            self.parts.append(data)


def _figure_strings(page: str) -> list[str]:
    """The words plotly will draw or show: titles, axis titles, trace names, labels, hover texts, annotations."""
    out = []
    for body in re.findall(r'<script type="application/json" id="fig-[\w-]+" class="fig-data">(.*?)</script>', page, re.S):
        fig = json.loads(body)
        layout = fig["layout"]
        for key, axis in layout.items():
            if key.startswith(("xaxis", "yaxis")) and isinstance(axis, dict):
                out.append(str((axis.get("title") or {}).get("text", "")))
        out.append(str((layout.get("title") or {}).get("text", "")))
        out += [str(a.get("text", "")) for a in layout.get("annotations", [])]
        for trace in fig["data"]:
            out.append(str(trace.get("name", "")))
            for key in ("text", "hovertext"):
                value = trace.get(key)
                out += [str(v) for v in value] if isinstance(value, list) else [str(value or "")]
            out.append(re.sub(r"%\{[^}]*\}|<extra>|</extra>", " ", str(trace.get("hovertemplate", ""))))
    return [html.unescape(re.sub(r"<[^>]+>", " ", s)) for s in out]


def visible_text(fmt: str, out: str) -> str:
    """What a reader of the format sees (its markup and machine fields left out)."""
    if fmt == "markdown":
        return html.unescape(out.replace("\\", ""))
    if fmt == "junit":
        root = ET.fromstring(out.encode("utf-8"))
        return "\n".join([el.get("message", "") for el in root.iter()] + [el.text or "" for el in root.iter()
                                                                          if el.tag in ("failure", "system-out", "error")])
    if fmt == "sarif":
        run = json.loads(out)["runs"][0]
        texts = [r["message"]["text"] for r in run["results"]]
        texts += [loc.get("message", {}).get("text", "") for r in run["results"] for loc in r.get("relatedLocations", [])]
        # the rule entries are the rules' own texts: test_sarif_rules_carry_the_chinese_rule_texts
        texts += [n["message"]["text"] for inv in run["invocations"] for n in inv.get("toolExecutionNotifications", [])]
        return "\n".join(texts)
    if fmt == "github":
        texts = []
        for line in out.splitlines():
            m = re.match(r"::\w+(?: (.*?))?::(.*)$", line)
            props, message = (m.group(1) or ""), m.group(2)
            title = re.search(r"(?:^|,)title=([^,]*)", props)
            texts += [message, title.group(1) if title else ""]
        return "\n".join(t.replace("%0A", "\n").replace("%0D", "").replace("%3A", ":").replace("%2C", ",")
                         .replace("%25", "%") for t in texts)
    if fmt == "gitlab":
        return "\n".join(issue["description"] for issue in json.loads(out))
    if fmt == "html":
        parser = _Text()
        parser.feed(out)
        return "\n".join(parser.parts + _figure_strings(out))
    return out


@pytest.fixture(scope="module")
def zh_reports():
    rules, _ = load_catalog(Settings())
    out = {}
    for name, (paths, baseline) in RUNS.items():
        settings = Settings(lang="zh", timeline=True, baseline=str(baseline) if baseline else None)
        out[name] = (analyze([str(p) for p in paths], settings), [str(p) for p in paths])
    return out, rules


@pytest.mark.parametrize("name", list(RUNS))
def test_chinese_outputs_have_no_untranslated_words(zh_reports, name):
    reports, rules = zh_reports
    report, paths = reports[name]
    allowed = _allowed(report, rules)
    leaks = {}
    for fmt in FORMATS:
        out = render(fmt, report, lang="zh", paths=paths, catalog=rules, width=400, fail_on="error")
        found = _words(visible_text(fmt, out)) - allowed
        if found:
            leaks[fmt] = sorted(found)
    assert not leaks, f"English words in the zh outputs of {name}: {leaks}"


def _truncated_gz(folder: Path) -> None:
    import gzip

    folder.mkdir(parents=True, exist_ok=True)
    lines = "".join(f"INFO 09-03 14:{i // 60:02d}:{i % 60:02d} [loggers.py:118] Engine 000: Running: 1 reqs\n"
                    for i in range(3000))
    data = gzip.compress(lines.encode())
    (folder / "vllm-serve.log.gz").write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize("case", ["empty folder", "truncated gz", "window"])
def test_coverage_texts_are_chinese_in_every_format(tmp_path, case):
    """A run that analysed nothing, or read a file only in part, says so in Chinese in every format."""
    from datetime import datetime

    rules, _ = load_catalog(Settings())
    folder = tmp_path / "logs"
    extra = {}
    if case == "empty folder":
        folder.mkdir()
    elif case == "truncated gz":
        _truncated_gz(folder)
    else:
        folder.mkdir()
        (folder / "vllm-serve.log").write_text("INFO 09-03 14:00:00 [loggers.py:118] Engine 000: Running: 1 reqs\n"
                                               "ERROR 09-03 14:00:05 [core.py:42] EngineCore failed\n")
        extra = {"since": datetime(2030, 1, 1)}
    report = analyze([str(folder)], Settings(lang="zh", timeline=True, **extra))
    assert report.coverage.status == ("partial" if case == "truncated gz" else "nothing-analysed")
    allowed = _allowed(report, rules)
    leaks = {}
    for fmt in FORMATS:
        out = render(fmt, report, lang="zh", paths=[str(folder)], catalog=rules, width=400, fail_on="error")
        assert said(report.coverage.text, "zh") in visible_text(fmt, out) or fmt == "text" and case != "truncated gz", fmt
        found = _words(visible_text(fmt, out)) - allowed
        if found:
            leaks[fmt] = sorted(found)
    assert not leaks, f"English words in the zh outputs of a run with {case}: {leaks}"


def test_sarif_rules_carry_the_chinese_rule_texts(zh_reports):
    reports, rules = zh_reports
    report, paths = reports["two-node-aicore"]
    by_id = {r.id: r for r in rules}
    fired = {f.rule_id: f for f in report.findings}
    entries = json.loads(render("sarif", report, lang="zh", paths=paths, catalog=rules))["runs"][0]["tool"]["driver"]["rules"]
    assert len(entries) > 50
    for entry in entries:
        rule = by_id.get(entry["id"])
        if entry["id"] in fired:  # a code rule's entry has the family's title, its finding the code's
            assert entry["shortDescription"]["text"] in (fired[entry["id"]].title, rule.text("title", "zh"))
            continue
        assert entry["shortDescription"]["text"] == rule.text("title", "zh")
        assert entry["fullDescription"]["text"] in (rule.text("description", "zh").strip(), rule.text("title", "zh"))
        assert entry["help"]["text"] == rule.text("remediation", "zh").strip()


def test_the_scan_catches_an_untranslated_string(zh_reports):
    """The scan itself: an English sentence our code would print is caught, a log line is not."""
    reports, rules = zh_reports
    report, _ = reports["two-node-aicore"]
    allowed = _allowed(report, rules)
    assert _words("严重程度 severity；Unrecognised errors: 3 signatures") - allowed >= {"severity", "unrecognised"}
    assert not _words(report.findings[0].evidence[0].text) - allowed
    assert not _words("见 vllm-ascend#4972 与 --max-num-seqs、/usr/local/Ascend、Worker_DP1_TP5_EP13") - allowed


def test_expert_load_reports_in_chinese_have_no_untranslated_words(tmp_path):
    """The expert-load Markdown and HTML of the sample week with --lang zh: words only from paths, signal
    names and the catalog's Chinese texts."""
    from click.testing import CliRunner

    from diagnose.cli import main

    allowed = {w.lower() for e in catalog().values() for w in WORD.findall(str(e["zh"]))} | {"diagnose", "json"}
    leaks = {}
    for fmt, suffix in (("markdown", "md"), ("html", "html")):
        out = tmp_path / f"report.{suffix}"
        res = CliRunner().invoke(main, ["expert-load", str(SAMPLES / "expert-load-week" / "dumps"), "-o", str(out),
                                        "--lang", "zh"])
        assert res.exit_code == 0, res.output
        found = _words(visible_text(fmt, out.read_text(encoding="utf-8"))) - allowed
        if found:
            leaks[fmt] = sorted(found)
    assert not leaks, f"English words in the zh expert-load reports: {leaks}"
