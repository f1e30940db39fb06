"""Keep every regex the program hands to polars on the regex engine's fast path, whatever the text.

Polars runs Rust's ``regex`` crate. Its lazy DFA cannot evaluate a Unicode word boundary (``\\b``, ``\\B``) once the
haystack holds a non-ASCII byte and gives the search to a far slower engine: on request-log lines carrying
DeepSeek's special tokens and Chinese prompts an alternation with one ``\\b`` in it ran at 0.8 MB/s against 330 MB/s
on the same lines made ASCII (docs/benchmarks.md). ``\\w``, ``\\d``, ``\\s`` and ``(?i)`` stay on the DFA; only the
boundaries fall off. So every pattern is rewritten once, where it enters the program, with ASCII boundaries
``(?-u:\\b)``: for log text the two differ only between an ASCII word character and a non-ASCII letter
(``507014错误``), where the ASCII one also matches, which is what a log reader wants.

``slow_constructs`` says, for ``diagnose rules test``, which parts of a user's pattern the rewrite cannot make
equivalent; ``probe`` times a pattern on non-ASCII text against the same text made ASCII, for what no static
check foresees.
"""

from __future__ import annotations

import functools
import re
import time

import polars as pl

ASCII_BOUNDARY = {"b": r"(?-u:\b)", "B": r"(?-u:\B)"}
_ALREADY = "(?-u:"


def _scan(pattern: str):
    """Yield ``(start, end, token, in_class)``: escapes as one token, other characters one by one."""
    i, depth, n = 0, 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            yield i, i + 2, pattern[i:i + 2], depth > 0
            i += 2
            continue
        if c == "[":
            depth += 1
            yield i, i + 1, c, True
            i += 1
            # a ']' right after '[' or '[^' is a literal, not the end of the class
            if i < n and pattern[i] == "^":
                yield i, i + 1, "^", True
                i += 1
            if i < n and pattern[i] == "]":
                yield i, i + 1, "]", True
                i += 1
            continue
        if c == "]" and depth:
            depth -= 1
            yield i, i + 1, c, True
            i += 1
            continue
        yield i, i + 1, c, depth > 0
        i += 1


def unicode_boundaries(pattern: str) -> list[int]:
    """Offsets of the Unicode ``\\b``/``\\B`` of ``pattern`` (outside classes, not already ``(?-u:\\b)``)."""
    out = []
    for start, end, tok, in_class in _scan(pattern):
        if in_class or tok not in (r"\b", r"\B"):
            continue
        if pattern.endswith(_ALREADY, 0, start) and pattern.startswith(")", end):
            continue
        out.append(start)
    return out


def dfa_safe(pattern: str) -> str:
    """``pattern`` with each Unicode word boundary written as an ASCII one; the rest unchanged."""
    spots = unicode_boundaries(pattern)
    if not spots:
        return pattern
    parts, last = [], 0
    for at in spots:
        parts += [pattern[last:at], ASCII_BOUNDARY[pattern[at + 1]]]
        last = at + 2
    parts.append(pattern[last:])
    return "".join(parts)


_COUNTED = re.compile(r"\{(\d+)(?:,(\d*))?\}")
LARGE_COUNT = 8


@functools.lru_cache(maxsize=4096)  # the filters ask for each rule's pattern once per kind they build
def relaxed(pattern: str) -> str:
    """``pattern`` with every large counted repetition (``[^\\n]{0,200}``, ``\\w{3,}``) made open (``*``, ``+``).

    For a prefilter only: it matches every line the pattern matches, and more. Counted repetitions of a class
    that spans all of Unicode are copies of a UTF-8 automaton each; in one alternation of all the rules'
    regexes they outgrow the lazy DFA's cache, and the engine falls back to a slow one for every line (a
    combined prefilter went from 50 MB/s to 1.8 MB/s when one more rule with `.{0,200}?` was added).
    """
    out, i = [], 0
    for start, end, tok, in_class in _scan(pattern):
        if start < i:
            continue
        if tok == "{" and not in_class:
            m = _COUNTED.match(pattern, start)
            if m:
                low, high = int(m.group(1)), m.group(2)
                most = low if high is None or high == "" else int(high)  # `{m,}`: as large as its least
                if most > LARGE_COUNT:
                    out.append("*" if low == 0 else "+")
                    i = m.end()
                    continue
        out.append(tok)
        i = end
    return "".join(out)


def _neighbours(pattern: str, at: int) -> tuple[str, str]:
    return (pattern[at - 1] if at else ""), (pattern[at + 2] if at + 2 < len(pattern) else "")


def slow_constructs(pattern: str) -> list[str]:
    """What ``dfa_safe`` cannot rewrite without changing the meaning: a boundary beside non-ASCII text or beside
    a Unicode class, where only the Unicode boundary separates two letters of a script other than Latin."""
    notes = []
    for at in unicode_boundaries(pattern):
        before, after = _neighbours(pattern, at)
        side = after if after and after not in "|)" else before
        if side and not side.isascii():
            notes.append(f"`\\{pattern[at + 1]}` at {at} is beside non-ASCII text {side!r}: it is matched as an "
                         "ASCII word boundary, which never falls between two non-ASCII letters")
        elif pattern[at + 2:at + 4] in (r"\w", r"\p") or pattern[max(at - 2, 0):at] in (r"\w", r"\p"):
            notes.append(f"`\\{pattern[at + 1]}` at {at} is beside a Unicode class: it is matched as an ASCII word "
                         "boundary")
    return notes


@functools.cache
def _probe_text(lines: int):
    prompt = "请帮我分析这个错误日志，为什么推理服务启动后很快就退出了？<｜User｜><｜Assistant｜><think>\\n" * 12
    text = [f"INFO 07-22 10:00:{i % 60:02d} [logger.py:41] Received request chatcmpl-{i}: prompt: '{prompt}', "
            f"params: SamplingParams(n=1, temperature=0.6)" for i in range(lines)]
    same_ascii = ["".join(c if c.isascii() else "x" for c in t) for t in text]
    return pl.Series(text), pl.Series(same_ascii)


def probe(pattern: str, *, lines: int = 2000) -> tuple[float, float]:
    """Seconds ``pattern`` (as the program runs it) takes over ``lines`` request-log lines with CJK and DeepSeek's
    special tokens, and over the same lines with every non-ASCII character replaced by an ASCII letter."""
    pattern = dfa_safe(pattern)
    timings = []
    for series in _probe_text(lines):
        started = time.perf_counter()
        series.str.contains(pattern)
        timings.append(time.perf_counter() - started)
    return timings[0], timings[1]


SLOW_COUNT = 255  # counted repetitions above this leave the lazy DFA: `.{1,1000}` ran at 3.5 MB/s, `.{1,5000}` far slower


def large_repetitions(pattern: str) -> list[str]:
    """The counted repetitions of ``pattern`` (outside classes) whose bound is above ``SLOW_COUNT``:
    ``.{1,5000}ZQZX`` compiles to thousands of states, which the regex engine's fast path cannot hold, and it
    then runs an order of magnitude slower on long lines (27 s against 0.8 s on one bundle). Said when a user's
    rule is loaded, with the rule's name; an open repetition (``+``, ``*``) or a small bound is as exact in practice."""
    out = []
    for start, _end, tok, in_class in _scan(pattern):
        if tok != "{" or in_class:
            continue
        m = _COUNTED.match(pattern, start)
        if m:
            low, high = int(m.group(1)), m.group(2)
            most = low if high is None or high == "" else int(high)
            if most > SLOW_COUNT or low > SLOW_COUNT:
                out.append(m.group(0))
    return out
