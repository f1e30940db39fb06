"""`diagnose rules test`: run each rule on its own fixtures, Semgrep-style.

A fixture is a ``[[test]]`` table in the rule file: a log excerpt (inline ``log`` or a ``file`` beside the
rule), whether the rule must fire, and where (``lines``: the evidence lines it must report, 1-based).
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass

from diagnose.engine.rulefile import Rule
from diagnose.engine.run import run_rules
from diagnose.messages import messages
from diagnose.ingest.walk import SourceFile
from diagnose.ingest.nodes import node_from_path
from diagnose.pipeline import Settings, filters_for, read


@dataclass
class TestResult:
    rule_id: str
    name: str
    ok: bool
    detail: str


def run_rule_tests(rules: list[Rule]) -> list[TestResult]:
    results = []
    for rule in rules:
        for test in rule.tests:
            results.append(_run_one(rule, test))
    return results


def evaluate(rule: Rule, log: str, path: str, kind: str | None, lang: str = "en"):
    """Findings of ``rule`` alone on one in-memory log. Used by rule tests and pytest."""
    parsed = read([_source(p, text) for p, text in _split_files(log, path)], Settings(kind=kind), filters_for([rule]))
    findings, errors = run_rules([rule], parsed.records, parsed.signals, lang, parsed.texts, parsed.series)
    return findings, errors + parsed.errors


def _source(path: str, text: str) -> SourceFile:
    data = text.encode("utf-8")
    return SourceFile(path=path, rel=path, node=node_from_path(path), size=len(data), mtime=None,
                      open=lambda: io.BytesIO(data))


def _split_files(log: str, path: str) -> list[tuple[str, str]]:
    """A fixture for a rule across files or nodes holds several files, each opened by a `head`-style banner
    line ``==> node-2/vllm/serve.log <==`` (the banner line itself is dropped; line numbers count within
    each file). Without banners the whole log is one file read as ``path``."""
    body = log.lstrip("\n")
    if not body.startswith("==> "):
        return [(path, log)]
    files: list[tuple[str, list[str]]] = []
    for line in body.splitlines():
        m = _BANNER.match(line)
        if m:
            files.append((m.group(1), []))
        else:
            files[-1][1].append(line)
    return [(p, "\n".join(lines) + "\n") for p, lines in files]


_BANNER = re.compile(r"^==> (\S.*?) <==$")


def _run_one(rule: Rule, test) -> TestResult:
    try:
        findings, errors = evaluate(rule, test.log, test.path, test.kind)
    except Exception as exc:  # report, do not crash the table
        return TestResult(rule.id, test.name, False, f"{type(exc).__name__}: {exc}")
    if errors:
        return TestResult(rule.id, test.name, False, "; ".join(errors))
    fired = bool(findings)
    if fired != test.fires:
        want = "to fire" if test.fires else "to stay quiet"
        got = f"fired: {_said(findings[0].summary)}" if fired else "did not fire"
        return TestResult(rule.id, test.name, False, f"expected {want}, {got}")
    if fired and test.lines:
        got_lines = [e.line for e in findings[0].evidence]
        if got_lines[: len(test.lines)] != test.lines:
            return TestResult(rule.id, test.name, False, f"evidence lines {got_lines}, expected {test.lines}")
    for needle in test.summary_contains:
        if fired and needle not in _said(findings[0].summary):
            return TestResult(rule.id, test.name, False, f"summary {_said(findings[0].summary)!r} lacks {needle!r}")
    return TestResult(rule.id, test.name, True, "fires" if fired else "quiet")


def _said(words) -> str:
    """A fixture's ``summary_contains`` is checked against the English summary."""
    return messages("en").say(words)
