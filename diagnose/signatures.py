"""Errors no rule knows: group the unexplained warning/error records into signatures.

After the rules ran, the records that still look like trouble are

- WARNING/ERROR/CRITICAL records and records carrying an error code (CANN ``EH/EZ/EE/EI…`` lines, ``ERR02200``);
- inside a multi-line event (a Python traceback), only the exception line (the last line that looks like
  ``SomeError: …``) and the lines with an error code; the ``Traceback`` header, ``File "…"`` frames and
  source lines are body, not signatures. An event with neither keeps its opening line;

minus the ones a rule explains. A rule that fired explains every record among its selector's matching rows
(not only its evidence): each selector of a fired rule (``regex`` selectors over records, ``signal`` selectors
over parsed values) is run again and its (file, event) keys are excluded, so the rest of an explained
traceback is not listed. The findings' evidence lines are excluded the same way (root-cause findings quote
lines no rule file names). A CANN error block, consecutive error lines of one file and process within 2 s, is
one failure: when any of its lines is explained, the block is (the ``Task run failed`` / ``PrintErrorInfo``
lines around an ``aicore timeout`` line).

The signature is the message (header stripped) with its variable parts masked by ordered ``str.replace_all``
passes (timestamps, UUIDs, request ids, IPs and ports, paths, sizes, hex, pids/tids, ranks, devices, numbers),
all as polars expressions: the same input gives the same signatures, run to run. Groups are ordered by count
(descending), then signature.
"""

from __future__ import annotations

from typing import Any

import polars as pl

TOP_N = 20
BLOCK_GAP_S = 2  # consecutive error lines of one file and process at most this far apart are one block

# (pattern, replacement) in order; each mask leaves a <TOKEN> the later passes do not touch.
MASKS: list[tuple[str, str, str]] = [
    # kind, pattern, replacement
    ("ts", r"\b\d{4}-\d{2}-\d{2}[-T ]\d{2}:\d{2}:\d{2}(?:[.,:]\d+)*", "<TS>"),
    ("ts", r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} "
           r"\d{2}:\d{2}:\d{2}(?: \d{4})?", "<TS>"),
    ("ts", r"\b\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[.,]\d+)?", "<TS>"),
    ("ts", r"\b\d{2}:\d{2}:\d{2}(?:[.,:]\d+)*", "<TS>"),
    ("uuid", r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b", "<UUID>"),
    ("req", r"\b(?:chatcmpl|cmpl|req|request|trace)[-_][0-9A-Za-z][\w-]*", "<REQ>"),
    ("ip", r"\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b", "<IP>"),
    ("port", r"<IP>:\d+\b", "<IP>:<PORT>"),
    ("port", r"(?i)\b(port)(\s*[:=\[(]\s*|\s+)\d+", "${1}${2}<PORT>"),
    ("path", r"(^|[\s\"'=(\[,:])/[\w.@+~-]+(?:/[\w.@+~-]+)+/?", "${1}<PATH>"),
    ("path", r"\b(?:[\w.-]+/)+[\w-]+\.[A-Za-z]\w*(?::\d+)?", "<PATH>"),
    ("size", r"\b\d+(?:\.\d+)?\s?(?:[KMGTP]i?B|bytes|B)\b", "<SIZE>"),
    ("hex", r"\b0[xX][0-9a-fA-F]+\b", "<HEX>"),
    ("hex", r"\b(?:\d+[a-fA-F]|[a-fA-F]+\d)[0-9a-fA-F]{6,}\b", "<HEX>"),
    ("pid", r"(?i)\b(pid|tid|thread(?:[ _]?id)?)(\s*[:=\[(#]\s*|\s+)\d+", "${1}${2}<PID>"),
    ("rank", r"(?i)\b((?:local|remote|global|dp|tp|ep)?[ _]?rank(?:[ _]?id)?)(\s*[:=\[(#]\s*|\s+)\d+", "${1}${2}<RANK>"),
    ("device", r"(?i)\b((?:logic)?(?:device|dev|npu|chip|die)(?:[ _]?(?:logic)?[ _]?id)?)(\s*[:=\[(#]\s*|\s+)\d+",
     "${1}${2}<DEV>"),
    ("num", r"(^|[^\w<])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\b", "${1}<N>"),
]

# Masks back to patterns, for starter rules (what each token may stand for).
TOKEN_PATTERNS = {
    "<TS>": r"[0-9A-Za-z][0-9A-Za-z:.,T -]*\d",
    "<UUID>": r"[0-9a-fA-F-]{36}",
    "<REQ>": r"[\w-]+",
    "<IP>": r"\d{1,3}(?:\.\d{1,3}){3}",
    "<PORT>": r"\d+",
    "<PATH>": r"\S+",
    "<SIZE>": r"\d+(?:\.\d+)?\s?(?:[KMGTP]i?B|bytes|B)",
    "<HEX>": r"(?:0[xX])?[0-9a-fA-F]+",
    "<PID>": r"\d+",
    "<RANK>": r"\d+",
    "<DEV>": r"\d+",
    "<N>": r"[-+]?\d[\d.]*",
}

_EXCEPTION_LINE = r"^\s*(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Fault)\b(?::|$)"
_BODY_LINE = r"^\s*(?:Traceback \(most recent call last\)|File \"|\^+\s*$|During handling|The above exception)"
_LEVELS = ["WARNING", "ERROR", "CRITICAL"]
_KEYS = {"file": pl.String, "event": pl.UInt32}


def mask(expr: pl.Expr) -> pl.Expr:
    """The signature of a message column: variable parts masked, whitespace squeezed."""
    for _, pattern, repl in MASKS:
        expr = expr.str.replace_all(pattern, repl)
    return expr.str.replace_all(r"\s+", " ").str.strip_chars()


def candidates(records: pl.DataFrame) -> pl.DataFrame:
    """Records that look like trouble; one or a few per traceback event (see the module docstring)."""
    if records.height == 0:
        return records
    level = pl.col("level").is_in(_LEVELS).fill_null(False)
    has_code = pl.col("code").is_not_null()
    frame = records.filter(level | has_code)
    key = ["file", "event"]
    exc = pl.col("message").str.contains(_EXCEPTION_LINE)
    frame = frame.with_columns(
        _n=pl.len().over(key),
        _exc=exc,
        _body=pl.col("message").str.contains(_BODY_LINE),
    ).with_columns(
        _has_exc=pl.col("_exc").any().over(key),
        _has_code=pl.col("code").is_not_null().any().over(key),
        _last_exc=pl.col("line").filter(pl.col("_exc")).max().over(key),
    )
    single = pl.col("_n") == 1
    tail = pl.col("_exc") & (pl.col("line") == pl.col("_last_exc"))
    opener = ~pl.col("_has_exc") & ~pl.col("_has_code") & (pl.col("line") == pl.col("event"))
    keep = single | tail | pl.col("code").is_not_null() | opener
    keep = keep & (single | ~pl.col("_body"))
    return frame.filter(keep).drop("_n", "_exc", "_body", "_has_exc", "_has_code", "_last_exc")


def explained_keys(findings, rules, records: pl.DataFrame, signals: pl.DataFrame) -> pl.DataFrame:
    """(file, event) of every record a fired rule's selectors match, and of every finding's evidence."""
    from diagnose.engine.select import select

    by_id = {r.id: r for r in rules}
    frames = [pl.DataFrame(schema={"file": pl.String, "line": pl.UInt32})]
    for f in findings:
        frames.append(pl.DataFrame({"file": [e.file for e in f.evidence], "line": [e.line for e in f.evidence]},
                                   schema={"file": pl.String, "line": pl.UInt32}))
        rule = by_id.get(f.rule_id)
        if rule is None:
            continue
        for sel in _selectors(rule.match):
            if "regex" not in sel and "signal" not in sel:
                continue
            try:
                hits = select(sel, records, signals, rule.sources or None)
            except Exception:  # noqa: BLE001 - the rule already ran; losing precision here is harmless
                continue
            frames.append(hits.select(pl.col("file").cast(pl.String), pl.col("line").cast(pl.UInt32)))
    lines = pl.concat(frames).unique()
    keys = records.select("file", "line", "event").join(lines, on=["file", "line"], how="semi")
    return keys.select("file", "event").unique()


def _selectors(match: dict) -> list[dict]:
    found = []
    if match.get("kind") != "absence":
        found.append({k: v for k, v in match.items() if k != "kind" and k != "also"})
    for key in ("when", "require"):
        if isinstance(match.get(key), dict):
            found.append(match[key])
    found += [c for c in match.get("also", []) if isinstance(c, dict)]
    return found


def _blocks(frame: pl.DataFrame) -> pl.Expr:
    """A block id per candidate: consecutive lines of one file and process, close in time."""
    gap = (pl.col("line").cast(pl.Int64) - pl.col("line").cast(pl.Int64).shift(1)) > 1
    gap = gap | pl.col("pid").ne_missing(pl.col("pid").shift(1))
    far = (pl.col("ts") - pl.col("ts").shift(1)).dt.total_seconds().abs().fill_null(0) > BLOCK_GAP_S
    return (gap.fill_null(True) | far.fill_null(True)).cast(pl.Int32).cum_sum().over("file")


def unrecognised(records: pl.DataFrame, keys: pl.DataFrame, top: int | None = TOP_N) -> tuple[list[dict[str, Any]], int]:
    """Signatures of the candidate records outside ``keys`` (explained (file, event)), the top ``top`` of them,
    and how many more signatures there are."""
    frame = candidates(records)
    if frame.height == 0:
        return [], 0
    frame = frame.join(keys.with_columns(_ex=pl.lit(True)), on=["file", "event"], how="left")
    frame = frame.with_columns(_ex=pl.col("_ex").fill_null(False)).sort(["file", "line"])
    frame = frame.with_columns(_block=_blocks(frame))
    frame = frame.filter(~pl.col("_ex").any().over(["file", "_block"]))
    if frame.height == 0:
        return [], 0
    frame = frame.with_columns(signature=mask(pl.col("message").fill_null(pl.col("text"))))
    frame = frame.filter(pl.col("signature").str.len_chars() > 0)
    order = ["ts", "file", "line"]
    groups = (
        frame.sort(order, nulls_last=True)
        .group_by("signature", maintain_order=True)
        .agg(
            pl.len().alias("count"),
            pl.col("ts").min().alias("first_seen"),
            pl.col("ts").max().alias("last_seen"),
            pl.col("node").drop_nulls().unique().sort().alias("nodes"),
            pl.col("rank").drop_nulls().unique().sort().alias("ranks"),
            pl.col("level").drop_nulls().first().alias("level"),
            pl.col("code").drop_nulls().first().alias("code"),
            pl.col("source").first().alias("source"),
            pl.col("file").first().alias("file"),
            pl.col("line").first().alias("line"),
            pl.col("text").first().alias("text"),
            pl.col("message").first().alias("message"),
        )
        .sort(["count", "signature"], descending=[True, False])
    )
    total = groups.height
    out = []
    for row in (groups if top is None else groups.head(top)).iter_rows(named=True):
        out.append({
            "signature": row["signature"],
            "count": int(row["count"]),
            "first_seen": _iso(row["first_seen"]),
            "last_seen": _iso(row["last_seen"]),
            "nodes": list(row["nodes"] or []),
            "ranks": [int(r) for r in (row["ranks"] or [])],
            "level": row["level"],
            "code": row["code"],
            "source": row["source"],
            "example": {"file": row["file"], "line": int(row["line"]), "text": row["text"],
                        "message": row["message"]},
        })
    return out, max(0, total - len(out))


def compute(findings, rules, records: pl.DataFrame, signals: pl.DataFrame, top: int | None = TOP_N):
    """(signatures, how many more)."""
    return unrecognised(records, explained_keys(findings, rules, records, signals), top)


def section(findings, rules, records: pl.DataFrame, signals: pl.DataFrame, baseline: str | None = None,
            top: int = TOP_N) -> tuple[list[dict[str, Any]], int, int | None]:
    """The pipeline hook: the top signatures, how many more, and how many of all are new against a JSON
    ``--baseline`` (None without one)."""
    if not baseline or not str(baseline).lower().endswith(".json"):
        items, more = compute(findings, rules, records, signals, top)
        return items, more, None
    items, _ = compute(findings, rules, records, signals, None)  # count new ones beyond the top too
    new = mark_new(items, baseline)
    return items[:top], max(0, len(items) - top), new


def mark_new(items: list[dict[str, Any]], baseline_path: str | None) -> int | None:
    """With a previous diagnose JSON report that has an ``unrecognised`` section, set ``new`` on each
    signature (True: not in the baseline). Returns how many are new, or None when there is no such baseline."""
    if not baseline_path or not str(baseline_path).lower().endswith(".json"):
        return None
    import json
    from pathlib import Path

    try:
        data = json.loads(Path(baseline_path).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("unrecognised"), list):
        return None
    seen = {s.get("signature") for s in data["unrecognised"] if isinstance(s, dict)}
    seen |= set(data.get("unrecognised_signatures") or [])
    for item in items:
        item["new"] = item["signature"] not in seen
    return sum(1 for i in items if i["new"])


def _iso(ts) -> str | None:
    return ts.isoformat(sep=" ") if ts is not None else None


# --- starter rules (`diagnose rules new`) ------------------------------------------------------------------------

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
    import re

    parts = re.split(f"({_TOKEN})", signature.strip())
    return "".join(TOKEN_PATTERNS[p] if p in TOKEN_PATTERNS else _literal(p, space) for p in parts if p)


def sample_line(signature: str) -> str:
    """A message the signature stands for (masked parts filled with sample values)."""
    import re

    return re.sub(_TOKEN, lambda m: _SAMPLES[m.group(0)], signature)


def _matches(pattern: str, text: str) -> bool:
    return bool(pl.Series([text], dtype=pl.String).str.contains(pattern)[0])


def near_miss(message: str, signature: str, pattern: str) -> str:
    """The message with the signature's literal words changed (case swapped) until the pattern no longer
    matches: a line that looks the same but is not this error."""
    import re

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
    import re

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


def mask_text(message: str) -> str:
    """The signature of one message (the same masks as the report)."""
    return pl.DataFrame({"m": [message]}).select(mask(pl.col("m"))).item()


def parse_line(line: str, kind: str | None) -> tuple[str, str | None, str | None]:
    """(message, source, level) of one log line as the parsers read it (kind sniffed when None)."""
    import io

    from diagnose.ingest.walk import SourceFile
    from diagnose.pipeline import Options, parse_sources

    data = (line.rstrip("\n") + "\n").encode("utf-8")
    path = "example.log" if kind is None else f"example-{kind}.log"
    src = SourceFile(path=path, rel=path, node=None, size=len(data), mtime=None, open=lambda: io.BytesIO(data))
    parsed = parse_sources([src], Options(kind=kind))
    if parsed.records.height == 0:
        return line, kind, None
    row = parsed.records.row(0, named=True)
    return row["message"] or line, row["source"], row["level"]


def write_starter_rule(*, from_report=None, index=1, signature=None, example=None, kind=None, out_dir,
                       rule_id=None, name=None, category="engine", severity=None) -> tuple[int, list[tuple[str, bool]]]:
    """`diagnose rules new`: (exit code, [(message, to stderr)]). Writes the file, then runs its fixtures."""
    import json
    import re
    from pathlib import Path

    from diagnose.engine.fixtures import run_rule_tests
    from diagnose.engine.rulefile import RuleError, load_rule
    from diagnose.model import CATEGORIES

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
            data = json.loads(Path(from_report).read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError) as exc:
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
    target.write_text(body, encoding="utf-8")
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
