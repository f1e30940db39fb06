"""`npu-smi info` tables, their process tables, and `npu-smi info -t board|health -i N` key/value output.

Layouts: A2 (one chip per NPU), A3 (``Chip  Phy-ID`` column, two chips per NPU, the
second chip's first row shows Power ``-``), 310P (``Chip  Device``, no HBM pair, Power ``NA``) and the
widened right block of npu-smi 26.x. Rows are parsed by ``|`` and whitespace, never by column offsets, so
re-flowed pastes (single spaces, ``1460/ 44280``) parse too. A device is two rows: the first row
(``<npu> <name> | <health> | <power> <temp> <hugepages>``) and the chip row
(``<chip> [<phy>] | <bus-id> | <aicore> <memory> [<hbm>]``); the chip row closes the device.

A file may hold several tables (a paste from several nodes): shell prompts (``[root@node-1 ~]#``,
``root@node-1:~#``) and ``==> node-1/npu-smi.txt <==`` headers name the node of what follows when the
file itself holds more than one host.

Signals, ``engine`` = ``npu<id>`` (``npu<id>/chip<c>`` on multi-chip layouts): driver_version (text, the
header ``Version:``), npu_health (text), npu_model (text), power_w, temp_c, aicore_pct, hbm_used_mb,
hbm_total_mb, mem_used_mb, mem_total_mb, npu_process_count (when the process table covers that NPU), and
from ``-t board``: firmware_version, driver_version (``Software Version``), npu_compatibility,
faulty_chip_count; from ``-t health``: npu_health.
"""

from __future__ import annotations

import polars as pl

from diagnose.scan.fastregex import dfa_safe
from diagnose.ingest.nodes import node_from_path
from diagnose.model import conform_records, conform_signals, empty_signals
from diagnose.parsers.lineframe import FileContext

KIND = "npu-smi"

HEADER = r"npu-smi\s+(?P<tool>\S+)\s+Version:\s*(?P<ver>\S+)"
TABLE_HEAD = r"^\|\s*NPU\s+Name\s*\|\s*Health"
CHIP_HEAD = dfa_safe(r"^\|\s*Chip\b(?P<rest>[^|]*)\|\s*Bus-Id")
PROC_HEAD = r"^\|\s*NPU\s+Chip\s*\|\s*Process id"
BORDER = r"^\+[-=+]+\+?$"
# First row of a device: `| 0     910B2C  | OK  | 88.3   34   0    / 0 |` (power may be `-` or `NA`).
ROW1 = (
    r"^\|\s*(?P<npu>\d+)\s+(?P<name>\S+)\s*\|\s*(?P<health>[A-Za-z0-9]+)\s*\|"
    r"\s*(?P<power>[-\w.]+)\s+(?P<temp>[-\w.]+)\s+(?P<hpu>\d+)\s*/\s*(?P<hpt>\d+)\s*\|$"
)
# Chip row: `| 0  [0] | 0000:5A:00.0 | 0   0 / 0   3406 / 65536 |` (310P: one memory pair).
ROW2 = (
    r"^\|\s*(?P<chip>\d+)(?:\s+(?P<phy>\d+))?\s*\|"
    r"\s*(?P<bus>[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*\|"
    r"\s*(?P<aicore>[-\w.]+)\s+(?P<mu>\d+)\s*/\s*(?P<mt>\d+)(?:\s+(?P<hu>\d+)\s*/\s*(?P<ht>\d+))?\s*\|$"
)
PROC = (
    r"^\|\s*(?P<npu>\d+)\s+(?P<chip>\d+)\s*\|\s*(?P<pid>\d+)\s*\|\s*(?P<pname>[^|]*?)\s*\|"
    r"\s*(?P<pmem>\d+)\s*\|$"
)
BOARD_HEAD = r"^\s*(?:NPU ID|Firmware Version|Software Version)\s+:"
NO_PROC = r"No running processes found in NPU\s+(?P<npu>\d+)"
# `key : value` lines of `-t board` / `-t health` / `-t common` output.
KV = r"^\s*(?P<key>[A-Za-z][A-Za-z0-9 ()/._-]*?)\s+:\s*(?P<val>.*?)\s*$"
# `npu-smi info -t board -i 3 [-c 0]` on a prompt or comment line: the device of the key/value block below.
CMD_DEV = r"npu-smi\s+info\s+-t\s+\w[\w-]*\s+-i\s+(?P<i>\d+)(?:\s+-c\s+(?P<c>\d+))?"
# Shell prompts (`[root@node-1 ~]#`, with a clock in front: `[032035 al@maas2 ~]$`, `root@node-1:~#`) and
# `tail`/`head` file banners that name the host of what follows.
PROMPT = (
    r"^(?:\([\w.-]+\)\s*)?(?:\[(?:[\w:.-]+\s+)?[\w.-]+@(?P<h1>[\w.-]+)[ :][^\]]*\]\s*[#$]"
    r"|[\w.-]+@(?P<h2>[\w.-]+):[^#$\s]*\s*[#$])"
)
BANNER = r"^==>\s*(?P<path>.+?)\s*<==\s*$"

_BOARD_TEXT = {
    "Firmware Version": "firmware_version",
    "Software Version": "driver_version",
    "Compatibility": "npu_compatibility",
    "Health Status": "npu_health",
}
_BOARD_NUM = {"Faulty Chip Count": "faulty_chip_count"}


def _int(expr: pl.Expr) -> pl.Expr:
    return expr.cast(pl.Int64, strict=False)


def _num(expr: pl.Expr) -> pl.Expr:
    return expr.cast(pl.Float64, strict=False)


def parse_tables(lines: pl.DataFrame, ctx: FileContext) -> tuple[pl.DataFrame, pl.DataFrame]:
    text = pl.col("text")
    r1 = text.str.extract_groups(ROW1).struct.field
    r2 = text.str.extract_groups(ROW2).struct.field
    pr = text.str.extract_groups(PROC).struct.field
    kv = text.str.extract_groups(KV).struct.field
    cmd = text.str.extract_groups(CMD_DEV).struct.field
    frame = lines.with_columns(
        _hdr_ver=text.str.extract(HEADER, 2).str.to_lowercase(),
        _table=text.str.contains(TABLE_HEAD).cast(pl.Int32).cum_sum(),
        _chiphead=text.str.extract(CHIP_HEAD, 1),
        _is_r1=r1("npu").is_not_null(),
        _is_r2=r2("chip").is_not_null(),
        _is_proc=pr("pid").is_not_null(),
        _noproc=_int(text.str.extract(NO_PROC, 1)),
        _r1_npu=_int(r1("npu")),
        _name=r1("name"),
        _health=r1("health").str.replace(r"^0K$", "OK"),
        _power=_num(r1("power")),
        _temp=_num(r1("temp")),
        _chip=_int(r2("chip")),
        _aicore=_num(r2("aicore")),
        _mu=_num(r2("mu")),
        _mt=_num(r2("mt")),
        _hu=_num(r2("hu")),
        _ht=_num(r2("ht")),
        _p_npu=_int(pr("npu")),
        _p_chip=_int(pr("chip")),
        _key=kv("key"),
        _val=kv("val"),
        _cmd_npu=_int(cmd("i")),
        _cmd_chip=_int(cmd("c")),
        _host=pl.coalesce(text.str.extract(PROMPT, 1), text.str.extract(PROMPT, 2)),
        _banner=text.str.extract(BANNER, 1),
    )
    # The node of each line: the last prompt/banner above it, used only when the file names several hosts.
    banners = frame["_banner"].drop_nulls().unique().to_list()
    banner_node = {b: node_from_path(b if "/" in b else b + "/x") for b in banners}
    frame = frame.with_columns(
        _where=pl.coalesce(
            pl.col("_host"), pl.col("_banner").replace_strict(banner_node, default=None, return_dtype=pl.String)
        )
    ).with_columns(_where=pl.col("_where").forward_fill())
    hosts = frame["_where"].drop_nulls().unique()
    if hosts.len() == 1 and ctx.node is None:
        node = pl.lit(hosts[0], pl.String)  # one host named: the lines above its first prompt are its too
    elif hosts.len() > 1 or ctx.node is None:
        node = pl.coalesce(pl.col("_where"), pl.lit(ctx.node, pl.String))
    else:
        node = pl.lit(ctx.node, pl.String)
    frame = frame.with_columns(node=node)
    # A device opens on its first row; its chip row follows. The NPU id of a chip row comes from the row above.
    frame = frame.with_columns(
        _npu=pl.when(pl.col("_is_r1")).then(pl.col("_r1_npu")).when(pl.col("_is_r2")).then(
            pl.col("_r1_npu").shift(1)
        ),
        _chip_of=pl.when(pl.col("_is_r1") & pl.col("_is_r2").shift(-1).fill_null(False))
        .then(pl.col("_chip").shift(-1))
        .when(pl.col("_is_r2"))
        .then(pl.col("_chip")),
        _driver=pl.col("_hdr_ver").forward_fill(),
        # A table is multi-chip when its chip header has a second column (Phy-ID, Device) or a chip id > 0.
        _multi=(
            pl.col("_chiphead").str.strip_chars().str.len_chars().fill_null(0).max().over("_table") > 0
        )
        | (pl.col("_chip").max().over("_table").fill_null(0) > 0),
    )
    engine = (
        pl.when(pl.col("_multi") & pl.col("_chip_of").is_not_null())
        .then(pl.format("npu{}/chip{}", pl.col("_npu"), pl.col("_chip_of")))
        .otherwise(pl.format("npu{}", pl.col("_npu")))
    )
    frame = frame.with_columns(_engine=pl.when(pl.col("_npu").is_not_null()).then(engine))

    # Board/health key-value blocks: the device is the last `NPU ID : n` (or the command's -i) above.
    is_kv = pl.col("_key").is_not_null() & ~text.str.starts_with("|")
    kv_npu = pl.when(is_kv & (pl.col("_key") == "NPU ID")).then(_int(pl.col("_val")))
    kv_chip = pl.when(is_kv & (pl.col("_key") == "Chip ID")).then(_int(pl.col("_val")))
    frame = frame.with_columns(
        _kv=is_kv,
        _kv_npu=pl.coalesce(kv_npu, pl.col("_cmd_npu")).forward_fill(),
        _kv_chip=pl.when(pl.col("_cmd_npu").is_not_null()).then(pl.col("_cmd_chip")).otherwise(kv_chip),
    ).with_columns(_kv_chip=pl.col("_kv_chip").forward_fill().over(pl.col("_kv_npu").fill_null(-1)))

    parsed = (
        pl.col("_is_r1")
        | pl.col("_is_r2")
        | pl.col("_is_proc")
        | pl.col("_noproc").is_not_null()
        | pl.col("_hdr_ver").is_not_null()
        | text.str.contains(TABLE_HEAD)
        | pl.col("_chiphead").is_not_null()
        | text.str.contains(PROC_HEAD)
        | text.str.contains(BORDER)
        | (pl.col("_kv") & pl.col("_kv_npu").is_not_null())
    )
    device = pl.coalesce(
        pl.col("_npu"),
        pl.col("_p_npu"),
        pl.col("_noproc"),
        pl.when(pl.col("_kv")).then(pl.col("_kv_npu")),
    ).cast(pl.Int32)
    frame = frame.with_columns(parsed=parsed, device=device)
    records = conform_records(
        frame.with_columns(
            file=pl.lit(ctx.path),
            source=pl.lit(KIND),
            ts=pl.lit(None, pl.Datetime("us")),
            year_known=pl.lit(False),
            component=pl.when(pl.col("parsed")).then(pl.lit("npu-smi")),
            message=text,
            event=pl.col("line"),
        )
    )
    signals = _signals(frame, ctx)
    return records, signals


def _sig(frame: pl.DataFrame, ctx: FileContext, name: str, engine: pl.Expr, value=None, text=None) -> pl.DataFrame:
    return frame.select(
        file=pl.lit(ctx.path),
        line=pl.col("line"),
        source=pl.lit(KIND),
        node=pl.col("node"),
        ts=pl.lit(None, pl.Datetime("us")),
        engine=engine,
        signal=pl.lit(name),
        value=value if value is not None else pl.lit(None, pl.Float64),
        text=text if text is not None else pl.lit(None, pl.String),
    )


def _signals(frame: pl.DataFrame, ctx: FileContext) -> pl.DataFrame:
    out = []
    eng = pl.col("_engine")
    r1 = frame.filter(pl.col("_is_r1"))
    out += [
        _sig(r1, ctx, "npu_health", eng, text=pl.col("_health")),
        _sig(r1, ctx, "npu_model", eng, text=pl.col("_name")),
        _sig(r1, ctx, "power_w", eng, value=pl.col("_power")),
        _sig(r1, ctx, "temp_c", eng, value=pl.col("_temp")),
    ]
    r2 = frame.filter(pl.col("_is_r2"))
    out += [
        _sig(r2, ctx, "aicore_pct", eng, value=pl.col("_aicore")),
        _sig(r2, ctx, "hbm_used_mb", eng, value=pl.col("_hu")),
        _sig(r2, ctx, "hbm_total_mb", eng, value=pl.when(pl.col("_ht") > 0).then(pl.col("_ht"))),
        _sig(r2, ctx, "mem_used_mb", eng, value=pl.when(pl.col("_mt") > 0).then(pl.col("_mu"))),
        _sig(r2, ctx, "mem_total_mb", eng, value=pl.when(pl.col("_mt") > 0).then(pl.col("_mt"))),
    ]
    # The driver version of the table header, once per device, at the header line.
    headers = frame.filter(pl.col("_hdr_ver").is_not_null()).select(
        "line", "node", "_hdr_ver", _table=pl.col("_table") + 1
    )
    devices = r2.select("_table", "_engine").unique(maintain_order=True)
    drv = headers.join(devices, on="_table", how="left").with_columns(
        _engine=pl.coalesce(pl.col("_engine"), pl.lit("npu-smi"))
    )
    out.append(_sig(drv, ctx, "driver_version", pl.col("_engine"), text=pl.col("_hdr_ver")))
    out.append(_process_counts(frame, r2, ctx))
    # -t board / -t health key/value lines.
    kvs = frame.filter(pl.col("_kv") & pl.col("_kv_npu").is_not_null())
    kv_engine = pl.when(pl.col("_kv_chip").is_not_null()).then(
        pl.format("npu{}/chip{}", pl.col("_kv_npu"), pl.col("_kv_chip"))
    ).otherwise(pl.format("npu{}", pl.col("_kv_npu")))
    for key, name in _BOARD_TEXT.items():
        sub = kvs.filter((pl.col("_key") == key) & (pl.col("_val") != "") & (pl.col("_val") != "NA"))
        val = pl.col("_val").str.to_lowercase() if name.endswith("_version") else pl.col("_val")
        out.append(_sig(sub, ctx, name, kv_engine, text=val))
    for key, name in _BOARD_NUM.items():
        sub = kvs.filter(pl.col("_key") == key)
        out.append(_sig(sub, ctx, name, kv_engine, value=_num(pl.col("_val"))))
    frame_out = pl.concat([conform_signals(x) for x in out], how="vertical_relaxed") if out else empty_signals()
    has_value = pl.col("value").is_not_null() & ~pl.col("value").is_nan()
    frame_out = frame_out.filter(has_value | pl.col("text").is_not_null())
    return conform_signals(frame_out.sort("line", maintain_order=True))


def _process_counts(frame: pl.DataFrame, r2: pl.DataFrame, ctx: FileContext) -> pl.DataFrame:
    """npu_process_count per device, at its chip row, for NPUs that the process table covers."""
    procs = frame.filter(pl.col("_is_proc")).select(
        "_table", _pn=pl.col("_p_npu"), _pc=pl.col("_p_chip")
    )
    covered = pl.concat(
        [
            procs.select("_table", "_pn"),
            frame.filter(pl.col("_noproc").is_not_null()).select("_table", _pn=pl.col("_noproc")),
        ]
    ).unique()
    # The process table follows the device table it belongs to (same table number: no new `NPU Name` header).
    devs = r2.select("line", "node", "_table", "_engine", "_multi", _pn=pl.col("_npu"), _pc=pl.col("_chip"))
    devs = devs.join(covered, on=["_table", "_pn"], how="semi")
    per_chip = procs.group_by("_table", "_pn", "_pc").len()
    per_npu = procs.group_by("_table", "_pn").agg(pl.len().alias("_n_npu"))
    devs = devs.join(per_chip, on=["_table", "_pn", "_pc"], how="left").join(per_npu, on=["_table", "_pn"], how="left")
    count = pl.when(pl.col("_multi")).then(pl.col("len")).otherwise(pl.col("_n_npu")).fill_null(0).cast(pl.Float64)
    return _sig(devs, ctx, "npu_process_count", pl.col("_engine"), value=count)


SIGNALS: dict[str, str] = {
    "driver_version": "Ascend driver (HDK) version: npu-smi header `Version:`, `-t board` Software Version (text, lower-case)",
    "firmware_version": "NPU firmware version (`npu-smi info -t board` Firmware Version)",
    "npu_health": "npu-smi Health of one NPU/chip (text: OK, Warning, Alarm, Critical, UNKNOWN); engine npu<id>[/chip<c>]",
    "npu_model": "NPU name in npu-smi (text: 910B2C, Ascend910, 310P3)",
    "npu_compatibility": "driver/firmware Compatibility from `npu-smi info -t board` (text: OK, NOK, UNKNOWN)",
    "faulty_chip_count": "Faulty Chip Count from `npu-smi info -t board`",
    "hbm_used_mb": "HBM in use on one NPU/chip, MB (npu-smi HBM-Usage)",
    "hbm_total_mb": "HBM capacity of one NPU/chip, MB",
    "mem_used_mb": "device memory (DDR) in use, MB (npu-smi Memory-Usage; the only pair on 310P)",
    "mem_total_mb": "device memory (DDR) capacity, MB",
    "aicore_pct": "AI Core utilisation in percent (npu-smi AICore(%))",
    "power_w": "NPU power draw, W",
    "temp_c": "NPU temperature, degrees C",
    "npu_process_count": "processes npu-smi lists on one NPU/chip (0 = `No running processes found`), at its chip row",
}
