"""The words of the expert-load result, in the report's language: why each file's first window was or was not
counted, the counting rule, the notes, the method and the labels of the placements. The numbers come from
windows.py and metrics.py; every text is a message of the catalog (``[expertload]`` in messages.toml)."""

from __future__ import annotations

from typing import Any

from diagnose.messages import Messages


def why(stat: Any, max_intervals: float, msg: Messages) -> str:
    """The decision on a file's first window (``FileStat``) in a sentence."""
    if not stat.first:
        return msg("expertload.why.empty")
    if stat.first == "repeat":
        return msg("expertload.why.repeat_n", n=stat.repeated)
    if stat.first == "gap":
        text = msg("expertload.why.gap_since", day=stat.previous_day or "?")
    else:
        text = msg(f"expertload.why.{stat.first}")
    if stat.ratio is not None:
        text += msg("expertload.why.ratio", ratio=f"{stat.ratio:g}", max=f"{max_intervals:g}")
    return text


def note(item: tuple[str, dict[str, Any]] | str, msg: Messages) -> str:
    if isinstance(item, str):
        return item
    key, params = item
    return msg(key, **params)


def layers_from(source: str, votes: tuple[int, str], msg: Messages) -> str:
    if source == "detected":
        return msg("expertload.layers_from.detected", n=votes[0], example=votes[1])
    return msg.get(f"expertload.layers_from.{source}", source)


def placement_source(source: str, msg: Messages) -> str:
    if source.startswith("map:"):
        return msg("expertload.placement.map", path=source[4:])
    return msg("expertload.placement.contiguous")


def counting_rule(max_intervals: float, msg: Messages) -> str:
    return msg("expertload.counting_rule", max=f"{max_intervals:g}")


def method(msg: Messages) -> str:
    return msg("expertload.method")


def current_label(redundant: int, msg: Messages) -> str:
    return msg("expertload.current_label", n=redundant)


def tried_label(redundant: int, msg: Messages) -> str:
    return msg("expertload.tried_label", n=redundant)


def tried_note(msg: Messages) -> str:
    return msg("expertload.tried_note")
