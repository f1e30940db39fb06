"""The fleet dataset's schema, version 2: the tables one node's extraction writes, and their columns.

The tables are the Frames the pipeline hands from reading to judging (diagnose/pipeline/stages.py: ``gather``
gives them for one node, ``complete`` and the judge run over many), so the machine that judges a fleet sees
exactly what a single run over every node would have seen. docs/fleet.md documents them for users who query
the dataset from DuckDB, Spark or Trino. Any change to a table's columns or their meaning is a new
``SCHEMA_VERSION``: a dataset written by another version is refused with both versions named, never misread.

Version 2: the expert-load tables carry what ``expertload.layers.settle`` decides the rows per block from (every
``model_gen_config.json`` with its folder, every dump that passed its check, the largest dumps' periods) and what
the node refused and noted, so the fleet decides again over every node's facts; EPLB values keep their file and
engine (the per-layer metrics name their layer and rank there).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import polars as pl

import msgspec

from diagnose.bounded import json_loads
from diagnose.messages import messages, words_data, words_from_data
from diagnose.model import RECORD_SCHEMA, SIGNAL_SCHEMA, Finding, InputFile, Skipped
from diagnose.model.series import SERIES_SCHEMA

SCHEMA_VERSION = 2
FORMAT = "diagnose-fleet"

_INPUT = {"path": pl.String, "kind": pl.String, "lines": pl.Int64, "bytes": pl.Int64, "raw_lines": pl.Int64,
          "node": pl.String, "encoding": pl.String, "note": pl.String, "incomplete": pl.String,
          "derived": pl.Boolean}
_EVIDENCE = pl.List(pl.Struct({"file": pl.String, "line": pl.Int64, "text": pl.String}))

# Table name -> columns. Row order is meaningful (the order a single run reads the files in).
TABLES: dict[str, dict[str, pl.DataType]] = {
    # one row per line kept: time, node, rank, source, level, code, file:line, message (and the whole line)
    "records": dict(RECORD_SCHEMA),
    # values the parsers read from the lines, one row per observation
    "signals": dict(SIGNAL_SCHEMA),
    # the periodic metrics (KV cache usage, throughput, acceptance...), compact: one row per value
    "series": {name: (pl.String if dtype == pl.Categorical else dtype) for name, dtype in SERIES_SCHEMA.items()},
    # the text of lines kept only for their signals, for evidence
    "texts": {"file": pl.String, "line": pl.UInt32, "text": pl.String, "message": pl.String},
    # coverage: every file read (derived = facts the run derived itself), every input skipped and why
    "inputs": _INPUT,
    "skipped": {"path": pl.String, "reason": pl.String},
    # internal errors of the node's reading (a parser that failed on a file)
    "errors": {"error": pl.String},
    # derived lines (preflight facts) -> the file and line each came from
    "origins": {"derived": pl.String, "line": pl.Int64, "file": pl.String, "source_line": pl.Int64},
    # the node's own findings (a diagnose run over this node alone), for queries across the fleet
    "findings": {"rule_id": pl.String, "name": pl.String, "category": pl.String, "severity": pl.String,
                 "title": pl.String, "summary": pl.String, "count": pl.Int64, "first_seen": pl.Datetime("us"),
                 "last_seen": pl.Datetime("us"), "nodes": pl.List(pl.String), "ranks": pl.List(pl.Int64),
                 "caused_by": pl.String, "fingerprint": pl.String, "evidence": _EVIDENCE},
    # expert load: tokens per day, stage, rank, layer and physical slot, counted over the dump windows
    "expert_loads": {"day": pl.Date, "stage": pl.String, "rank": pl.Int32, "layer": pl.Int32, "slot": pl.Int32,
                     "tokens": pl.Int64},
    # tokens per day, stage, layer and logical expert, from dumps that count per expert (SGLang)
    "expert_logical": {"day": pl.Date, "stage": pl.String, "layer": pl.Int32, "expert": pl.Int32, "tokens": pl.Int64},
    # EPLB log lines (time, signal, value) and the expert maps (map, layer, rank, slot -> logical expert; the
    # manifest's expert.maps[map] says each map's source, day, shared expert and dangling devices)
    "expert_eplb": {"ts": pl.Datetime("us"), "signal": pl.String, "value": pl.Float64, "file": pl.String,
                    "engine": pl.String},
    "expert_placement": {"map": pl.Int32, "layer": pl.Int32, "rank": pl.Int32, "slot": pl.Int32,
                         "expert": pl.Int32},
    # each dump file and how its windows were counted (diagnose/model/expertload.py FileStat)
    "expert_files": {"path": pl.String, "stage": pl.String, "rank": pl.Int64, "day": pl.String,
                     "blocks": pl.Int64, "resets": pl.Int64, "chained": pl.Boolean, "note": pl.String,
                     "windows": pl.Int64, "counted": pl.Int64, "first": pl.String, "first_counted": pl.Boolean,
                     "ratio": pl.Float64, "previous": pl.String, "previous_day": pl.String, "repeated": pl.Int64,
                     "source": pl.String},
    # what the rows per block are decided from (diagnose/expertload/layers.py Facts): each model_gen_config.json
    # read (its folder and values), each MindIE dump that passed its check (its folder), and the largest dumps'
    # periods (null: none found)
    "expert_configs": {"folder": pl.String, "num_moe_layers": pl.Int64, "num_of_experts": pl.Int64,
                       "num_dangling_shared_experts": pl.Int64, "num_of_selected_experts": pl.Int64},
    "expert_dumps": {"path": pl.String, "folder": pl.String},
    "expert_samples": {"stage": pl.String, "rank": pl.Int64, "day": pl.String, "path": pl.String, "size": pl.Int64,
                       "period": pl.Int64},
    # the inputs the node's readers refused and their notes (the rows-per-block decision's own are the fleet's):
    # a message code of the catalog and its values as a JSON object
    "expert_refused": {"path": pl.String, "reason": pl.String, "params": pl.String},
    "expert_notes": {"key": pl.String, "params": pl.String},
}


def conform(name: str, frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with exactly the table's columns, in order and of its types (a missing column is null)."""
    schema = TABLES[name]
    return frame.select([pl.col(c).cast(t) if c in frame.columns else pl.lit(None, t).alias(c)
                         for c, t in schema.items()])


def empty(name: str) -> pl.DataFrame:
    return pl.DataFrame(schema=TABLES[name])


# --- the typed values of a run as rows, and back ---------------------------------------------------------------

def _said(words) -> str | None:
    """A phrase as JSON (diagnose/messages.py words_data): kept as facts, said in the fleet report's language."""
    return None if words is None or words is msgspec.UNSET else json.dumps(words_data(words), ensure_ascii=False)


def _unsaid(text: str | None):
    return None if text is None else words_from_data(json_loads(text))


def inputs_frame(inputs: list[InputFile], derived: list[InputFile]) -> pl.DataFrame:
    rows = [{**{k: getattr(i, k) for k in i.__struct_fields__}, "derived": flag}
            for flag, items in ((False, inputs), (True, derived)) for i in items]
    for row in rows:
        row["note"], row["incomplete"] = _said(row["note"]), _said(row["incomplete"])
    return pl.DataFrame(rows, schema=TABLES["inputs"]) if rows else empty("inputs")


def inputs_of(frame: pl.DataFrame) -> tuple[list[InputFile], list[InputFile]]:
    inputs, derived = [], []
    for row in frame.iter_rows(named=True):
        flag = row.pop("derived")
        row["note"] = _unsaid(row["note"])
        row["incomplete"] = _unsaid(row["incomplete"]) if row["incomplete"] is not None else msgspec.UNSET
        (derived if flag else inputs).append(InputFile(**row))
    return inputs, derived


def skipped_frame(skipped: list[Skipped]) -> pl.DataFrame:
    return pl.DataFrame([(s.path, _said(s.reason)) for s in skipped], schema=TABLES["skipped"], orient="row")


def skipped_of(frame: pl.DataFrame) -> list[Skipped]:
    return [Skipped(path, _unsaid(reason)) for path, reason in frame.iter_rows()]


def errors_frame(errors: list[str]) -> pl.DataFrame:
    return pl.DataFrame({"error": errors}, schema=TABLES["errors"])


def origins_frame(origins: dict[str, dict[int, tuple[str, int]]] | None) -> pl.DataFrame:
    rows = [(d, line, f, n) for d, lines in (origins or {}).items() for line, (f, n) in lines.items()]
    return pl.DataFrame(rows, schema=TABLES["origins"], orient="row")


def origins_of(frame: pl.DataFrame) -> dict[str, dict[int, tuple[str, int]]]:
    out: dict[str, dict[int, tuple[str, int]]] = {}
    for derived, line, file, source_line in frame.iter_rows():
        out.setdefault(derived, {})[int(line)] = (file, int(source_line))
    return out


def findings_frame(findings: list[Finding]) -> pl.DataFrame:
    """The node's findings, their title and summary in English: a table for queries across the fleet."""
    say = messages("en").say
    rows: list[dict[str, Any]] = []
    for f in findings:
        rows.append({"rule_id": f.rule_id, "name": f.name, "category": f.category, "severity": f.severity,
                     "title": say(f.title), "summary": say(f.summary), "count": f.count, "first_seen": f.first_seen,
                     "last_seen": f.last_seen, "nodes": list(f.nodes), "ranks": [int(r) for r in f.ranks],
                     "caused_by": f.caused_by, "fingerprint": f.fingerprint,
                     "evidence": [{"file": e.file, "line": int(e.line), "text": e.text} for e in f.evidence]})
    return pl.DataFrame(rows, schema=TABLES["findings"]) if rows else empty("findings")
