"""``--redact``: mask what identifies a site before a report leaves it (public tickets, CI artifacts).

Masked, in every string of the report (finding summaries, evidence, paths, nodes, inputs, skipped entries,
errors, facts, the signals frame):

- IPv4 and IPv6 addresses -> ``ip-1``, ``ip-2`` ... (loopback and unspecified addresses stay: they identify
  nothing and often explain a bind problem)
- host names: every node name the report knows (derived from paths or Ray ``ip=`` prefixes), values of
  ``HOSTNAME=``/``hostname:``-like keys, and fully qualified names under common domains -> ``host-1`` ...
- user home paths: ``/home/<user>``, ``/Users/<user>``, ``/root`` -> ``~user-1`` ...
- tokens and keys: ``hf_…``, ``sk-…``, ``ghp_…``, ``glpat-…``, AWS key ids, ``Bearer …``/``Basic …`` and the
  values of ``…key=``, ``…token=``, ``…secret=``, ``…password=`` -> ``<secret-1>`` ...

The mapping is consistent within one run: the same address becomes the same placeholder in every output,
so findings still line up across nodes. The numbering follows the report's own order, so it is
deterministic for the same input. Redaction is applied once to the Report, before any format renders it.
"""

from __future__ import annotations


import ipaddress
import re
from typing import Any

import msgspec
import polars as pl

from diagnose.messages import Joined, Phrase, Template, Words
from diagnose.model import Evidence, Report

# Tokens first: their values may contain things that look like host names or addresses.
_SECRET_PATTERNS = [
    re.compile(r"\bhf_[A-Za-z0-9]{16,}"),
    re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(r"\bglpat-[A-Za-z0-9_-]{16,}"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+"),  # JWT
]
# "Bearer xyz", "Basic dXNlcjpwYXNz": keep the scheme, mask the credential ("Basic information" is prose).
_AUTH_SCHEME = re.compile(
    r"\b(Bearer\s+|Basic\s+(?=[A-Za-z0-9+/=]*(?:[a-z][A-Za-z0-9+/=]*[A-Z]|[0-9+/=])))([A-Za-z0-9._~+/=-]{8,})"
)
# KEY=value / "api_key": "value" / --hf-token value: keep the key, mask the value (not a plain number:
# ``max_num_batched_tokens=8192`` is configuration, not a secret).
_SECRET_KEY = (r"[\w.-]*(?:api[_-]?key|access[_-]?key|secret|token|password|passwd|pwd|credential"
               r"|auth[_-]?key|private[_-]?key)s?")
_VALUE_CHAR = r"[^\s'\",;}{)(]"
_NOT_A_NUMBER = r"(?![\d.]+(?!" + _VALUE_CHAR + r"))"
_KEY_VALUE = re.compile(r"(?i)(\b" + _SECRET_KEY + r"\b['\"]?\s*[=:]\s*['\"]?)" + _NOT_A_NUMBER
                        + r"(" + _VALUE_CHAR + r"{6,})")
_FLAG_VALUE = re.compile(r"(?i)(--" + _SECRET_KEY + r"\s+['\"]?)" + _NOT_A_NUMBER
                         + r"((?!-)" + _VALUE_CHAR + r"{6,})")
# Not part of a longer dotted number (1.2.3.4.5 is a version), but letters, dots and underscores around it
# are fine: core.10.0.0.1.bin and ip_10.0.0.1 hide addresses too.
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4 = re.compile(r"(?<!\d)(?<!\d\.)(" + _OCTET + r"(?:\." + _OCTET + r"){3})(?!\d|\.\d)")
_VERSION_BEFORE = re.compile(r"(?i)(?:version|ver)\W{0,3}$")
_IPV6_CANDIDATE = re.compile(r"(?<![\w:.])([0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7})(?![\w:])")
_HOST_KEY = re.compile(
    r"(?i)(\b(?:hostname|host_name|nodename|node_name|fqdn|HOST)\s*[=:]\s*['\"]?)([A-Za-z][A-Za-z0-9.-]*[A-Za-z0-9])"
)
_FQDN = re.compile(
    r"(?i)(?<![\w.@/-])((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+"
    r"(?:com|net|org|io|cn|local|localdomain|internal|intranet|intra|lan|corp|home|cluster\.local|svc))(?![\w-])"
)
# Public sites that logs and remediation texts cite; they identify no one.
_PUBLIC_DOMAINS = ("github.com", "gitee.com", "gitlab.com", "huawei.com", "hiascend.com", "huaweicloud.com",
                   "pypi.org", "python.org", "pytorch.org", "huggingface.co", "modelscope.cn", "vllm.ai")
_HOME = re.compile(r"(?:(?<=[\s'\"=:(\[,/`<>|;])|^)(/home/|/Users/|/root)([A-Za-z0-9._-]*)(?=[/\s'\",:)\]]|$)")
_WIN_HOME = re.compile(r"(?i)\b([A-Z]:\\Users\\)([^\\\s'\"]+)")
_PLACEHOLDER = re.compile(r"^(?:ip|host|user|secret)-\d+$")


class Redactor:
    """Consistent masking: one table per kind, filled in the order things are first seen."""

    def __init__(self) -> None:
        self.tables: dict[str, dict[str, str]] = {"ip": {}, "host": {}, "user": {}, "secret": {}}
        self._hosts: list[tuple[str, re.Pattern]] = []

    def placeholder(self, kind: str, value: str) -> str:
        table = self.tables[kind]
        if value not in table:
            table[value] = f"{kind}-{len(table) + 1}"
        return table[value]

    def add_hosts(self, names) -> None:
        """Register node/host names known from the report; longer names first so they win over prefixes."""
        known = {n for n, _ in self._hosts}
        for name in names:
            if not name or name in known or _is_local(name):
                continue
            known.add(name)
            self.placeholder("host", name)
            pattern = re.compile(r"(?<![\w.-])" + re.escape(name) + r"(?![\w-])")
            self._hosts.append((name, pattern))
        self._hosts.sort(key=lambda item: (-len(item[0]), item[0]))

    def text(self, value: str | None) -> str | None:
        if not value:
            return value
        s = value
        for pattern in _SECRET_PATTERNS:
            s = pattern.sub(lambda m: "<" + self.placeholder("secret", m.group(0)) + ">", s)
        s = _AUTH_SCHEME.sub(lambda m: m.group(1) + "<" + self.placeholder("secret", m.group(2)) + ">", s)
        s = _KEY_VALUE.sub(self._key_value, s)
        s = _FLAG_VALUE.sub(self._key_value, s)
        # Known node names before addresses: a node named after its address (10.0.0.12 or 10_0_0_12) is a host.
        for name, pattern in self._hosts:
            if name in s:
                s = pattern.sub(self.tables["host"][name], s)
        s = _IPV4.sub(self._ipv4, s)
        if ":" in s:
            s = _IPV6_CANDIDATE.sub(self._ipv6, s)
        s = _HOST_KEY.sub(self._host_key, s)
        s = _FQDN.sub(self._fqdn, s)
        if "/" in s:
            s = _HOME.sub(self._home, s)
        if "\\" in s:
            s = _WIN_HOME.sub(lambda m: m.group(1) + self.placeholder("user", m.group(2)), s)
        return s

    def _key_value(self, m: re.Match) -> str:
        value = m.group(2)
        if value.startswith("<secret-") or _PLACEHOLDER.match(value):
            return m.group(0)
        return m.group(1) + "<" + self.placeholder("secret", value) + ">"

    def _ipv4(self, m: re.Match) -> str:
        addr = m.group(1)
        if _is_local(addr) or _VERSION_BEFORE.search(m.string, max(0, m.start() - 16), m.start()):
            return addr  # 24.1.0.3 after "version": a driver version, not an address
        return self.placeholder("ip", addr)

    def _ipv6(self, m: re.Match) -> str:
        cand = m.group(1)
        if not re.search(r"[0-9A-Fa-f]", cand) or ("::" not in cand and cand.count(":") != 7):
            return cand  # times (09:06:02), C++ scopes and the like
        try:
            addr = ipaddress.IPv6Address(cand)
        except ValueError:
            return cand
        if addr.is_loopback or addr.is_unspecified:
            return cand
        return self.placeholder("ip", addr.compressed)

    def _host_key(self, m: re.Match) -> str:
        value = m.group(2)
        if _PLACEHOLDER.match(value) or _is_local(value):
            return m.group(0)
        return m.group(1) + self.placeholder("host", value)

    def _fqdn(self, m: re.Match) -> str:
        name = m.group(1).lower()
        if any(name == d or name.endswith("." + d) for d in _PUBLIC_DOMAINS):
            return m.group(1)
        return self.placeholder("host", name)

    def _home(self, m: re.Match) -> str:
        prefix, user = m.group(1), m.group(2)
        if prefix == "/root":
            if user:  # /rootfs, /root_dir: not a home
                return m.group(0)
            return "~" + self.placeholder("user", "root")
        if not user:
            return m.group(0)
        return "~" + self.placeholder("user", user)

    def value(self, obj: Any) -> Any:
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, Evidence):
            return Evidence(self.text(obj.file), obj.line, self.text(obj.text))
        if isinstance(obj, Words):
            return self.words(obj)
        if isinstance(obj, list):
            return [self.value(v) for v in obj]
        if isinstance(obj, tuple):
            return tuple(self.value(v) for v in obj)
        if isinstance(obj, dict):
            return {k: self.value(v) for k, v in obj.items()}
        if isinstance(obj, msgspec.Struct):
            return _redact_struct(obj, self, set())
        if type(obj).__name__ == "DataFrame" and hasattr(obj, "schema"):  # polars frames (Report.timeline)
            return _redact_frame(obj, self)
        return obj

    def words(self, obj: Words) -> Words:
        """The values in what will be said: authored texts stay, what came from the logs is masked."""
        if isinstance(obj, Phrase):
            return Phrase(obj.key, **{k: self.value(v) for k, v in obj.values.items()})
        if isinstance(obj, Template):
            return Template(obj.texts, {k: self.value(v) for k, v in obj.values.items()},
                            tuple(self.value(x) for x in obj.lead), tuple(self.value(x) for x in obj.tail))
        if isinstance(obj, Joined):
            return Joined([self.value(x) for x in obj.parts], obj.sep, obj.distinct)
        return obj  # Localized: authored in the rule files and tables


def _is_local(name: str) -> bool:
    return name in ("localhost", "0.0.0.0", "::", "::1") or name.startswith("127.")


# Fields that come from rule files or are enumerations: nothing of the site in them.
_FINDING_SAFE = {"rule_id", "name", "category", "severity", "remediation", "references", "caused_by",
                 "consequence", "count", "first_seen", "last_seen", "ranks", "fingerprint", "baseline_state"}
_INPUT_SAFE = {"kind", "encoding", "lines", "bytes", "raw_lines"}
_REPORT_SAFE = {"rules_checked", "panels", "series"}


def redact_report(report: Report, redactor: Redactor | None = None) -> Report:
    """A copy of ``report`` with addresses, host names, home paths and secrets masked everywhere.

    Fields added to the model later are masked too (every string, list, dict, struct and phrase value not
    known to be safe), so a new field cannot leak by default.
    """
    r = redactor or Redactor()
    r.add_hosts(sorted({i.node for i in report.inputs if i.node} | {n for f in report.findings for n in f.nodes}
                       | {n for s in report.suppressed for n in getattr(s, "nodes", [])}))
    changes = {}
    for name in report.__struct_fields__:
        if name in _REPORT_SAFE:
            continue
        value = getattr(report, name)
        if name == "findings":
            changes[name] = [_redact_struct(f, r, _FINDING_SAFE) for f in value]
        elif name in ("inputs", "derived"):
            changes[name] = [_redact_struct(i, r, _INPUT_SAFE) for i in value]
        else:
            changes[name] = r.value(value)
    return msgspec.structs.replace(report, **changes)


def _redact_struct(obj, r: Redactor, safe: set[str]):
    changes = {name: r.value(getattr(obj, name)) for name in obj.__struct_fields__ if name not in safe}
    return msgspec.structs.replace(obj, **changes)


def _redact_frame(frame, r: Redactor):
    """Every string column, through the same table: unique values only, so large frames stay cheap."""
    exprs = []
    for name, dtype in frame.schema.items():
        if dtype != pl.String or frame.height == 0:
            continue
        uniques = frame.get_column(name).drop_nulls().unique().sort().to_list()
        mapping = {u: r.text(u) for u in uniques}
        changed = {k: v for k, v in mapping.items() if k != v}
        if changed:
            exprs.append(pl.col(name).replace(changed))
    return frame.with_columns(exprs) if exprs else frame
