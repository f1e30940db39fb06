"""One watch tick: read what the files gained, judge the window, open and resolve findings, keep the state.

    follower.poll() ─► window.add ─► service.judge(window, since = clock - window, now = clock)
                   ─► tracker.update(findings, clock) ─► window.trim ─► the state saved

The **clock** is the logs' own time: the latest time any judged line carries, carried on by the wall clock
while nothing newer is read. A replay at a thousand lines a second and a live stream then open, resolve and
detect silence alike, and a restart after ten minutes sees ten minutes pass.

A tick judges when there is something new, and otherwise every ``judge_every_s`` (silence and quiet
findings change with the clock alone); between those it only resolves what went quiet. Everything a tick
needs to resume is in ``state()``: a process killed between two ticks repeats nothing and loses nothing,
because the offsets, the window's start and the open findings are saved together, after the tick.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Callable

from diagnose.ingest.follow import Chunk, Follower
from diagnose.ingest.names import display
from diagnose.ingest.nodes import node_from_path
from diagnose.live.events import Tracker
from diagnose.live.judge import Judged, Service
from diagnose.live.window import Window
from diagnose.messages import words_data
from diagnose.model import Report
from diagnose.model.live import LiveEvent, RunStatus
from diagnose.pipeline import Settings

RECENT_EVENTS = 200


@dataclass
class Options:
    paths: list[str]
    window_s: float = 1800.0
    resolve_after_s: float = 600.0
    judge_every_s: float = 30.0
    max_window_bytes: int = 64 << 20
    backlog_bytes: int | None = 4 << 20  # of each file already there at the first start
    node: str = "localhost"
    exclude: frozenset[str] = frozenset()


@dataclass
class Tick:
    events: list[LiveEvent]
    judged: bool  # the window was judged this tick (else the last report stands)
    report: Report | None
    status: RunStatus | None
    read_bytes: int = 0


@dataclass
class Watcher:
    options: Options
    settings: Settings  # the user's (rules, selection, language); since and now are set per tick
    exit_code_of: Callable[[Report], int] = lambda report: 0
    wall: Callable[[], float] = time.time
    service: Service | None = None
    follower: Follower = field(init=False)
    window: Window = field(init=False)
    tracker: Tracker = field(init=False)
    stream_ts: datetime | None = None  # the latest log time read ...
    stream_wall: float = 0.0  # ... and the wall time it was read at
    last_judge_wall: float = 0.0
    report: Report | None = None
    status: RunStatus | None = None
    recent: list[dict] = field(default_factory=list)  # the last events, for npd's answers (titles as words_data)

    def __post_init__(self) -> None:
        o = self.options
        self.follower = Follower(list(o.paths), exclude=o.exclude, backlog=o.backlog_bytes)
        self.window = Window(o.window_s, o.max_window_bytes)
        self.tracker = Tracker(o.resolve_after_s)
        if self.service is None:
            self.service = Service(self.settings)

    # --- the clock -----------------------------------------------------------------------------------------

    def clock(self, wall: float | None = None) -> datetime:
        wall = self.wall() if wall is None else wall
        if self.stream_ts is None:
            return datetime.fromtimestamp(wall).replace(microsecond=0)
        return self.stream_ts + timedelta(seconds=max(0.0, wall - self.stream_wall))

    # --- a tick --------------------------------------------------------------------------------------------

    def tick(self) -> Tick:
        wall = self.wall()
        chunks = self.follower.poll()
        for old, new in self.follower.copies:  # copytruncate: what was read of the log is now in its copy
            pos = self.follower.files[new]
            self.window.move(old, new, Chunk(key=new, path=display(pos.path), rel=display(pos.rel),
                                             node=node_from_path(display(pos.rel)) or node_from_path(display(pos.path)),
                                             first_line=0, offset=0, data=b"", mtime=_mtime(pos.path, wall)))
        for chunk in chunks:
            self.window.add(chunk, wall)
        self.window.forget(set(self.follower.files))
        due = wall - self.last_judge_wall >= self.options.judge_every_s
        judged = None
        if chunks or due or self.report is None:
            judged = self._judge(wall)
            findings = judged.report.findings
        else:
            findings = self.report.findings if self.report is not None else []
        events = self.tracker.update(findings, self.clock(wall), self.options.window_s + self.options.resolve_after_s)
        for event in events:
            self.recent.append({"seq": event.seq, "event": event.event, "fingerprint": event.finding.fingerprint,
                                "rule_id": event.finding.rule_id, "category": event.finding.category,
                                "severity": event.finding.severity, "title": words_data(event.finding.title)})
        del self.recent[:-RECENT_EVENTS]
        if judged is not None:
            self.window.trim(judged.first_inside, wall)
        if self.status is not None:
            self.status.active = list(self.tracker.open.values())
            self.status.opened_total = _totals(self.tracker.opened_total)
        return Tick(events, judged is not None, self.report, self.status, sum(len(c.data) for c in chunks))

    def _judge(self, wall: float) -> Judged:
        started = time.monotonic()
        if self.stream_ts is None and self.window.files:  # the first judgement learns the clock from the lines
            self._learn(self.service.judge(*self.window.sources(self.settings.budget), self._settings(None)), wall)
        clock = self.clock(wall)
        judged = self.service.judge(*self.window.sources(self.settings.budget), self._settings(clock),
                                    self.options.window_s)
        self._learn(judged, wall)
        self.last_judge_wall = wall
        self.report = judged.report
        unread = sum(1 for s in judged.report.skipped if not s.by_design) + sum(
            1 for i in judged.report.inputs if i.incomplete)
        self.status = RunStatus(node=self.options.node, finished=self.wall(), duration_s=time.monotonic() - started,
                                exit_code=self.exit_code_of(judged.report), unread_inputs=unread)
        return judged

    def _settings(self, clock: datetime | None) -> Settings:
        if clock is None:
            return replace(self.settings, since=None, until=None, now=None, timeline=False)
        return replace(self.settings, since=clock - timedelta(seconds=self.options.window_s), until=None, now=clock,
                       timeline=False)

    def _learn(self, judged: Judged, wall: float) -> None:
        if judged.latest is not None and (self.stream_ts is None or judged.latest > self.clock(wall)):
            self.stream_ts, self.stream_wall = judged.latest, wall

    # --- state -----------------------------------------------------------------------------------------------

    def state(self) -> dict:
        return {
            "follower": self.follower.positions(),
            "window": {k: list(v) for k, v in self.window.starts().items()},
            "clock": {"stream": self.stream_ts.isoformat() if self.stream_ts else None, "wall": self.stream_wall},
            "tracker": self.tracker.to_state(),
            "recent": list(self.recent),
            "last_judge_wall": self.last_judge_wall,
        }

    def restore(self, saved: dict) -> None:
        """Resume from a saved state: positions, clock, findings, and the window's lines read again."""
        if not saved:
            return
        self.follower.restore(saved.get("follower") or {})
        self.tracker.restore(saved.get("tracker") or {})
        self.recent = list(saved.get("recent") or [])
        clock = saved.get("clock") or {}
        self.stream_ts = datetime.fromisoformat(clock["stream"]) if clock.get("stream") else None
        self.stream_wall = float(clock.get("wall") or 0.0)
        now = self.wall()
        for key, (offset, line) in (saved.get("window") or {}).items():
            pos = self.follower.files.get(key)
            if pos is None or offset >= pos.offset:
                continue
            data = self.follower.read_range(key, offset, pos.offset)
            mtime = _mtime(pos.path, now)
            if data:
                path = display(pos.path)
                self.window.add(Chunk(key=key, path=path, rel=display(pos.rel), node=node_from_path(display(pos.rel))
                                      or node_from_path(path), first_line=line, offset=offset, data=data,
                                      mtime=mtime), now)


def _mtime(path: str, default: float) -> float:
    """A file's modification time: what year-less stamps are dated by, as in a batch read."""
    try:
        return os.stat(path).st_mtime
    except OSError:
        return default


def _totals(opened: dict[str, int]) -> dict[tuple[str, str, str], int]:
    out = {}
    for key, n in opened.items():
        rule, category, severity = (key.split("|") + ["", "", ""])[:3]
        out[(rule, category, severity)] = n
    return out

