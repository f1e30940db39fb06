"""JUnit XML report (GitLab ``artifacts:reports:junit``, Jenkins junit, any test dashboard).

A grid of rules x nodes: one ``testcase`` per (rule, node) with a unique ``classname`` + ``name`` (GitLab and
Jenkins collapse duplicates). A rule that was checked and did not fire appears as a passed testcase, so a
dashboard shows "checked and clean" and its trend. A finding at or above ``fail_on`` is a ``failure`` whose
body carries the summary, the evidence lines and the remediation; a finding below it passes with the finding in
``system-out``. Inputs that could not be read are listed in a testcase of the ``diagnose.input`` class;
internal errors (an incomplete run) are an ``error``, so an incomplete diagnosis never looks clean.

One ``testsuite`` per rule category, sorted; no times (``time`` is left out), so the bytes are deterministic.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from diagnose.messages import Messages, messages
from diagnose.model import SEVERITY_RANK, Finding, Report, Status
from diagnose.report import gate_lines
from diagnose.report.sarif import relative_path

NO_NODE = "-"
# Characters XML 1.0 cannot carry at all (even escaped).
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
MAX_BODY = 20_000


def xml_text(value) -> str:
    return _XML_INVALID.sub("\ufffd", str(value))


def node_names(report: Report) -> list[str]:
    nodes = {i.node for i in report.inputs if i.node}
    nodes |= {n for f in report.findings for n in f.nodes}
    names = sorted(nodes)
    # Files without a node (a bundle's top-level files) are checked too, but an extra "no node" column of passed
    # testcases would only double the grid: it appears when nothing names a node or a finding has no node.
    if not names or any(not f.nodes for f in report.findings):
        names.append(NO_NODE)
    return names


def render(report: Report, fail_on: str = "error", paths: list[str] | None = None, allow_empty: bool = False,
           allow_partial: bool = False, lang: str = "en", **_options) -> str:
    """Names (suites, classnames, testcase names) are identifiers and stay the same in every language, so a
    dashboard's history does not break when the language changes; messages and bodies are translated."""
    msg = messages(lang)
    fail_on = gate_lines.fail_on(report, fail_on)
    floor = SEVERITY_RANK.get(fail_on, SEVERITY_RANK["error"])
    nodes = node_names(report)
    single = nodes == [NO_NODE]
    file_node = {i.path: i.node for i in report.inputs}

    rules: dict[str, dict] = {r.id: {"id": r.id, "name": r.name, "category": r.category, "severity": r.severity}
                              for r in report.rules_checked}
    for f in report.findings:
        rules.setdefault(f.rule_id, {"id": f.rule_id, "name": f.name, "category": f.category,
                                     "severity": f.severity})
    by_cell: dict[tuple[str, str], list[Finding]] = {}
    for f in report.findings:
        for node in (f.nodes or [NO_NODE]):
            by_cell.setdefault((f.rule_id, node), []).append(f)

    root = ET.Element("testsuites", name="diagnose")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    categories = sorted({r.get("category") or "other" for r in rules.values()})
    for category in categories:
        suite = ET.SubElement(root, "testsuite", name=f"diagnose.{category}")
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for rid in sorted(r for r in rules if (rules[r].get("category") or "other") == category):
            brief = rules[rid]
            for node in nodes:
                findings = by_cell.get((rid, node), [])
                name = f"{rid} {brief.get('name', '')}".strip()
                if not single:
                    name += f" [{node if node != NO_NODE else 'no node'}]"
                case = ET.SubElement(suite, "testcase", classname=f"diagnose.{category}", name=xml_text(name))
                counts["tests"] += 1
                failing = [f for f in findings if SEVERITY_RANK[f.severity] >= floor]
                if failing:
                    f = failing[0]
                    first = f.evidence[0] if f.evidence else None
                    if first is not None:
                        case.set("file", xml_text(relative_path(first.file, paths)))
                    fail = ET.SubElement(case, "failure", message=xml_text(_one_line(msg.say(f.summary) or msg.say(f.title))),
                                         type=f.severity)
                    fail.text = xml_text(_body(failing, node, file_node, paths, msg))
                    counts["failures"] += 1
                elif findings:
                    out = ET.SubElement(case, "system-out")
                    out.text = xml_text(msg("junit.below", fail_on=fail_on) + "\n"
                                        + _body(findings, node, file_node, paths, msg))
        _set_counts(suite, counts)
        for k in totals:
            totals[k] += counts[k]

    suite = ET.SubElement(root, "testsuite", name="diagnose.input")
    counts = {"tests": 1, "failures": 0, "errors": 0, "skipped": 0}
    case = ET.SubElement(suite, "testcase", classname="diagnose.input", name="inputs read")
    lines = [msg("junit.read", files=len(report.inputs), lines=sum(i.lines for i in report.inputs))]
    lines += [msg("junit.read_in_part", path=i.path, reason=msg.say(i.reason))
              for i in (report.coverage.incomplete if report.coverage is not None else [])[:500]]
    lines += [msg("junit.skipped", path=s.path, reason=msg.say(s.reason)) for s in report.skipped[:500]]
    if len(report.skipped) > 500:
        lines.append(msg("junit.more_skipped", n=len(report.skipped) - 500))
    ET.SubElement(case, "system-out").text = xml_text("\n".join(lines))
    counts["tests"] += _coverage_case(suite, report, allow_empty, allow_partial, counts, msg)
    if gate_lines.unrecognised_fail(report):  # errors no rule explains fail the run: a failing testcase says so
        counts["tests"] += 1
        counts["failures"] += 1
        case = ET.SubElement(suite, "testcase", classname="diagnose.input", name="errors no rule explains")
        text = gate_lines.unrecognised_text(report, msg)
        ET.SubElement(case, "failure", message=xml_text(_one_line(text)), type="unrecognised").text = xml_text(text)
    if report.errors:
        counts["tests"] += 1
        counts["errors"] += 1
        case = ET.SubElement(suite, "testcase", classname="diagnose.input", name="run complete")
        err = ET.SubElement(case, "error", message=msg("junit.incomplete"), type="internal-error")
        err.text = xml_text("\n".join(report.errors))
    _set_counts(suite, counts)
    for k in totals:
        totals[k] += counts[k]
    _set_counts(root, totals)

    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _coverage_case(suite: ET.Element, report: Report, allow_empty: bool, allow_partial: bool, counts: dict,
                   msg: Messages) -> int:
    """A run that analysed nothing is an ``error`` testcase, partial coverage a ``failure`` (diagnose/analysis/coverage.py),
    unless --allow-empty / --allow-partial accept them (then the sentence goes to system-out)."""
    status = report.status
    if status not in (Status.NOTHING, Status.PARTIAL):
        return 0
    text = msg.say(report.coverage.text)
    name = "something analysed" if status == "nothing-analysed" else "every input read"
    case = ET.SubElement(suite, "testcase", classname="diagnose.input", name=name)
    if (allow_empty if status == "nothing-analysed" else allow_partial):
        ET.SubElement(case, "system-out").text = xml_text(text)
        return 1
    tag, key = ("error", "errors") if status == "nothing-analysed" else ("failure", "failures")
    ET.SubElement(case, tag, message=xml_text(_one_line(text)), type=str(status)).text = xml_text(text)
    counts[key] += 1
    return 1


def _set_counts(elem: ET.Element, counts: dict) -> None:
    for k in ("tests", "failures", "errors", "skipped"):
        elem.set(k, str(counts[k]))


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:299] + "…"


def _body(findings: list[Finding], node: str, file_node: dict, paths, msg: Messages) -> str:
    parts = []
    for f in findings:
        parts.append(f"[{msg.severity(f.severity).upper()}] {f.rule_id} {f.name}: {msg.say(f.title)}")
        parts.append(msg.say(f.summary))
        if f.caused_by:
            parts.append(msg("junit.because", rule=f.caused_by))
        evidence = [e for e in f.evidence if node == NO_NODE or file_node.get(e.file) in (node, None)]
        evidence = evidence or f.evidence
        if evidence:
            parts.append("")
            parts.append(msg("junit.evidence"))
            for e in evidence:
                parts.append(f"  {relative_path(e.file, paths)}:{e.line}: {e.text[:1000]}")
        remediation = msg.say(f.remediation)
        if remediation:
            parts.append("")
            parts.append(msg("junit.fix"))
            parts.append(remediation.strip())
        parts.append("")
    body = "\n".join(parts).rstrip() + "\n"
    return body if len(body) <= MAX_BODY else body[:MAX_BODY] + "\n… " + msg("junit.truncated") + "\n"
