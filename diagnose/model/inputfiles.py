"""What the run was given: the files it read, and the inputs it did not read with the reason.

Reasons and notes are facts, said at the edge: a ``Phrase`` of the catalog's ``[skip]`` or ``[input_note]``
table with its values (diagnose/messages.py). Whether leaving an input out loses anything is a property of its
reason's key (``BY_DESIGN``), never of how the reason reads.
"""

from __future__ import annotations

from typing import ClassVar

import msgspec

from diagnose.messages import Phrase, Words

# Reasons for leaving a file out that lose nothing of the incident: it is not a log by design. Any other skipped
# input means the run covered less than it was given (diagnose/analysis/coverage.py).
BY_DESIGN = frozenset({"skip.binary", "skip.symlink", "skip.archive_link", "skip.archive_special",
                       "skip.not_regular", "skip.python_source", "skip.not_in_model_dir",
                       "skip.trace_beside_kernel_table"})


def skip(key: str, /, **values) -> Phrase:
    """The reason an input was not read: ``skip("binary")``, ``skip("cannot_read", error="...")``."""
    return Phrase(f"skip.{key}", **values)


def file_type(code: str) -> Phrase:
    """A kind of file in words, for a reason's ``{what}``: a code of diagnose/bounded.py ``KIND_WORDS``
    (``fifo``, ``symlink``, ``other``: another file than the one listed)."""
    return Phrase(f"skip.what.{code}")


def note(key: str, /, **values) -> Phrase:
    """A note on a file that was read: ``note("truncated", n=..., error=...)``."""
    return Phrase(f"input_note.{key}", **values)


class InputFile(msgspec.Struct, frozen=True):
    """A file the run read (in ``inputs``), or one it derived itself (in ``derived``: the preflight facts
    ``<dir>/preflight.facts`` and the validation facts ``<validation>``, whose findings point at the file and line
    each fact came from)."""

    path: str  # display path; archive members as archive.tgz!path/inside.log
    kind: str  # the source kind it was read as (vllm, plog, npu-smi, ...; ``diagnose rules signals`` lists them)
    lines: int  # lines read
    bytes: int  # bytes read (decompressed)
    raw_lines: int = 0  # lines kept as raw records because no header parsed
    node: str | None = None  # the node the file belongs to (from its path, or a Ray ip= prefix)
    encoding: str = "utf-8"  # the encoding it was decoded with
    note: Words | None = None  # e.g. truncated compressed data: what was read is used
    # why the file was read only in part (a truncated .gz): the run's coverage is partial
    incomplete: Words | msgspec.UnsetType = msgspec.UNSET


class Skipped(msgspec.Struct, frozen=True):
    """An input the run did not read, with the reason. Binaries, links, special files and Python source are left
    out by design; any other skipped input makes the run's coverage partial."""

    path: str
    reason: Phrase  # why it was not read

    INTERNAL: ClassVar[tuple[str, ...]] = ()

    @property
    def by_design(self) -> bool:
        """Not a log (a binary, a link, Python source): leaving it out loses nothing."""
        return self.reason.key in BY_DESIGN
