"""What varies in a message: the masks that turn a log message into its signature (timestamps, ids, addresses,
paths, sizes, numbers become tokens), and what each token may stand for. Signatures of unexplained errors,
fingerprints of findings, the incident page and starter rules all use this one table, so a message has one
signature everywhere."""

from __future__ import annotations

import polars as pl

from diagnose.scan.fastregex import dfa_safe

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
    # Request, connection and endpoint ids: one line per request (MindIE's `reqId: endpoint_common_123`) must
    # make one signature, not one per request. Keyed (`reqId: X`, `connId=X`, `stream_id=X`), then by shape.
    ("id", r"(?i)\b((?:req(?:uest)?|conn(?:ection)?|session|endpoint|client|stream|seq(?:uence)?|trace|span|task)"
           r"[ _-]?id)(\s*[:=#]\s*|\s+)[\w.:-]*\w", "${1}${2}<ID>"),
    ("id", r"\b(?:endpoint|conn(?:ection)?|session|req(?:uest)?|stream|client)(?:_[A-Za-z]+)*_\d+\b", "<ID>"),
    ("path", r"(^|[\s\"'=(\[,:])/[\w.@+~-]+(?:/[\w.@+~-]+)+/?", "${1}<PATH>"),
    ("path", r"\b(?:[\w.-]+/)+[\w-]+\.[A-Za-z]\w*(?::\d+)?", "<PATH>"),
    ("size", r"\b\d+(?:\.\d+)?\s?(?:[KMGTP]i?B|bytes|B)\b", "<SIZE>"),
    ("duration", r"\b\d+(?:\.\d+)?\s?(?:ms|us|ns|sec|s|min)\b", "<DUR>"),
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
    "<ID>": r"[\w.:-]+",
    "<DUR>": r"\d+(?:\.\d+)?\s?(?:ms|us|ns|sec|s|min)",
    "<PATH>": r"\S+",
    "<SIZE>": r"\d+(?:\.\d+)?\s?(?:[KMGTP]i?B|bytes|B)",
    "<HEX>": r"(?:0[xX])?[0-9a-fA-F]+",
    "<PID>": r"\d+",
    "<RANK>": r"\d+",
    "<DEV>": r"\d+",
    "<N>": r"[-+]?\d[\d.]*",
}


def mask(expr: pl.Expr) -> pl.Expr:
    """The signature of a message column: variable parts masked, whitespace squeezed."""
    for _, pattern, repl in MASKS:
        pattern = dfa_safe(pattern)
        expr = expr.str.replace_all(pattern, repl)
    return expr.str.replace_all(r"\s+", " ").str.strip_chars()


def mask_text(message: str) -> str:
    """The signature of one message (the same masks as the report)."""
    return pl.DataFrame({"m": [message]}).select(mask(pl.col("m"))).item()
