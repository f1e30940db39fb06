"""The live contracts: what ``watch`` and ``npd`` keep about findings over time, and what their renderers
(the Prometheus textfile, the MindCluster public fault) are handed besides the window's Report.

A finding is keyed by its stable fingerprint (diagnose/analysis/fingerprint.py): it **opens** the first tick
it is judged, and **resolves** after ``--resolve-after`` without a new occurrence. Times are ISO strings of
the watch clock (the logs' own time, carried on by the wall clock while nothing is written) and plain
numbers where arithmetic needs them.

A finding's ``title`` and ``summary`` are ``Words`` (diagnose/messages.py), kept as words while it is tracked
and in the state (``to_state``: their phrases and templates with their values, never a sentence), and said in
the output's language only by what writes them: the JSON lines (``LiveEvent.to_dict``), ``npd``'s answers and
the MindCluster fault's description.
"""

from __future__ import annotations

from typing import Any

import msgspec

from diagnose.messages import Messages, Words, words_data, words_from_data

_WORDS = ("title", "summary")


class Tracked(msgspec.Struct, kw_only=True):
    """An open finding, as the state keeps it between ticks and restarts."""

    fingerprint: str
    rule_id: str
    name: str
    category: str
    severity: str
    title: Words | str
    summary: Words | str
    nodes: list[str]
    ranks: list[int]
    count: int  # occurrences in the window at the last tick it was judged
    first_seen: str | None  # the logs' time of its first occurrence
    last_seen: str | None  # ... of its latest occurrence
    opened_at: str  # clock time it opened
    refreshed: float  # clock (epoch seconds) of its latest occurrence, or of the last tick it was judged ongoing
    evidence: list[dict[str, Any]] = msgspec.field(default_factory=list)  # first lines: file, line, text
    facts: dict[str, Any] = msgspec.field(default_factory=dict)

    def copy(self) -> "Tracked":
        """A snapshot (an event keeps the finding as it was when it was said)."""
        return msgspec.structs.replace(self, nodes=list(self.nodes), ranks=list(self.ranks),
                                       evidence=[dict(e) for e in self.evidence], facts=dict(self.facts))

    def to_state(self) -> dict[str, Any]:
        """Plain JSON values: the title and summary as their phrases and values (``words_data``)."""
        body = msgspec.structs.asdict(self.copy())
        body.update({k: words_data(getattr(self, k)) for k in _WORDS})
        return body

    @classmethod
    def from_state(cls, data: dict[str, Any]) -> "Tracked":
        """The entry ``to_state`` wrote (a plain string of an earlier state is said as it is). Raises
        TypeError for an entry that lacks a field."""
        names = set(cls.__struct_fields__)
        return cls(**{k: words_from_data(v) if k in _WORDS else v for k, v in data.items() if k in names})

    def said(self, msg: Messages) -> dict[str, Any]:
        """The entry with its title and summary in ``msg``'s language."""
        body = msgspec.structs.asdict(self.copy())
        body.update({k: msg.say(getattr(self, k)) for k in _WORDS})
        return body


class LiveEvent(msgspec.Struct):
    """One line of ``watch``'s JSON lines output: a finding opened or resolved."""

    seq: int  # increasing over the state's life: a reader deduplicates by it
    event: str  # "open" or "resolve"
    at: str  # clock time
    finding: Tracked

    def to_dict(self, msg: Messages) -> dict[str, Any]:
        """The JSON line's fields, the finding's texts in ``msg``'s language."""
        body = self.finding.said(msg)
        body.pop("refreshed", None)
        return {"seq": self.seq, "event": self.event, "at": self.at, **body}


class RunStatus(msgspec.Struct):
    """What the live renderers say about the run itself, beside the window's Report."""

    node: str  # the host (Kubernetes node) the run describes
    finished: float  # epoch seconds the last judgement ended
    duration_s: float
    exit_code: int  # what a batch run over the window would exit with
    unread_inputs: int  # inputs skipped (not by design) or read only in part
    active: list[Tracked] = msgspec.field(default_factory=list)  # open findings
    opened_total: dict[tuple[str, str, str], int] = msgspec.field(default_factory=dict)  # (rule, category, severity)


class PublicFault(msgspec.Struct, kw_only=True):
    """One fault of a MindCluster public-fault message (ClusterD's ``faults[]`` entry), decided by
    diagnose/live/faults.py; the renderer only writes it within ClusterD's limits."""

    fault_id: str
    fault_type: str  # NPU, Node, Network, Storage
    fault_code: str  # nine digits
    fault_time_ms: int  # when the fault began (also in a recover)
    assertion: str  # occur, recover, once
    node_name: str
    device_ids: list[int]
    description: Words | str  # said in the message's language by the renderer
    location: dict[str, str] = msgspec.field(default_factory=dict)
