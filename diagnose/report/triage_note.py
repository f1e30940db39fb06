"""The one line the text and Markdown reports print about triage: how many findings are new and known since
a findings baseline, and how many findings and error signatures the configuration suppressed (the JSON
report lists those with their reasons). Texts from the message catalog (``[triage]``)."""

from __future__ import annotations

from diagnose.messages import Messages
from diagnose.model import SuppressedFinding


def triage_note(report, msg: Messages) -> str | None:
    parts = []
    new = getattr(report, "findings_new", None)
    if new is not None:
        parts.append(msg("triage.baseline", new=new, known=len(report.findings) - new))
    suppressed = getattr(report, "suppressed", None) or []
    if suppressed:
        findings = sum(1 for s in suppressed if isinstance(s, SuppressedFinding))
        signatures = len(suppressed) - findings
        what = [msg("triage.findings", n=findings)] if findings else []
        what += [msg("triage.signatures", n=signatures)] if signatures else []
        parts.append(msg("triage.suppressed", n=len(suppressed), parts=msg("triage.list_join").join(what)))
    if not parts:
        return None
    return msg("triage.join").join(parts) + msg("triage.full_stop")


def new_mark(finding, msg: Messages) -> str:
    """``NEW`` for a finding a findings baseline does not know, else empty."""
    return msg("triage.new") if getattr(finding, "baseline_state", None) == "new" else ""
