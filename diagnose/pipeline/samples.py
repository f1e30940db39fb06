"""The run's budget of periodic samples (``Budget.max_series_rows``): the series keeps the first samples in
the order the files are read, and no more.

A log of nothing but metric lines gives six samples a line (diagnose/model/series.py): a 900 MB one would hold
a series of 950 MB, and the passes over it several times that. Each file keeps at most the budget
(``chunks.SampleCap``, while it is read); across files, what the files gave is trimmed as it comes in, from the
files latest in the walk: a line trimmed has at least the budget of samples before it in the walk's order, so
it would be left out whatever order the files finish in, and the samples kept are always the same ones (the
budget's first lines in the walk's order). The cut falls between lines. Only periodic samples are left out:
every file is still read to its end, its error lines matched and its other signals kept.

A file that lost samples is read in part: its note says how many were not kept (``input_note.samples_cut``),
the run's coverage is partial, and the passes that read how a series ends (the silence pass, the threshold
runs a short excerpt ends with, the absence of a periodic signal) do not take the cut for the end of the
file (``cut_files``).
"""

from __future__ import annotations

import bisect

import msgspec
import polars as pl

from diagnose.messages import Joined
from diagnose.model import note
from diagnose.model.series import Periodic, periodic_rows, trim


class SeriesBudget:
    """The samples the run may still keep, and the samples each file lost."""

    def __init__(self, limit: int, spec: Periodic):
        self.limit, self.spec = limit, spec
        self.held = 0  # samples in the entries taken so far
        self.holding: list[tuple[int, int]] = []  # (place, index in taken) of the entries that hold samples
        self.dropped: dict[str, int] = {}

    def count(self, path: str, n: int) -> None:
        if n:
            self.dropped[path] = self.dropped.get(path, 0) + n

    def took(self, taken: list) -> None:
        """``taken[-1]`` was just added to ``taken`` (reading's ``_Taken`` entries, in any order of places): trim
        the entries to the budget, from the latest place in the walk: its series, and the periodic rows of its
        signals on the lines left out."""
        entry = taken[-1]
        if entry.series.height == 0:
            return
        bisect.insort(self.holding, (entry.place, len(taken) - 1))
        self.held += entry.series.height
        while self.held > self.limit:
            _, i = self.holding[-1]
            entry = taken[i]
            before = entry.series.height
            kept, out = trim(entry.series, max(0, before - (self.held - self.limit)))
            for path, n in out.group_by("file").agg(pl.col("n").sum()).select(
                    pl.col("file").cast(pl.String), "n").iter_rows():
                self.count(path, n)
            lines = out.select(pl.col("file").cast(pl.String), "line", _out=pl.lit(True))
            signals = entry.signals.join(lines, on=["file", "line"], how="left", maintain_order="left") \
                .filter(~(periodic_rows(self.spec) & pl.col("_out").is_not_null())).drop("_out")
            taken[i] = entry._replace(series=kept, signals=signals)
            self.held -= before - kept.height
            if kept.height == 0:
                self.holding.pop()

    def noted(self, taken: list) -> list:
        """The entries with a note on every file that lost samples (read in part: diagnose/analysis/coverage.py)."""
        if not self.dropped:
            return taken
        out = []
        for entry in taken:
            infos = [self._note(info) for info in entry.infos]
            out.append(entry._replace(infos=infos))
        return out

    def _note(self, info):
        n = self.dropped.get(info.path)
        if not n:
            return info
        said = note("samples_cut", n=n, limit=self.limit)
        if info.note is not None:
            parts = info.note.parts if isinstance(info.note, Joined) else [info.note]
            said = Joined([*parts, said], "input_note.join")
        return msgspec.structs.replace(info, note=said, incomplete=said)


def cut_files(inputs) -> dict[str, str | None]:
    """The files whose periodic samples were cut by the budget (file -> node): after its cut, a file's series
    says nothing about how the file went on."""
    out = {}
    for info in inputs:
        words = info.note
        parts = words.parts if isinstance(words, Joined) else [words]
        if any(getattr(p, "key", None) == "input_note.samples_cut" for p in parts):
            out[info.path] = info.node
    return out
