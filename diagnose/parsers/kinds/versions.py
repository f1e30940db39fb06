"""Version files and pasted version inventories (the CANN, driver and MindIE install layouts; vLLM collect_env).

Reads, in any mix (a support paste often concatenates several ``cat`` and ``ls -l`` outputs):

- driver / firmware ``version.info``: ``Version=24.1.rc2.2`` (the driver when the path or the number says
  so: HDK versions are ``YY.x``; firmware versions are ``7.x``);
- ``ascend_toolkit_install.info`` and the other ``*_install.info``: ``package_name=`` + ``version=``;
- ``<toolkit>/latest/version.cfg``: ``runtime_running_version=[7.6.T13.0.B094:8.0.T63]`` (the CANN version
  is after the colon);
- ``ls -l`` of ``latest/``: ``runtime -> ../8.2.RC2/runtime`` (what ``latest`` really points at);
- NNAL/ATB, ATB-Models and MindIE ``version.info`` (``Ascend-cann-atb : 8.0.T63``,
  ``ATB-Models Version : 2.0.T3.B010``, ``Ascend-mindie : MindIE 2.0.T3.B010``);
- the versions that vLLM, vllm-ascend, torch_npu, CANN and MindIE print at start-up or in ``collect_env``
  (``vLLM Version: 0.9.1``, ``vLLM Ascend Version: 0.9.1rc1``, ``torch-npu==2.5.1.post1``, ``CANN version``).

The component a line belongs to comes from the nearest path above it (a ``# cat /usr/local/Ascend/...``
or prompt line, a ``==> file <==`` banner) or else from the file's own path.

Signals (text): driver_version, firmware_version, cann_version, atb_version, atb_models_version,
mindie_version, vllm_version, vllm_ascend_version, torch_npu_version; ``engine`` names the component
(``toolkit/version.cfg``, ``toolkit/latest``, ``nnal/atb``, ``driver``, ...).

``derive_signals`` runs once over the whole bundle (the version-info kind's bundle pass) and adds, per node: ``cann_generation``
(``8.2`` from ``8.2.RC2``, for every CANN-family version seen) and ``driver_cann_combo``
(``driver=24.1.rc2.2 cann=8.3.RC2``) so that rules can match known bad combinations as plain patterns.
"""

from __future__ import annotations

import polars as pl

from diagnose.scan.fastregex import dfa_safe
from diagnose.ingest.nodes import node_from_path
from diagnose.model import conform_records, conform_signals, empty_signals
from diagnose.parsers.lineframe import FileContext
from diagnose.model.memberpath import segments

KIND = "version-info"

# A CANN-style version: 8.2.RC2, 8.0.T63, 8.5.0, 9.0.1, 8.0.RC3.beta1.
_CANN_VER = r"\d+\.\d+\.(?:RC\d+|T\d+|\d+)(?:\.[A-Za-z0-9]+)?"
_PATH = r"(/(?:usr/local/)?[\w.-]*(?:Ascend|ascend|CANN|cann)[\w./-]*)"
_BANNER = r"^==>\s*(.+?)\s*<==\s*$"

# (signal, regex with one group). Applied to every line; the component decides some of them below.
_TEXT: list[tuple[str, str]] = [
    ("cann_version", r"^\s*\w+_(?:running|installed|upgrade)_version=\[[^\]:]*:(" + _CANN_VER + r")\]"),
    ("atb_version", r"Ascend-cann-atb\s*:\s*(\S+)"),
    ("atb_models_version", r"ATB-Models Version\s*:\s*(\S+)"),
    ("mindie_version", r"Ascend-mindie\s*:\s*(?:MindIE\s+)?(\S+)"),
    ("mindie_version", r"MindIE(?:[ -]Service| Server| LLM)?\s+[Vv]ersion\s*[:=]\s*v?(\d[\w.]*)"),
    ("vllm_version", r"\bvLLM Version\s*:\s*v?(\d[\w.+-]*)"),
    ("vllm_version", r"^\s*(?:\[pip3?\]\s*)?vllm\s*(?:==|\s{2,})(\d[\w.+-]*)\s*$"),
    ("vllm_ascend_version", r"vLLM Ascend Version\s*:\s*v?(\d[\w.+-]*)"),
    ("vllm_ascend_version", r"^\s*(?:\[pip3?\]\s*)?vllm[-_]ascend\s*(?:==|\s{2,})(\d[\w.+-]*)\s*$"),
    ("torch_npu_version", r"^\s*(?:\[pip3?\]\s*)?torch[-_]npu\s*(?:==|\s{2,})(\d[\w.+-]*)\s*$"),
    ("torch_npu_version", r"torch_npu(?:\.__version__| version)\s*[:=]?\s*(\d[\w.+-]*)"),
    ("cann_version", r"\bCANN[ _][Vv]ersion\s*[:=]?\s*\[?(" + _CANN_VER + r")"),
    ("cann_version", r"CannVersion\s*[:=\[]\s*(" + _CANN_VER + r")"),
    ("firmware_version", r"^\s*Firmware Version\s+:\s*(\S+)"),
    ("driver_version", r"^\s*Software Version\s+:\s*(\S+)"),
    ("driver_version", r"npu-smi\s+\S+\s+Version:\s*(\S+)"),
]

# `latest` symlinks and versioned install folders: `runtime -> ../8.2.RC2/runtime`, `.../cann-8.5.0/...`.
_LINK = r"\s->\s+(?:\.\./|\./|/[\w./-]*/)?(?:cann-)?(" + _CANN_VER + r")(?:/|\s*$)"

# Component from a path: first match wins.
_COMPONENTS: list[tuple[str, str]] = [
    ("atb-models", r"atb-models|atb_models"),
    ("nnal", r"nnal|/atb/"),
    ("mindie", r"(?i)mindie"),
    ("driver", r"driver"),
    ("firmware", r"firmware"),
    ("nnae", r"nnae"),
    ("toolkit", r"ascend-toolkit|ascend_toolkit|toolkit|/cann|CANN|opp|version\.cfg"),
]

VERSION_SIGNALS = (
    "driver_version", "firmware_version", "cann_version", "atb_version", "atb_models_version", "mindie_version",
    "vllm_version", "vllm_ascend_version", "torch_npu_version",
)


def _component(col: pl.Expr) -> pl.Expr:
    expr = pl.lit(None, pl.String)
    for name, pattern in reversed(_COMPONENTS):
        expr = pl.when(col.str.contains(dfa_safe(pattern))).then(pl.lit(name)).otherwise(expr)
    return expr


def _own_path(path: str) -> str:
    """The part of a file's path that may name its component: the last folders, and the name of a known file."""
    parts = segments(path) or [""]
    base = parts[-1]
    known = base if base in ("version.cfg",) or base.endswith("_install.info") else ""
    return "/" + "/".join(parts[-5:-1]) + "/" + known


def parse_versions(lines: pl.DataFrame, ctx: FileContext) -> tuple[pl.DataFrame, pl.DataFrame]:
    text = pl.col("text")
    own = _component(pl.lit(_own_path(ctx.path), pl.String))
    banner = text.str.extract(_BANNER, 1)
    where = pl.coalesce(banner, text.str.extract(_PATH, 1))
    frame = lines.with_columns(
        _comp=_component(where),
        _pkg=text.str.extract(r"^\s*package_name\s*=\s*(\S+)", 1),
        _banner_node=banner,
    )
    frame = frame.with_columns(
        _comp=pl.coalesce(pl.col("_comp").forward_fill(), own.fill_null(pl.lit(None, pl.String))),
        _pkg=pl.col("_pkg").forward_fill(),
    )
    # Nodes from `==> node-1/version.info <==` banners, when a paste holds several.
    banners = frame["_banner_node"].drop_nulls().unique().to_list()
    bnode = {b: node_from_path(b) for b in banners}
    frame = frame.with_columns(
        node=pl.coalesce(
            pl.col("_banner_node").replace_strict(bnode, default=None, return_dtype=pl.String).forward_fill(),
            pl.lit(ctx.node, pl.String),
        )
    )
    comp = pl.col("_comp")
    pkg = pl.col("_pkg").fill_null("")
    # `Version=` (capital): the driver or firmware version.info. `version=` (lower): an *_install.info.
    cap = text.str.extract(r"^\s*Version\s*=\s*(\S+)", 1)
    major = cap.str.extract(r"^(\d+)", 1).cast(pl.Int32, strict=False)
    is_fw = (comp == "firmware").fill_null(False) | ((comp != "driver").fill_null(True) & (major < 20))
    low = text.str.extract(r"^\s*version\s*=\s*(\S+)", 1)
    low_sig = (
        pl.when(pkg.str.contains(r"(?i)atb|nnal") | (comp == "nnal"))
        .then(pl.lit("atb_version"))
        .when(pkg.str.contains(r"(?i)mindie") | (comp == "mindie"))
        .then(pl.lit("mindie_version"))
        .when(pkg.str.contains(r"(?i)cann|toolkit|nnae|kernels|opp") | comp.is_in(["toolkit", "nnae"]))
        .then(pl.lit("cann_version"))
        .when(comp == "driver")
        .then(pl.lit("driver_version"))
        .when(comp == "firmware")
        .then(pl.lit("firmware_version"))
    )
    link = text.str.extract(_LINK, 1)
    link_sig = (
        pl.when(comp == "nnal")
        .then(pl.lit("atb_version"))
        .when(comp == "mindie")
        .then(pl.lit("mindie_version"))
        .otherwise(pl.lit("cann_version"))
    )
    label = pl.coalesce(comp, pl.lit("bundle"))
    pieces = [
        frame.select(
            "line", "node", _sig=pl.when(is_fw).then(pl.lit("firmware_version")).otherwise(pl.lit("driver_version")),
            _val=cap.str.to_lowercase(), _eng=label,
        ),
        frame.select("line", "node", _sig=low_sig, _val=low, _eng=pl.format("{}/install.info", label)),
        frame.select("line", "node", _sig=link_sig, _val=link, _eng=pl.format("{}/latest", label)),
    ]
    for name, pattern in _TEXT:
        value = text.str.extract(dfa_safe(pattern), 1)
        if name in ("driver_version", "firmware_version"):
            value = value.str.to_lowercase()
        eng = pl.format("{}/version.cfg", label) if "running" in pattern else label
        pieces.append(frame.select("line", "node", _sig=pl.lit(name), _val=value, _eng=eng))
    found = pl.concat(pieces, how="vertical_relaxed").filter(
        pl.col("_val").is_not_null() & pl.col("_sig").is_not_null() & (pl.col("_val") != "")
    )
    found = found.unique(subset=["line", "_sig"], keep="first", maintain_order=True).sort("line", maintain_order=True)
    found = found.with_columns(
        _val=pl.when(pl.col("_sig").is_in(["driver_version", "firmware_version"]))
        .then(pl.col("_val").str.to_lowercase())
        .otherwise(pl.col("_val"))
    )
    signals = conform_signals(
        found.select(
            file=pl.lit(ctx.path), line="line", source=pl.lit(KIND), node="node", ts=pl.lit(None, pl.Datetime("us")),
            engine="_eng", signal="_sig", value=pl.lit(None, pl.Float64), text="_val",
        )
    )
    kv = text.str.contains(r"^\s*[\w.-][\w .()/-]*?\s*[=:]\s*\S|^\s*#\s*cat\s|^\[[\w.-]+@|\s->\s|^total \d+")
    records = conform_records(
        frame.with_columns(
            file=pl.lit(ctx.path), source=pl.lit(KIND), ts=pl.lit(None, pl.Datetime("us")), year_known=pl.lit(False),
            parsed=kv | pl.col("line").is_in(found["line"].implode()), message=text, event=pl.col("line"),
            component=comp,
        )
    )
    return records, signals


def extract_version_signals(records: pl.DataFrame) -> pl.DataFrame:
    """Version signals from any parsed log (start-up lines), for parsers that want them."""
    if records.height == 0:
        return empty_signals()
    pieces = []
    for name, pattern in _TEXT[1:]:  # all but the version.cfg key
        value = records.get_column("message").str.extract(dfa_safe(pattern), 1)
        pieces.append(
            records.select("file", "line", "source", "node", "ts", engine=pl.col("proc"), signal=pl.lit(name))
            .with_columns(value=pl.lit(None, pl.Float64), text=value)
        )
    out = pl.concat(pieces, how="vertical_relaxed").filter(pl.col("text").is_not_null())
    return conform_signals(out)


def derive_signals(signals: pl.DataFrame) -> pl.DataFrame:
    """Bundle-level version facts, appended to ``signals``: cann_generation and driver_cann_combo per node."""
    if signals.height == 0:
        return signals
    try:
        cann = signals.filter(pl.col("signal").is_in(["cann_version", "atb_version"]) & pl.col("text").is_not_null())
        gen = cann.with_columns(
            signal=pl.lit("cann_generation"), text=pl.col("text").str.extract(r"^(\d+\.\d+)\.", 1)
        ).filter(pl.col("text").is_not_null())
        drivers = (
            signals.filter((pl.col("signal") == "driver_version") & pl.col("text").is_not_null())
            .select("node", _drv=pl.col("text").str.to_lowercase())
            .unique(maintain_order=True)
        )
        toolkit = cann.filter(pl.col("signal") == "cann_version")
        combo = toolkit.join(drivers, on="node", how="inner", nulls_equal=True).with_columns(
            signal=pl.lit("driver_cann_combo"), text=pl.format("driver={} cann={}", pl.col("_drv"), pl.col("text"))
        ).drop("_drv")
        combo = combo.unique(subset=["node", "text"], keep="first", maintain_order=True)
        extra = pl.concat([conform_signals(gen), conform_signals(combo)], how="vertical_relaxed")
        return pl.concat([signals, extra.select(signals.columns)], how="vertical_relaxed")
    except Exception:  # derived facts are a bonus: never lose the parsed signals over them
        return signals


SIGNALS: dict[str, str] = {
    "driver_version": "Ascend driver (HDK) version: driver version.info, npu-smi header (text, lower-case)",
    "firmware_version": "NPU firmware version (firmware version.info, `-t board` Firmware Version)",
    "cann_version": "CANN version (toolkit install.info, version.cfg, `latest ->` symlinks, start-up lines; text)",
    "cann_generation": "major.minor of every CANN-family version seen (derived per bundle; text, e.g. 8.2)",
    "driver_cann_combo": "driver and CANN version seen on one node (derived; text `driver=24.1.rc2.2 cann=8.3.RC2`)",
    "atb_version": "NNAL/ATB version (`Ascend-cann-atb : 8.0.T63`; text)",
    "atb_models_version": "ATB-Models version (text)",
    "mindie_version": "MindIE version (`Ascend-mindie : MindIE 2.0.T3.B010`; text)",
    "vllm_version": "vLLM version (collect_env `vLLM Version:`, pip lines; text)",
    "vllm_ascend_version": "vllm-ascend version (collect_env `vLLM Ascend Version:`, pip lines; text)",
    "torch_npu_version": "torch_npu version (pip lines, `torch_npu version`; text)",
}
