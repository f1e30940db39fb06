"""The facts of one model directory and launch as a source of the run: records and signals built from the
facts themselves, its entry among the derived inputs, and the real file and line of each fact.

A fact is not a line of any file read, so its record keeps its own place (``<dir>/preflight.facts``, fact n)
and the place it came from is recorded beside it (``diagnose.model.derived.Origins``): a record placed at
the launch script's line would share its file and line with the record of that script line (or with the
``non-default args`` line of a vLLM log), and rules join a finding's text on file and line. Findings on a
fact are pointed at its origin after the rules (diagnose/analysis/provenance.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from diagnose.messages import Phrase
from diagnose.model import InputFile, Skipped
from diagnose.model.derived import Origins, add as add_origins
from diagnose.parsers.kinds import preflight_facts
from diagnose.preflight.checks import Fact


@dataclass
class FactSource:
    """What the derived facts add to a run."""

    records: list[pl.DataFrame] = field(default_factory=list)
    signals: list[pl.DataFrame] = field(default_factory=list)
    inputs: list[InputFile] = field(default_factory=list)  # the derived inputs (Report.derived)
    origins: Origins = field(default_factory=dict)
    # The files the facts were derived from, when no read stage read them (``diagnose preflight``).
    read: list[InputFile] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    def add(self, path: str, facts: list[Fact], places: list[tuple[str, int] | None], text: str,
            note: Phrase | None) -> None:
        """One derived input: its facts, the origin of each (in order), and the facts as ``--facts`` writes
        them (its size is the input's size)."""
        records, signals = preflight_facts.from_facts(path, [(f.key, f.shown().strip(), f.line()) for f in facts])
        self.records.append(records)
        self.signals.append(signals)
        add_origins(self.origins, path, places)
        self.inputs.append(InputFile(path=path, kind=preflight_facts.KIND, lines=len(facts), bytes=len(text.encode()),
                                     note=note))
