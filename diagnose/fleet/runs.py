"""The two programs over the dataset: ``extract_node`` (on the node that holds the logs) and ``read_fleet``
(anywhere the dataset can be read). Commands call these; they parse no option and print nothing.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import date, datetime

from diagnose.engine.filters import RuleFilters
from diagnose.expertload.load import load
from diagnose.expertload.summaries import EPLB_SIGNALS
from diagnose.fleet import expert, schema
from diagnose.fleet.dataset import Partition, check_dataset, encode_tables, open_parts, partitions, write_partition
from diagnose.fleet.service import from_parts, judge, last_day, read_node, to_tables, walk_key
from diagnose.fleet.store import Store
from diagnose.model import Report, Skipped, skip
from diagnose.pipeline import Parsed, Progress, Settings, read_signals


@dataclass
class Extracted:
    manifest: dict
    report: Report  # the node's own findings and coverage


def extract_node(paths: list[str], store: Store, node: str, cluster: str, settings: Settings, rules: list,
                 rule_errors: list[str], filters: RuleFilters, progress: Progress | None = None) -> Extracted:
    """Read one node's logs, judge them alone (the node's findings), count its expert-load dumps, and write
    it all as the node's partition."""
    got = read_node(paths, settings, filters, node, progress)
    parsed = got.parsed
    tables = to_tables(parsed)  # what was read: the judge works on a copy of it
    with ThreadPoolExecutor(1) as pool:
        # Written to Parquet while the node is judged (0.2 s of a 1 GiB node's run on two cores).
        early = pool.submit(encode_tables, dict(tables))
        # The partition keeps the findings and the coverage: no html timeline and no signatures of the errors
        # no rule explains, which the fleet step builds over every node (0.7 s of CPU on a 1 GiB node).
        report = judge(parsed, rules, rule_errors, replace(settings, timeline=False, signatures=False), filters)
        encoded = early.result()
    tables["findings"] = schema.findings_frame(report.findings)
    meta: dict = {"roots": list(paths), "first_path": _first_path(parsed, paths),
                  "coverage": report.coverage.status if report.coverage is not None else None,
                  "findings": len(report.findings)}
    if got.has_dumps:
        loaded = load(list(paths))
        more, meta["expert"] = expert.to_tables(loaded, read_signals(loaded.logs, EPLB_SIGNALS))
        tables.update(more)
    day = last_day(parsed) or date.today()
    manifest = write_partition(store, Partition(day, cluster, node), tables, meta, encoded)
    return Extracted(manifest, report)


def _first_path(parsed: Parsed, paths: list[str]) -> str:
    if parsed.inputs:
        return parsed.inputs[0].path
    return parsed.skipped[0].path if parsed.skipped else (paths[0] if paths else "")


@dataclass
class Fleet:
    parsed: Parsed  # every node's Frames, in walk order, with the partitions not read in ``skipped``
    parts: list  # the partitions read (diagnose.fleet.dataset.Part)
    loaded: object | None  # the fleet's expert load (diagnose.expertload.load.Loaded), None without dumps
    eplb: object | None = None  # the EPLB values of the nodes' logs (pl.DataFrame: ts, signal, value, file, engine)


def read_fleet(store: Store, since: datetime | None = None, cluster: str | None = None,
               nodes: list[str] | None = None) -> Fleet:
    """The partitions of ``cluster`` (all clusters when None) that can hold records at or after ``since``:
    a partition is dated by its last record, so one dated before ``since`` holds nothing the window keeps
    and is never opened. ``nodes``: the nodes expected; one with no partition is listed as not read."""
    check_dataset(store)
    wanted = [p for p in partitions(store)
              if (cluster is None or p.cluster == cluster) and (since is None or p.day >= since.date())]
    parts, broken = open_parts(store, wanted)
    unread = [Skipped(store.uri(p.rel), skip("fleet_half_written", why=why)) for p, why in broken]
    seen = {p.partition.node for p in parts} | {p.node for p, _ in broken}
    where = f"cluster={cluster}/" if cluster else ""
    unread += [Skipped(store.uri(f"{where}node={n}"), skip("fleet_absent")) for n in nodes or () if n not in seen]
    expert_load = expert.loaded_from(walk_key(parts))
    return Fleet(from_parts(parts, unread), parts, *(expert_load or (None, None)))


def judge_fleet(fleet: Fleet, settings: Settings, rules: list, rule_errors: list[str], filters: RuleFilters,
                progress: Progress | None = None) -> Report:
    return judge(fleet.parsed, rules, rule_errors, settings, filters, progress)
