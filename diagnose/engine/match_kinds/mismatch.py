"""The ``mismatch`` match kind: one signal whose value differs across nodes, devices, engines or files
(``across``), optionally only inside one node or file (``within``); the odd values out are the evidence."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from diagnose.engine.match import Match, Selector
from diagnose.engine.match_kinds.protocol import Context, Hit, MatchKind
from diagnose.model.series import signal_rows

FIELDS = {"signal": ("str", "the signal compared (required)"),
          "across": ("across", "node (default), device, engine or file"),
          "within": ("within", "compare only inside one node or file"),
          "sources": ("sources", "source kinds (default: the rule's)"),
          "ignore_regex": ("regex", "values to leave out")}


@dataclass(frozen=True)
class MismatchMatch(Match):
    signal: str = ""
    across: str = "node"
    within: str | None = None
    signal_sources: tuple[str, ...] | None = None
    ignore_regex: str | None = None

    kind = "mismatch"

    @property
    def selector(self) -> Selector:
        return Selector(signal=self.signal, sources=self.signal_sources)

    def selectors(self):
        yield "match", self.selector

    @property
    def sources(self):
        return self.signal_sources


def build(raw: dict[str, Any], table: dict[str, Any], seconds) -> MismatchMatch:
    sources = table.get("sources")
    return MismatchMatch(
        raw=raw, signal=table["signal"], across=table.get("across", "node"), within=table.get("within"),
        signal_sources=None if sources is None else tuple(sources), ignore_regex=table.get("ignore_regex"),
    )


def check(table: dict[str, Any]):
    if "signal" not in table:
        yield "match.signal", "missing"


def evaluate(m: MismatchMatch, sources, ctx: Context) -> list[Hit]:
    found = match_mismatch(m, ctx.records, ctx.signals, sources, ctx.series)
    return [found] if found is not None else []


def match_mismatch(m: MismatchMatch, records: pl.DataFrame, signals: pl.DataFrame, sources,
                   series: pl.DataFrame | None = None) -> Hit | None:
    across = m.across
    sources = m.signal_sources if m.signal_sources is not None else sources
    frame = signal_rows(m.signal, signals, series)
    if sources:
        frame = frame.filter(pl.col("source").is_in(sources))
    key = {"node": "node", "device": "engine", "engine": "engine", "file": "file"}[across]
    within = m.within
    k = pl.col(key).fill_null(pl.col("file"))
    if key == "engine" and within != "node":
        # npu0 on node-0 and npu0 on node-1 are different cards: qualify devices by their node.
        k = pl.when(pl.col("node").is_not_null()).then(pl.format("{}/{}", pl.col("node"), k)).otherwise(k)
    frame = frame.with_columns(
        _v=pl.coalesce(pl.col("text"), pl.col("value").cast(pl.String)).str.strip_chars(),
        _k=k,
    ).filter(pl.col("_v").is_not_null() & (pl.col("_v") != ""))
    if m.ignore_regex is not None:
        frame = frame.filter(~pl.col("_v").str.contains(m.ignore_regex))
    if within:
        # Only differences inside one node (or file) count: keep the groups that disagree within themselves.
        frame = frame.with_columns(_w=pl.col(within).fill_null("") if within == "node" else pl.col("file"))
        bad = frame.group_by("_w").agg(pl.col("_v").n_unique().alias("nv"), pl.col("_k").n_unique().alias("nk"))
        bad = bad.filter((pl.col("nv") >= 2) & (pl.col("nk") >= 2))
        frame = frame.join(bad.select("_w"), on="_w", how="semi").drop("_w")
    if frame.height == 0 or frame.select("_v").n_unique() < 2 or frame.select("_k").n_unique() < 2:
        return None
    frame = frame.sort(["_v", "_k", "file", "line"])
    per_value = frame.group_by("_v", maintain_order=True).agg(pl.col("_k").unique(maintain_order=True))
    # On a tie the lower value is the odd one out (for versions: the older install is usually the one to fix).
    per_value = per_value.with_columns(_n=pl.col("_k").list.len()).sort(["_n", "_v"], descending=[True, True])
    # "24.1.rc3 (node-0); 23.0.7 (node-1)": no words, so the sentence reads the same in every language
    parts = [f"{v} ({', '.join(ks[:6])}{' …' if len(ks) > 6 else ''})" for v, ks, _ in per_value.iter_rows()]
    majority, minority = per_value.row(0), per_value.row(-1)
    evidence = frame.unique("_v", keep="first", maintain_order=True)
    # The odd ones out first: they are usually what to fix.
    evidence = evidence.with_columns(_major=pl.col("_v") == majority[0]).sort(
        ["_major", "ts"], nulls_last=True, maintain_order=True
    )
    # The finding is located where the odd values are: the majority rows are evidence, not places to fix.
    hits = evidence.select(
        "file", "line", "source", pl.when(pl.col("_major")).then(None).otherwise(pl.col("node")).alias("node"), "ts",
        pl.lit(None, pl.Int32).alias("rank"), pl.col("line").alias("event"), "engine", "value",
        pl.col("_v").alias("vtext"),
    )
    facts = {
        "values": "; ".join(parts),
        "distinct": per_value.height,
        "majority": majority[0],
        "odd_value": minority[0],
        "odd_where": ", ".join(minority[1][:6]),
        "across": across,
        "odd_nodes": ", ".join(sorted(set(frame.filter(pl.col("_v") == minority[0])["node"].drop_nulls().to_list())))
        or "-",
    }
    return Hit(hits, frame.height, facts)


KIND = MatchKind("mismatch", FIELDS, build, evaluate, check,
                 summary="a value differs across nodes, devices or engines")
