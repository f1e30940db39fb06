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
                       "skip.not_regular", "skip.python_source", "skip.not_in_model_dir"})


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
    path: str
    kind: str
    lines: int
    bytes: int
    raw_lines: int = 0  # lines kept as raw records because no header parsed
    node: str | None = None
    encoding: str = "utf-8"
    note: Words | None = None  # e.g. truncated compressed data: what was read is used
    # why the file was read only in part (a truncated .gz): the run's coverage is partial
    incomplete: Words | msgspec.UnsetType = msgspec.UNSET


class Skipped(msgspec.Struct, frozen=True):
    path: str
    reason: Phrase

    INTERNAL: ClassVar[tuple[str, ...]] = ()

    @property
    def by_design(self) -> bool:
        """Not a log (a binary, a link, Python source): leaving it out loses nothing."""
        return self.reason.key in BY_DESIGN
