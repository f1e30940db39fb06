"""Cause links of a rule file: what its finding can cause and what can cause it, as data.

    [[causes]]                 # this rule's finding can lead to these
    rule = "DEV010"            # a rule id, or a list of ids
    place = "node"             # node | rank | any (default): where both must have been seen
    within = "1h"              # optional: the consequence began at most this long after the cause was last seen

    [[caused_by]]              # this rule's finding can be the consequence of these (same fields)
    rule = ["VER001", "VER004"]

Both directions become the same ``CauseLink(cause, effect, place, within)`` (diagnose/model/findings.py), so a
chain can be declared where the author knows it: in the cause's file, or in the consequence's. Ranking
(diagnose/analysis/chains.py) follows a link only when both findings are there and its conditions hold.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from diagnose.model import PLACES, CauseLink

LINK_KEYS = ("causes", "caused_by")
_FIELDS = {"rule", "place", "within"}
_ID = re.compile(r"^[A-Z][A-Z0-9]*-?\d{3}$")


def check_links(data: dict[str, Any], fail: Callable[[str, str], None], seconds: Callable[[Any, str], float]) -> None:
    """Every problem of the ``[[causes]]`` and ``[[caused_by]]`` tables of one rule file, through ``fail``."""
    for key in LINK_KEYS:
        if key not in data:
            continue
        tables = data[key]
        if not isinstance(tables, list):
            fail(key, f"must be an array of tables: [[{key}]] with rule = \"ID\"")
            continue
        for i, table in enumerate(tables):
            where = f"{key}[{i}]"
            if not isinstance(table, dict):
                fail(where, "must be a table")
                continue
            for extra in sorted(set(table) - _FIELDS):
                fail(f"{where}.{extra}", f"unknown field (allowed: {', '.join(sorted(_FIELDS))})")
            ids = _ids(table.get("rule"))
            if not ids:
                fail(f"{where}.rule", "missing: a rule id or a list of rule ids, e.g. rule = \"DEV010\"")
            for rid in ids:
                if not isinstance(rid, str) or not _ID.match(rid):
                    fail(f"{where}.rule", f"{rid!r} is not a rule id (like DEV010)")
            if table.get("place", "any") not in PLACES:
                fail(f"{where}.place", f"must be one of {', '.join(PLACES)}")
            if "within" in table:
                try:
                    seconds(table["within"], f"{where}.within")
                except Exception as exc:  # the rule file's own error type, raised by its duration parser
                    fail(f"{where}.within", getattr(exc, "message", str(exc)))


def links_of(rule_id: str, data: dict[str, Any], seconds: Callable[[Any, str], float]) -> list[CauseLink]:
    """The links a checked rule file declares, each as cause -> effect."""
    out = []
    for key in LINK_KEYS:
        for i, table in enumerate(data.get(key) or []):
            within = seconds(table["within"], f"{key}[{i}].within") if "within" in table else None
            for other in _ids(table["rule"]):
                cause, effect = (rule_id, other) if key == "causes" else (other, rule_id)
                out.append(CauseLink(cause=cause, effect=effect, place=table.get("place", "any"), within=within))
    return out


def _ids(value: Any) -> list:
    if isinstance(value, str):
        return [value]
    return list(value) if isinstance(value, list) else []
