"""The one line the text and Markdown reports print about triage: how many findings are new and known since
a findings baseline, and how many findings and error signatures the configuration suppressed (the JSON
report lists those with their reasons)."""

from __future__ import annotations

_TEXT = {
    "en": {"baseline": "{new} new and {known} known findings since the baseline",
           "suppressed": "{n} suppressed by the configuration ({parts}; reasons in the JSON report)",
           "finding": "{n} finding", "findings": "{n} findings", "signature": "{n} error signature",
           "signatures": "{n} error signatures", "new": "NEW"},
    "zh": {"baseline": "相对基线：{new} 个新问题，{known} 个已知问题",
           "suppressed": "配置屏蔽了 {n} 项（{parts}；原因见 JSON 报告）",
           "finding": "{n} 个问题", "findings": "{n} 个问题", "signature": "{n} 类错误特征",
           "signatures": "{n} 类错误特征", "new": "新"},
}


def triage_note(report, lang: str = "en") -> str | None:
    t = _TEXT.get(lang, _TEXT["en"])
    parts = []
    new = getattr(report, "findings_new", None)
    if new is not None:
        parts.append(t["baseline"].format(new=new, known=len(report.findings) - new))
    suppressed = getattr(report, "suppressed", None) or []
    if suppressed:
        findings = sum(1 for s in suppressed if s.get("kind") == "finding")
        signatures = len(suppressed) - findings
        what = [t["finding" if findings == 1 else "findings"].format(n=findings)] if findings else []
        what += [t["signature" if signatures == 1 else "signatures"].format(n=signatures)] if signatures else []
        parts.append(t["suppressed"].format(n=len(suppressed), parts=", ".join(what)))
    if not parts:
        return None
    return ("；" if lang == "zh" else "; ").join(parts) + ("。" if lang == "zh" else ".")


def new_mark(finding, lang: str = "en") -> str:
    """``NEW`` for a finding a findings baseline does not know, else empty."""
    return _TEXT.get(lang, _TEXT["en"])["new"] if getattr(finding, "baseline_state", None) == "new" else ""
