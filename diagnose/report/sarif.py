"""SARIF 2.1.0 report (GitHub code scanning, Azure DevOps, any SARIF viewer).

One run; ``tool.driver.rules`` lists every rule that was checked (help text = the remediation), and each
finding is one result with its rule, level, message and at least one location: the first evidence line,
further evidence as ``relatedLocations``. A finding without evidence (an ``absence`` rule) points at line 1 of
the first file of its node, so no result is ever without a location (GitHub rejects those).

Paths are made relative to the input root given on the command line: ``logs/node-1/x.log`` read from
``logs`` becomes ``node-1/x.log``; an archive member ``a.tgz!job/x.log`` read from ``a.tgz`` becomes
``job/x.log`` (a nested archive stays a folder: ``job/node-2.tar.gz/x.log``). With several input roots each
path starts with its root's name. ``partialFingerprints`` hold two hashes: ``diagnoseEvidence/v1``, of rule id +
that relative path + the evidence text with times and numbers normalised, so the same problem in tomorrow's
run is the same alert; and ``diagnoseFinding/v1``, the finding's own fingerprint (diagnose/analysis/fingerprint.py, the
``fingerprint`` of the JSON report and what ``--baseline report.json`` compares). With such a baseline each
result carries its ``baselineState`` (``new`` or ``unchanged``).

Bytes are deterministic: no times, no absolute paths, findings in the report's ranked order.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from urllib.parse import quote

from diagnose import __version__
from diagnose.messages import Messages, messages
from diagnose.model import Finding, Report, Status
from diagnose.report import gate_lines

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {"critical": "error", "error": "error", "warning": "warning", "info": "note"}
FINGERPRINT_KEY = "diagnoseEvidence/v1"
FINDING_KEY = "diagnoseFinding/v1"
BASELINE_STATES = {"new": "new", "known": "unchanged"}
_BACKSLASH = re.compile(r"\\(?!x[0-9a-f]{2}|u[0-9a-f]{4})")
MAX_RELATED = 100  # GitHub keeps at most 1,000 locations per result

# Leading times and dates of the common headers, hex numbers, then any digits: what changes between runs.
_NORMALISE = [
    (re.compile(r"\d{4}[-/]\d{1,2}[-/]\d{1,2}[ T]\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?"), " "),
    (re.compile(r"\b\d{1,2}-\d{1,2} \d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?"), " "),
    (re.compile(r"0x[0-9a-fA-F]+"), "#"),
    (re.compile(r"\d+"), "#"),
    (re.compile(r"\s+"), " "),
]


def normalise(text: str) -> str:
    for pattern, repl in _NORMALISE:
        text = pattern.sub(repl, text)
    return text.strip()


def fingerprint(rule_id: str, uri: str, text: str) -> str:
    digest = hashlib.sha256(f"{rule_id}\0{uri}\0{normalise(text)}".encode("utf-8", "replace"))
    return digest.hexdigest()[:32]


def relative_path(display: str, roots: list[str] | None = None) -> str:
    """The path of ``display`` (a file path, or ``archive!member[!member]``) relative to its input root.

    ``roots`` are the paths given on the command line; without them only archive members are made relative
    (to their archive) and other paths lose a leading ``/`` or ``./``.
    """
    if display in ("<stdin>", "-"):
        return "stdin"
    # A backslash is a Windows separator, unless it starts an escape of the display form (ingest/names.py).
    outer, *members = _BACKSLASH.sub("/", display).split("!")
    members = [m.strip("/") for m in members if m.strip("/")]
    roots = [r for r in (roots or []) if r and r != "-"]
    prefix = ""
    rel = None
    for root in roots:
        nroot = posixpath.normpath(_BACKSLASH.sub("/", root))
        nouter = posixpath.normpath(outer)
        if nouter == nroot:
            rel = "" if members else posixpath.basename(nouter)
        elif nouter.startswith(nroot.rstrip("/") + "/") or nroot == ".":
            rel = posixpath.relpath(nouter, nroot)
        else:
            continue
        if len(roots) > 1:
            prefix = posixpath.basename(nroot.rstrip("/")) or "root"
        break
    if rel is None:
        if members:
            rel = ""
        else:
            rel = posixpath.normpath(outer).lstrip("/")
            while rel.startswith("../"):
                rel = rel[3:]
    parts = [p for p in [prefix, rel, *members] if p and p != "."]
    path = "/".join(parts) or posixpath.basename(outer) or "input"
    return posixpath.normpath(path)


def relative_uri(display: str, roots: list[str] | None = None) -> str:
    return quote(relative_path(display, roots), safe="/-._~!$&'()*+,;=@")


def primary_location(f: Finding, report: Report) -> tuple[str, int]:
    """(display path, line) of the first evidence; without evidence, line 1 of a file of the finding's node."""
    if f.evidence:
        return f.evidence[0].file, max(1, int(f.evidence[0].line or 1))
    nodes = set(f.nodes)
    for inp in report.inputs:
        if not nodes or inp.node in nodes:
            return inp.path, 1
    if report.inputs:
        return report.inputs[0].path, 1
    return "input", 1


def rule_entries(report: Report, catalog=None, lang: str = "en") -> list[dict]:
    """Rules checked (sorted by id), plus any rule that has a finding but was not listed."""
    msg = messages(lang)
    by_id: dict[str, dict] = {}
    rules_by_id = {r.id: r for r in report.rules_checked}
    for r in report.rules_checked:
        by_id[r.id] = {"id": r.id, "name": r.name, "category": r.category, "severity": r.severity,
                       "title": r.title.get(lang) or r.title.get("en", "")}
    for f in report.findings:
        by_id.setdefault(f.rule_id, {"id": f.rule_id, "name": f.name, "category": f.category,
                                     "severity": f.severity, "title": msg.say(f.title)})
    help_from_findings = {}
    for f in report.findings:
        help_from_findings.setdefault(f.rule_id, msg.say(f.remediation))
    out = []
    for rid in sorted(by_id):
        brief = by_id[rid]
        rule = rules_by_id.get(rid)
        title = brief.get("title") or rid
        description = ((rule.description.get(lang) or rule.description.get("en", "")).strip() if rule else "") or title
        remediation = help_from_findings.get(rid) or (
            (rule.remediation.get(lang) or rule.remediation.get("en", "")).strip() if rule else "")
        remediation = remediation.strip() or msg("sarif.see_rule", rule=rid)
        entry = {
            "id": rid,
            "name": brief.get("name") or rid,
            "shortDescription": {"text": title},
            "fullDescription": {"text": description},
            "help": {"text": remediation, "markdown": remediation},
            "defaultConfiguration": {"level": LEVELS.get(brief.get("severity", ""), "warning")},
            "properties": {
                "tags": [t for t in ("diagnose", brief.get("category")) if t],
                "severity": brief.get("severity", "warning"),
            },
        }
        out.append(entry)
    return out


def build(report: Report, paths: list[str] | None = None, catalog=None, lang: str = "en") -> dict:
    rules = rule_entries(report, catalog, lang)
    msg = messages(lang)
    index = {r["id"]: i for i, r in enumerate(rules)}
    results = []
    for f in report.findings:
        file, line = primary_location(f, report)
        uri = relative_uri(file, paths)
        anchor_text = f.evidence[0].text if f.evidence else msg.say(f.summary)
        location = _location(uri, line, f.evidence[0].text if f.evidence else None)
        result = {
            "ruleId": f.rule_id,
            "ruleIndex": index[f.rule_id],
            "level": LEVELS.get(f.severity, "warning"),
            "message": {"text": _message(f, msg)},
            "locations": [location],
            "partialFingerprints": {FINGERPRINT_KEY: fingerprint(f.rule_id, uri, anchor_text),
                                    **({FINDING_KEY: f.fingerprint} if f.fingerprint else {})},
            "properties": {
                "severity": f.severity,
                "category": f.category,
                "count": f.count,
                "nodes": list(f.nodes),
                "ranks": list(f.ranks),
                "firstSeen": f.first_seen.isoformat(sep=" ") if f.first_seen else None,
                "lastSeen": f.last_seen.isoformat(sep=" ") if f.last_seen else None,
                "causedBy": f.caused_by,
            },
        }
        if f.baseline_state in BASELINE_STATES:
            result["baselineState"] = BASELINE_STATES[f.baseline_state]
        related = []
        for i, ev in enumerate(f.evidence[1:MAX_RELATED + 1], 1):
            loc = _location(relative_uri(ev.file, paths), max(1, int(ev.line or 1)), ev.text)
            loc["id"] = i
            loc["message"] = {"text": msg("sarif.evidence", n=i + 1)}
            related.append(loc)
        if related:
            result["relatedLocations"] = related
        results.append(result)
    if gate_lines.unrecognised_fail(report):  # errors no rule explains fail the run: a failing result says so
        file, line = gate_lines.unrecognised_place(report)
        uri = relative_uri(file, paths) if file else "input"
        if gate_lines.UNRECOGNISED_CHECK not in index:
            index[gate_lines.UNRECOGNISED_CHECK] = len(rules)
            text = msg("sarif.unrecognised_rule")
            rules.append({"id": gate_lines.UNRECOGNISED_CHECK, "name": "unrecognised-errors",
                          "shortDescription": {"text": text}, "fullDescription": {"text": text},
                          "help": {"text": text, "markdown": text}, "defaultConfiguration": {"level": "error"},
                          "properties": {"tags": ["diagnose", "engine"], "severity": "error"}})
        said = gate_lines.unrecognised_text(report, msg)
        results.append({"ruleId": gate_lines.UNRECOGNISED_CHECK, "ruleIndex": index[gate_lines.UNRECOGNISED_CHECK],
                        "level": "error", "message": {"text": said}, "locations": [_location(uri, line, None)],
                        "partialFingerprints": {FINGERPRINT_KEY: fingerprint(gate_lines.UNRECOGNISED_CHECK, uri, said)}})
    notifications = [
        {"level": "warning", "message": {"text": msg("sarif.skipped", path=s.path, reason=msg.say(s.reason))},
         "descriptor": {"id": "input-skipped"}}
        for s in report.skipped
    ] + [
        {"level": "error", "message": {"text": e}, "descriptor": {"id": "internal-error"}} for e in report.errors
    ] + _coverage_notifications(report, msg)
    # A run that analysed nothing did not execute its analysis (diagnose/analysis/coverage.py); partial coverage is a
    # warning notification and a property of the invocation.
    invocation = {"executionSuccessful": not report.incomplete and report.status != Status.NOTHING}
    if report.coverage is not None:
        invocation["properties"] = {"coverage": str(report.coverage.status)}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    driver = {
        "name": "diagnose",
        "version": __version__,
        "semanticVersion": __version__,
        "rules": rules,
    }
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": driver},
                "invocations": [invocation],
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


def _coverage_notifications(report: Report, msg: Messages) -> list[dict]:
    cov = report.coverage
    if cov is None or cov.status not in (Status.NOTHING, Status.PARTIAL):
        return []
    out = [{"level": "error" if cov.status == Status.NOTHING else "warning", "message": {"text": msg.say(cov.text)},
            "descriptor": {"id": str(cov.status)}}]
    out += [{"level": "warning", "message": {"text": msg("sarif.read_in_part", path=i.path, reason=msg.say(i.reason))},
             "descriptor": {"id": "input-incomplete"}} for i in cov.incomplete]
    return out


def _location(uri: str, line: int, snippet: str | None) -> dict:
    region: dict = {"startLine": line}
    if snippet is not None:
        region["snippet"] = {"text": snippet[:2000]}
    return {"physicalLocation": {"artifactLocation": {"uri": uri}, "region": region}}


def _message(f: Finding, msg: Messages) -> str:
    title, summary = msg.say(f.title), msg.say(f.summary)
    text = msg("sarif.message", title=title, summary=summary) if summary else title
    if f.caused_by:
        text += msg("sarif.because", rule=f.caused_by)
    return text


def render(report: Report, paths: list[str] | None = None, catalog=None, lang: str = "en", **_options) -> str:
    return json.dumps(build(report, paths, catalog, lang), ensure_ascii=False, indent=2) + "\n"


__all__ = ["render", "build", "relative_path", "relative_uri", "fingerprint", "normalise", "primary_location",
           "LEVELS"]
