"""One module per source kind. A parser maps a lines frame to (records, signals); see diagnose.model."""

from __future__ import annotations

from typing import Callable

import polars as pl

from diagnose.parsers import generic, vllm
from diagnose.parsers.common import FileContext

Parser = Callable[[pl.DataFrame, FileContext], tuple[pl.DataFrame, pl.DataFrame]]

PARSERS: dict[str, Parser] = {
    vllm.KIND: vllm.parse,
}


def parser_for(kind: str) -> Parser:
    return PARSERS.get(kind, generic.parse)
