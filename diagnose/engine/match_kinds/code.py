"""The ``code`` match kind: error codes of one family on log lines no other rule explains.

The tables (knowledge/codes/<family>.toml, loaded by diagnose/knowledge/code_tables.py) say how a code of the family is written
on a line (recognisers), what each known code means, and, for a code no entry lists, what its class (the
module letter, the number range, the component) says: its category, severity and next step. So a code nobody
listed still gives a finding in the right category, quoting the code.

A line that another rule already explains (its hits: every matching event of a pattern rule, the evidence
of the others) gives no code finding; that rule knows more. One finding per distinct code; a code that the
table marks ``echo`` (a timeout on a rank that waited for a stuck peer) is a consequence; a code that only
names its class, or an "inner error" that says "read the lines that follow", is ``generic`` and ranks after
specific findings. A generic code takes the category of what it wraps: the nearest listed, specific code of any family
within a few lines of it, those of its own event first (`ERR00100 PTA call acl api failed` below an `EE1002` stream timeout is a
communication finding, not an engine one). A hardware fault event the table lists with MindCluster's handling level
(``handling``) says so in its meaning, and its next step starts with what that level asks for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from diagnose.engine.match import Match
from diagnose.engine.match_kinds.protocol import Context, Hit, MatchKind
from diagnose.knowledge.code_tables import CodeFamily, KnownCode, builtin_tables, classify, code_expr, find_codes
from diagnose.messages import LANGS, Joined, Localized, Phrase

FIELDS = {"family": ("str", "an error-code table under knowledge/codes/ (cann, acl, hccl, mindie, torch_npu, "
                            "fault_event)")}

_WRAP_LINES = 30  # how far from a generic code (in lines of its event) the code it wraps may stand
_WRAP_HITS = 5  # how many of a generic code's events are searched for what it wraps


def families(folder=None) -> dict[str, CodeFamily]:
    """The tables by family (diagnose/knowledge/code_tables.py, loaded once per process)."""
    return builtin_tables(folder)


@dataclass(frozen=True)
class CodeMatch(Match):
    """Error codes of one family (knowledge/codes/<family>.toml) on log lines that no other rule explains: one
    finding per code, its category, severity and next step from the table (this module)."""

    family: str = ""

    kind = "code"


def build(raw: dict[str, Any], table: dict[str, Any], seconds) -> CodeMatch:
    return CodeMatch(raw=raw, family=table["family"])


def check(table: dict[str, Any]):
    if "family" not in table:
        yield "match.family", "missing (the stem of a table under knowledge/codes/, e.g. \"acl\")"


def keeps(m: CodeMatch):
    found = recogniser_pattern(m.family)  # the lines of the family's codes
    if found:
        yield found


def evaluate(m: CodeMatch, sources, ctx: Context) -> list[Hit]:
    return match_codes(m, ctx.records, ctx.explained, ctx.lang)


def _anonymous(pattern: str) -> str:
    return re.sub(r"\(\?P<[A-Za-z_][A-Za-z0-9_]*>", "(?:", pattern)


def _short(meaning: str, limit: int = 90) -> str:
    """The first clause of a meaning, for a title."""
    text = meaning.strip().split(". ")[0].rstrip(".")
    text = text.split("; ")[0]
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def recogniser_pattern(family: str) -> str | None:
    """One alternation of the family's recognisers (for the filters that keep lines in memory)."""
    fam = families().get(family)
    if fam is None:
        return None
    return "|".join(f"(?:{_anonymous(r.regex)})" for r in fam.recognisers)


def wrapped_code(records: pl.DataFrame, hits: pl.DataFrame, family: str, code: str) -> KnownCode | None:
    """The listed, specific code (of any family) nearest to a generic code's lines, within ``_WRAP_LINES`` lines
    of the same file, those of its own event first: what the generic code wraps, or None."""
    near = []
    for file, line, event in hits.select("file", "line", "event").head(_WRAP_HITS).iter_rows():
        rows = records.filter((pl.col("file") == file)
                              & pl.col("line").is_between(max(line - _WRAP_LINES, 0), line + _WRAP_LINES))
        near.append(rows.select("message", other=pl.col("event").ne_missing(event),
                                dist=(pl.col("line").cast(pl.Int64) - line).abs(), line="line"))
    if not near:
        return None
    rows = pl.concat(near).drop_nulls("message").sort(["other", "dist", "line"])
    tables = families()
    pattern = "|".join(f"(?:{recogniser_pattern(name)})" for name in tables)
    for message in rows.filter(pl.col("message").str.contains(pattern))["message"].to_list():
        for fam in tables.values():
            for found in find_codes(fam, message):
                if (fam.family, found) == (family, code):
                    continue
                known, _ = classify(fam, found)
                if known is not None and not known.generic:
                    return known
    return None


def match_codes(m: CodeMatch, records: pl.DataFrame, explained: pl.DataFrame | None, lang: str) -> list[Hit]:
    fam = families().get(m.family)
    if fam is None or records.height == 0:
        return []
    cand = records.filter(pl.col("message").str.contains(recogniser_pattern(m.family)))
    if cand.height == 0:
        return []
    if explained is not None and explained.height:
        cand = cand.join(explained, on=["file", "event"], how="anti")
    code = pl.coalesce([code_expr(fam, r) for r in fam.recognisers])
    cand = cand.with_columns(_code=code).filter(pl.col("_code").is_not_null())
    if cand.height == 0:
        return []
    cand = cand.sort(["ts", "file", "line"], nulls_last=True)
    out: list[Hit] = []
    for (value,), group in cand.group_by(["_code"], maintain_order=True):
        known, cls = classify(fam, value)
        entry = known or cls
        events = group.unique(subset=["file", "event"], keep="first", maintain_order=True)
        hits = events.select("file", "line", "source", "node", "ts", "rank", "event",
                             pl.col("proc").alias("engine"), pl.lit(None, pl.Float64).alias("value"),
                             pl.col("message").alias("vtext"))
        generic = known is None or known.generic
        title = {la: f"{fam.title.get(la) or fam.title['en']} {value}: {_short(entry.meaning.get(la) or entry.meaning['en'])}"
                 for la in LANGS}
        meaning: Localized | Joined = Localized(dict(entry.meaning))
        remediation: Localized | Joined = Localized({la: entry.next_step.get(la) or entry.next_step["en"] for la in LANGS})
        category = entry.category
        if generic and (inner := wrapped_code(records, events, fam.family, value)) is not None:
            category = inner.category  # a wrapper takes the category of what it wraps
        handling = known.handling if known else ""
        if handling:  # MindCluster's handling level: what it means, and what it asks for first
            meaning = Joined([meaning, Phrase(f"code_handling.{handling}")], "code_handling.space")
            remediation = Joined([Phrase(f"code_handling.next.{handling}"), remediation], "code_handling.space")
        facts = {"code": value, "meaning": meaning, "family": fam.family,
                 "code_name": known.name if known else "", "listed": "yes" if known else "no",
                 "handling": handling or "-"}
        out.append(Hit(hits, events.height, facts, {
            "category": category, "severity": entry.severity, "title": Localized(title),
            "remediation": remediation,
            "consequence": bool(known.echo) if known else False, "generic": generic,
            "references": [entry.source] if entry.source else [],
        }))
    return out


# After the other kinds: a line another rule explains is theirs (that rule knows more).
KIND = MatchKind("code", FIELDS, build, evaluate, check, keeps, phase=1,
                 summary="an error code of a family (its table under knowledge/codes/) on a line no other rule "
                         "explains")
