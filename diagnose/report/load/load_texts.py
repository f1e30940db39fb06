"""The expert-load result in words: ``worded`` turns the typed result (model/expert_load.py) into the plain
structure every format renders, with each code put in the report's language: why a file's first window was or
was not counted, the counting rule, the notes, the refusals, the method, the placements' labels and the advice.
Every text is a message of the catalog (``[expertload]`` in messages.toml)."""

from __future__ import annotations

from typing import Any

import msgspec

from diagnose.messages import Messages
from diagnose.model.expertload import ExpertLoadResult, FileStat, NotCounted


def why(stat: FileStat | NotCounted, max_intervals: float, msg: Messages) -> str:
    """The decision on a file's first window in a sentence."""
    if not stat.first:
        return msg("expertload.why.empty")
    if stat.first == "repeat":
        return msg("expertload.why.repeat_n", n=stat.repeated)
    if stat.first == "gap":
        text = msg("expertload.why.gap_since", day=stat.previous_day or "?")
    elif getattr(stat, "source", "mindie") == "sglang":
        text = msg("expertload.why.sglang")
    else:
        text = msg(f"expertload.why.{stat.first}")
    if stat.ratio is not None:
        text += msg("expertload.why.ratio", ratio=f"{stat.ratio:g}", max=f"{max_intervals:g}")
    return text


def layers_from(source: str, votes: tuple[int, str], msg: Messages) -> str:
    if source == "detected":
        return msg("expertload.layers_from.detected", n=votes[0], example=votes[1])
    return msg.get(f"expertload.layers_from.{source}", source)


def placement_source(source: str, msg: Messages) -> str:
    if source.startswith("map:"):
        return msg("expertload.placement.map", path=source[4:])
    if source.startswith("maps:"):
        return msg("expertload.placement.maps", n=source[5:])
    return msg.get(f"expertload.placement.{source}", source)


def apart(result: ExpertLoadResult, msg: Messages) -> list[str]:
    """What is measured but kept out of the routed-expert numbers: the shared expert's slots and dangling devices
    (MindIE), the MTP layers; one sentence each, shown apart on the page and in Markdown."""
    w = result.window
    out = []
    if w.shared_slots or w.dangling_devices:
        out.append(msg("expertload.apart.shared", n=w.shared_slots, dangling=w.dangling_devices,
                       tokens=f"{w.shared_tokens:,}"))
    if w.mtp_layers:
        first = w.layers - w.mtp_layers
        out.append(msg("expertload.apart.mtp", n=w.mtp_layers,
                       layers=", ".join(str(i) for i in range(first, w.layers))))
    return out


def refused(reason: str, params: dict[str, str], msg: Messages) -> str:
    return msg(f"expertload.refused.{reason}", **params)


def worded(result: ExpertLoadResult, msg: Messages) -> dict[str, Any]:
    """The result as plain data with its words: the JSON format as it is, and what the page and Markdown read."""
    out: dict[str, Any] = msgspec.to_builtins(result)
    w, c = out["window"], result.counting
    w["placement_text"] = placement_source(result.window.placement, msg)
    w["layers_from"] = layers_from(result.window.layers_source, result.window.layers_votes, msg)
    w["apart"] = apart(result, msg)
    out["lang"] = msg.lang
    out["notes"] = [msg(n.key, **n.params) for n in result.notes]
    out["refused"] = [{"path": r.path, "reason": r.reason, "why": refused(r.reason, r.params, msg)} for r in result.refused]
    max_intervals = c.max_intervals if c is not None else 2.0
    for f, stat in zip(out["files"], result.files):
        f["why"] = why(stat, max_intervals, msg)
    if c is not None:
        rule = {"count": "expertload.counting_rule_count", "skip": "expertload.counting_rule_skip"}.get(
            c.first_window, "expertload.counting_rule")
        out["counting"]["rule"] = msg(rule, max=f"{max_intervals:g}")
        for x, nc in zip(out["counting"]["first_windows_not_counted"], c.first_windows_not_counted):
            x["why"] = why(nc, max_intervals, msg)
    else:
        out["counting"] = {}
    out["summary"] = out.get("summary") or {}
    rec = out["recommendation"]
    if result.recommendation.before is None:
        out["recommendation"] = {"target": rec["target"], "reached": False, "reason": msg("expertload.no_data")}
    else:
        rec.pop("reason", None)
        rec["method"] = msg("expertload.method")
        rec["current"]["label"] = msg("expertload.current_label", n=rec["current_redundant_experts"])
        for t in rec["tried"]:
            t["label"] = msg("expertload.tried_label", n=t["redundant_experts"])
        rec["tried_note"] = msg("expertload.tried_note")
    if result.advice is not None:
        out["advice"]["text"] = advice_lines(result, msg)
    return out


def advice_lines(result: ExpertLoadResult, msg: Messages) -> list[str]:
    """The ``--advise`` answer: the verdict, then one line per piece of evidence."""
    a = result.advice
    if a is None:
        return []
    lines = [msg(f"expertload.advice.verdict.{a.verdict}", n=a.redundant_experts if a.redundant_experts is not None else "-")]
    for ch in a.checks:
        values = {k: (f"{v:.3g}" if isinstance(v, float) else v) for k, v in ch.values.items()}
        mark = {True: "+", False: "-", None: "?"}[ch.supports_trial]
        lines.append(f"{mark} " + msg(f"expertload.advice.check.{ch.code}", **values))
    for o in a.options:
        lines.append("  " + msg("expertload.advice.option", redundant=o.redundant_experts, measured=f"{o.measured:.3g}",
                                estimated=f"{o.estimated:.3g}", worst=f"{o.worst:.3g}", gain=f"{o.gain:.3g}"))
    for c in a.conditions:
        values = {k: (f"{v:.3g}" if isinstance(v, float) else v) for k, v in c.values.items()}
        lines.append(msg(f"expertload.advice.condition.{c.code}", **values))
    lines.append(msg("expertload.advice.timing"))
    return lines
