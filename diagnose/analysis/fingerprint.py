"""The stable identity of a finding across runs: what a findings baseline (``--baseline report.json``) and
SARIF's ``partialFingerprints`` compare.

A fingerprint hashes the rule id, the shape of the first evidence line's file name and the signature of that
line (diagnose/analysis/signatures.py: times, ids, addresses, paths, sizes and numbers masked). It leaves out what
changes from one run of the same problem to the next: timestamps, line numbers, counts, pids, which node
happened to log first, and the folder or archive the logs were collected into. Only the file's own name
takes part, with its digits masked (``plog-2873_20250701093000123.log`` -> ``plog-#_#.log``) and the suffixes
rotation adds dropped (``vllm.log.1`` -> ``vllm.log``), so
``bench-0701.tgz!job/node-1/vllm.log`` and ``bench-0702.tgz!job/node-2/vllm.log`` give the same fingerprint.
Two findings of one rule (the error-code rules report one per code) differ by their evidence text.

The idea is semgrep's match-based id and SARIF's partialFingerprints: a hash of the rule and a normalised
location and text, not of positions.
"""

from __future__ import annotations

import hashlib
import re

import polars as pl

from diagnose.knowledge.masks import mask

VERSION = "v1"
_DIGITS = re.compile(r"\d+")
# A rotated log is the same log (``diagnose watch`` follows a file through its rotation): the suffixes that
# rotation adds are dropped from the file's name.
_ROTATED = (
    (re.compile(r"(\.log|\.txt|\.out)(?:\.\d+)+$"), r"\1"),  # Python's RotatingFileHandler, logrotate: app.log.1
    (re.compile(r"(\.log|\.txt|\.out)-\d{8,}$"), r"\1"),  # logrotate's dateext: app.log-20250903
    (re.compile(r"^(vllm_ascend_\d{8}_\d{6}_\d+)_\d{3}(\.log)$"), r"\1\2"),  # vllm-ascend: ..._<pid>_002.log
)


def unrotated(display: str) -> str:
    """The path with the suffix its rotation added dropped from its last part (``node-0/app.log.1`` ->
    ``node-0/app.log``): the name of the log the file is part of."""
    head, sep, name = display.replace("\\", "/").rpartition("/")
    for pattern, kept in _ROTATED:
        name = pattern.sub(kept, name)
    return head + sep + name


def file_shape(display: str) -> str:
    """The file's own name with its digits masked: the last part of a path or archive member."""
    if not display or display in ("-", "<stdin>"):
        return "stdin"
    name = re.split(r"[/\\!]", display.rstrip("/\\!"))[-1]
    return _DIGITS.sub("#", unrotated(name))


def digest(rule_id: str, shape: str, signature: str) -> str:
    text = f"{VERSION}\0{rule_id}\0{shape}\0{signature}"
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:32]


def fingerprints(items: list[tuple[str, str, str]]) -> list[str]:
    """Fingerprints of (rule id, evidence file, evidence text) triples; the texts are masked in one polars
    query. An empty file and text (a finding without evidence) leave only the rule id."""
    if not items:
        return []
    texts = pl.DataFrame({"t": [t or "" for _, _, t in items]}, schema={"t": pl.String})
    signatures = texts.select(mask(pl.col("t"))).to_series().to_list()
    return [digest(rule_id, file_shape(file) if file else "", sig or "")
            for (rule_id, file, _), sig in zip(items, signatures)]


def of_findings(findings) -> list[str]:
    """The fingerprint of each finding (model.Finding), in order."""
    return fingerprints([(f.rule_id, f.evidence[0].file if f.evidence else "", f.evidence[0].text if f.evidence else "")
                         for f in findings])


def of_report_finding(item: dict) -> str | None:
    """The fingerprint of a finding in an earlier JSON report: as written, or (a report from before
    fingerprints were written) recomputed from its rule id and first evidence line."""
    if isinstance(item.get("fingerprint"), str) and item["fingerprint"]:
        return item["fingerprint"]
    rule_id = item.get("rule_id")
    if not isinstance(rule_id, str):
        return None
    evidence = item.get("evidence") or []
    first = evidence[0] if evidence and isinstance(evidence[0], dict) else {}
    return fingerprints([(rule_id, str(first.get("file") or ""), str(first.get("text") or ""))])[0]
