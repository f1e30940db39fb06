"""Findings as MindCluster public faults: which code, which level, which type, which NPUs.

ClusterD acts on a public fault only when its nine-digit code is configured with a level (codes it does not
know are dropped) and its sender is listed in ``publicFaultResource``. The codes follow MindCluster's
scheme (digit 1 the fault type: 0 chip, 1 node, 2 network, 3 storage; digit 2 the default level: 0
``NotHandleFault``, 1 ``SubHealthFault``, 2 ``SeparateNPU``; digits 3-4 ``00``; digit 5 ``1``, a user-defined
code; digits 6-9 the number), one number per category of finding:

    device, memory      NPU      0 1 00 1 0001   (level from the hardware code's handling when it carries one)
    communication       Network  2 1 00 1 0002
    engine              Node     1 1 00 1 0003   (a hang: ENG020, a dead engine)
    kv-cache            Node     1 0 00 1 0004
    moe-load            Node     1 0 00 1 0005
    anything else       Node     1 0 00 1 0009

``configuration()`` gives the ``publicCustomization.json`` that declares these codes with their levels and
``diagnose`` as a sender; the page "Running it live" (docs/live.md) shows where it goes.

A finding that carries a hardware fault event id (an error-code family with a ``handling`` field, the level
MindCluster's device plugin gives that event) takes its level from it: ``NotHandleFault`` 0; the restart and
sub-health levels 1; ``RestartNPU``, ``SeparateNPU``, ``PreSeparateNPU`` and ``ManuallySeparateNPU`` 2 (the
public-fault levels are only these three), and the level's own name goes into the fault's location.

An open finding is a fault that ``occur``s, a resolved one ``recover``s, with the same id and the same fault
time (ClusterD keys faults by sender and id, and wants the time the fault began in both).
"""

from __future__ import annotations

from datetime import datetime

from diagnose.engine.match_kinds.code import families
from diagnose.knowledge.code_tables import classify
from diagnose.messages import Phrase
from diagnose.model.live import LiveEvent, PublicFault, Tracked

FAULT_TYPE_DIGIT = {"NPU": "0", "Node": "1", "Network": "2", "Storage": "3"}
LEVELS = ("NotHandleFault", "SubHealthFault", "SeparateNPU")
# category -> (fault type, default level digit, number)
CATEGORY_CODES = {
    "device": ("NPU", 1, 1),
    "memory": ("NPU", 1, 1),
    "communication": ("Network", 1, 2),
    "engine": ("Node", 1, 3),
    "kv-cache": ("Node", 0, 4),
    "moe-load": ("Node", 0, 5),
}
OTHER = ("Node", 0, 9)
# MindCluster's handling levels (device plugin, faultCode.json) -> the public-fault level digit.
HANDLING_LEVEL = {
    "NotHandleFault": 0, "RestartRequest": 1, "RestartBusiness": 1, "FreeRestartNPU": 1, "SubHealthFault": 1,
    "RestartNPU": 2, "SeparateNPU": 2, "PreSeparateNPU": 2, "ManuallySeparateNPU": 2,
}


def code_for(category: str, level: int | None = None) -> tuple[str, str]:
    """(fault type, nine-digit code) of a finding's category, at ``level`` (else the category's default)."""
    fault_type, default, number = CATEGORY_CODES.get(category, OTHER)
    return fault_type, f"{FAULT_TYPE_DIGIT[fault_type]}{default if level is None else level}001{number:04d}"


def handling_of(finding: Tracked) -> str | None:
    """The MindCluster handling level of the hardware fault event the finding carries, or None: its
    ``handling`` fact (the code match kind copies the ``handling`` field of the code's entry, ``-`` when the
    entry has none), else, for a finding without that fact (kept by an earlier state), the field itself, read
    from the code's table (knowledge/codes/<family>.toml: fault_event's codes carry one)."""
    fact = finding.facts.get("handling")
    if isinstance(fact, str):
        return fact if fact in HANDLING_LEVEL else None
    family, code = finding.facts.get("family"), finding.facts.get("code")
    if not isinstance(family, str) or not isinstance(code, str):
        return None

    table = families().get(family)
    if table is None:
        return None
    try:
        known, _ = classify(table, code)
    except LookupError:  # a code no class of its table matches
        return None
    value = known.handling if known is not None else ""
    return value if value in HANDLING_LEVEL else None


def to_fault(event: LiveEvent, node: str, devices: list[int]) -> PublicFault:
    f = event.finding
    handling = handling_of(f)
    level = HANDLING_LEVEL.get(handling) if handling else None
    fault_type, code = code_for(f.category, level)
    device = f.facts.get("device")
    ids = [int(device)] if isinstance(device, int) and fault_type == "NPU" else list(devices)
    location = {"rule": f.rule_id, "category": f.category, "severity": f.severity}
    if f.evidence:
        location["evidence"] = f"{f.evidence[0]['file']}:{f.evidence[0]['line']}"[-128:]
    if handling:
        location["handling"] = handling
    return PublicFault(
        fault_id=f"diagnose.{f.fingerprint}", fault_type=fault_type, fault_code=code,
        fault_time_ms=_ms(f.first_seen or f.opened_at), assertion="occur" if event.event == "open" else "recover",
        node_name=node, device_ids=ids, description=Phrase("live.fault_description", rule=f.rule_id, title=f.title),
        location=location,
    )


def configuration(resource: str = "diagnose") -> dict:
    """ClusterD's ``publicCustomization.json`` for these codes: each code at each level it can take, and the
    sender. Merge it into an existing file rather than replacing one that declares other senders."""
    levels: dict[str, list[str]] = {f"{name}Codes": [] for name in ("NotHandleFault", "SubHealthFault", "SeparateNPU")}
    for category, (fault_type, default, _) in sorted({**CATEGORY_CODES, "other": OTHER}.items()):
        choices = range(3) if fault_type == "NPU" else (default,)
        for level in choices:
            code = code_for(category if category != "other" else "", level)[1]
            bucket = levels[f"{LEVELS[level]}Codes"]
            if code not in bucket:
                bucket.append(code)
    return {"publicFaultCode": {**{k: sorted(v) for k, v in levels.items()}, "PreSeparateNPUCodes": []},
            "publicFaultResource": [resource]}


def _ms(iso: str | None) -> int:
    if not iso:
        return 0
    try:
        return int(datetime.fromisoformat(iso).timestamp() * 1000)
    except ValueError:
        return 0
