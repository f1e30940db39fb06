"""The lanes of the timeline: one per rank of a node (every source that knows the rank shares it), else one per
process, else one per source kind.

A rank is the global one, as plog and HCCL number them. vLLM worker names carry it in two ways: with expert
parallelism ``Worker_DP1_TP5_EP13`` holds it as the EP index (the parser reads that); without,
``Worker_DP1_TP5`` holds only the TP index, which repeats in every DP group, so the lane takes
``dp x tp_size + tp`` with ``tp_size`` the largest TP index seen plus one (vLLM numbers the DP x TP world
that way).
"""

from __future__ import annotations

import polars as pl

from diagnose.messages import Messages

_DP = r"(?:^|_)DP(\d+)(?:_|$)"
_TP = r"(?:^|_)TP(\d+)(?:_|$)"
_EP = r"(?:^|_)EP\d+(?:_|$)"


def global_ranks(frame: pl.DataFrame) -> pl.Expr:
    """The rank column with DP x TP worker names turned into global ranks (see the module docstring)."""
    proc = pl.col("proc").fill_null("")
    dp = proc.str.extract(_DP, 1).cast(pl.Int32, strict=False)
    tp = proc.str.extract(_TP, 1).cast(pl.Int32, strict=False)
    dp_tp = dp.is_not_null() & tp.is_not_null() & ~proc.str.contains(_EP) & (pl.col("rank") == tp)
    tp_size = frame.select(tp.filter(dp.is_not_null()).max()).item()
    if tp_size is None:
        return pl.col("rank")
    return pl.when(dp_tp.fill_null(False)).then(dp * (tp_size + 1) + tp).otherwise(pl.col("rank")).cast(pl.Int32)


def with_lanes(frame: pl.DataFrame, msg: Messages) -> pl.DataFrame:
    """The frame with a ``lane`` label: ``node · rank N``, ``node · process``, or the node (or source kind)."""
    if frame.height == 0:
        return frame.with_columns(lane=pl.lit(None, pl.String))
    frame = frame.with_columns(rank=global_ranks(frame))
    place = pl.coalesce(pl.col("node"), pl.col("source"), pl.lit("?"))
    rank_word = msg("page.timeline.rank", rank="{}")
    label = (pl.when(pl.col("rank").is_not_null())
             .then(pl.format("{} · " + rank_word, place, pl.col("rank")))
             .when(pl.col("proc").is_not_null())
             .then(pl.format("{} · {}", place, pl.col("proc")))
             .otherwise(place))
    return frame.with_columns(lane=label)


def finding_lane(nodes: list[str], ranks: list[int], msg: Messages) -> str:
    """The lane of a finding none of whose evidence lines is on the timeline: its first node and rank."""
    place = nodes[0] if nodes else "?"
    return place + (" · " + msg("page.timeline.rank", rank=ranks[0]) if ranks else "")


def lane_order(first: dict[str, tuple[int, str]]) -> list[str]:
    """Lanes top to bottom: by (tier, first time) of their marks (``first``), then by name."""
    return sorted(first, key=lambda k: (first[k], k))
