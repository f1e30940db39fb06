"""GitHub Actions workflow commands: ``::error``/``::warning``/``::notice`` annotations, one per finding.

critical and error findings become ``::error``, warning ``::warning``, info ``::notice``. GitHub shows at most
10 annotations of each kind per step (50 per job) and drops the rest silently, so at most ``max_per_kind``
(10) of each kind are printed, most severe first and in ranked order; when some were left out a last
``::notice`` says how many (if the notice budget allows). Values are escaped as the runner expects: data
``%`` → ``%25``, CR → ``%0D``, LF → ``%0A``; properties also ``:`` → ``%3A`` and ``,`` → ``%2C``. Every
command is a single line, so log text cannot start a command of its own.
"""

from __future__ import annotations

from diagnose.messages import messages
from diagnose.model import SEVERITY_RANK, Report, Status
from diagnose.report import gate_lines
from diagnose.report.sarif import primary_location, relative_path

KINDS = {"critical": "error", "error": "error", "warning": "warning", "info": "notice"}
MAX_PER_KIND = 10
MAX_MESSAGE = 4000


def escape_data(value: str) -> str:
    return str(value).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def command(kind: str, message: str, **props) -> str:
    items = ",".join(f"{k}={escape_property(v)}" for k, v in props.items() if v not in (None, ""))
    return f"::{kind}{' ' + items if items else ''}::{escape_data(message)}"


def annotations(report: Report, paths: list[str] | None = None, max_per_kind: int = MAX_PER_KIND,
                lang: str = "en") -> list[str]:
    msg = messages(lang)
    order = sorted(range(len(report.findings)), key=lambda i: (-SEVERITY_RANK[report.findings[i].severity], i))
    used = {"error": 0, "warning": 0, "notice": 0}
    lines = []
    dropped = 0
    for i in order:
        f = report.findings[i]
        kind = KINDS.get(f.severity, "warning")
        if used[kind] >= max_per_kind:
            dropped += 1
            continue
        used[kind] += 1
        file, line = primary_location(f, report)
        title, remediation = msg.say(f.title), msg.say(f.remediation)
        message = msg.say(f.summary) or title
        if f.caused_by:
            message += msg("github.because", rule=f.caused_by)
        if remediation:
            message += "\n\n" + msg("github.fix") + "\n" + remediation.strip()
        if len(message) > MAX_MESSAGE:
            message = message[: MAX_MESSAGE - 1] + "…"
        lines.append(command(kind, message, file=relative_path(file, paths), line=str(line),
                             title=f"{f.rule_id} {title}"))
    if gate_lines.unrecognised_fail(report) and used["error"] < max_per_kind:
        used["error"] += 1
        file, line = gate_lines.unrecognised_place(report)
        lines.append(command("error", gate_lines.unrecognised_text(report, msg),
                             file=relative_path(file, paths) if file else None, line=str(line),
                             title=msg("github.unrecognised_title")))
    if report.incomplete and used["error"] < max_per_kind:
        used["error"] += 1
        lines.append(command("error", msg("github.incomplete"), title=msg("github.incomplete_title")))
    coverage = report.coverage
    if report.status in (Status.NOTHING, Status.PARTIAL):
        # A run that analysed nothing is an error, partial coverage a warning (diagnose/analysis/coverage.py); files
        # read only in part are listed here, the inputs not read below.
        kind = "error" if report.status == Status.NOTHING else "warning"
        in_part = [msg("github.read_in_part", path=relative_path(i.path, paths), reason=msg.say(i.reason))
                   for i in coverage.incomplete]
        if used[kind] < max_per_kind:
            used[kind] += 1
            listed = "".join(f"\n{x}" for x in in_part[:5]) + ("\n… " + msg("github.more", n=len(in_part) - 5)
                                                               if len(in_part) > 5 else "")
            title = msg("github.nothing_title" if report.status == Status.NOTHING else "github.partial_title")
            lines.append(command(kind, msg.say(coverage.text) + listed, title=title))
    if report.skipped:
        # Inputs that were not read must not pass silently: a warning when a limit, a corrupt archive or an
        # access problem stopped the reading, a notice when only binary or special files were left out.
        serious = [s for s in report.skipped if not s.by_design]
        kind = "warning" if serious else "notice"
        if used[kind] < max_per_kind:
            used[kind] += 1
            shown = serious or report.skipped
            listed = "\n".join(f"{relative_path(s.path, paths)}: {msg.say(s.reason)}" for s in shown[:5])
            more = "\n… " + msg("github.more", n=len(shown) - 5) if len(shown) > 5 else ""
            lines.append(command(kind, msg("github.skipped", n=len(report.skipped)) + f"\n{listed}{more}",
                                 title=msg("github.skipped_title")))
    if dropped and used["notice"] < max_per_kind:
        lines.append(command("notice", msg("github.dropped", n=dropped, max_per_kind=max_per_kind), title="diagnose"))
    return lines


def render(report: Report, paths: list[str] | None = None, max_per_kind: int = MAX_PER_KIND, lang: str = "en",
           **_options) -> str:
    lines = annotations(report, paths, max_per_kind, lang)
    return "".join(line + "\n" for line in lines)
