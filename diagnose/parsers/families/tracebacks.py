"""Python tracebacks, wherever they appear (vLLM worker output, MindIE's Python wrapper, bare stderr pastes):
each becomes an ``exception`` signal, so rules read the exception type, its message and the frames that
raised it (the ``traceback`` match kind) rather than single lines.

A traceback, in any wrapper (the vLLM head repeated on every line, ``[rank3]:``, a docker service name),
is the message part of its lines::

    Traceback (most recent call last):
      File "/vllm-workspace/vllm/vllm/model_executor/models/deepseek_mtp.py", line 227, in load_weights
        param = params_dict[name]
    KeyError: 'model.layers.61.mlp.experts.w2_weight_offset'

Lines are grouped per file and process (worker tracebacks interleave line by line); a ``Traceback`` line
starts a block. Each block gives one row: the exception line after its last frame (or, when the paste lost
it, the last frame: ``type`` is then empty), the frames innermost last. A bare exception line outside any
traceback (a paste that kept only the last line) is a block of its own without frames.

Signals (``engine`` = the process): ``exception`` (text ``Type: message``, value = number of frames, on the
exception line) and ``exception_frames`` (text: one ``path:function`` per line, innermost last, same line).
"""

from __future__ import annotations

import polars as pl

from diagnose.model import conform_signals, empty_signals

MAX_FRAMES = 40
MAX_MESSAGE = 600

START = r"Traceback \(most recent call last\):"
FRAME = r'^\s*File "(?P<path>[^"]+)", line (?P<lineno>\d+), in (?P<func>[^\s]+)'
# `Type: message` with a Python exception class name (dotted names included): the names Python and the
# libraries here use end in Error, Exception, Exit, Interrupt, Failure, Fault or Timeout (warnings are not
# failures: `UserWarning: ...` is left out).
# A wrapper may put bracketed tags and a quote in front (`[rank3]:`, a CANN plog's `[CANNKB][Tid:7]"` quoting the
# Python error of its embedded interpreter).
EXCEPTION = (
    r"^\s*(?:\[[^\]\n]{1,80}\]:?\s*)*[\"']?(?P<type>(?:[A-Za-z_][A-Za-z0-9_]*\.)*(?:[A-Z][A-Za-z0-9_]*)?"
    r"(?:Error|Exception|Exit|Interrupt|Failure|Fault|Timeout|StopIteration))(?::\s?(?P<msg>.*))?\s*$"
)
# The source line of a `raise` (`raise NotImplementedError("EPLB is not supported.")`): when a paste lost the
# exception line, the last one of a traceback stands for it.
RAISE = r"^\s*raise (?P<type>(?:[A-Za-z_][A-Za-z0-9_]*\.)*[A-Za-z_][A-Za-z0-9_]*)\s*(?:\((?P<msg>.*)\))?\s*$"
# Only lines holding one of these literals take part: the rest of a chunk costs one scan.
HINT = r"Traceback \(most recent|File \"|Error|Exception|Exit|Interrupt|Failure|Fault|Timeout|StopIteration|raise "

SIGNALS = {
    "exception": "a Python exception: text `Type: message`, value = frames in its traceback; on the exception line",
    "exception_frames": "the frames of that traceback, one `path:function` per line, innermost last (same line)",
}


def exception_signals(records: pl.DataFrame) -> pl.DataFrame:
    if records.height == 0:
        return empty_signals()
    base = records.filter(pl.col("message").str.contains(HINT)).select(
        "file", "line", "source", "node", "ts", "proc", "message")
    if base.height == 0:
        return empty_signals()
    msg = pl.col("message")
    frame = msg.str.extract_groups(FRAME).struct
    exc = msg.str.extract_groups(EXCEPTION).struct
    raised = msg.str.extract_groups(RAISE).struct
    base = base.with_columns(
        _proc=pl.col("proc").fill_null(""),
        _start=msg.str.contains(START),
        _frame=pl.when(frame.field("path").is_not_null()).then(pl.format("{}:{}", frame.field("path"), frame.field("func"))),
        _type=exc.field("type"),
        _msg=exc.field("msg"),
        _rtype=raised.field("type"),
        _rmsg=raised.field("msg").str.strip_chars("\"' "),
    ).filter(pl.col("_start") | pl.col("_frame").is_not_null() | pl.col("_type").is_not_null()
             | pl.col("_rtype").is_not_null())
    if base.height == 0:
        return empty_signals()
    base = base.sort("file", "_proc", "line").with_columns(
        _block=pl.col("_start").cast(pl.Int32).cum_sum().over(["file", "_proc"]),
    )
    key = ["file", "_proc", "_block"]
    base = base.with_columns(_last_frame=pl.col("line").filter(pl.col("_frame").is_not_null()).max().over(key))
    # In a block without frames (bare exception lines: a paste that kept only the last lines) every
    # exception line is one of its own.
    bare = pl.col("_last_frame").is_null() & pl.col("_type").is_not_null()
    base = base.with_columns(_block=pl.when(bare).then(-pl.col("line").cast(pl.Int32)).otherwise(pl.col("_block")))
    after = pl.col("_type").is_not_null() & (pl.col("_last_frame").is_null() | (pl.col("line") > pl.col("_last_frame")))
    blocks = base.group_by(key, maintain_order=True).agg(
        pl.col("line").filter(after).first().alias("_exc_line"),
        pl.col("_type").filter(after).first().alias("_type"),
        pl.col("_msg").filter(after).first().alias("_msg"),
        pl.col("_last_frame").first(),
        pl.col("_frame").drop_nulls().tail(MAX_FRAMES).alias("_frames"),
        pl.col("_rtype").drop_nulls().last().alias("_rtype"),
        pl.col("_rmsg").filter(pl.col("_rtype").is_not_null()).last().alias("_rmsg"),
        pl.col("line").filter(pl.col("_rtype").is_not_null()).last().alias("_rline"),
        pl.col("source", "node", "ts", "proc").first(),
    ).filter(pl.col("_type").is_not_null() | (pl.col("_frames").list.len() > 0))
    # The exception line lost (a cut paste): the last `raise` of the traceback names it.
    lost = pl.col("_type").is_null() & pl.col("_rtype").is_not_null() & (pl.col("_frames").list.len() > 0)
    blocks = blocks.with_columns(
        _type=pl.when(lost).then(pl.col("_rtype")).otherwise(pl.col("_type")),
        _msg=pl.when(lost).then(pl.col("_rmsg")).otherwise(pl.col("_msg")),
        _exc_line=pl.when(lost).then(pl.col("_rline")).otherwise(pl.col("_exc_line")),
    )
    if blocks.height == 0:
        return empty_signals()
    blocks = blocks.with_columns(
        line=pl.coalesce("_exc_line", "_last_frame").cast(pl.UInt32),
        engine=pl.col("proc"),
        _text=pl.when(pl.col("_type").is_not_null())
        .then(pl.concat_str([pl.col("_type"), pl.when(pl.col("_msg").is_not_null())
                            .then(pl.lit(": ") + pl.col("_msg").str.slice(0, MAX_MESSAGE)).otherwise(pl.lit(""))]))
        .otherwise(pl.lit("")),
    )
    keys = ["file", "line", "source", "node", "ts", "engine"]
    exceptions = blocks.select(*keys, signal=pl.lit("exception"), value=pl.col("_frames").list.len().cast(pl.Float64),
                               text=pl.col("_text"))
    frames = blocks.select(*keys, signal=pl.lit("exception_frames"), value=pl.lit(None, pl.Float64),
                           text=pl.col("_frames").list.join("\n"))
    return conform_signals(pl.concat([exceptions, frames]).sort("file", "line", maintain_order=True))
