"""node-problem-detector's custom-plugin contract, and the monitor configuration that runs ``diagnose npd``.

NPD runs a plugin every ``invoke_interval`` with no shell, keeps at most 4 KiB of its output, strips the
standard output of surrounding white space and cuts it to ``max_output_length`` bytes (80 in its examples;
the cut is by bytes and may split a character), and reads the exit code: 0 OK, 1 a problem, anything else
unknown. Standard error never reaches the node; NPD logs it. So one invocation answers:

- **exit 0** with a short line when the check sees nothing (also when nothing new was written: that is no
  reason to be unknown), **exit 1** with the finding's id and title when it sees a problem, and exit 2 or 3
  only when it could not judge (a usage error, a state folder it cannot use);
- **one line** on standard output, trimmed here to the limit at a character boundary, so NPD's own cut never
  splits one; the details on standard error and in a file.

A check is one category of finding, as one NPD rule: **permanent** rules (device, HCCL) set a node condition
that stays True while a finding of the category is open; **temporary** ones (engine, KV pressure, MoE
imbalance) raise an event when a finding of the category opened since that check's last invocation, so a
problem that lasts is one event, not one a minute.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from diagnose.messages import messages, words_from_data

# diagnose.model's SEVERITY_RANK, here without importing the model (and polars): the checks that answer from
# the state must start in well under a second (tests/test_npd.py holds the two equal).
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2, "critical": 3}

NPD_OK, NPD_PROBLEM, NPD_USAGE, NPD_UNKNOWN = 0, 1, 2, 3
DEFAULT_MAX_OUTPUT = 80
SOURCE = "diagnose-ascend-monitor"


@dataclass(frozen=True)
class Check:
    name: str
    categories: tuple[str, ...]
    permanent: bool
    reason: str  # the rule's reason (the problem)
    condition: str | None = None  # permanent: the node condition's type
    healthy: str | None = None  # permanent: the condition's default reason


CHECKS = {c.name: c for c in (
    Check("device", ("device", "memory"), True, "AscendDeviceError", "AscendDeviceProblem", "AscendDeviceHealthy"),
    Check("hccl", ("communication",), True, "HCCLError", "HCCLProblem", "HCCLHealthy"),
    Check("engine", ("engine",), False, "ServingEngineProblem"),
    Check("kv", ("kv-cache",), False, "KVCachePressure"),
    Check("moe", ("moe-load",), False, "MoEImbalance"),
)}


@dataclass
class Answer:
    code: int
    line: str  # standard output, already trimmed
    details: str  # standard error and the details file
    mark: int  # the event sequence this check has seen up to


def trim(text: str, limit: int = DEFAULT_MAX_OUTPUT) -> str:
    """One line of at most ``limit`` UTF-8 bytes, cut at a character boundary (with "…" when cut)."""
    flat = re.sub(r"\s+", " ", text).strip()
    if len(flat.encode("utf-8")) <= limit:
        return flat
    budget = limit - len("…".encode("utf-8"))
    out = []
    for ch in flat:
        budget -= len(ch.encode("utf-8"))
        if budget < 0:
            break
        out.append(ch)
    return ("".join(out).rstrip() + "…") if limit >= 3 else ""


def answer(check: Check, open_findings: list[dict], recent: list[dict], mark: int, fail_on: str, lang: str,
           limit: int = DEFAULT_MAX_OUTPUT) -> Answer:
    """The check's verdict from the open findings (permanent) or the events since ``mark`` (temporary)."""
    msg = messages(lang)
    floor = SEVERITY_RANK[fail_on]

    def counts(item: dict) -> bool:
        return item.get("category") in check.categories and SEVERITY_RANK.get(item.get("severity"), -1) >= floor

    newest = max([mark] + [int(e.get("seq") or 0) for e in recent])
    if check.permanent:
        hits = sorted((f for f in open_findings if counts(f)), key=lambda f: -SEVERITY_RANK[f["severity"]])
    else:
        opened = {e["fingerprint"] for e in recent if e.get("event") == "open" and int(e.get("seq") or 0) > mark}
        by_fp = {f["fingerprint"]: f for f in open_findings}
        hits = [by_fp.get(e["fingerprint"], e) for e in recent
                if e.get("fingerprint") in opened and e.get("event") == "open" and counts(e)]
        hits = list({h["fingerprint"]: h for h in hits}.values())
    if not hits:
        return Answer(NPD_OK, trim(msg(f"npd.ok.{check.name}"), limit), msg(f"npd.ok.{check.name}") + "\n", newest)
    first = hits[0]
    head = f"{first['rule_id']} {_say(msg, first.get('title'))}"
    line = msg("npd.problem", head=head, n=len(hits) - 1) if len(hits) > 1 else head
    return Answer(NPD_PROBLEM, trim(line, limit), _details(hits, msg), newest)


def _details(hits: list[dict], msg) -> str:
    out = []
    for f in hits:
        out.append(f"{msg.severity(f['severity'])} {f['rule_id']} {_say(msg, f.get('title'))}")
        if f.get("summary"):
            out.append(f"  {_say(msg, f['summary'])}")
        if f.get("nodes"):
            out.append(f"  {msg('npd.where', nodes=', '.join(f['nodes']))}")
        for ev in (f.get("evidence") or [])[:2]:
            out.append(f"  {ev['file']}:{ev['line']}: {ev['text']}")
        if f.get("handling"):
            out.append(f"  {msg('npd.handling', level=f['handling'])}")
    return "\n".join(out) + "\n"


def _say(msg, data) -> str:
    """A title or summary as the state keeps it (``words_data``: a phrase or template with its values) in the
    answer's language."""
    return msg.say(words_from_data(data))


def monitor_config(executable: str, args: list[str], paths: list[str], interval_s: int = 60, timeout_s: int = 50,
                   max_output_length: int = DEFAULT_MAX_OUTPUT, lang: str = "en",
                   checks: list[str] | None = None) -> dict:
    """NPD's custom-plugin monitor file: one rule per check, each running ``executable npd --check NAME``."""
    msg = messages(lang)
    chosen = [CHECKS[name] for name in (checks or list(CHECKS))]
    rules = []
    for check in chosen:
        rule = {"type": "permanent" if check.permanent else "temporary"}
        if check.permanent:
            rule["condition"] = check.condition
        rule.update({"reason": check.reason, "path": executable,
                     "args": ["npd", "--check", check.name, "--max-output-length", str(max_output_length), *args,
                              "--", *paths],
                     "timeout": f"{timeout_s}s"})
        rules.append(rule)
    return {
        "plugin": "custom",
        "pluginConfig": {"invoke_interval": f"{interval_s}s", "timeout": f"{timeout_s}s",
                         "max_output_length": max_output_length, "concurrency": 1,
                         "enable_message_change_based_condition_update": False, "skip_initial_status": False},
        "source": SOURCE,
        "metricsReporting": True,
        "conditions": [{"type": c.condition, "reason": c.healthy, "message": msg(f"npd.ok.{c.name}")}
                       for c in chosen if c.permanent],
        "rules": rules,
    }
