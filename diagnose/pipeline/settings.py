"""What the user asked for, fixed for the whole run (the rules derive their own filters: engine/filters.py).
The command line and the configuration file (diagnose/commands/config.py) are merged into it by the commands."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from diagnose.engine.selection import RuleSelection
from diagnose.ingest.budget import Budget
from diagnose.analysis.gate import GateOptions
from diagnose.analysis.suppression import Suppression


@dataclass(frozen=True)
class Settings:
    rule_dirs: tuple[Path, ...] = ()
    builtin_rules: bool = True
    since: datetime | None = None
    until: datetime | None = None
    lang: str = "en"
    budget: Budget = field(default_factory=Budget)
    kind: str | None = None  # read every file as this kind (rule fixtures)
    baseline: str | None = None  # --baseline: earlier run folder/file, TOML of expected numbers, JSON report
    # The --baseline as an earlier diagnose JSON report, decoded once (analysis/known.read_report) for the
    # validation table, new/known findings and new signatures; None when the baseline is no such report.
    earlier: dict | None = None
    timeline: bool = True  # build Report.timeline (only the html page draws it)
    # Group the errors no rule explains into Report.unrecognised. `extract` does not: a partition keeps the
    # node's records, findings and coverage, and the fleet step groups the signatures over every node.
    signatures: bool = True
    # --select/--ignore over the configuration file's select/ignore, lowest priority first (engine/rule_selection.py)
    selection: tuple[RuleSelection, ...] = ()
    suppressions: tuple[Suppression, ...] = ()  # from the configuration file (diagnose/analysis/suppression.py)
    fail_on_unrecognised: bool = False  # errors no rule explains fail a run that did not end abnormally
    gate: GateOptions = field(default_factory=GateOptions)  # --fail-on, --exit-zero, --allow-*: analysis/gate.py
    now: datetime | None = None  # watch's clock: silence is measured up to it (else to the latest stamp read)
