"""Why an input was skipped, and the notes on inputs that were read, in the report's language.

The reading code (diagnose/ingest, diagnose/pipeline/reading.py) says it in English where it happens, and the
JSON report keeps that text as it is; the other formats show it through the catalog (``[skip]`` and
``[input_note]`` in messages.toml), matched here by its form. What follows a colon is the operating system's
or the archive library's own message and stays as it is; a form not listed here is shown unchanged.
"""

from __future__ import annotations

import re

from diagnose.messages import Messages

_REASONS: list[tuple[re.Pattern[str], str]] = [(re.compile(p + r"$"), key) for p, key in (
    (r"binary file \(not text\)", "skip.binary"),
    (r"symbolic link \(not followed\)", "skip.symlink"),
    (r"link inside archive \(not followed\)", "skip.archive_link"),
    (r"special file inside archive \(not read\)", "skip.archive_special"),
    (r"archive nested more than one level \(not followed\)", "skip.nested"),
    (r"no such file or directory", "skip.missing"),
    (r"not read: the reader failed \((?P<error>.*)\)", "skip.reader_failed"),
    (r"not read: listing failed \((?P<error>.*)\)", "skip.listing_failed"),
    (r"zip bomb: entries overlap \(one member's data lies inside another's\); not read", "skip.zip_overlap"),
    (r"changed after it was listed \(now: (?P<what>.*)\); not read", "skip.changed"),
    (r"permission denied", "skip.denied"),
    (r"not in the model directory", "skip.not_in_model_dir"),
    (r"not a regular file \((?P<what>.*)\)", "skip.not_regular"),
    (r"directory nesting deeper than (?P<n>\d+) \(not read\)", "skip.too_deep"),
    (r"more than (?P<n>\d+) files and folders; the rest was not read", "skip.too_many_files"),
    (r"more than (?P<n>\d+) members; the rest was not read", "skip.too_many_members"),
    (r"time budget of (?P<n>[\d.]+) s reached \(not read\)", "skip.time_budget"),
    (r"larger than the per-file limit of (?P<n>\d+) bytes", "skip.file_limit"),
    (r"total read limit of (?P<n>\d+) bytes reached", "skip.total_limit"),
    (r"decompression bomb: expands more than (?P<ratio>[\d.]+)x \((?P<n>\d+) bytes compressed\)", "skip.bomb"),
    (r"rows per block unknown \(give --layers or an expert map\)", "skip.layers_unknown"),
    (r"cannot access: (?P<error>.*)", "skip.cannot_access"),
    (r"cannot read: (?P<error>.*)", "skip.cannot_read"),
    (r"cannot open: (?P<error>.*)", "skip.cannot_open"),
    (r"cannot list directory: (?P<error>.*)", "skip.cannot_list"),
    (r"broken symbolic link: (?P<error>.*)", "skip.broken_link"),
    (r"corrupt zip archive: (?P<error>.*)", "skip.corrupt_zip"),
    (r"cannot read archive: (?P<error>.*)", "skip.cannot_read_archive"),
    (r"corrupt or unreadable tar archive: (?P<error>.*)", "skip.corrupt_tar"),
    (r"corrupt or truncated archive, members after this point not read: (?P<error>.*)", "skip.truncated_archive"),
    (r"cannot read nested archive: (?P<error>.*)", "skip.nested_unreadable"),
    (r"cannot read standard input: (?P<error>.*)", "skip.stdin"),
    (r"unreadable hotspot dump: (?P<error>.*)", "skip.bad_dump"),
)]

_NOTES: list[tuple[re.Pattern[str], str]] = [(re.compile(p + r"$"), key) for p, key in (
    (r"(?P<n>\d+) over-long lines cut", "input_note.cut"),
    (r"derived by preflight from the model files and launch configuration", "input_note.preflight"),
    (r"truncated or corrupt compressed data after (?P<n>\d+) bytes \((?P<error>.*)\)", "input_note.truncated"),
    (r"shrank while read: (?P<n>\d+) of (?P<size>\d+) bytes read, the rest is gone", "input_note.shrank"),
    (r"last block incomplete \(a write in progress\); ignored", "input_note.incomplete_block"),
)]


# The file types a reason names (``what``); FIFO and socket are the same technical terms in every language.
_WHAT = {"symbolic link": "skip.what.symlink", "another file": "skip.what.other", "directory": "skip.what.directory",
         "device file": "skip.what.device", "special file": "skip.what.special"}


def _translate(text: str, table: list[tuple[re.Pattern[str], str]], msg: Messages) -> str:
    if msg.lang == "en":
        return text
    for pattern, key in table:
        m = pattern.match(text)
        if m:
            values = m.groupdict()
            if values.get("what") in _WHAT:
                values["what"] = msg(_WHAT[values["what"]])
            return msg(key, **values)
    return text


def skip_reason(reason: str, msg: Messages) -> str:
    return _translate(reason, _REASONS, msg)


def input_note(note: str | None, msg: Messages) -> str:
    """A note of a file that was read (several are joined with ``; ``)."""
    if not note:
        return ""
    return msg("input_note.join").join(_translate(part, _NOTES, msg) for part in note.split("; "))
