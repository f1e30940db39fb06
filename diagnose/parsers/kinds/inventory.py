"""The two inventory kinds, ``npu-smi`` and ``version-info``: support pastes mix ``npu-smi info`` tables with
``cat version.info`` and ``ls -l`` output, so each kind's parser reads the other's lines too. The line grammars
are in ``npusmi`` (tables, board key/values) and ``versions`` (version files and start-up version lines);
this module joins them and declares both kinds."""

from __future__ import annotations

import polars as pl

from diagnose.parsers.kinds import npusmi, versions
from diagnose.parsers.lineframe import FileContext
from diagnose.parsers.kind import Location, SourceKind


def parse_npusmi(lines: pl.DataFrame, ctx: FileContext) -> tuple[pl.DataFrame, pl.DataFrame]:
    """npu-smi output; version lines pasted around it (``cat version.info``) are read too."""
    records, signals = npusmi.parse_tables(lines, ctx)
    _, v_signals = versions.parse_versions(lines, ctx)
    mine = records.filter(pl.col("parsed")).select("line")
    v_signals = v_signals.join(mine, on="line", how="anti").with_columns(source=pl.lit(npusmi.KIND))
    if v_signals.height:
        signals = pl.concat([signals, v_signals], how="vertical_relaxed").sort("line", maintain_order=True)
        extra = v_signals.select("line").unique()
        records = records.with_columns(parsed=pl.col("parsed") | pl.col("line").is_in(extra["line"].implode()))
    return records, signals


def parse_versions(lines: pl.DataFrame, ctx: FileContext) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Version lines; an ``npu-smi info`` table pasted in between is read by the npu-smi grammar."""
    records, signals = versions.parse_versions(lines, ctx)
    if lines.height and lines["text"].str.contains(npusmi.TABLE_HEAD + "|" + npusmi.BOARD_HEAD).any():
        t_records, t_signals = npusmi.parse_tables(lines, ctx)
        theirs = t_records.filter(pl.col("parsed")).select("line", _dev=pl.col("device"))
        signals = pl.concat(
            [signals.join(theirs, on="line", how="anti"), t_signals.with_columns(source=pl.lit(versions.KIND))],
            how="vertical_relaxed",
        ).sort("line", maintain_order=True)
        records = records.join(theirs, on="line", how="left").with_columns(
            parsed=pl.col("parsed") | pl.col("_dev").is_not_null() | pl.col("line").is_in(theirs["line"].implode()),
            device=pl.coalesce(pl.col("device"), pl.col("_dev")),
        ).drop("_dev")
    return records, signals


def _derive(signals: pl.DataFrame, series: pl.DataFrame | None) -> pl.DataFrame:
    return versions.derive_signals(signals)


NPU_SMI = SourceKind(
    name=npusmi.KIND,
    parse=parse_npusmi,
    summary="`npu-smi info` (A2, A3, 310P, wide layouts), its process table, `-t board|health` output",
    file_name=r"(?i)npu[-_]?smi|npu[-_]?info",
    name_trust=2,
    # table header, column heads, device and chip rows, the process table, `-t board|health` key/values
    sniff=r"npu-smi \d|^\|\s*NPU\s+Name\s*\|\s*Health|^\|\s*Chip\b[^|]*\|\s*Bus-Id|^\+=+\+"
    r"|^\|\s*\d+\s+\S+\s*\|\s*(?:OK|0K|Warning|Alarm|Critical|UNKNOWN)\s*\|"
    r"|^\|\s*\d+(?:\s+\d+)?\s*\|\s*[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\w\s*\|"
    r"|^\|\s*NPU\s+Chip\s*\|\s*Process id|No running processes found in NPU"
    r"|^\s*(?:NPU ID|Software Version|Firmware Version|Compatibility|Chip Count|Faulty Chip Count|Health Status)\s+:",
    signals=npusmi.SIGNALS,
    sniff_rank=50,
    locations=(Location(command=("npu-smi", "info"), save_as="npu-smi-info.txt", source="npu-smi"),),
)

VERSION_INFO = SourceKind(
    name=versions.KIND,
    parse=parse_versions,
    summary="driver/firmware/CANN/ATB/MindIE version files, `ls -l` of toolkit links, pasted version inventories",
    file_name=r"^(?:version\.info|ascend_toolkit_install\.info|version\.cfg|.*_install\.info)$",
    name_trust=3,
    # version.info / *_install.info / version.cfg keys, ATB/MindIE version.info lines, `latest -> ../8.2.RC2/...`
    sniff=r"^\s*(?:Version|version|package_name|package_version|[Ii]nnerversion|compatible_version\w*"
    r"|\w+_(?:running|installed)_version|ascendhal_version)\s*="
    r"|^\s*(?:Ascend-cann-atb|Ascend-mindie|ATB-Models Version|mindie-(?:rt|torch|service|llm|sd))\s*:"
    r"|^l[rwx-]{9}.*\s->\s+(?:\.\./)?(?:cann-)?\d+\.\d+\.(?:RC|T)?\d"
    r"|^\s*vLLM (?:Ascend )?Version\s*:",
    signals=versions.SIGNALS,
    bundle_pass=_derive,
    sniff_rank=60,
    # The install tree's version files (driver, firmware, CANN toolkit, ATB, MindIE), under --sysroot.
    locations=(Location(roots=("$ASCEND_HOME", "/usr/local/Ascend"),
                        patterns=("driver/version.info", "firmware/version.info", "ascend-toolkit/latest/version.cfg",
                                  "ascend-toolkit/latest/*_install.info", "ascend-toolkit/latest/*/*_install.info",
                                  "nnal/atb/latest/version.info", "mindie/latest/version.info",
                                  "mindie/latest/*/version.info"),
                        source="Ascend install layout"),),
)

SOURCES = (NPU_SMI, VERSION_INFO)
