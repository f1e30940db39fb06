"""Errors no rule knows: group the unexplained warning/error records into signatures.

After the rules ran, the records that still look like trouble are

- WARNING/ERROR/CRITICAL records and records carrying an error code (CANN ``EH/EZ/EE/EI…`` lines, ``ERR02200``);
- inside a multi-line event (a Python traceback), only the exception line (the last line that looks like
  ``SomeError: …``) and the lines with an error code; the ``Traceback`` header, ``File "…"`` frames and
  source lines are body, not signatures. An event with neither keeps its opening line;

minus the ones a rule explains. A rule that fired explains every record among its selector's matching rows
(not only its evidence): each selector of a fired rule (``regex`` selectors over records, ``signal`` selectors
over parsed values) is run again and its (file, event) keys are excluded, so the rest of an explained
traceback is not listed. The findings' evidence lines are excluded the same way (root-cause findings quote
lines no rule file names). A CANN error block, consecutive error lines of one file and process within 2 s, is
one failure: when any of its lines is explained, the block is (the ``Task run failed`` / ``PrintErrorInfo``
lines around an ``aicore timeout`` line).

The signature is the message (header stripped) with its variable parts masked by ordered ``str.replace_all``
passes (timestamps, UUIDs, request ids, IPs and ports, paths, sizes, hex, pids/tids, ranks, devices, numbers),
all as polars expressions: the same input gives the same signatures, run to run. Groups are ordered by count
(descending), then signature.
"""

from __future__ import annotations

from typing import Any

import polars as pl


from diagnose.knowledge.benign import benign_mask
from diagnose.knowledge.masks import mask
from diagnose.model import Example, Signature
from diagnose.scan.fastregex import dfa_safe


TOP_N = 20
BLOCK_GAP_S = 2  # consecutive error lines of one file and process at most this far apart are one block

_EXCEPTION_LINE = dfa_safe(r"^\s*(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Fault)\b(?::|$)")
_BODY_LINE = r"^\s*(?:Traceback \(most recent call last\)|File \"|\^+\s*$|During handling|The above exception)"
_LEVELS = ["WARNING", "ERROR", "CRITICAL"]
_KEYS = {"file": pl.String, "event": pl.UInt32}
_OWN_LINES = ["validation-facts"]


def candidates(records: pl.DataFrame) -> pl.DataFrame:
    """Records that look like trouble; one or a few per traceback event (see the module docstring)."""
    if records.height == 0:
        return records
    level = pl.col("level").is_in(_LEVELS).fill_null(False)
    has_code = pl.col("code").is_not_null()
    # The comparison's own lines (``<validation>``) state what the VAL rules judge, not errors of the logs.
    own = pl.col("source").is_in(_OWN_LINES).fill_null(False)
    frame = records.filter((level | has_code) & ~own)
    if frame.height:  # messages known to be harmless (knowledge/benign.toml) are no trouble, whatever their level
        frame = frame.filter(~benign_mask(frame["message"].fill_null(frame["text"])))
    key = ["file", "event"]
    exc = pl.col("message").str.contains(_EXCEPTION_LINE)
    frame = frame.with_columns(
        _n=pl.len().over(key),
        _exc=exc,
        _body=pl.col("message").str.contains(_BODY_LINE),
    ).with_columns(
        _has_exc=pl.col("_exc").any().over(key),
        _has_code=pl.col("code").is_not_null().any().over(key),
        _last_exc=pl.col("line").filter(pl.col("_exc")).max().over(key),
    )
    single = pl.col("_n") == 1
    tail = pl.col("_exc") & (pl.col("line") == pl.col("_last_exc"))
    opener = ~pl.col("_has_exc") & ~pl.col("_has_code") & (pl.col("line") == pl.col("event"))
    keep = single | tail | pl.col("code").is_not_null() | opener
    keep = keep & (single | ~pl.col("_body"))
    return frame.filter(keep).drop("_n", "_exc", "_body", "_has_exc", "_has_code", "_last_exc")


def explained_keys(findings, selected: pl.DataFrame, records: pl.DataFrame) -> pl.DataFrame:
    """(file, event) of every record a fired rule's selectors match (``selected``, diagnose/engine/hits.py),
    and of every finding's evidence."""
    frames = [selected.select("file", "line")]
    for f in findings:
        frames.append(pl.DataFrame({"file": [e.file for e in f.evidence], "line": [e.line for e in f.evidence]},
                                   schema={"file": pl.String, "line": pl.UInt32}))
    lines = pl.concat(frames).unique()
    keys = records.select("file", "line", "event").join(lines, on=["file", "line"], how="semi")
    return keys.select("file", "event").unique()


def _blocks(frame: pl.DataFrame) -> pl.Expr:
    """A block id per candidate: consecutive lines of one file and process, close in time."""
    gap = (pl.col("line").cast(pl.Int64) - pl.col("line").cast(pl.Int64).shift(1)) > 1
    gap = gap | pl.col("pid").ne_missing(pl.col("pid").shift(1))
    far = (pl.col("ts") - pl.col("ts").shift(1)).dt.total_seconds().abs().fill_null(0) > BLOCK_GAP_S
    return (gap.fill_null(True) | far.fill_null(True)).cast(pl.Int32).cum_sum().over("file")


def unexplained(records: pl.DataFrame, keys: pl.DataFrame) -> pl.DataFrame:
    """The candidate records outside ``keys`` (explained (file, event)) and the blocks they share: what the
    signatures group (bench/signature_groups.py compares groupings on it)."""
    frame = candidates(records)
    if frame.height == 0:
        return frame
    frame = frame.join(keys.with_columns(_ex=pl.lit(True)), on=["file", "event"], how="left")
    frame = frame.with_columns(_ex=pl.col("_ex").fill_null(False)).sort(["file", "line"])
    frame = frame.with_columns(_block=_blocks(frame))
    return frame.filter(~pl.col("_ex").any().over(["file", "_block"]))


def unrecognised(records: pl.DataFrame, keys: pl.DataFrame, top: int | None = TOP_N) -> tuple[list[Signature], int]:
    """Signatures of the candidate records outside ``keys`` (explained (file, event)), the top ``top`` of them,
    and how many more signatures there are."""
    frame = unexplained(records, keys)
    if frame.height == 0:
        return [], 0
    # Each distinct message is masked once (129,000 candidates of the benchmark bundle hold 21,000).
    frame = frame.with_columns(_said=pl.col("message").fill_null(pl.col("text")))
    said = frame.select("_said").unique().with_columns(signature=mask(pl.col("_said")))
    frame = frame.join(said, on="_said", how="left", nulls_equal=True, maintain_order="left").drop("_said")
    frame = frame.filter(pl.col("signature").str.len_chars() > 0)
    order = ["ts", "file", "line"]
    groups = (
        frame.sort(order, nulls_last=True)
        .group_by("signature", maintain_order=True)
        .agg(
            pl.len().alias("count"),
            pl.col("ts").min().alias("first_seen"),
            pl.col("ts").max().alias("last_seen"),
            pl.col("node").drop_nulls().unique().sort().alias("nodes"),
            pl.col("rank").drop_nulls().unique().sort().alias("ranks"),
            pl.col("level").drop_nulls().first().alias("level"),
            pl.col("code").drop_nulls().first().alias("code"),
            pl.col("source").first().alias("source"),
            pl.col("file").first().alias("file"),
            pl.col("line").first().alias("line"),
            pl.col("text").first().alias("text"),
            pl.col("message").first().alias("message"),
        )
        .sort(["count", "signature"], descending=[True, False])
    )
    total = groups.height
    out = []
    for row in (groups if top is None else groups.head(top)).iter_rows(named=True):
        out.append(Signature(
            signature=row["signature"],
            count=int(row["count"]),
            first_seen=_iso(row["first_seen"]),
            last_seen=_iso(row["last_seen"]),
            nodes=list(row["nodes"] or []),
            ranks=[int(r) for r in (row["ranks"] or [])],
            level=row["level"],
            code=row["code"],
            source=row["source"],
            example=Example(file=row["file"], line=int(row["line"]), text=row["text"], message=row["message"]),
        ))
    return out, max(0, total - len(out))


def compute(findings, selected: pl.DataFrame, records: pl.DataFrame, top: int | None = TOP_N):
    """(signatures, how many more)."""
    return unrecognised(records, explained_keys(findings, selected, records), top)


def section(findings, selected: pl.DataFrame, records: pl.DataFrame, earlier: dict | None = None,
            top: int = TOP_N) -> tuple[list[Signature], int, int | None]:
    """The pipeline hook: the top signatures, how many more, and how many of all are new against the earlier
    JSON report given as ``--baseline`` (decoded once: ``Settings.earlier``; None without one)."""
    if earlier is None:
        items, more = compute(findings, selected, records, top)
        return items, more, None
    items, _ = compute(findings, selected, records, None)  # count new ones beyond the top too
    new = mark_new(items, earlier)
    return items[:top], max(0, len(items) - top), new


def mark_new(items: list[Signature], data: dict | None) -> int | None:
    """With a previous diagnose JSON report (decoded) that has an ``unrecognised`` section, set ``new`` on each
    signature (True: not in the baseline). Returns how many are new, or None when there is no such baseline."""
    if not isinstance(data, dict) or not isinstance(data.get("unrecognised"), list):
        return None
    seen = {s.get("signature") for s in data["unrecognised"] if isinstance(s, dict)}
    seen |= set(data.get("unrecognised_signatures") or [])
    for item in items:
        item.new = item.signature not in seen
    return sum(1 for i in items if i.new)


def _iso(ts) -> str | None:
    return ts.isoformat(sep=" ") if ts is not None else None
