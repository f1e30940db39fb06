"""The text sections of the incident page: root cause, findings table, details, unrecognised errors, skipped
inputs, internal errors, inputs. Everything from the logs is escaped (page/kit.e, page/markup.inline)."""

from __future__ import annotations

from diagnose.messages import Messages
from diagnose.model import Finding, Report
from diagnose.report.page.kit import e
from diagnose.report.page.markup import fmt_time, inline, reference
from diagnose.report.page.timeline import SEVERITY_COLOR

MAX_UNRECOGNISED_EXAMPLE = 400


def sev(severity: str, msg: Messages) -> str:
    return (f"<span class=\"sev\" style=\"background:{SEVERITY_COLOR.get(severity, '#555')}\">"
            f"{e(msg.severity(severity))}</span>")


def where(f: Finding) -> str:
    return f.short_where(",")


def _meta(parts: list[str]) -> str:
    return " · ".join(p for p in parts if p)


def root_box(report: Report, msg: Messages) -> str:
    f = report.findings[0]
    located = [e(where(f))]
    if f.first_seen is not None:
        located.append(e(msg("page.first_seen", when=fmt_time(f.first_seen))))
    elif f.evidence:  # no time: point at the line instead
        located.append(e(msg("page.see_line", file=f.evidence[0].file, line=f.evidence[0].line)))
    located.append(f"<a href=\"#finding-1\">{e(msg('page.more'))}</a>")
    # What the root cause led to, by the cause links rules declare (diagnose/analysis/chains.py).
    chain, ids = [], {f.rule_id}
    for i, g in enumerate(report.findings[1:], 2):
        if g.linked and g.caused_by in ids:
            ids.add(g.rule_id)
            chain.append(f"<a href=\"#finding-{i}\">{e(g.rule_id)}</a> {inline(msg.say(g.title))}")
    if chain:
        located.append(e(msg("page.led_to", chain="\u0000")).replace("\u0000", " → ".join(chain)))
    return (f"<div class=\"root\" id=\"root-cause\"><h2>{e(msg('page.root'))}: {sev(f.severity, msg)} "
            f"{e(f.rule_id)} {inline(msg.say(f.title))}</h2><p class=\"summary\">{inline(msg.say(f.summary))}</p>"
            f"<div class=\"meta\">{_meta(located)}</div></div>")


def findings_table(findings: list[Finding], msg: Messages) -> str:
    cols = ("num", "severity", "rule", "category", "title", "count", "where", "first_seen")
    out = [f"<h2 id=\"findings\">{e(msg('page.findings'))}</h2><table id=\"findings-table\"><tr>"
           + "".join(f"<th>{e(msg('page.col.' + c))}</th>" for c in cols) + "</tr>"]
    for i, f in enumerate(findings, 1):
        caused = f" ← {e(f.caused_by)}" if f.caused_by else ""
        out.append(f"<tr><td>{i}</td><td>{sev(f.severity, msg)}</td><td><a href=\"#finding-{i}\">{e(f.rule_id)}</a></td>"
                   f"<td>{e(msg.category(f.category))}</td><td>{inline(msg.say(f.title))}{caused}</td><td>{e(f.count)}</td>"
                   f"<td>{e(where(f) or '-')}</td><td>{e(fmt_time(f.first_seen) or '-')}</td></tr>")
    out.append("</table>")
    return "\n".join(out)


def finding_details(i: int, f: Finding, max_evidence: int, notes: list[str], msg: Messages, root: bool = True) -> str:
    meta = [e(msg.category(f.category)), e(msg("page.times", n=f.count)), e(where(f))]
    if f.first_seen is not None:
        meta.append(e(msg("page.first_seen", when=fmt_time(f.first_seen))))
    if f.last_seen is not None and f.last_seen != f.first_seen:
        meta.append(e(msg("page.last_seen", when=fmt_time(f.last_seen))))
    out = [f"<div class=\"finding{' first' if i == 1 and root else ''}\" id=\"finding-{i}\">",
           f"<h3>{i}. {sev(f.severity, msg)} {e(f.rule_id)} {e(f.name)}: {inline(msg.say(f.title))}</h3>",
           f"<div class=\"meta\">{_meta(meta)}</div>",
           f"<p class=\"summary\">{inline(msg.say(f.summary))}</p>"]
    if f.caused_by:
        out.append(f"<p><i>{e(msg('page.caused_by', rule=f.caused_by))}</i></p>")
    if f.evidence:
        out.append(f"<b>{e(msg('page.evidence'))}</b><div class=\"ev\">")
        for ev in f.evidence[:max_evidence]:
            out.append(f"<div><span class=\"loc\">{e(ev.file)}:{e(ev.line)}:</span> {e(ev.text[:600])}</div>")
        out.append("</div>")
        if len(f.evidence) > max_evidence:
            more = len(f.evidence) - max_evidence
            out.append(f"<div class=\"note\">{e(msg('page.more_evidence', n=more))}</div>")
            notes.append(msg("page.notes.evidence", rule=f.rule_id, n=more))
    remediation = msg.say(f.remediation)
    if remediation:
        out.append(f"<b>{e(msg('page.fix'))}</b><div class=\"fix\">{_markdown(remediation)}</div>")
    if f.references:
        out.append(f"<div class=\"meta refs\">{e(msg('page.refs'))}: "
                   + " · ".join(reference(r) for r in f.references) + "</div>")
    out.append("</div>")
    return "\n".join(out)


def _markdown(text: str) -> str:
    try:
        from markdown_it import MarkdownIt  # deferred: markdown_it is optional (plain text without it)

        return MarkdownIt("commonmark", {"html": False}).render(text)  # raw HTML in the source is escaped
    except Exception:  # noqa: BLE001 - plain text is fine
        return f"<pre>{e(text)}</pre>"


def unrecognised(report: Report, msg: Messages) -> str:
    """Errors no rule explains, by signature: the dots of the timeline that no finding accounts for."""
    items = report.unrecognised
    more = report.unrecognised_more or 0
    out = [f"<h2 id=\"unrecognised\">{e(msg('page.unrecognised.title'))}</h2>",
           f"<p class=\"meta\">{e(msg('page.unrecognised.intro', n=len(items) + more))}</p>"]
    new = report.unrecognised_new
    if new is not None:
        out.append(f"<p><b>{e(msg('page.unrecognised.new', n=new))}</b></p>")
    cols = ("num", "count", "signature", "first", "last", "where", "example")
    out.append("<table id=\"unrecognised-table\"><tr>"
               + "".join(f"<th>{e(msg('page.unrecognised.col.' + c))}</th>" for c in cols) + "</tr>")
    for i, u in enumerate(items, 1):
        place = ", ".join(u.nodes[:4]) + (" …" if len(u.nodes) > 4 else "")
        if u.ranks:
            place += (" " if place else "") + msg("page.timeline.rank", rank=",".join(map(str, u.ranks[:8]))) \
                + ("…" if len(u.ranks) > 8 else "")
        ex = u.example
        mark = f" <b>{e(msg('page.unrecognised.new_mark'))}</b>" if u.new is True else ""
        out.append(f"<tr id=\"unrecognised-{i}\"><td>{i}</td><td>{e(u.count)}</td><td><code>{e(u.signature[:300])}</code>"
                   f"{mark}</td><td>{e((u.first_seen or '-')[:19])}</td><td>{e((u.last_seen or '-')[:19])}</td>"
                   f"<td>{e(place or '-')}</td><td class=\"ev\"><span class=\"loc\">{e(ex.file)}:{e(ex.line)}:"
                   f"</span> {e((ex.text or '')[:MAX_UNRECOGNISED_EXAMPLE])}</td></tr>")
    out.append("</table>")
    if more:
        out.append(f"<div class=\"note\">{e(msg('page.unrecognised.more', n=more))}</div>")
    out.append(f"<p class=\"meta\">{msg.html('page.unrecognised.hint')}</p>")
    return "\n".join(out)


def skipped(report: Report, msg: Messages) -> str:
    out = [f"<h2 id=\"skipped\">{e(msg('page.skipped', n=len(report.skipped)))}</h2><ul>"
           + "".join(f"<li>{e(s.path)}: {e(msg.say(s.reason))}</li>" for s in report.skipped[:200]) + "</ul>"]
    if len(report.skipped) > 200:
        out.append(f"<div class=\"note\">{e(msg('page.more_skipped', n=len(report.skipped) - 200))}</div>")
    return "\n".join(out)


def internal_errors(report: Report, msg: Messages) -> str:
    return (f"<h2 id=\"errors\">{e(msg('page.errors'))}</h2><ul>"
            + "".join(f"<li>{e(x)}</li>" for x in report.errors) + "</ul>")


def inputs(report: Report, msg: Messages) -> str:
    cols = ("file", "kind", "node", "lines", "raw", "note")
    return (f"<h2 id=\"inputs\">{e(msg('page.inputs'))}</h2><details><summary>"
            f"{e(msg('page.files', n=len(report.inputs)))}</summary><table><tr>"
            + "".join(f"<th>{e(msg('page.input_col.' + c))}</th>" for c in cols) + "</tr>"
            + "".join(f"<tr><td>{e(i.path)}</td><td>{e(i.kind)}</td><td>{e(i.node or '')}</td>"
                      f"<td>{i.lines}</td><td>{i.raw_lines}</td><td>{e(msg.say(i.note))}</td></tr>"
                      for i in report.inputs[:2000])
            + "</table></details>")
