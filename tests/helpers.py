"""Helpers the test modules share: parse a text as one source kind, and read signals back as plain values."""

from __future__ import annotations

import polars as pl

from diagnose.parsers.lineframe import FileContext, lines_frame
from diagnose.parsers.registry import parser_for


def parse(kind: str, text: str | list[str], path: str = "fixture.log", node: str | None = None):
    """(records, signals) of ``text`` (a string, without its leading and trailing newlines, or a list of
    lines) read by the parser of ``kind``, as the pipeline would call it on one chunk."""
    lines = text.strip("\n").split("\n") if isinstance(text, str) else list(text)
    return parser_for(kind)(lines_frame(lines), FileContext(path=path, node=node, kind=kind, mtime=None))


def by_signal(signals: pl.DataFrame) -> dict[str, float | str]:
    """The first value (or text) of each signal."""
    out: dict[str, float | str] = {}
    for s, v, t in signals.select("signal", "value", "text").iter_rows():
        out.setdefault(s, v if v is not None else t)
    return out


def by_signal_engine(signals: pl.DataFrame) -> dict[tuple[str, str | None], float | str]:
    """The first value (or text) of each (signal, engine)."""
    out: dict[tuple[str, str | None], float | str] = {}
    for s, e, v, t in signals.select("signal", "engine", "value", "text").iter_rows():
        out.setdefault((s, e), v if v is not None else t)
    return out


def values_of(signals: pl.DataFrame, name: str, engine: str | None = None) -> list:
    """Every value (or text) of one signal, in order, optionally of one engine."""
    frame = signals.filter(pl.col("signal") == name)
    if engine is not None:
        frame = frame.filter(pl.col("engine") == engine)
    return [t if t is not None else v for t, v in frame.select("text", "value").iter_rows()]


def said(words, lang: str = "en") -> str:
    """What a renderer says for a phrase, template or plain string, in ``lang``."""
    from diagnose.messages import messages

    return messages(lang).say(words)
