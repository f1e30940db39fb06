"""CANN / HCCL / torch_npu error blocks, wherever they appear (plog, vLLM output, stderr captures, text).

The same messages reach the user in several wrappers (CANN error-code reference, torch_npu error trailers, HCCL user guide):
``EI0006: [PID: n] 2025-...``, ``[PID: n] 2025-... Get_Socket_Timeout(EI0006): ...``, the torch_npu trailer
``[ERROR] 2025-07-17-11:24:32 (PID:2000, Device:3, RankID:3) ERR01100 ...``, the HCCL ``LINK_ERROR_INFO`` table
and the ``Cluster Exception Location[IP/ID]`` line. Parsers call :func:`block_signals` on their records to
turn the numbers and names in them into signals (timeouts in force, the remote side of a failed link, the
stuck location, the kernel of an aicore timeout), and :func:`runtime_code_expr` for 507xxx-style codes.
"""

from __future__ import annotations

import polars as pl

from diagnose.scan.fastregex import dfa_safe
from diagnose.model import conform_signals, empty_signals
from diagnose.parsers.lineframe import code_expr

# ACL / runtime result codes (507014 aicore timeout, 507010 lost heartbeat, 561000 aclnn inner, ...), only
# where the line says it is a code: `error code is 507014`, `ret=507899`, `retCode=507014`, `ErrorNo: 1343...`.
RUNTIME_CODE = dfa_safe(
    r"(?i)(?:error ?code(?: is|:|=)|ret(?:code)?\s*[=:(\[]|ret = |errcode[=:]|error=|result\s*[=:])\s*"
    r"\(?((?:10[0-9]|16[0-9]|20[0-9]|50[0-9]|56[0-9])[0-9]{3})\b"
)

# One LINK_ERROR_INFO row: dest_ip(user_rank) | dest_port | src_ip(user_rank) | src_port | MyRole | Status | TlsStatus
LINK_ROW = (
    r"\|\s*(?P<dip>[0-9a-fA-F.:]+)\((?P<drank>\d+)\)\s*\|\s*(?P<dport>\d+)\s*\|\s*(?P<sip>[0-9a-fA-F.:]+)\((?P<srank>\d+)\)"
    r"\s*\|\s*(?P<sport>\d+)\s*\|\s*(?P<role>\w+)\s*\|\s*(?P<status>[\w ]+?)\s*\|"
)

STUCK = r"Cluster Exception Location\[IP/ID\]:\[(?P<ip>[0-9a-fA-F.:]+)/(?P<id>\d+)\](?:.*?ExceptionType:\[(?P<type>[^\]]*)\])?"

# (signal, regex with one group, scale): numbers.
_NUMERIC: list[tuple[str, str, float]] = [
    ("hccl_connect_timeout_s", r"HCCL_CONNECT_TIMEOUT (?:is )?set (?:by [\w ]+? )?to \[(\d+)\]", 1.0),
    ("hccl_connect_timeout_s", r"(?:^|[\s'\"])HCCL_CONNECT_TIMEOUT\s*[=:]\s*['\"]?(\d+)", 1.0),
    ("hccl_connect_timeout_s", r"wait socket establish timeout,.*?timeout\[(\d+)", 1.0),
    ("hccl_exec_timeout_s", r"HCCL_EXEC_TIMEOUT (?:is )?set (?:by [\w ]+? )?to \[(\d+)\]", 1.0),
    ("hccl_exec_timeout_s", r"(?:^|[\s'\"])HCCL_EXEC_TIMEOUT\s*[=:]\s*['\"]?(\d+)", 1.0),
    ("hccl_exec_timeout_s", r"notify wait timeout occurred.*?timeout=(\d+)s", 1.0),
    ("hccl_watchdog_timeout_s", r"WorkHCCL\([^)]*Timeout\(ms\)=(\d+)", 0.001),
]

# The peer rank a line names, read only from lines that report a failure (a warning or worse, or a line of
# an error block without a head of its own): HCCL's routine task launches at info level name a remoteRank
# each (a twelfth of a busy plog), and a peer counted from that traffic is not the one the failure waited on.
REMOTE_RANK = r"(?i)remote[ _]?rank(?:id)?\s*[\[:=]\s*(\d+)"
_REMOTE_HINT = r"(?i:remote[ _]?rank)"
_FAILURE_LEVEL = pl.col("level").is_null() | pl.col("level").is_in(["WARNING", "ERROR", "CRITICAL"])

# (signal, regex with one group): strings.
_TEXT: list[tuple[str, str]] = [
    ("aicore_fault_kernel", r"fault kernel_name=([\w.\-]+)"),
    # torch_npu's task queue names the operator it was running when the device failed
    # (Ascend/pytorch torch_npu/csrc/core/npu/NPUQueue.cpp, get_func_error_msg), and its op dispatch the aclnn call
    # that returned the error (OpParamMaker.cpp: `call aclnnX failed, detail:`).
    ("npu_operator", r"current working operator name is ([\w\-]+(?:\.[\w\-]+)*)"),
    ("npu_operator", r"call (aclnn\w+) failed"),
]

# The device NIC an HCCP/HCCL init or listen line names: `devid[0] ip[192.168.20.148]`, `listen on ip[...]`.
_NIC = r"devid\[(?P<dev>\d+)\] ip\[(?P<ip>[0-9a-fA-F.:]+)\]|listen on ip\[(?P<lip>[0-9a-fA-F.:]+)\] and specific port\[(?P<port>\d+)\]"

SIGNALS: dict[str, str] = {
    "hccl_connect_timeout_s": "HCCL_CONNECT_TIMEOUT in force, s (plog `set by ... to [N]s`, env, `wait socket establish timeout ... timeout[N]`)",
    "hccl_exec_timeout_s": "HCCL_EXEC_TIMEOUT in force, s (plog `set by ... to [N]s`, env, `notify wait timeout ... timeout=Ns`)",
    "hccl_watchdog_timeout_s": "torch_npu watchdog timeout of a collective, s (`WorkHCCL(... Timeout(ms)=N)`)",
    "hccl_remote_rank": "remote rank named by an HCCL error (`remote rank[N]`, `remoteRank[N]`)",
    "hccl_link_remote_rank": "LINK_ERROR_INFO row: remote (dest) rank; text = its IP; engine = local `ip(rank)`",
    "hccl_link_local_rank": "LINK_ERROR_INFO row: local (src) rank; text = its IP",
    "hccl_link_error": "LINK_ERROR_INFO row: value = dest port; text = `dest_ip(rank r):port <- src_ip(rank r) role status`",
    "hccl_stuck_location": "`Cluster Exception Location[IP/ID]` the others wait on: text `ip/id`, value = id",
    "hccl_peer": "the peer an HCCL error names (text): `rank 29 (10.20.0.31:16666, link time out)`, `ip/id (Cluster Exception Location, ...)`",
    "npu_nic": "device NIC named by an HCCP/HCCL init or listen line (text): `192.168.20.148 (device 0)`, `ip:port`",
    "aicore_fault_kernel": "kernel of an aicore fault/timeout (`fault kernel_name=...`, text)",
    "npu_operator": "operator torch_npu was running when the device failed (`the current working operator name is X`, `call aclnnX failed`, text)",
}

# Only lines holding one of these (or a failure line naming a remote rank: REMOTE_RANK) can carry a signal. A
# failure line is kept by the prefilter for its level word or because it has no head of its own.
HINTS = (
    r"HCCL_CONNECT_TIMEOUT|HCCL_EXEC_TIMEOUT|wait socket establish timeout|notify wait timeout|WorkHCCL|"
    r"fault kernel_name|current working operator name is|call aclnn\w+ failed|devid\[|listen on ip\[|Cluster Exception Location|\|\s*[0-9a-fA-F.:]+\(\d+\)\s*\|"
)


def runtime_code_expr(col: str = "message") -> pl.Expr:
    """CANN/MindIE/torch_npu codes first (``EI0006``, ``ERR02200``), else a runtime result code (``507014``)."""
    return pl.coalesce(code_expr(col), pl.col(col).str.extract(RUNTIME_CODE, 1))


def block_signals(records: pl.DataFrame) -> pl.DataFrame:
    """Signals from CANN/HCCL error blocks in any records frame (the signal columns, conformed)."""
    if records.height == 0:
        return empty_signals()
    engine = pl.coalesce(
        pl.format("rank{}", pl.col("rank")),
        pl.format("device{}", pl.col("device")),
        pl.col("proc"),
        pl.lit("process"),
    )
    failure = _FAILURE_LEVEL & pl.col("message").str.contains(_REMOTE_HINT)
    base = records.filter(pl.col("message").str.contains(HINTS) | failure).select(
        "file", "line", "source", "node", "ts", engine.alias("engine"), "message", failure.alias("_failure")
    )
    if base.height == 0:
        return empty_signals()
    # One lazy query for every signal (a file costs one collect, not one per pattern).
    lazy = base.lazy()
    parts: list[pl.LazyFrame] = []
    keys = ["file", "line", "source", "node", "ts", "engine"]
    for name, pattern, scale in _NUMERIC:
        value = pl.col("message").str.extract(pattern, 1).cast(pl.Float64, strict=False) * scale
        parts.append(lazy.select(*keys, signal=pl.lit(name), value=value, text=pl.lit(None, pl.String)))
    remote = pl.col("message").str.extract(REMOTE_RANK, 1)
    named = lazy.filter(pl.col("_failure"))
    parts.append(named.select(*keys, signal=pl.lit("hccl_remote_rank"), value=remote.cast(pl.Float64, strict=False),
                              text=pl.lit(None, pl.String)))
    for name, pattern in _TEXT:
        text = pl.col("message").str.extract(pattern, 1)
        parts.append(lazy.select(*keys, signal=pl.lit(name), value=pl.lit(None, pl.Float64), text=text))
    # LINK_ERROR_INFO rows: the remote (dest) and local (src) side of each failed link.
    g = pl.col("_g").struct.field
    link = lazy.with_columns(_g=pl.col("message").str.extract_groups(LINK_ROW)).filter(g("dip").is_not_null())
    local = pl.format("{}({})", g("sip"), g("srank"))
    desc = pl.format("{}(rank {}):{} <- {}(rank {}) {} {}", g("dip"), g("drank"), g("dport"), g("sip"), g("srank"),
                     g("role"), g("status"))
    common = ["file", "line", "source", "node", "ts"]
    parts.append(link.select(*common, engine=local, signal=pl.lit("hccl_link_remote_rank"),
                             value=g("drank").cast(pl.Float64, strict=False), text=g("dip")))
    parts.append(link.select(*common, engine=local, signal=pl.lit("hccl_link_local_rank"),
                             value=g("srank").cast(pl.Float64, strict=False), text=g("sip")))
    parts.append(link.select(*common, engine=local, signal=pl.lit("hccl_link_error"),
                             value=g("dport").cast(pl.Float64, strict=False), text=desc))
    parts.append(link.select(*common, engine=local, signal=pl.lit("hccl_peer"), value=pl.lit(None, pl.Float64),
                             text=pl.format("rank {} ({}:{}, link {})", g("drank"), g("dip"), g("dport"), g("status"))))
    stuck = lazy.with_columns(_g=pl.col("message").str.extract_groups(STUCK)).filter(g("ip").is_not_null())
    parts.append(stuck.select(*keys, signal=pl.lit("hccl_stuck_location"), value=g("id").cast(pl.Float64, strict=False),
                              text=pl.format("{}/{}", g("ip"), g("id"))))
    parts.append(stuck.select(*keys, signal=pl.lit("hccl_peer"), value=pl.lit(None, pl.Float64),
                              text=pl.format("{}/{} (Cluster Exception Location, {})", g("ip"), g("id"),
                                             g("type").fill_null("stuck"))))
    nic = lazy.with_columns(_g=pl.col("message").str.extract_groups(_NIC)).with_columns(
        _ip=pl.coalesce(g("ip"), g("lip"))).filter(pl.col("_ip").is_not_null())
    where = pl.when(g("dev").is_not_null()).then(pl.format("{} (device {})", pl.col("_ip"), g("dev")))
    where = where.otherwise(pl.format("{}:{}", pl.col("_ip"), g("port")))
    parts.append(nic.select(*keys, signal=pl.lit("npu_nic"), value=pl.lit(None, pl.Float64), text=where))
    parts.append(named.select(*keys, signal=pl.lit("hccl_peer"), value=pl.lit(None, pl.Float64),
                              text=pl.format("rank {}", remote)))
    frame = pl.concat(parts, how="vertical_relaxed")
    frame = frame.filter(pl.col("value").is_not_null() | pl.col("text").is_not_null())
    frame = frame.unique(subset=["file", "line", "signal", "engine", "value", "text"], keep="first",
                         maintain_order=True).collect()
    return conform_signals(frame.sort("file", "line", maintain_order=True))
