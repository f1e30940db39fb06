"""GitHub-flavoured Markdown summary (``$GITHUB_STEP_SUMMARY``, merge-request comments, tickets).

A header line, a summary table of the findings, then the top findings with their evidence and remediation.
The whole text stays under ``max_bytes`` (default 1,000,000 bytes; GitHub refuses step summaries over
1 MiB) whatever the input: table rows, sections and evidence lines are capped, and what is left out is
counted ("N more in the JSON report").

Log text is untrusted: in table cells and prose it is escaped (``|``, backticks, ``*_[]~\\``, ``<>&`` as HTML
entities, newlines flattened), and evidence goes into fenced code blocks whose fence is longer than any
backtick run inside, so a log line can neither break the table nor inject HTML or links. Remediation text is
authored Markdown from the rule files and is kept as it is.
"""

from __future__ import annotations

import re
from collections import Counter

from diagnose.model import Finding, Report
from diagnose.report.sarif import relative_path
from diagnose.report.triage_note import new_mark, triage_note

MAX_BYTES = 1_000_000
MAX_TABLE_ROWS = 100
MAX_SECTIONS = 25
MAX_EVIDENCE = 5
MAX_LINE = 500
ICONS = {"critical": "🛑", "error": "🔴", "warning": "🟠", "info": "🔵"}

LABELS = {
    "en": {
        "findings": "findings", "finding": "finding",
        "read": "Read {n} files ({kinds}), {lines} lines; {rules} rules checked",
        "skipped_n": "; {n} skipped", "incomplete": "The diagnosis is incomplete: a parser or rule failed internally "
        "({n} errors). Do not read a short list as a clean bill of health.", "none": "No findings.",
        "cols": "| # | Severity | Rule | Title | Count | Where | First seen |",
        "more_rows": "{n} more in the JSON report.",
        "more_findings": "{n} more findings in the JSON report (`--json FILE`).", "skipped": "Skipped inputs",
        "more_skipped": "{n} more in the JSON report", "errors": "Internal errors (the run is incomplete):",
        "because": "Likely a consequence of", "evidence": "Evidence", "more_evidence": "{n} more evidence lines in "
        "the JSON report.", "fix": "What to do", "refs": "References", "in_part": "Inputs read in part",
    },
    "zh": {
        "findings": "个问题", "finding": "个问题", "read": "已读取 {n} 个文件（{kinds}），{lines} 行；检查了 {rules} 条规则",
        "skipped_n": "；跳过 {n} 个", "incomplete": "诊断不完整：有解析器或规则内部出错（{n} 个错误）。发现列表短不代表没有问题。",
        "none": "未发现问题。", "cols": "| # | 严重程度 | 规则 | 标题 | 次数 | 位置 | 首次出现 |",
        "more_rows": "另有 {n} 项见 JSON 报告。", "more_findings": "另有 {n} 个问题见 JSON 报告（`--json FILE`）。",
        "skipped": "已跳过的输入", "more_skipped": "另有 {n} 项见 JSON 报告", "errors": "内部错误（结果不完整）：",
        "because": "可能是以下问题的后果：", "evidence": "证据", "more_evidence": "另有 {n} 行证据见 JSON 报告。",
        "fix": "处理建议", "refs": "参考", "in_part": "只读取了一部分的输入",
    },
}

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_MD_SPECIAL = re.compile(r"([\\`*_\[\]~|#])")


def escape(text: str) -> str:
    """Inline-safe Markdown for untrusted text (a table cell or a sentence)."""
    text = _CONTROL.sub("", str(text).replace("\r\n", " ").replace("\n", " ").replace("\t", " "))
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", text)


def code_block(lines: list[str], info: str = "text") -> str:
    body = "\n".join(_CONTROL.sub("", line.replace("\t", "    ")) for line in lines)
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{body}\n{fence}\n"


def _clip(text: str, limit: int = MAX_LINE) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render(report: Report, paths: list[str] | None = None, fail_on: str = "error", max_bytes: int = MAX_BYTES,
           lang: str = "en", **_options) -> str:
    lab = LABELS.get(lang, LABELS["en"])
    budget = max(4096, int(max_bytes)) - 512  # room for the closing lines
    out: list[str] = []
    used = 0

    def add(chunk: str) -> bool:
        nonlocal used
        size = len(chunk.encode("utf-8"))
        if used + size > budget:
            return False
        out.append(chunk)
        used += size
        return True

    findings = report.findings
    sev = Counter(f.severity for f in findings)
    sev_text = ", ".join(f"{sev[s]} {s}" for s in ("critical", "error", "warning", "info") if sev[s])
    noun = lab["finding"] if len(findings) == 1 else lab["findings"]
    coverage = getattr(report, "coverage", None) or {}
    nothing = coverage.get("status") == "nothing-analysed"
    if nothing:  # never "0 findings" for a run that looked at nothing (diagnose/coverage.py)
        add("## diagnose: " + ("未分析任何内容" if lang == "zh" else "nothing analysed") + "\n\n")
    else:
        add(f"## diagnose: {len(findings)} {noun}" + (f" ({sev_text})" if sev_text else "") + "\n\n")
    kinds = Counter(i.kind for i in report.inputs)
    kind_text = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))
    lines = sum(i.lines for i in report.inputs)
    head = lab["read"].format(n=len(report.inputs), kinds=escape(kind_text) or "-", lines=lines,
                              rules=len(report.rules_checked))
    if report.skipped:
        head += lab["skipped_n"].format(n=len(report.skipped))
    add(head + ("。" if lang == "zh" else ".") + "\n\n")
    if report.incomplete:
        add("> [!WARNING]\n> " + lab["incomplete"].format(n=len(report.errors)) + "\n\n")
    if nothing or coverage.get("status") == "partial":
        add(f"> [!{'CAUTION' if nothing else 'WARNING'}]\n> " + escape(coverage["text"]) + "\n\n")
    if report.verdict and report.verdict.get("kind") not in ("clean", "nothing-analysed"):
        add("**" + escape(report.verdict["text"]) + "**\n\n")
    note = triage_note(report, lang)  # new/known since a findings baseline; suppressed by the configuration
    if note:
        add(escape(note) + "\n\n")

    if nothing:
        pass
    elif not findings:
        add((escape(report.verdict["text"]) if report.verdict.get("kind") == "clean" else lab["none"]) + "\n\n")
    else:
        add(lab["cols"] + "\n|---:|---|---|---|---:|---|---|\n")
        shown_rows = 0
        for i, f in enumerate(findings[:MAX_TABLE_ROWS], 1):
            mark = new_mark(f, lang)
            title = (f"**{mark}** " if mark else "") + escape(f.title) + (f" ← {escape(f.caused_by)}" if f.caused_by else "")
            first = f.first_seen.strftime("%Y-%m-%d %H:%M:%S") if f.first_seen else "-"
            row = (f"| {i} | {ICONS.get(f.severity, '')} {f.severity} | {escape(f.rule_id)} "
                   f"| {title} | {f.count} | {escape(_where(f)) or '-'} | {first} |\n")
            if not add(row):
                break
            shown_rows += 1
        if shown_rows < len(findings):
            add("\n_" + lab["more_rows"].format(n=len(findings) - shown_rows) + "_\n")
        add("\n")

        shown = 0
        for i, f in enumerate(findings[:MAX_SECTIONS], 1):
            if not add(_section(i, f, paths, lab)):
                break
            shown += 1
        if shown < len(findings):
            add("_" + lab["more_findings"].format(n=len(findings) - shown) + "_\n\n")

    if getattr(report, "unrecognised", None):  # errors no rule explains (diagnose/signatures.py)
        add(_unrecognised(report, paths, lang))
    if getattr(report, "comparisons", None):  # validation runs: the table the VAL findings refer to
        from diagnose.report.comparison import comparison_markdown

        add(comparison_markdown(report, lang) + "\n")
    in_part = coverage.get("incomplete") or []
    if in_part:
        add(f"<details><summary>{lab['in_part']} ({len(in_part)})</summary>\n\n")
        for item in in_part[:50]:
            if not add(f"- {escape(item['path'])}: {escape(item['reason'])}\n"):
                break
        add("\n</details>\n\n")
    if report.skipped:
        add(f"<details><summary>{lab['skipped']} ({len(report.skipped)})</summary>\n\n")
        n = 0
        for s in report.skipped[:50]:
            if not add(f"- {escape(s.path)}: {escape(s.reason)}\n"):
                break
            n += 1
        if n < len(report.skipped):
            add("- … " + lab["more_skipped"].format(n=len(report.skipped) - n) + "\n")
        add("\n</details>\n\n")
    if report.errors:
        add(f"**{lab['errors']}**\n\n")
        for e in report.errors[:20]:
            if not add(f"- {escape(_clip(e))}\n"):
                break
        add("\n")
    text = "".join(out)
    return text if text.endswith("\n") else text + "\n"


def _where(f: Finding) -> str:
    return f.short_where(', ')


def _section(i: int, f: Finding, paths, lab: dict) -> str:
    parts = [f"### {i}. {ICONS.get(f.severity, '')} {f.severity.upper()} {escape(f.rule_id)} "
             f"{escape(f.name)}: {escape(f.title)}\n\n"]
    parts.append(escape(f.summary) + "\n\n")
    if f.caused_by:
        parts.append(f"{lab['because']} **{escape(f.caused_by)}**\n\n")
    if f.evidence:
        parts.append(f"**{lab['evidence']}**\n\n")
        lines = [f"{relative_path(e.file, paths)}:{e.line}: {_clip(e.text)}" for e in f.evidence[:MAX_EVIDENCE]]
        parts.append(code_block(lines))
        if len(f.evidence) > MAX_EVIDENCE:
            parts.append("\n_" + lab["more_evidence"].format(n=len(f.evidence) - MAX_EVIDENCE) + "_\n")
        parts.append("\n")
    if f.remediation:
        parts.append(f"**{lab['fix']}**\n\n" + _clip(f.remediation.strip(), 8000) + "\n\n")
    if f.references:
        parts.append(f"{lab['refs']}: " + "; ".join(escape(r) for r in f.references[:10]) + "\n\n")
    return "".join(parts)


_UNRECOGNISED = {
    "en": ("Unrecognised errors", "Errors and warnings no rule explains, grouped by signature (variable parts masked).",
           "{n} new error signatures since the baseline.", "| # | Count | Signature | First seen | Last seen | Where |",
           "{n} more signatures in the JSON report.", "Example of #{i}", "new"),
    "zh": ("未识别的错误", "没有规则能解释的错误和告警，按特征归类（可变部分已掩码）。", "相对基线有 {n} 个新错误特征。",
           "| # | 次数 | 特征 | 首次出现 | 末次出现 | 位置 |", "另有 {n} 类见 JSON 报告。", "#{i} 示例", "新"),
}


def _unrecognised(report: Report, paths, lang: str) -> str:
    t = _UNRECOGNISED.get(lang, _UNRECOGNISED["en"])
    items = report.unrecognised
    out = [f"### {t[0]}\n\n{t[1]}"]
    new = getattr(report, "unrecognised_new", None)
    if new is not None:
        out.append(" **" + t[2].format(n=new) + "**")
    out.append("\n\n" + t[3] + "\n|---:|---:|---|---|---|---|\n")
    for i, u in enumerate(items, 1):
        where = ", ".join(u["nodes"][:4])
        if u["ranks"]:
            where += (" " if where else "") + "rank " + ",".join(map(str, u["ranks"][:8]))
        mark = f" ({t[6]})" if u.get("new") else ""
        out.append(f"| {i} | {u['count']} | {escape(_clip(u['signature'], 300))}{mark} | {(u['first_seen'] or '-')[:19]} "
                   f"| {(u['last_seen'] or '-')[:19]} | {escape(where) or '-'} |\n")
    more = getattr(report, "unrecognised_more", 0) or 0
    if more:
        out.append("\n_" + t[4].format(n=more) + "_\n")
    out.append("\n")
    for i, u in enumerate(items[:5], 1):
        ex = u["example"]
        out.append(f"{t[5].format(i=i)}:\n\n")
        out.append(code_block([f"{relative_path(ex['file'], paths)}:{ex['line']}: {_clip(ex['text'])}"]) + "\n")
    return "".join(out)

