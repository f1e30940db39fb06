"""Necessary literals (diagnose/scan/literals.py) and the prefilter's two-step scan built from them (diagnose/scan/plan.py).

The property that matters: a line a pattern matches always holds one of the pattern's literals, so the
literal search never loses a line; and the scan plan wants exactly the lines one of its patterns matches.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from diagnose.scan.literals import _RUST_ONLY, cover, cover_pattern, escape, measured_cover, members
from diagnose.scan.plan import literal_hits, plan
from diagnose.parsers import registry
from diagnose.pipeline import filters_for, load_catalog
from diagnose.pipeline.settings import Settings

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


@pytest.mark.parametrize("pattern, literals", [
    # A member that starts with a class: its literal is the fixed text after it.
    (r"(?:[\w.+/-]+\.so(?:\.\d+)*): undefined symbol: (?:[A-Za-z0-9_]+)|undefined symbol: (?:[A-Za-z0-9_]+)",
     {": undefined symbol: ", "undefined symbol: "}),
    # Small classes and optional pieces become a few strings.
    (r"[Aa]scend(?: plugin)? [Vv]ersion",
     {"Ascend version", "Ascend Version", "ascend version", "ascend Version", "Ascend plugin version",
      "Ascend plugin Version", "ascend plugin version", "ascend plugin Version"}),
    (r"(?:NPU|CUDA) out of memory(?:\.|!)",
     {"NPU out of memory.", "NPU out of memory!", "CUDA out of memory.", "CUDA out of memory!"}),
    # ASCII boundaries are zero-width: they join the text on both sides.
    (r"(?-u:\b)507010(?-u:\b)|Device_Absent", {"507010", "Device_Absent"}),
    # Small ranges and alternatives extend the literal.
    (r"GPU KV cache usage: (?:9[5-9]|100)\.\d%", {f"GPU KV cache usage: {n}." for n in (95, 96, 97, 98, 99, 100)}),
    # The longest literal of a sequence is chosen (without a sample: see test_a_measured_cover_...).
    (r"(?-u:\b)(?:ERR(?:0[0-4]|99)[0-9]{3}) (?:PTA|OPS|DIST|GRAPH|PROF|UNKNOWN)(?-u:\b)",
     {"ERR00", "ERR01", "ERR02", "ERR03", "ERR04", "ERR99"}),
])
def test_cover(pattern, literals):
    assert {s for s, _ in cover(pattern)} == literals


def test_a_measured_cover_takes_the_literals_seen_least_often():
    pattern = r"\] HCCL\([0-9]+,[^)]*\):[^\n]*?(?-u:\b)ret\[(?:[0-9]{1,2})\]"
    assert cover(pattern) == [("] HCCL(", False)]  # the longer, but it begins every line of an HCCL plog
    lines = pl.Series([f"[INFO] HCCL(1,python3):2025-07-23-02:00:0{i}.000.000 [a.cc:1] [2] step {i}" for i in range(9)])
    hits = literal_hits([pattern], lines)
    assert hits["] HCCL("] == 9 and hits["ret["] == 0
    assert measured_cover(pattern, hits) == [("ret[", False)]
    assert plan([pattern], hits).candidates == (r"ret\[",)


def test_case_insensitive_literals_say_so():
    assert cover(r"(?i:remote[ _]?rank)") == [("remote rank", True), ("remote_rank", True), ("remoterank", True)]
    assert cover(r"(?i)Ascend ?950") == [("Ascend 950", True), ("Ascend950", True)]


@pytest.mark.parametrize("pattern", [
    r"E[0-9A-Z][0-9]{4}",            # no literal of four characters
    r"\|\s*[0-9a-f.:]+\(\d+\)\s*\|",  # punctuation only, between classes
    r"error|\d+",                     # a branch without any literal
    r"(?:abcd)?efg",                  # every match holds "efg", which is too short
    r"[[:alpha:]]+ error code",       # Rust's POSIX class reads differently in Python: no cover, not a wrong one
    r"[a-z&&[^x]]+ error code",       # a class intersection, likewise
    r"\p{Han}+ failure",              # syntax the parser here does not know
])
def test_no_cover(pattern):
    assert cover(pattern) is None


@pytest.mark.parametrize("pattern, parts", [
    (r"a|(?:b|c)|d", ["a", "(?:b|c)", "d"]),
    (r"x\|y|z", [r"x\|y", "z"]),
    (r"[|]a|b", ["[|]a", "b"]),
    (r"[]|]a|b", ["[]|]a", "b"]),
    (r"(?i)ab|cd", ["(?i)ab", "(?i)cd"]),
])
def test_members(pattern, parts):
    assert members(pattern) == parts


def test_escape_is_read_the_same_by_both_engines():
    literal = "world_size = 1  # [a-b] (x) {2} ^$ | * + ? . ~ & \\"
    assert re.fullmatch(escape(literal), literal)
    assert pl.Series([literal]).str.contains(f"^(?:{escape(literal)})$").item()


def _prefilter_members() -> list[str]:
    rules, _ = load_catalog(Settings())
    filters = filters_for(rules)
    patterns = {p for kind in filters.select for p in filters.select[kind]}
    patterns |= {k.hints for k in registry.KINDS if k.hints}
    return sorted({m for p in patterns for m in members(p) if cover(m) is not None})


MEMBERS = _prefilter_members()


def test_most_prefilter_members_have_a_cover():
    # What the speed of the prefilter rests on (docs/benchmarks.md): if this falls, look for a new member that
    # begins with a class and has no fixed text.
    rules, _ = load_catalog(Settings())
    filters = filters_for(rules)
    every = {m for kind in filters.select for p in filters.select[kind] for m in members(p)}
    assert len(MEMBERS) >= 0.9 * len(every)


def _strings_of(member: str):
    text = member
    for rust, python in _RUST_ONLY:
        text = rust.sub(python, text)
    return st.from_regex(text, fullmatch=False, alphabet=st.characters(codec="utf-8", exclude_characters="\n\r"))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_a_line_a_member_matches_holds_one_of_its_literals(data):
    member = data.draw(st.sampled_from(MEMBERS))
    try:
        line = data.draw(_strings_of(member))
    except Exception:  # noqa: BLE001 - a pattern hypothesis cannot generate from: the samples test covers it
        return
    series = pl.Series([line])
    if series.str.contains(member).item():  # as the program's engine reads it
        assert series.str.contains(cover_pattern(member)).item(), (member, line)


def _sample_lines() -> pl.Series:
    texts = []
    for path in sorted(SAMPLES.rglob("*")):
        if path.is_file() and path.suffix in (".log", ".txt", ".out") and path.stat().st_size < 5_000_000:
            texts += path.read_text(encoding="utf-8", errors="replace").splitlines()
    return pl.Series("text", texts)


def test_the_plan_wants_exactly_the_lines_a_pattern_matches():
    """On every line of the samples and every rule's examples, for every kind's prefilter."""
    rules, _ = load_catalog(Settings())
    filters = filters_for(rules)
    examples = [line for r in rules for t in r.tests for line in t.log.splitlines()]
    lines = pl.concat([_sample_lines(), pl.Series("text", examples, pl.String)])
    assert lines.len() > 1000
    for kind, patterns in filters.select.items():
        hints = registry.get(kind).hints
        wanted = [hints, *patterns] if hints else list(patterns)
        for scan in (plan(wanted), plan(wanted, literal_hits(wanted, lines))):
            _wants_exactly(scan, wanted, lines, kind)


def _wants_exactly(scan, wanted: list[str], lines: pl.Series, kind: str) -> None:
    expected = pl.select(pl.any_horizontal([pl.lit(lines).str.contains(p) for p in wanted])).to_series()
    always = [pl.lit(lines).str.contains(p) for p in (*scan.literals, *scan.always)] or [pl.lit(False)]
    maybe = [pl.lit(lines).str.contains(p) for p in scan.candidates] or [pl.lit(False)]
    confirm = [pl.lit(lines).str.contains(p) for p in scan.confirm] or [pl.lit(False)]
    got = pl.select(pl.any_horizontal(always) | (pl.any_horizontal(maybe) & pl.any_horizontal(confirm))).to_series()
    assert (got == expected).all(), kind
    assert expected.sum() > 0, kind


def test_a_member_that_holds_another_is_not_scanned_twice():
    """A rule's whole HCCL link-table row holds the plog hint for its first cell: one scan finds both."""
    cell = r"\|\s*[0-9a-fA-F.:]+\(\d+\)\s*\|"
    row = r"(?:\|\s*[0-9a-fA-F.:]+\(\d+\)\s*\|\s*\d+\s*\|\s*[0-9a-fA-F.:]+\(\d+\)\s*\|)"
    assert plan([cell, row]).always == (cell,)
    # Not implied: a repeated tail, another alternative, other flags.
    for other in (r"\|\s*[0-9a-fA-F.:]+\(\d+\)\s*\|+", r"\|\s*[0-9a-fA-F.:]+\(\d+\)\s*\||\d\d:\d\d",
                  r"(?i)\|\s*[0-9a-fA-F.:]+\(\d+\)\s*\|\s*x"):
        assert len(plan([cell, other]).always) == 2, other
    lines = pl.Series("text", ["| 10.0.0.1(3) | 4 | 10.0.0.2(5) |", "| 10.0.0.1(3) |", "| no cell |"])
    _wants_exactly(plan([cell, row]), [cell, row], lines, "plog")


def test_files_of_one_kind_that_differ_get_plans_of_their_own(monkeypatch):
    """A plog is a tenth HCCL lines and the device log of the same process has none: a literal rare in one is
    common in the other, so a plan tuned on the first file read would search the second by a literal on most
    of its lines. Each family of files gets the plan tuned for it, and the first that fits is taken again."""
    from diagnose.pipeline import chunks

    monkeypatch.setattr(chunks, "_TUNED", {})
    pattern = r"\] HCCL\([0-9]+,[^)]*\):[^\n]*?(?-u:\b)ret\[(?:[0-9]{1,2})\]"
    plog = pl.Series([f"[INFO] HCCL(1,python3):2025-07-23-02:00:00.{i:03d}.000 [a.cc:1] [2] step {i}"
                      for i in range(chunks.TUNE_LINES)])
    device = pl.Series([f"[INFO] DRV(1,aicpu):2025-07-23-02:00:00.{i:03d}.000 [b.c:1] ret[0] heartbeat {i}"
                        for i in range(chunks.TUNE_LINES)])
    untuned = chunks.scan_plan("x{9}", (pattern,))
    assert untuned.candidates == (r"\] HCCL\(",)
    for_plog = chunks.scan_plan("x{9}", (pattern,), plog)
    assert for_plog.candidates == (r"ret\[",)
    for_device = chunks.scan_plan("x{9}", (pattern,), device)  # "ret[" is on every line of it
    assert for_device.candidates == (r"\] HCCL\(",)
    assert chunks.scan_plan("x{9}", (pattern,), plog) is for_plog  # found again, not tuned again
    assert len(chunks._TUNED[("x{9}", (pattern,))]) == 1  # the device log takes the untuned plan
    assert chunks.scan_plan("x{9}", (pattern,), plog.head(10)) is for_plog  # too short to measure: the first
