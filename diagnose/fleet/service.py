"""The two halves of the application service, as extract and fleet use them.

A single run is ``read`` then the judge (diagnose/pipeline): ``gather`` reads one node's files and does what
needs only them (dating, the preflight facts); ``complete`` runs the passes across files and nodes and the time
window; ``diagnose`` judges. ``extract`` stops after ``gather`` on the node that holds the logs and writes the
Frames; ``fleet`` reads every node's Frames back, puts them together in the order a single run reads the files,
and runs ``complete`` and the judge over them. Because fleet runs the same judge over the same Frames, one run
over every node and extract-then-fleet agree.

This module is the thin adapter over the pipeline's names (``gather``/``complete``/``diagnose`` today, ``read``
and ``judge`` once the service is renamed): a rename is a change here only.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import date

import polars as pl

from diagnose.engine.filters import RuleFilters
from diagnose.expertload.inputs import holds_loads
from diagnose.fleet import schema
from diagnose.fleet.dataset import Part, collect
from diagnose.ingest.walk import SourceFile, iter_sources
from diagnose.model import Report, Skipped
from diagnose.model.series import SERIES_SCHEMA
from diagnose.pipeline import Parsed, Progress, Settings
from diagnose.pipeline.stages import complete, diagnose, gather

# Frames of a run <-> tables of the dataset
FRAME_TABLES = ("records", "signals", "series", "texts")


@dataclass
class NodeRead:
    """What ``read_node`` gives: the node's Frames, and whether any file looked like an expert-load dump
    (``expertload.inputs.holds_loads``)."""

    parsed: Parsed
    has_dumps: bool


def read_node(paths: list[str], settings: Settings, filters: RuleFilters, node: str | None,
              progress: Progress | None = None) -> NodeRead:
    """Read one node's files as a single run reads them. The text of every line kept for its signals is kept
    too: the machine that judges cannot read a quoted line back from a file that stayed on the node."""
    dumps = []

    def named(sources):
        for item in sources:
            if isinstance(item, SourceFile):
                if node:
                    item = dataclasses.replace(item, node=node)
                if holds_loads(item.rel or item.path):
                    dumps.append(item.path)
            yield item

    quoting = dataclasses.replace(filters, quote_signal_lines=True)
    parsed = gather(named(iter_sources(paths, settings.budget)), settings, quoting, progress)
    parsed.roots = list(paths)
    return NodeRead(parsed, bool(dumps))


def judge(parsed: Parsed, rules: list, rule_errors: list[str], settings: Settings, filters: RuleFilters,
          progress: Progress | None = None) -> Report:
    """The passes across files and nodes, the window, then the judge (what ``diagnose PATH...`` runs after
    reading). ``parsed`` is left as it was: the stages work on a copy."""
    run = dataclasses.replace(parsed, errors=list(parsed.errors), origins=dict(parsed.origins), roots=list(parsed.roots),
                              inputs=list(parsed.inputs), skipped=list(parsed.skipped), derived=list(parsed.derived))
    complete(run, settings, filters)
    return diagnose(run, rules, rule_errors, settings, filters, progress)


def to_tables(parsed: Parsed) -> dict[str, pl.DataFrame]:
    """A node's Frames as the dataset's tables."""
    return {
        "records": parsed.records,
        "signals": parsed.signals,
        "series": parsed.series,
        "texts": parsed.texts if parsed.texts is not None else schema.empty("texts"),
        "inputs": schema.inputs_frame(parsed.inputs, parsed.derived),
        "skipped": schema.skipped_frame(parsed.skipped),
        "errors": schema.errors_frame(parsed.errors),
        "origins": schema.origins_frame(parsed.origins),
    }


def last_day(parsed: Parsed) -> date | None:
    """The day of the node's last dated record: the partition's date."""
    last = parsed.records["ts"].max() if parsed.records.height else None
    return last.date() if last is not None else None


def walk_key(parts: list[Part]) -> list[Part]:
    """Partitions in the order a single run over every node reads their files: the walk goes depth first with
    sorted names, so a node's files follow each other and nodes come in the order of their first file's path
    (compared folder by folder). A node read on several days comes day after day."""
    def key(part: Part):
        first = part.manifest.get("first_path") or ""
        return (tuple(first.replace("\\", "/").split("/")), part.partition.day, part.partition.node)

    return sorted(parts, key=key)


def from_parts(parts: list[Part], unread: list[Skipped]) -> Parsed:
    """Every partition's Frames put together as one run's, in walk order; ``unread``: partitions listed as not
    read (half-written, expected but absent), which the coverage reports."""
    parts = walk_key(parts)
    inputs_rows = collect(parts, "inputs")
    inputs, derived = schema.inputs_of(inputs_rows)
    origins = schema.origins_of(collect(parts, "origins"))
    series = collect(parts, "series")
    parsed = Parsed(
        records=collect(parts, "records").rechunk(),
        signals=collect(parts, "signals").rechunk(),
        inputs=inputs,
        skipped=schema.skipped_of(collect(parts, "skipped")) + unread,
        errors=collect(parts, "errors")["error"].to_list(),
        texts=collect(parts, "texts").rechunk(),
        series=series.select([pl.col(c).cast(t) for c, t in SERIES_SCHEMA.items()]),
        derived=derived,
    )
    if origins:
        parsed.origins = origins
    parsed.roots = [root for p in parts for root in p.manifest.get("roots", [])]
    return parsed
