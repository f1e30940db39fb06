"""MindCluster's public-fault message: how a serving-level fault takes part in ClusterD's isolation and
rescheduling (ClusterD public-fault API: a ConfigMap labelled ``mc-consumer-publicfault=true`` whose data key
``PublicFault`` holds one JSON message; the same fields over gRPC ``SendPublicFault``).

    render(report, faults=[PublicFault, ...], message_id=..., timestamp_ms=..., form="json" | "configmap", lang=...)

Which findings become which faults (code, level, type, device ids) is decided by diagnose/live/faults.py;
this renderer writes the message within ClusterD's documented limits, so that no fault is dropped for its
shape: ids of 8 to 128 characters from ``[A-Za-z0-9-_.]``, 13-digit millisecond times not before 2025, at most
100 faults, at most 10 location entries (keys up to 16 characters, values up to 128), 1 to 32 distinct device
ids from 0 to 31, a node name of 1 to 253 characters, and a description of at most 512 characters with no
white space but plain spaces. ``configmap`` wraps the message in the ConfigMap (``kubectl apply -f``).
"""

from __future__ import annotations

import json
import re

from diagnose.messages import Messages, messages
from diagnose.model import Report
from diagnose.model.live import PublicFault

VERSION = "1.0"
RESOURCE = "diagnose"
MAX_FAULTS = 100
MAX_DESCRIPTION = 512
EARLIEST_MS = 1735689600000  # 2025-01-01T00:00:00Z: ClusterD refuses earlier times
CONFIGMAP_LABEL = "mc-consumer-publicfault"
DATA_KEY = "PublicFault"
_ID = re.compile(r"[^A-Za-z0-9._-]")
_SPACE = re.compile(r"\s+")
_NODE = re.compile(r"[^a-z0-9.-]")


def render(report: Report | None = None, faults: list[PublicFault] = (), message_id: str = "diagnose-message",
           timestamp_ms: int = EARLIEST_MS, form: str = "json", resource: str = RESOURCE,
           configmap_name: str = "diagnose-public-fault", namespace: str = "default", lang: str = "en",
           **_options) -> str:
    msg = messages(lang)
    message = {
        "id": fault_id(message_id),
        "timestamp": max(int(timestamp_ms), EARLIEST_MS),
        "version": VERSION,
        "resource": resource,
        "faults": [_fault(f, msg) for f in list(faults)[:MAX_FAULTS]],
    }
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    if form != "configmap":
        return text + "\n"
    manifest = {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": configmap_name, "namespace": namespace, "labels": {CONFIGMAP_LABEL: "true"}},
        "data": {DATA_KEY: text},
    }
    return json.dumps(manifest, ensure_ascii=False, indent=2) + "\n"


def fault_id(text: str) -> str:
    """An id ClusterD accepts: the allowed characters only, 8 to 128 of them."""
    clean = _ID.sub("-", text)[:128]
    return clean if len(clean) >= 8 else (clean + "-diagnose")[:128]


def node_name(text: str) -> str:
    """A Kubernetes node name: lower-case letters, digits, '-' and '.', alphanumeric at both ends."""
    clean = _NODE.sub("-", text.lower()).strip("-.")[:253].strip("-.")
    return clean or "localhost"


def _fault(f: PublicFault, msg: Messages) -> dict:
    out = {
        "faultId": fault_id(f.fault_id),
        "faultType": f.fault_type,
        "faultCode": f.fault_code,
        "faultTime": max(int(f.fault_time_ms), EARLIEST_MS),
        "assertion": f.assertion,
        "influence": [{"nodeName": node_name(f.node_name), "deviceIds": _devices(f.device_ids)}],
        "description": _description(msg.say(f.description)),
    }
    location = {str(k)[:16]: str(v)[:128] for k, v in list(f.location.items())[:10]}
    if location:
        out["faultLocation"] = location
    return out


def _devices(ids: list[int]) -> list[int]:
    kept = sorted({int(i) for i in ids if 0 <= int(i) < 32})
    return kept[:32] or list(range(8))


def _description(text: str) -> str:
    flat = _SPACE.sub(" ", text or "").strip()
    if len(flat) <= MAX_DESCRIPTION:
        return flat
    return flat[:MAX_DESCRIPTION - 1].rstrip() + "…"
