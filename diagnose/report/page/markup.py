"""Text on the incident page: times, code spans, links.

Summaries and titles are plain text with Markdown-style code spans (```--max-num-seqs```): they are escaped,
then each pair of backticks becomes ``<code>``. References become links: a URL as it is, and the GitHub
shorthand the rule files use (``vllm-ascend#4972``, ``vllm RFC #54644``, ``vllm-ascend PR #6877 (...), PR
#10201``: a bare ``PR #N`` belongs to the repository named before it in the same reference) to
``https://github.com/<owner>/<repo>/issues/N`` (GitHub redirects an issue number that is a pull request).
"""

from __future__ import annotations

import re
from datetime import datetime

from diagnose.report.page.kit import e

REPOS = {"vllm": "vllm-project/vllm", "vllm-ascend": "vllm-project/vllm-ascend", "vllm-omni": "vllm-project/vllm-omni"}

_URL = r"https?://[^\s<>\"'`]+[^\s<>\"'`.,;:)\]]"
# The blanks around ``PR``/``RFC``/``issue`` are bounded: with ``\s*`` every start in a long run of blanks (a
# summary that quotes an operator name of a hundred thousand spaces and tabs) scanned to the run's end, and the
# page took 147 s on a 100 KB line; bounded, the search is linear in the text.
_REF = re.compile(rf"(?P<url>{_URL})|(?P<repo>\b(?:vllm-ascend|vllm-omni|vllm)\b)?(?P<kind>\s{{0,4}}(?:PR|RFC|issue)"
                  r"\s{0,4})?#(?P<num>\d+)\b")
_CODE = re.compile(r"`([^`\n]+)`")


def fmt_time(ts: datetime | None) -> str | None:
    """``2026-03-15 03:10:31.338``; whole seconds without a ``.000``; under a millisecond in microseconds
    (profiler events: ``07:07:11.000463``)."""
    if ts is None:
        return None
    text = ts.strftime("%Y-%m-%d %H:%M:%S")
    if not ts.microsecond:
        return text
    return text + (f".{ts.microsecond // 1000:03d}" if ts.microsecond % 1000 == 0 or ts.microsecond >= 1000
                   else f".{ts.microsecond:06d}")


def plot_time(ts: datetime | None) -> str | None:
    """A time for plotly data (always with milliseconds, so every value of an axis parses the same)."""
    return ts.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] if ts is not None else None


def inline(text: str | None) -> str:
    """Escaped text with its code spans as ``<code>`` and its URLs as links."""
    out, last = [], 0
    raw = text or ""
    for m in _CODE.finditer(raw):
        out.append(_links(raw[last:m.start()], shorthand=False))
        out.append(f"<code>{e(m.group(1))}</code>")
        last = m.end()
    out.append(_links(raw[last:], shorthand=False))
    return "".join(out)


def reference(text: str) -> str:
    """One reference: escaped, with its URL and GitHub shorthand as links."""
    return _links(text, shorthand=True)


def issue_url(repo: str, number: str) -> str:
    return f"https://github.com/{REPOS[repo]}/issues/{number}"


def _links(text: str, shorthand: bool) -> str:
    out, last, repo = [], 0, None
    for m in _REF.finditer(text):
        if m.group("url"):
            url = m.group("url")
            out.append(e(text[last:m.start()]) + f"<a class=\"ref\" href=\"{e(url)}\">{e(url)}</a>")
            last = m.end()
            continue
        repo = m.group("repo") or repo
        if not shorthand or repo is None or (m.group("repo") is None and not m.group("kind")):
            continue  # a bare "#3" without a repository before it is not a reference
        start = m.start("repo") if m.group("repo") else m.start("kind")
        if m.group("kind") and not m.group("repo"):
            start += len(m.group("kind")) - len(m.group("kind").lstrip())
        out.append(e(text[last:start]) + f"<a class=\"ref\" href=\"{e(issue_url(repo, m.group('num')))}\">"
                   f"{e(text[start:m.end()])}</a>")
        last = m.end()
    out.append(e(text[last:]))
    return "".join(out)
