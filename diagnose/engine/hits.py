"""Every row a fired rule's selectors pick, not only its evidence: the passes after the rules need them (the
root cause looks for the earliest hit of a failure, the signatures leave out every line a rule explains), and
they get them from the pipeline as one frame rather than running selectors of their own."""

from __future__ import annotations

import polars as pl

from diagnose.engine.rulefile import Rule
from diagnose.engine.selectors import select

SELECTED_SCHEMA = {"rule_id": pl.String, "kind": pl.String, "role": pl.String, "file": pl.String,
                   "line": pl.UInt32, "source": pl.String, "node": pl.String, "ts": pl.Datetime("us"),
                   "rank": pl.Int32, "event": pl.UInt32}


def selected_rows(fired: list[str], rules: list[Rule], records: pl.DataFrame, signals: pl.DataFrame) -> pl.DataFrame:
    """(rule_id, match kind, selector role, file, line, source, node, ts, rank, event) for every selector but
    ``missing`` (what was not seen selects nothing) of every rule in ``fired``, each rule once."""
    by_id = {r.id: r for r in rules}
    frames = [pl.DataFrame(schema=SELECTED_SCHEMA)]
    for rule_id in dict.fromkeys(fired):
        rule = by_id.get(rule_id)
        if rule is None:
            continue
        for role, sel in rule.match.selectors():
            if role == "missing":
                continue
            try:
                hits = select(sel, records, signals, rule.sources or None)
            except Exception:  # noqa: BLE001 - the rule already ran; a failure here only loses precision
                continue
            frames.append(hits.select(
                pl.lit(rule_id, pl.String).alias("rule_id"), pl.lit(rule.match.kind, pl.String).alias("kind"),
                pl.lit(role, pl.String).alias("role"), *[pl.col(c).cast(SELECTED_SCHEMA[c]) for c in
                                                         ("file", "line", "source", "node", "ts", "rank", "event")]))
    return pl.concat(frames, how="vertical_relaxed")
