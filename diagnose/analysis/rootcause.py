"""Root cause across ranks: when several ranks time out, say which rank failed first.

Runs after ``rank.rank_findings`` (whose contract it keeps: same findings, ``caused_by`` on echoes) on the
ranked findings, the rules that produced them and the frames. With every fired pattern rule's full hit list:

* **waiting ranks**: the (node, rank) pairs that consequence rules of the communication category hit (HCCL
  notify/socket timeouts, watchdog, link errors; engine death does not count as waiting); plog ranks are preferred when there are any, since worker labels may carry a
  TP index rather than the global rank. Fewer than two: nothing to do.
* **the first failure**: the earliest hit of a non-consequence rule of severity ``error`` or worse (stamps are
  compared to the second first, and plog lines, which carry microseconds, win a tie with a whole-second vLLM
  stamp of the same event); failing that, the earliest ``ERROR`` record with a rank before the first timeout;
  failing that, the peer the waiting ranks name (``Cluster Exception Location``, link table, ``remote rank``).

The finding that holds the first failure is moved to the top with the sentence "rank 13 on node-1 failed first
at T; 14 ranks timed out waiting for it" before its summary, and every consequence finding points at it. When no
rule holds the first failure, a finding ``RC001 first-failing-rank`` says it. The facts behind the sentence are
in ``facts`` (``root_rank``, ``root_node``, ``root_time``, ``waiting_ranks``, ``named_peer``).
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta

import polars as pl

from diagnose.analysis.chains import chain_start
from diagnose.messages import Joined, Phrase, Words
from diagnose.model import ERROR_LEVELS, SEVERITY_RANK, Evidence, Finding

ROOT_ID = "RC001"
ROOT_NAME = "first-failing-rank"  # --select/--ignore and suppressions may name it like a rule
_TIMEOUTS = ("hccl_exec_timeout_s", "hccl_connect_timeout_s", "hccl_watchdog_timeout_s")

def find_root_cause(findings: list[Finding], selected: pl.DataFrame, records: pl.DataFrame,
                    signals: pl.DataFrame) -> list[Finding]:
    """Return the findings with the first-failing rank's finding first (see the module docstring).
    ``selected``: every row the fired rules' selectors pick (diagnose/engine/hits.py)."""
    echo = _hits([f for f in findings if f.consequence], selected)
    timeouts = {f.rule_id for f in findings if f.consequence and f.category == "communication"}
    waiting = echo.filter(pl.col("rank").is_not_null() & pl.col("rule_id").is_in(list(timeouts)))
    if waiting.filter(pl.col("source") == "plog").height:
        waiting = waiting.filter(pl.col("source") == "plog")
    keys = waiting.select("node", "rank").unique()
    if keys.height < 2:
        return findings
    causes = [f for f in findings if not f.consequence and SEVERITY_RANK[f.severity] >= SEVERITY_RANK["error"]]
    cause_hits = _hits(causes, selected)
    # A communication error on a rank that is itself waiting (EI0006 at connect, next to its link table) is
    # part of the waiting, not a first failure.
    comm = [f.rule_id for f in causes if f.category == "communication"]
    cause_hits = cause_hits.join(
        keys.with_columns(_w=pl.lit(True)), on=["node", "rank"], how="left", nulls_equal=True
    ).filter(~(pl.col("_w").fill_null(False) & pl.col("rule_id").is_in(comm))).drop("_w")
    # The first failure precedes the waits by at most the longest timeout in force (default HCCL_EXEC_TIMEOUT
    # 1836 s) plus a margin: an older error (another incident in the same folder) is not it.
    first_echo = waiting["ts"].drop_nulls().min()
    last_echo = waiting["ts"].drop_nulls().max()
    if first_echo is not None:
        limits = signals.filter(pl.col("signal").is_in(list(_TIMEOUTS)))["value"].drop_nulls() if signals.height else None
        longest = max([1836.0] + ([float(limits.max())] if limits is not None and limits.len() else []))
        in_window = pl.col("ts").is_between(first_echo - timedelta(seconds=longest + 600), last_echo)
        cause_hits = cause_hits.filter(in_window)
    root = _earliest(cause_hits.filter(pl.col("rank").is_not_null() | pl.col("node").is_not_null()))
    if root is None:
        errors = records.filter(pl.col("level").is_in(ERROR_LEVELS) & pl.col("rank").is_not_null())
        errors = errors.join(echo.select("file", "event").unique(), on=["file", "event"], how="anti")
        if first_echo is not None:
            errors = errors.filter(in_window & (pl.col("ts") < first_echo))
        # Lines of a rank's own timeout block (just before its first echo line) are not a first failure.
        per_file = echo.group_by("file").agg(pl.col("ts").min().alias("_echo"))
        errors = errors.join(per_file, on="file", how="left").filter(
            pl.col("_echo").is_null() | (pl.col("ts") < pl.col("_echo") - pl.duration(seconds=1))
        ).drop("_echo")
        root = _earliest(errors.select("file", "line", "source", "node", "ts", "rank", pl.lit(None, pl.String).alias("rule_id")))
    peer, peer_n = _named_peer(signals)
    others = keys
    if root is not None and root["rank"] is not None:
        others = keys.filter(~((pl.col("rank") == root["rank"]) & pl.col("node").eq_missing(root["node"])))
    waiting_text = _ranks_text(others)
    n = others.height
    if root is None and peer is None:
        return findings
    if root is None:
        summary = Phrase("rootcause.silent", n=n, peer=peer, k=peer_n)
        facts = {"waiting_ranks": n, "named_peer": _plain(peer)}
        finding = _synthetic(summary, facts, echo, None, records)
        return _reorder(findings, finding)
    who = _who(root)
    sentence: Words = Phrase("rootcause.first", who=who, when=_fmt(root["ts"]), n=n, waiting=waiting_text)
    if peer is not None:
        sentence = Joined([sentence, Phrase("rootcause.named", peer=peer, k=peer_n)])
    facts = {
        "root_rank": root["rank"], "root_node": root["node"], "root_time": _fmt(root["ts"]),
        "waiting_ranks": n, "named_peer": _plain(peer),
    }
    holder = next((f for f in findings if f.rule_id == root["rule_id"]), None)
    if holder is None:
        finding = _synthetic(sentence, facts, echo, root, records)
        return _reorder(findings, finding)
    holder.summary = holder.summary.led_by(sentence)
    holder.facts.update({k: v for k, v in facts.items() if v is not None})
    ev = Evidence(file=root["file"], line=int(root["line"]), text=_line_text(records, root["file"], root["line"]))
    holder.evidence = [ev] + [e for e in holder.evidence if (e.file, e.line) != (ev.file, ev.line)][:4]
    return _reorder(findings, holder)


def _hits(findings: list[Finding], selected: pl.DataFrame) -> pl.DataFrame:
    """Every hit (not just the evidence) of the pattern rules behind ``findings``, with the rule id."""
    order = pl.DataFrame({"rule_id": [f.rule_id for f in findings]}, schema={"rule_id": pl.String}).with_row_index("_o")
    rows = selected.filter((pl.col("kind") == "pattern") & (pl.col("role") == "match"))
    return (order.join(rows, on="rule_id", how="inner", maintain_order="left")  # in the findings' order
            .select("file", "line", "source", "node", "ts", "rank", "event", "rule_id"))


def _earliest(frame: pl.DataFrame) -> dict | None:
    frame = frame.filter(pl.col("ts").is_not_null())
    if frame.height == 0:
        return None
    frame = frame.with_columns(
        _sec=pl.col("ts").dt.truncate("1s"),
        _src=(pl.col("source") != "plog").cast(pl.Int8),
        _norank=pl.col("rank").is_null().cast(pl.Int8),
    ).sort(["_sec", "_src", "_norank", "ts", "file", "line"])
    return frame.row(0, named=True)


def _named_peer(signals: pl.DataFrame) -> tuple[Words | str | None, int]:
    """The peer the waiting ranks name most often (stuck location first, then link tables, then remote rank)."""
    if signals.height == 0:
        return None, 0
    for name in ("hccl_stuck_location", "hccl_link_remote_rank", "hccl_remote_rank"):
        rows = signals.filter(pl.col("signal") == name)
        if rows.height == 0:
            continue
        label = {
            "hccl_stuck_location": lambda v, t: str(t),
            "hccl_link_remote_rank": lambda v, t: f"rank {int(v)} ({t})" if v is not None else str(t),
            "hccl_remote_rank": lambda v, t: f"rank {int(v)}" if v is not None else str(t),
        }[name]
        counts = Counter(label(v, t) for v, t in rows.select("value", "text").iter_rows())
        peer, k = counts.most_common(1)[0]
        return (Phrase("rootcause.stuck_location", peer=peer) if name == "hccl_stuck_location" else peer), k
    return None, 0


def _plain(peer: Words | str | None) -> str | None:
    """The peer for the facts: as the logs name it (a stuck location without the words around it)."""
    if isinstance(peer, Phrase):
        return peer.values.get("peer")
    return peer


def _synthetic(summary: Words, facts: dict, echo: pl.DataFrame, root: dict | None,
               records: pl.DataFrame) -> Finding:
    evidence = []
    if root is not None:
        evidence.append(Evidence(root["file"], int(root["line"]), _line_text(records, root["file"], root["line"])))
    for file, line in echo.sort("ts", nulls_last=True).unique("file", keep="first", maintain_order=True).head(
            4).select("file", "line").iter_rows():
        evidence.append(Evidence(file, int(line), _line_text(records, file, line)))
    first = root["ts"] if root is not None else echo["ts"].drop_nulls().min()
    return Finding(
        rule_id=ROOT_ID, name=ROOT_NAME, category="communication", severity="error",
        title=Phrase("rootcause.title"), summary=summary, count=int(facts.get("waiting_ranks") or 0),
        first_seen=first, last_seen=echo["ts"].drop_nulls().max(),
        nodes=[root["node"]] if root is not None and root["node"] else [],
        ranks=[int(root["rank"])] if root is not None and root["rank"] is not None else [],
        evidence=evidence[:5], remediation=Phrase("rootcause.remedy"), references=["CANN error code EI0002 (remediation)"],
        facts={k: v for k, v in facts.items() if v is not None},
    )


def _reorder(findings: list[Finding], top: Finding) -> list[Finding]:
    """``top`` first, after what a declared chain says led to it (a driver mismatch before the rank it made
    slow: diagnose/analysis/chains.py); the echoes point at ``top``."""
    lead = chain_start(findings, top)
    rest = [f for f in findings if not any(f is x for x in lead)]
    for f in rest:
        if f.consequence and not f.linked:
            f.caused_by = top.rule_id
    return lead + rest


def _who(root: dict) -> Phrase:
    rank = root["rank"]
    if root["node"]:
        key = "rootcause.who_rank_node" if rank is not None else "rootcause.who_process_node"
    else:
        key = "rootcause.who_rank" if rank is not None else "rootcause.who_process"
    return Phrase(key, rank=rank, node=root["node"])


def _ranks_text(keys: pl.DataFrame) -> Joined:
    parts = []
    for node, group in sorted(keys.group_by("node"), key=lambda kv: str(kv[0][0])):
        ranks = sorted(int(r) for r in group["rank"].to_list())
        label = _ranges(ranks)
        if node[0]:
            parts.append(Phrase("rootcause.ranks_on_node", n=len(ranks), ranks=label, node=node[0]))
        else:
            parts.append(Phrase("rootcause.ranks", n=len(ranks), ranks=label))
    return Joined(parts, "rootcause.ranks_join")


def _ranges(values: list[int]) -> str:
    """``0-7, 10, 12-13``."""
    out, start, prev = [], None, None
    for v in values:
        if start is None:
            start = prev = v
        elif v == prev + 1:
            prev = v
        else:
            out.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = v
    if start is not None:
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ", ".join(out) if out else "-"


def _line_text(records: pl.DataFrame, file: str, line: int) -> str:
    row = records.filter((pl.col("file") == file) & (pl.col("line") == line)).select("text").head(1)
    return row["text"][0] if row.height else ""


def _fmt(ts: datetime | None) -> str:
    return ts.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] if ts else "?"
