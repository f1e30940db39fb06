"""A checkpoint's weight map and quantization description (``model.safetensors.index.json``,
``quant_model_description.json``): metadata, not a log.

In a bundle these files are the preflight's input (diagnose/preflight/tap.py reads them and derives facts
with their origins); read as log lines they were only noise, about 140,000 raw lines each for a 671B
checkpoint (one per tensor), which no rule reads and which cost seconds a file. So the kind is decided by the
name, the file is counted (its bytes) and nothing else is kept. ``diagnose preflight`` lists the same files
under this kind.
"""

from __future__ import annotations

from typing import BinaryIO

import polars as pl

from diagnose.model import empty_records, empty_signals
from diagnose.parsers.kind import SourceKind
from diagnose.parsers.kinds import generic
from diagnose.parsers.lineframe import FileContext

KIND = "model-metadata"
_BLOCK = 1 << 20


def _all(path: str) -> bool:
    return True


def parse_stream(stream: BinaryIO, ctx: FileContext, info=None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Nothing to keep: the stream is read through only to count its bytes."""
    size = 0
    while block := stream.read(_BLOCK):
        size += len(block)
    if info is not None:
        info.bytes = size
    return empty_records(), empty_signals()


def parse(lines: pl.DataFrame, ctx: FileContext) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Lines handed over anyway (a file read as this kind on request): kept, as for any text of no known kind."""
    return generic.parse(lines, ctx)


SOURCE = SourceKind(
    name=KIND,
    parse=parse,
    summary="a checkpoint's weight map and quantization description (read by preflight, not as log lines)",
    # The names vLLM's loader and msModelSlim write (the `.gz` of a packed copy is stripped before matching).
    file_name=r"(?i)^(?:model\.safetensors\.index|quant_model_description(?:_[\w-]+)?)\.json$",
    name_decides=True,
    streams=_all,
    parse_stream=parse_stream,
    sniff_rank=90,
)
