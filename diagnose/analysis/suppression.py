"""Suppressions from the configuration file: findings and unrecognised-error signatures a team has looked at
and accepted, each with the reason it gives.

A suppressed item is taken out of the findings (or out of the "Unrecognised errors" section) before the
verdict and the exit code are decided, and is listed in ``Report.suppressed`` with its reason instead: the
text report says how many there were, the JSON report lists them. Nothing is suppressed without a reason.

- A finding suppression names a rule (id or name). ``paths`` (globs) and ``nodes`` (globs) narrow it: the
  finding is suppressed only when every evidence file matches one of the path globs and every node of the
  finding matches one of the node globs, so accepting a known issue on ``node-3`` does not hide the same
  issue on ``node-5``. A path glob matches the whole displayed path or any tail of it (``node-3/*.log``
  matches ``logs/node-3/vllm.log`` and ``ci.tgz!job/node-3/vllm.log``).
- A signature suppression names a signature as printed (``<N>``, ``<HEX>``, ``<IP>`` ... masks included);
  ``*`` stands for any text.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, replace
from typing import Any

from diagnose.model import Signature, SuppressedFinding, SuppressedSignature


@dataclass(frozen=True)
class Suppression:
    reason: str
    rule: str | None = None  # a rule id or name (``resolve_rules`` turns names and former ids into the id)
    signature: str | None = None  # an unrecognised-error signature; `*` matches any text
    paths: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()
    origin: str = ""  # where it was written, e.g. `pyproject.toml: tool.diagnose.suppress[2]`

    def matches_finding(self, finding) -> bool:
        if self.rule is None or self.rule not in (finding.rule_id, finding.name):
            return False
        if self.paths:
            files = {e.file for e in finding.evidence}
            if not files or not all(any(_path_matches(f, g) for g in self.paths) for f in files):
                return False
        return not self.nodes or bool(finding.nodes) and all(
            any(fnmatch.fnmatchcase(n, g) for g in self.nodes) for n in finding.nodes)

    def matches_signature(self, signature: str) -> bool:
        if self.signature is None:
            return False
        return _signature_pattern(self.signature).fullmatch(" ".join(signature.split())) is not None


def _path_matches(display: str, glob: str) -> bool:
    parts = [p for p in re.split(r"[/\\!]", display) if p]
    glob = glob.strip("/")
    return any(fnmatch.fnmatchcase("/".join(parts[i:]), glob) for i in range(len(parts)))


def _signature_pattern(signature: str) -> re.Pattern:
    pieces = " ".join(signature.split()).split("*")
    return re.compile(".*".join(re.escape(p) for p in pieces), re.DOTALL)


def resolve_rules(suppressions: tuple[Suppression, ...], keys) -> tuple[tuple[Suppression, ...], list[str]]:
    """The suppressions with each rule given by name or former id replaced by its id, and an error for each
    that names none of ``keys`` (engine.rule_selection.RuleKey: the loaded rules and the root-cause id)."""
    ids = {}
    for k in keys:
        ids[k.id.upper()] = k.id
        ids[k.name] = k.id
        for alias in k.aliases:
            ids[alias.upper()] = k.id
    out, errors = [], []
    for s in suppressions:
        if s.rule is None:
            out.append(s)
            continue
        found = ids.get(s.rule) or ids.get(s.rule.upper())
        if found is None:
            errors.append(f"{s.origin}.rule: no rule {s.rule!r} (see `diagnose rules list`)")
            continue
        out.append(replace(s, rule=found))
    return tuple(out), errors


def split_findings(findings: list, suppressions: tuple[Suppression, ...], fingerprints: list[str] | None = None
                   ) -> tuple[list, list[SuppressedFinding]]:
    """(kept findings, suppressed entries for the report)."""
    rules = [s for s in suppressions if s.rule is not None]
    if not rules:
        return list(findings), []
    kept, suppressed = [], []
    for i, f in enumerate(findings):
        hit = next((s for s in rules if s.matches_finding(f)), None)
        if hit is None:
            kept.append(f)
            continue
        suppressed.append(SuppressedFinding(
            rule_id=f.rule_id, name=f.name, severity=f.severity, title=f.title, count=f.count, nodes=list(f.nodes),
            fingerprint=fingerprints[i] if fingerprints else getattr(f, "fingerprint", None),
            reason=hit.reason, suppression=hit.origin,
        ))
    return kept, suppressed


def split_signatures(items: list[Signature], suppressions: tuple[Suppression, ...]
                     ) -> tuple[list[Signature], list[SuppressedSignature]]:
    """(kept signatures, suppressed entries for the report)."""
    sigs = [s for s in suppressions if s.signature is not None]
    if not sigs:
        return list(items), []
    kept, suppressed = [], []
    for item in items:
        hit = next((s for s in sigs if s.matches_signature(item.signature)), None)
        if hit is None:
            kept.append(item)
        else:
            suppressed.append(SuppressedSignature(signature=item.signature, count=item.count, level=item.level,
                                                  reason=hit.reason, suppression=hit.origin))
    return kept, suppressed
