"""The live contracts: what ``watch`` and ``npd`` keep about findings over time, and what their renderers
(the Prometheus textfile, the MindCluster public fault) are handed besides the window's Report.

A finding is keyed by its stable fingerprint (diagnose/analysis/fingerprint.py): it **opens** the first tick
it is judged, and **resolves** after ``--resolve-after`` without a new occurrence. Times are ISO strings of
the watch clock (the logs' own time, carried on by the wall clock while nothing is written) and plain
numbers where arithmetic needs them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Tracked:
    """An open finding, as the state keeps it between ticks and restarts."""

    fingerprint: str
    rule_id: str
    name: str
    category: str
    severity: str
    title: str
    summary: str
    nodes: list[str]
    ranks: list[int]
    count: int  # occurrences in the window at the last tick it was judged
    first_seen: str | None  # the logs' time of its first occurrence
    last_seen: str | None  # ... of its latest occurrence
    opened_at: str  # clock time it opened
    refreshed: float  # clock (epoch seconds) of its latest occurrence, or of the last tick it was judged ongoing
    evidence: list[dict[str, Any]] = field(default_factory=list)  # first lines: file, line, text
    facts: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class LiveEvent:
    """One line of ``watch``'s JSON lines output: a finding opened or resolved."""

    seq: int  # increasing over the state's life: a reader deduplicates by it
    event: str  # "open" or "resolve"
    at: str  # clock time
    finding: Tracked

    def to_dict(self) -> dict[str, Any]:
        body = self.finding.to_dict()
        body.pop("refreshed", None)
        return {"seq": self.seq, "event": self.event, "at": self.at, **body}


@dataclass
class RunStatus:
    """What the live renderers say about the run itself, beside the window's Report."""

    node: str  # the host (Kubernetes node) the run describes
    finished: float  # epoch seconds the last judgement ended
    duration_s: float
    exit_code: int  # what a batch run over the window would exit with
    unread_inputs: int  # inputs skipped (not by design) or read only in part
    active: list[Tracked] = field(default_factory=list)  # open findings
    opened_total: dict[tuple[str, str, str], int] = field(default_factory=dict)  # (rule, category, severity)


@dataclass
class PublicFault:
    """One fault of a MindCluster public-fault message (ClusterD's ``faults[]`` entry), decided by
    diagnose/live/faults.py; the renderer only writes it within ClusterD's limits."""

    fault_id: str
    fault_type: str  # NPU, Node, Network, Storage
    fault_code: str  # nine digits
    fault_time_ms: int  # when the fault began (also in a recover)
    assertion: str  # occur, recover, once
    node_name: str
    device_ids: list[int]
    description: str
    location: dict[str, str] = field(default_factory=dict)
