"""Open and resolve, by fingerprint: each finding is said once when it opens and once when it resolves.

Every tick judges the whole window, so a finding is judged again and again while its lines stay inside; the
tracker turns that into two events:

- **open**: the first tick a fingerprint is judged (and not open already). A fingerprint that resolved is
  opened again only by a newer occurrence than the one it resolved with: its old lines may still sit in the
  window;
- **refresh**: a later occurrence (its ``last_seen`` moved on), or, for a finding that describes a state
  still holding (``facts["ongoing"]``: an engine still quiet), every tick it is judged;
- **resolve**: ``resolve_after`` of clock time with no refresh. A finding whose lines carry no time is
  refreshed while it is judged and resolves once its lines leave the window.

The clock is the watcher's (the logs' time, carried on by the wall clock while nothing is written), so a
replay at any speed and a live stream resolve alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from diagnose.model import Finding
from diagnose.model.live import LiveEvent, Tracked

MAX_OPEN = 5000
MAX_RESOLVED = 20000


def _iso(value: datetime | None) -> str | None:
    return value.isoformat(timespec="seconds") if value is not None else None


def _epoch(value: datetime) -> float:
    return value.timestamp()


@dataclass
class Tracker:
    resolve_after_s: float
    open: dict[str, Tracked] = field(default_factory=dict)
    resolved: dict[str, tuple[str | None, float]] = field(default_factory=dict)  # fp -> (last_seen, when)
    opened_total: dict[str, int] = field(default_factory=dict)  # "rule|category|severity" -> count
    seq: int = 0

    def update(self, findings: list[Finding], clock: datetime, forget_after_s: float) -> list[LiveEvent]:
        """The events of one judgement at ``clock``: opens first (in the report's order), then resolves."""
        now = _epoch(clock)
        events: list[LiveEvent] = []
        for f in findings:
            fp = f.fingerprint or f"{f.rule_id}:{f.evidence[0].file if f.evidence else ''}"
            last = _iso(f.last_seen)
            seen_at = min(_epoch(f.last_seen), now) if f.last_seen is not None else now
            ongoing = bool(f.facts.get("ongoing"))
            held = self.open.get(fp)
            if held is not None:
                _refresh(held, f, last, now if ongoing or f.last_seen is None else seen_at)
                continue
            before = self.resolved.get(fp)
            if before is not None and not ongoing and (last is None or (before[0] is not None and last <= before[0])):
                continue  # the occurrences it resolved with, still in the window
            if len(self.open) >= MAX_OPEN:
                continue
            self.resolved.pop(fp, None)
            held = self.open[fp] = _tracked(fp, f, clock, now if ongoing or f.last_seen is None else seen_at)
            key = f"{f.rule_id}|{f.category}|{f.severity}"
            self.opened_total[key] = self.opened_total.get(key, 0) + 1
            events.append(self._event("open", clock, held))
        for fp, held in list(self.open.items()):
            if now - held.refreshed >= self.resolve_after_s:
                del self.open[fp]
                self.resolved[fp] = (held.last_seen, now)
                events.append(self._event("resolve", clock, held))
        for fp, (_, when) in list(self.resolved.items()):
            if now - when > forget_after_s or len(self.resolved) > MAX_RESOLVED:
                del self.resolved[fp]
        return events

    def _event(self, kind: str, clock: datetime, held: Tracked) -> LiveEvent:
        self.seq += 1
        return LiveEvent(seq=self.seq, event=kind, at=_iso(clock), finding=held.copy())

    # --- state -----------------------------------------------------------------------------------------------

    def to_state(self) -> dict:
        return {"open": {fp: t.to_state() for fp, t in self.open.items()},
                "resolved": {fp: list(v) for fp, v in self.resolved.items()},
                "opened_total": dict(self.opened_total), "seq": self.seq}

    def restore(self, saved: dict) -> None:
        self.open = {fp: Tracked.from_state(t) for fp, t in (saved.get("open") or {}).items()}
        self.resolved = {fp: (v[0], float(v[1])) for fp, v in (saved.get("resolved") or {}).items()}
        self.opened_total = {k: int(v) for k, v in (saved.get("opened_total") or {}).items()}
        self.seq = int(saved.get("seq") or 0)


def _tracked(fp: str, f: Finding, clock: datetime, refreshed: float) -> Tracked:
    return Tracked(
        fingerprint=fp, rule_id=f.rule_id, name=f.name, category=f.category, severity=f.severity, title=f.title,
        summary=f.summary, nodes=list(f.nodes), ranks=list(f.ranks), count=f.count, first_seen=_iso(f.first_seen),
        last_seen=_iso(f.last_seen), opened_at=_iso(clock), refreshed=refreshed,
        evidence=[{"file": e.file, "line": e.line, "text": e.text} for e in f.evidence[:3]],
        facts={k: v for k, v in f.facts.items() if isinstance(v, (str, int, float, bool)) or v is None},
    )


def _refresh(held: Tracked, f: Finding, last: str | None, at: float) -> None:
    held.count, held.summary, held.nodes, held.ranks = f.count, f.summary, list(f.nodes), list(f.ranks)
    if last is not None and (held.last_seen is None or last > held.last_seen):
        held.last_seen = last
    held.refreshed = max(held.refreshed, at)
