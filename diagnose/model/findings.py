"""A finding: what a rule (or a pass) concluded, with its evidence, in facts and words said later.

``title``, ``summary`` and ``remediation`` are ``Words`` (diagnose/messages.py): the rule's or the code table's
text in every language with the values that fill it; a renderer says them in its output's language. ``facts``
are those values (numbers, names), kept for the passes after the rules and for the JSON report's readers.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

import msgspec

from diagnose.messages import Words


class Evidence(msgspec.Struct, frozen=True):
    file: str  # display path (archive members as archive.tgz!member)
    line: int  # 1-based, as grep -n counts
    text: str  # the line as read


class SourceSite(msgspec.Struct, frozen=True):
    """Where a message comes from, as the message index knows it (diagnose/knowledge/index.py): the project and
    the releases that print it, the module, function and line in the newest of them, the exception class or log
    level, the template, the category, and a link to that line when the release's repository is known."""

    project: str
    versions: str  # "0.9.1rc1..0.11.0", or one release
    path: str
    function: str
    line: int
    kind: str
    template: str
    category: str
    origin: str  # python | native
    code: str = ""
    link: str = ""


class Finding(msgspec.Struct):
    """What a rule (or a pass) concluded. ``fingerprint`` is the finding's identity across runs: 32 hex digits
    of a SHA-256 over the rule id, the first evidence line's file name (the last part of its path or archive
    member, digits masked: ``plog-#_#.log``) and that line's signature (masked as an unrecognised error's).
    Times, line numbers, counts, pids, the collecting folder and which node logged first do not change it; the
    rule, the kind of file and the wording of the evidence do. A finding without evidence has the fingerprint of
    its rule id alone. SARIF carries it as ``partialFingerprints["diagnoseFinding/v1"]``."""

    rule_id: str  # the rule's stable id (KV001), or the pass's
    name: str  # the rule's unique name (kv-cache-saturated)
    category: str  # one of model/frames.py CATEGORIES (kv-cache, communication, ...)
    severity: str  # info | warning | error | critical
    title: Words
    summary: Words  # what happened, with the key numbers
    count: int  # occurrences (matching lines, or threshold runs)
    first_seen: datetime | None  # the node's wall clock; null when the log had no time
    last_seen: datetime | None
    nodes: list[str]  # the nodes it was seen on
    ranks: list[int]  # the distributed ranks it was seen on
    evidence: list[Evidence]  # the first lines that show it
    remediation: Words  # what to do: Markdown with the flags and commands
    references: list[str]  # links to public documentation and issues
    caused_by: str | None = None  # rule id of the finding this one is a consequence of
    fingerprint: str | None = None  # stable across runs (diagnose/analysis/fingerprint.py): findings baselines, SARIF
    # with a findings baseline (--baseline PREVIOUS.json): "known" when that report has a finding (or a suppressed
    # finding) of the same rule_id and fingerprint, else "new"
    baseline_state: str | msgspec.UnsetType = msgspec.UNSET
    site: SourceSite | msgspec.UnsetType = msgspec.UNSET  # the source line of the message, from the message index
    # Not in the JSON report (``INTERNAL``): what the passes after the rules need.
    consequence: bool = False  # the rule describes an echo of another failure (engine death, timeouts)
    facts: dict[str, Any] = msgspec.field(default_factory=dict)  # the values behind the summary
    generic: bool = False  # says only the family of a failure (an unlisted or "inner error" code): ranked after specific ones
    linked: bool = False  # ``caused_by`` follows a cause link a rule declares (diagnose/analysis/chains.py)
    # the rule's severity was lowered for want of evidence (a short excerpt): a problem seen, ranked before the
    # findings that are informational by design (a measurement)
    demoted: bool = False

    INTERNAL: ClassVar[tuple[str, ...]] = ("consequence", "facts", "generic", "linked", "demoted")

    def short_where(self, sep: str = ",") -> str:
        """A few nodes and ranks for a table cell (``node-0,node-1 rank 0,8,13``); empty when unknown."""
        parts = []
        if self.nodes:
            parts.append(sep.join(self.nodes[:3]) + ("…" if len(self.nodes) > 3 else ""))
        if self.ranks:
            parts.append("rank " + ",".join(map(str, self.ranks[:4])) + ("…" if len(self.ranks) > 4 else ""))
        return " ".join(parts)


PLACES = ("any", "node", "rank")  # where a cause and its consequence must have been seen


class CauseLink(msgspec.Struct, frozen=True):
    """A rule's declaration that the finding of rule ``cause`` can lead to the finding of rule ``effect``
    (``[[causes]]`` and ``[[caused_by]]`` in a rule file): ranking follows it when both fired and the
    conditions hold. ``place``: ``node`` (seen on a common node), ``rank`` (a common node and rank), ``any``;
    ``within``: the consequence began at most this many seconds after the cause was last seen (None: no bound).
    A finding without times or places (a version read from ``npu-smi``, a profile) meets those conditions."""

    cause: str
    effect: str
    place: str = "any"
    within: float | None = None


class Threshold(msgspec.Struct, frozen=True):
    """A threshold rule's line on a signal (the incident page draws it)."""

    rule_id: str
    signal: str
    value: float
    op: str  # above | below
    plain: bool  # the value alone decides: no `also` conditions on other signals, no engine filter


class RuleInfo(msgspec.Struct, frozen=True):
    """What the renderers need of a rule that ran: its identity and texts in every language, where it points
    readers, and its thresholds."""

    id: str
    name: str
    category: str
    severity: str
    title: dict[str, str]
    description: dict[str, str]
    remediation: dict[str, str]
    references: list[str]
    path: str
    thresholds: list[Threshold] = msgspec.field(default_factory=list)
