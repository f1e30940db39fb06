"""Pasted text repaired before it is parsed (log kinds only; tables and tool output are left as they are).

What a paste into an issue, a chat or a terminal does to a log, and what is undone here, per chunk of lines:

- **quote markers**: when most non-blank lines start with ``>`` (a quoted reply, ``> > `` nested), the
  markers are removed;
- **code fences**: a line that is only ````` ``` ````` (or ````` ```log `````) becomes empty;
- **fixed-width wraps**: a terminal or a mail client cut every long line at the same width W, the rest on
  the next line. Detected from the chunk itself: at least three lines of exactly W characters (W ≥ 60) and
  none longer. A line of W characters followed by one that does not start a line of its own (no log head,
  no stamp, no traceback grammar) is joined with it: the first line holds the whole text, the continuation
  stays a record with empty text (nothing is dropped; line numbers stay those of the file);
- **blank lines between every line** (double-spaced pastes) are skipped when looking for continuations;
- **hand wraps**: an error message the user broke over a few lines by hand (an exception line or an ERROR line of
  at least 40 characters that stops mid-sentence, followed by lines with no head, no stamp, no indent and no
  traceback grammar) is joined the same way, with a space where the break was, up to three continuation lines.

Cut lines need nothing: parsers read field by field, so a metric line cut before its last fields still
gives the fields it has.

**Logged requests are masked**: with request logging on, vLLM prints every prompt (`Received request ...:
prompt: '...', params: ..., prompt_token_ids: [...]`), and request bodies appear in dumps (`"messages": [{"role":
"user", "content": "..."}]`). Users ask the model about errors, so a prompt may read `NPU out of memory`: the
text of prompts, messages and token ids is replaced by `<masked>` before any rule or parser reads the line (and
no report quotes it). The rest of the line (request ids, sampling parameters) stays, so counts still work.
"""

from __future__ import annotations

import polars as pl

from diagnose.scan.fastregex import dfa_safe
from diagnose.parsers import registry

QUOTE = r"^\s{0,3}>"
QUOTE_MARKERS = r"^\s{0,3}(?:>[ \t]?)+"
FENCE = r"^\s*```[\w+-]*\s*$"
# Only lines with one of these literals can hold a logged request's text.
REQUEST_HINT = r"prompt|content|messages"
MASKS = [
    (r"(prompt: )'(?:[^'\\]|\\.)*'?", "${1}<masked>"),
    (r'(prompt: )"(?:[^"\\]|\\.)*"?', "${1}<masked>"),
    (r"(prompt_token_ids: )\[[^\]]*\]?", "${1}[<masked>]"),
    (r'("(?:content|prompt|text|input)"\s*:\s*)"(?:[^"\\]|\\.)*"?', '${1}"<masked>"'),
    (r"('(?:content|prompt|text|input)'\s*:\s*)'(?:[^'\\]|\\.)*'?", "${1}'<masked>'"),
]

MIN_WRAP = 60
MIN_WRAPPED = 3
HAND_WRAP_MIN = 40  # a line shorter than this was not broken for width
HAND_WRAP_LINES = 3  # continuation lines joined to one message at most
# A message that can go on: an exception line or an ERROR/CRITICAL line, not ended by a full stop.
_ERROR_LINE = dfa_safe(r"(?:^|[\s:\]])(?:[A-Za-z_][\w.]*(?:Error|Exception)|ERROR|CRITICAL)\b")
_ENDS_SENTENCE = r"[.!?。！？)\]}>'\"]\s*$"
_NOT_CONTINUATION = r"^\s|^During handling|^The above exception|^Traceback|^\s*$"

# A line that starts a line of its own, so it is not the rest of the line above.
_STARTS = dfa_safe(
    r"^\d{4}-\d\d-\d\d|^\[?\d{4}-\d\d-\d\d|^[\w.-]+\s+\|\s|^\(|^\[|^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL|WARN)\b"
    r"|^Traceback \(|^\s*File \"|^\s+\^|^[A-Za-z_][\w.]*(?:Error|Exception)\b|^[|+]"
)


def _line_starts() -> str:
    heads = [registry.well_formed(k.name) for k in registry.KINDS if k.line_oriented]
    return "|".join(f"(?:{h})" for h in heads if h) + "|" + _STARTS


def repair(frame: pl.DataFrame) -> pl.DataFrame:
    """The lines frame (``line``, ``text``) with pastes repaired; same rows, same line numbers."""
    if frame.height == 0:
        return frame
    text = pl.col("text")
    marks = frame.select(
        quoted=text.str.contains(QUOTE).sum(),
        nonblank=(text.str.strip_chars().str.len_bytes() > 0).sum(),
        fence=text.str.contains(FENCE).any(),
    ).row(0, named=True)
    if marks["nonblank"] and marks["quoted"] * 2 >= marks["nonblank"]:
        frame = frame.with_columns(text.str.replace(QUOTE_MARKERS, ""))
    if marks["fence"]:
        frame = frame.with_columns(pl.when(text.str.contains(FENCE)).then(pl.lit("")).otherwise(text).alias("text"))
    return mask_requests(_join_hand_wraps(_join_wraps(frame)))


def mask_requests(frame: pl.DataFrame) -> pl.DataFrame:
    """Prompts, chat messages and token ids of logged requests replaced by ``<masked>`` (see the docstring)."""
    text = pl.col("text")
    if not frame.select(text.str.contains(REQUEST_HINT).any()).item():
        return frame
    masked = text
    for pattern, repl in MASKS:
        pattern = dfa_safe(pattern)
        masked = masked.str.replace_all(pattern, repl)
    return frame.with_columns(pl.when(text.str.contains(REQUEST_HINT)).then(masked).otherwise(text).alias("text"))


def mask_logged_prompts(frame: pl.DataFrame) -> pl.DataFrame:
    """vLLM's request lines (``Received request ID: prompt: %r, params: ..., prompt_token_ids: [...], ...``)
    masked as ``mask_requests`` masks them, with literal searches instead of regexes, before the prefilter:
    their prompts and token ids are nine tenths of a request-logging server log, and no scan need read them
    (the prefilter's scans ran 10x faster on the 212 MB server log of the benchmark, docs/benchmarks.md).

    A prompt is cut from the quote after the first ``prompt: `` to the same quote before the first
    ``, params: ``; the token ids from ``prompt_token_ids: [`` to the next ``]``. A line of another shape
    (a prompt not quoted so, a line cut before its ids) is left for ``mask_requests``."""
    if frame.height == 0:
        return frame
    rows = frame["text"].str.contains("prompt: ", literal=True).arg_true()
    if rows.len() == 0:
        return frame
    # Only the request lines are measured and rebuilt, each into the one form it takes: a form built for
    # every line and picked after (``when/then``) copied each request's token ids (0.75 -> 0.39 s of CPU on
    # the benchmark's 434 MB server log).
    requests = _masked_parts(frame.select(pl.col("text").gather(rows)))
    listed = requests["_listed"]
    masked = requests["text"]
    for form, chosen in ((_both_masked(), listed), (_prompt_masked(), requests["_prompt"] & ~listed)):
        if chosen.any():
            masked = masked.scatter(chosen.arg_true(), requests.filter(chosen).select(form).to_series())
    return frame.with_columns(frame["text"].scatter(rows, masked))


_AT, _END, _IDS, _CLOSED = (pl.col(c) for c in ("_at", "_end", "_ids", "_closed"))


def _masked_parts(requests: pl.DataFrame) -> pl.DataFrame:
    """Where each request line's prompt and token ids begin and end (bytes), and which of them it has. Each
    offset is a column before it is used (an expression used twice is computed twice)."""
    text = pl.col("text")
    raw = text.cast(pl.Binary)  # offsets below are in bytes (str.find gives bytes; str.slice counts characters)
    requests = requests.with_columns(
        _at=text.str.find("prompt: ", literal=True) + len("prompt: "),
        _end=text.str.find(", params: ", literal=True),
        _ids=text.str.find("prompt_token_ids: [", literal=True) + len("prompt_token_ids: ["),
    )
    quote = raw.bin.slice(_AT, 1)
    prompt = ((_END > _AT) & quote.is_in([b"'", b'"']) & (raw.bin.slice(_END - 1, 1) == quote)).fill_null(False)
    closed = raw.bin.slice(_IDS).cast(pl.String).str.find("]", literal=True) + _IDS
    requests = requests.with_columns(_prompt=prompt, _closed=closed)
    return requests.with_columns(_listed=(pl.col("_prompt") & (_IDS > _END) & _CLOSED.is_not_null()).fill_null(False))


def _piece(start: pl.Expr, length: pl.Expr | None = None) -> pl.Expr:
    return pl.col("text").cast(pl.Binary).bin.slice(start, length).cast(pl.String)


def _both_masked() -> pl.Expr:
    return pl.concat_str(_piece(0, _AT), pl.lit("<masked>"), _piece(_END, _IDS - _END), pl.lit("<masked>"),
                         _piece(_CLOSED))


def _prompt_masked() -> pl.Expr:
    return pl.concat_str(_piece(0, _AT), pl.lit("<masked>"), _piece(_END))


def _join_wraps(frame: pl.DataFrame) -> pl.DataFrame:
    lengths = frame.select(n=pl.col("text").str.len_chars())["n"]
    longest = lengths.max() or 0
    if longest < MIN_WRAP or (lengths == longest).sum() < MIN_WRAPPED:
        return frame
    width = longest  # no line is longer than the width a wrap cut at
    rows = frame.with_row_index("_i").filter(pl.col("text").str.strip_chars().str.len_bytes() > 0)
    starts = _line_starts()
    rows = rows.with_columns(_len=pl.col("text").str.len_chars(), _own=pl.col("text").str.contains(starts))
    cont = (pl.col("_len").shift(1) == width) & ~pl.col("_own")
    rows = rows.with_columns(_cont=cont.fill_null(False))
    if rows["_cont"].sum() < 1 or rows.filter(pl.col("_len") == width)["_cont"].len() == 0:
        return frame
    # Most lines of exactly the width must be followed by a continuation, or it is a file of equal lines.
    full = rows.with_columns(_next=pl.col("_cont").shift(-1).fill_null(False)).filter(pl.col("_len") == width)
    if full["_next"].sum() * 10 < full.height * 3:
        return frame
    rows = rows.with_columns(_group=(~pl.col("_cont")).cast(pl.Int32).cum_sum())
    joined = rows.group_by("_group", maintain_order=True).agg(
        pl.col("_i").first().alias("_i"), pl.col("text").str.join("").alias("_joined"), pl.len().alias("_n"))
    joined = joined.filter(pl.col("_n") > 1)
    if joined.height == 0:
        return frame
    continuation = rows.filter(pl.col("_cont")).select("_i", _blank=pl.lit(True))
    out = (frame.with_row_index("_i")
           .join(joined.select("_i", "_joined"), on="_i", how="left")
           .join(continuation, on="_i", how="left")
           .with_columns(text=pl.when(pl.col("_joined").is_not_null()).then(pl.col("_joined"))
                         .when(pl.col("_blank").fill_null(False)).then(pl.lit("")).otherwise(pl.col("text")))
           .drop("_i", "_joined", "_blank"))
    return out


def _join_hand_wraps(frame: pl.DataFrame) -> pl.DataFrame:
    """Error messages broken by hand over a few lines, joined (see the module docstring)."""
    text = pl.col("text")
    if frame.height < 2 or not frame.select(text.str.contains(_ERROR_LINE).any()).item():
        return frame
    rows = frame.with_row_index("_i").with_columns(
        _open=(text.str.contains(_ERROR_LINE) & (text.str.len_chars() >= HAND_WRAP_MIN)
               & ~text.str.contains(_ENDS_SENTENCE)),
        _free=~text.str.contains(_line_starts()) & ~text.str.contains(_NOT_CONTINUATION),
    )
    # A continuation follows an open message, or another continuation that did not end its sentence either.
    cont = pl.col("_free") & pl.col("_open").shift(1).fill_null(False)
    rows = rows.with_columns(_cont=cont)
    for _ in range(HAND_WRAP_LINES - 1):
        goes_on = pl.col("_cont").shift(1).fill_null(False) & ~pl.col("text").shift(1).str.contains(_ENDS_SENTENCE)
        rows = rows.with_columns(_cont=pl.col("_cont") | (pl.col("_free") & goes_on.fill_null(False)))
    if not rows["_cont"].any():
        return frame
    rows = rows.with_columns(_group=(~pl.col("_cont")).cast(pl.Int32).cum_sum())
    joined = (rows.group_by("_group", maintain_order=True)
              .agg(pl.col("_i").first(), pl.col("text").str.strip_chars().str.join(" ").alias("_joined"), pl.len().alias("_n"))
              .filter(pl.col("_n") > 1))
    out = (rows.join(joined.select("_i", "_joined"), on="_i", how="left")
           .with_columns(text=pl.when(pl.col("_joined").is_not_null()).then(pl.col("_joined"))
                         .when(pl.col("_cont")).then(pl.lit("")).otherwise(text)))
    return out.select(frame.columns)
