"""`diagnose rules new`: a starter rule for an unrecognised error signature, with a firing fixture (the example
line) and a near-miss fixture (the same line with a literal word changed), written and then tested."""

from __future__ import annotations

import io
import re
from pathlib import Path

import polars as pl

from diagnose.authoring.fixtures import run_rule_tests
from diagnose.bounded import REPORT_BYTES, json_loads, read_capped
from diagnose.engine.rulefile import RuleError, load_rule
from diagnose.ingest.walk import SourceFile
from diagnose.knowledge.masks import TOKEN_PATTERNS, mask_text
from diagnose.model import CATEGORIES
from diagnose.pipeline import RuleFilters, Settings, read
from diagnose.writer import WriteFailed, write_file

_TOKEN = r"<(?:TS|UUID|REQ|IP|PORT|PATH|SIZE|HEX|PID|RANK|DEV|N)>"
_SAMPLES = {"<TS>": "2026-01-01 00:00:00", "<UUID>": "123e4567-e89b-12d3-a456-426614174000", "<REQ>": "req-1",
            "<IP>": "10.0.0.1", "<PORT>": "8000", "<PATH>": "/tmp/example.log", "<SIZE>": "2.00 GiB",
            "<HEX>": "0x1f", "<PID>": "1234", "<RANK>": "3", "<DEV>": "3", "<N>": "42"}
_META = set(r"\.+*?()|[]{}^$#&-~")


def _literal(text: str, space: str = r"\s+") -> str:
    out = []
    for ch in text:
        if ch.isspace():
            if not out or out[-1] != space:
                out.append(space)
        elif ch in _META:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def signature_regex(signature: str, space: str = r"\s+") -> str:
    """A rule regex for a signature: literal parts escaped, masked parts as the patterns they stand for."""
    parts = re.split(f"({_TOKEN})", signature.strip())
    return "".join(TOKEN_PATTERNS[p] if p in TOKEN_PATTERNS else _literal(p, space) for p in parts if p)


def sample_line(signature: str) -> str:
    """A message the signature stands for (masked parts filled with sample values)."""
    return re.sub(_TOKEN, lambda m: _SAMPLES[m.group(0)], signature)


def _matches(pattern: str, text: str) -> bool:
    return bool(pl.Series([text], dtype=pl.String).str.contains(pattern)[0])


def near_miss(message: str, signature: str, pattern: str) -> str:
    """The message with the signature's literal words changed (case swapped) until the pattern no longer
    matches: a line that looks the same but is not this error."""
    literal = re.sub(_TOKEN, " ", signature)
    words = sorted({w for w in re.findall(r"[A-Za-z]{3,}", literal) if re.search(r"[a-z]", w)},
                   key=lambda w: (-len(w), w))
    out = message
    for w in words:
        out = re.sub(rf"\b{re.escape(w)}\b", w.swapcase(), out, count=1)
        if not _matches(pattern, out):
            return out
    out = "".join(c.swapcase() if c.isalpha() else c for c in message)
    if _matches(pattern, out):  # nothing literal to change: a signature of masked parts only
        out = re.sub(r"\d", "x", out)
    return out


_STOP = {"the", "and", "for", "with", "this", "that", "from", "some", "are", "was", "has", "not", "when", "into"}


def _kebab(signature: str) -> str:
    words: list[str] = []
    for w in re.findall(r"[A-Za-z]{3,}", re.sub(_TOKEN, " ", signature)):
        w = w.lower()
        if w not in words and w not in _STOP:
            words.append(w)
    name = "-".join(words[:5]) or "unrecognised-error"
    return name[:60].rstrip("-")


def _toml_str(text: str) -> str:
    if "'" not in text and "\n" not in text and not any(ord(c) < 32 for c in text):
        return f"'{text}'"
    esc = text.replace("\\", "\\\\").replace('"', '\\"')
    esc = "".join(c if ord(c) >= 32 else f"\\u{ord(c):04x}" for c in esc)
    return f'"{esc}"'


def _toml_log(line: str) -> str:
    if "'''" not in line and not any(ord(c) < 32 and c != "\t" for c in line):
        return f"'''\n{line}\n'''"
    return _toml_str(line + "\n")


def starter_rule(signature: str, example_text: str, example_message: str, *, source: str | None,
                 level: str | None, rule_id: str, category: str = "engine", severity: str | None = None,
                 name: str | None = None) -> tuple[str, str]:
    """(file name, TOML text) of a starter rule for one signature: the regex, a firing fixture (the example
    line) and a near-miss fixture (the same line with a literal word changed); remediation left TODO."""
    pattern = signature_regex(signature, " ")  # plain spaces read better; \s+ when the line needs it
    if not _matches(pattern, example_message):
        pattern = signature_regex(signature)
    if not _matches(pattern, example_message):  # a signature from another version of the masks: match the line
        pattern = signature_regex(mask_text(example_message))
    quiet_message = near_miss(example_message, signature, pattern)
    idx = example_text.rfind(example_message) if example_message else -1
    quiet_text = (example_text[:idx] + quiet_message + example_text[idx + len(example_message):]) if idx >= 0 \
        else quiet_message
    name = name or _kebab(signature)
    severity = severity or {"WARNING": "warning", "CRITICAL": "critical"}.get(level or "", "error")
    short = signature if len(signature) <= 80 else signature[:77] + "..."
    kind = source if source and source != "unknown" else None
    lines = [
        "# Starter rule written by `diagnose rules new` from the signature:",
        f"#   {signature}",
        "# Fill in the TODOs (title, what it means, what to do), check the regex, then move it into your rules folder.",
        f"id = {_toml_str(rule_id)}",
        f"name = {_toml_str(name)}",
        f"category = {_toml_str(category)}",
        f"severity = {_toml_str(severity)}",
        f"sources = [{_toml_str(kind)}]" if kind else "sources = []",
        f"title.en = {_toml_str('TODO: ' + short)}",
        f"title.zh = {_toml_str('待补充：' + short)}",
        "summary.en = \"TODO: what happened. Seen {count} times on {where}, first at {first_seen}.\"",
        "summary.zh = \"待补充：发生了什么。{where} 出现 {count} 次，首次 {first_seen}。\"",
        "description.en = \"TODO: what this error means and what usually causes it.\"",
        "description.zh = \"待补充：该错误的含义和常见原因。\"",
        "remediation.en = \"TODO: the concrete action (flag, env var, config key or command, with values to try).\"",
        "remediation.zh = \"待补充：具体处理办法（参数、环境变量、配置项或命令，以及建议取值）。\"",
        "references = []",
        "",
        "[match]",
        'kind = "pattern"',
        f"regex = {_toml_str(pattern)}",
        "",
        "[[test]]",
        'name = "the example line from the report"',
        "fires = true",
        "lines = [1]",
        *( [f"kind = {_toml_str(kind)}"] if kind else []),
        f"log = {_toml_log(example_text)}",
        "",
        "[[test]]",
        'name = "near miss: the same line with a word changed (TODO: replace with a real look-alike line)"',
        "fires = false",
        *( [f"kind = {_toml_str(kind)}"] if kind else []),
        f"log = {_toml_log(quiet_text)}",
        "",
    ]
    return f"{rule_id}.{name}.toml", "\n".join(lines)


def parse_line(line: str, kind: str | None) -> tuple[str, str | None, str | None]:
    """(message, source, level) of one log line as the parsers read it (kind sniffed when None)."""
    data = (line.rstrip("\n") + "\n").encode("utf-8")
    path = "example.log" if kind is None else f"example-{kind}.log"
    src = SourceFile(path=path, rel=path, node=None, size=len(data), mtime=None, open=lambda: io.BytesIO(data))
    parsed = read([src], Settings(kind=kind), RuleFilters())
    if parsed.records.height == 0:
        return line, kind, None
    row = parsed.records.row(0, named=True)
    return row["message"] or line, row["source"], row["level"]


def write_starter_rule(*, from_report=None, index=1, signature=None, example=None, kind=None, out_dir,
                       rule_id=None, name=None, category="engine", severity=None) -> tuple[int, list[tuple[str, bool]]]:
    """`diagnose rules new`: (exit code, [(message, to stderr)]). Writes the file, then runs its fixtures."""
    msgs: list[tuple[str, bool]] = []
    if bool(from_report) == bool(signature):
        return 2, [("diagnose: error: give one of --from-report FILE or --from-signature SIG", True)]
    if category not in CATEGORIES:
        return 2, [(f"diagnose: error: --category {category!r} is not one of {', '.join(CATEGORIES)}", True)]
    if name is not None and not re.match(r"^[a-z][a-z0-9-]*$", name):
        return 2, [("diagnose: error: --name must be lower-case words joined by '-'", True)]
    if rule_id is not None and not re.match(r"^[A-Z][A-Z0-9]*-?\d{3}$", rule_id):
        return 2, [("diagnose: error: --id must look like USR001 (capitals, then three digits)", True)]
    level = None
    if from_report:
        try:
            data = json_loads(read_capped(from_report, REPORT_BYTES, follow=True))
        except (OSError, ValueError) as exc:
            return 2, [(f"diagnose: error: cannot read {from_report}: {exc}", True)]
        items = data.get("unrecognised") if isinstance(data, dict) else None
        if not isinstance(items, list) or not items:
            return 2, [(f"diagnose: error: {from_report} has no unrecognised error signatures", True)]
        if not 1 <= index <= len(items):
            return 2, [(f"diagnose: error: --index {index}: the report lists signatures 1-{len(items)}", True)]
        item = items[index - 1]
        signature = item["signature"]
        ex = item.get("example") or {}
        text, message = ex.get("text") or sample_line(signature), ex.get("message")
        source, level = item.get("source"), item.get("level")
        if not message:
            message, source, level = parse_line(text, source)
    else:
        text = example or sample_line(signature)
        message, source, level = parse_line(text, kind if example else "unknown")
        if not example:
            message, source = text, "unknown"
    folder = Path(out_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return 2, [(f"diagnose: error: cannot create {out_dir}: {exc.strerror or exc}", True)]
    if rule_id is None:
        used = {int(m.group(1)) for p in folder.rglob("USR*.toml") if (m := re.match(r"USR(\d{3})\.", p.name))}
        rule_id = f"USR{next(n for n in range(1, 1000) if n not in used):03d}"
    fname, body = starter_rule(signature, text, message, source=source, level=level, rule_id=rule_id,
                               category=category, severity=severity, name=name)
    target = folder / fname
    if target.exists():
        return 2, [(f"diagnose: error: {target} exists; pick another --id or --name", True)]
    try:
        write_file(target, body, "-o")
    except WriteFailed as exc:
        return 6, [(f"diagnose: error: {exc}", True)]
    msgs.append((f"wrote {target}", False))
    if not re.search(r"[A-Za-z]{3,}", re.sub(_TOKEN, " ", signature)):
        msgs.append(("diagnose: warning: the signature has no literal words; its regex matches almost any line", True))
    try:
        rule = load_rule(target)
    except RuleError as exc:
        return 3, msgs + [(f"diagnose: error: the starter rule does not load: {exc}", True)]
    results = run_rule_tests([rule])
    for res in results:
        msgs.append((f"{'PASS' if res.ok else 'FAIL'}  {res.rule_id:<8} {res.name:<44} {res.detail}", False))
    if not all(r.ok for r in results):
        return 3, msgs
    msgs.append((f"next: fill in the TODOs in {target}, replace the near-miss line with a real look-alike, "
                 f"then run `diagnose rules test {folder}`", False))
    return 0, msgs
