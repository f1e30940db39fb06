"""npu-smi tables and board output, version files, start-up version lines, and the versions/device rules."""

from __future__ import annotations

import polars as pl
import pytest
from helpers import said

import helpers
from diagnose.engine.match_kinds.mismatch import match_mismatch
from diagnose.parsers.registry import sniff
from diagnose.model import conform_signals
from diagnose.parsers.registry import signal_docs
from diagnose.parsers.kinds import npusmi, versions
from diagnose.pipeline import RuleFilters, Settings, analyze, read_paths

A2 = """\
[root@node-1 ~]# npu-smi info
+------------------------------------------------------------------------------------------------+
| npu-smi 24.1.rc2.2               Version: 24.1.rc2.2                                           |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     910B2C              | OK            | 92.1        38                0    / 0             |
| 0                         | 0000:5A:00.0  | 0           0    / 0          61870/ 65536         |
+===========================+===============+====================================================+
| 1     910B2C              | Warning       | 95.4        41                0    / 0             |
| 0                         | 0000:5B:00.0  | 12          0    / 0          58112/ 65536         |
+===========================+===============+====================================================+
+---------------------------+---------------+----------------------------------------------------+
| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |
+===========================+===============+====================================================+
| No running processes found in NPU 0                                                            |
+===========================+===============+====================================================+
| 1       0                 | 2385710       | python3.10               | 54712                   |
+===========================+===============+====================================================+
"""

A3 = """\
+------------------------------------------------------------------------------------------------+
| npu-smi 24.1.rc3.7               Version: 24.1.rc3.7                                           |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip  Phy-ID              | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     Ascend910           | OK            | 171.2       35                0    / 0             |
| 0     0                   | 0000:9D:00.0  | 0           0    / 0          3398 / 65536         |
+------------------------------------------------------------------------------------------------+
| 0     Ascend910           | OK            | -           35                0    / 0             |
| 1     1                   | 0000:9F:00.0  | 0           0    / 0          3187 / 65536         |
+===========================+===============+====================================================+
| 1     Ascend910           | OK            | 180.0       36                0    / 0             |
| 0     2                   | 0000:99:00.0  | 0           0    / 0          3402 / 65536         |
+------------------------------------------------------------------------------------------------+
| 1     Ascend910           | OK            | -           36                0    / 0             |
| 1     3                   | 0000:9B:00.0  | 0           0    / 0          3190 / 65536         |
+===========================+===============+====================================================+
+---------------------------+---------------+----------------------------------------------------+
| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |
+===========================+===============+====================================================+
| No running processes found in NPU 0                                                            |
+===========================+===============+====================================================+
| No running processes found in NPU 1                                                            |
+===========================+===============+====================================================+
"""

P310 = """\
+--------------------------------------------------------------------------------------------------------+
| npu-smi 25.2.0                                   Version: 25.2.0                                       |
+-------------------------------+-----------------+------------------------------------------------------+
| NPU     Name                  | Health          | Power(W)     Temp(C)           Hugepages-Usage(page) |
| Chip    Device                | Bus-Id          | AICore(%)    Memory-Usage(MB)                        |
+===============================+=================+======================================================+
| 4       310P3                 | OK              | NA           47                0     / 0             |
| 0       0                     | 0000:01:00.0    | 0            1602 / 44280                            |
+-------------------------------+-----------------+------------------------------------------------------+
| 4       310P3                 | OK              | NA           45                0     / 0             |
| 1       1                     | 0000:01:00.0    | 0            1388 / 43693                            |
+===============================+=================+======================================================+
"""

WIDE = """\
+------------------------------------------------------------------------------------------------------------------+
| npu-smi 26.0.rc2                            Version: 26.0.rc2                                                    |
+---------------------------+---------------+----------------------------------------------------------------------+
| NPU   Name                | Health        | Power(W)             Temp(C)                 Hugepages-Usage(page)   |
| Chip  Phy-ID              | Bus-Id        | AICore(%)            Memory-Usage(MB)        HBM-Usage(MB)           |
+===========================+===============+======================================================================+
| 0     Ascend910           | OK            | 160.4                34                      0    / 0                |
| 0     0                   | 0000:9D:00.0  | 0                    0    / 0                3421 / 65536            |
+------------------------------------------------------------------------------------------------------------------+
| 0     Ascend910           | OK            | -                    34                      0    / 0                |
| 1     1                   | 0000:9F:00.0  | 0                    0    / 0                2870 / 65536            |
+===========================+===============+======================================================================+
"""

# A paste whose spacing was collapsed, with a zero typed for the O of OK.
REFLOWED = """\
| npu-smi 25.0.rc1.1            Version: 25.0.rc1.1 |
| NPU Name | Health | Power(W) Temp(C) Hugepages-Usage(page)|
| Chip | Bus-Id | AICore(%) Memory-Usage(MB) HBM-Usage(MB) |
+======================================================================+
| 0 910B3 | 0K | 89.2 39 0 / 0 |
| 0 | 0000:81:00.0 | 0 0 / 0 1460/ 65536 |
"""

BOARD = """\
[root@node-0 ~]# npu-smi info -t board -i 2
        NPU ID                         : 2
        Product Name                   : IT21PDDA01
        Model                          : NA
        Manufacturer                   : Huawei
        Serial Number                  : 102xxxxxxxxx
        Software Version               : 24.1.RC3.7
        Firmware Version               : 7.5.0.5.220
        Compatibility                  : NOK
        Board ID                       : 0x33
        PCB ID                         : B
        BOM ID                         : 1
        Chip Count                     : 1
        Faulty Chip Count              : 1
[root@node-0 ~]# npu-smi info -t health -i 3
        Health Status                  : Alarm
        Error Code                     : 80E01801
        Error Information              : node type=SoC, sensor type=Memory, event state=uncorrectable ECC
"""


def parse(kind: str, text: str, path: str = "bundle/file.txt", node: str | None = None):
    return helpers.parse(kind, text.splitlines(), path, node)


sig = helpers.values_of


# --- npu-smi ------------------------------------------------------------------------------------


def test_a2_rows_processes_and_prompt_node():
    records, signals = parse("npu-smi", A2)
    assert records.height == len(A2.splitlines())
    assert records.filter(~pl.col("parsed"))["line"].to_list() == [1]  # the prompt line only
    assert records.filter(pl.col("line") == 11)["device"].to_list() == [1]
    assert set(signals["node"].unique().to_list()) == {"node-1"}
    assert sig(signals, "driver_version", "npu0") == ["24.1.rc2.2"]
    assert sig(signals, "npu_health", "npu1") == ["Warning"]
    assert sig(signals, "power_w", "npu0") == [92.1] and sig(signals, "temp_c", "npu1") == [41.0]
    assert sig(signals, "aicore_pct", "npu1") == [12.0]
    assert sig(signals, "hbm_used_mb", "npu0") == [61870.0] and sig(signals, "hbm_total_mb", "npu0") == [65536.0]
    assert sig(signals, "mem_used_mb") == []  # `0 / 0` is no memory pair
    assert sig(signals, "npu_process_count", "npu0") == [0.0]
    assert sig(signals, "npu_process_count", "npu1") == [1.0]
    # evidence lines: health on the first row, HBM and the process count on the chip row
    hbm = signals.filter((pl.col("signal") == "hbm_used_mb") & (pl.col("engine") == "npu0"))
    assert hbm["line"].to_list() == [9]
    assert signals.filter(pl.col("signal") == "npu_health")["line"].to_list() == [8, 11]


def test_a3_two_chips_per_npu():
    _, signals = parse("npu-smi", A3)
    engines = signals.filter(pl.col("signal") == "hbm_used_mb")["engine"].to_list()
    assert engines == ["npu0/chip0", "npu0/chip1", "npu1/chip0", "npu1/chip1"]
    assert sig(signals, "power_w", "npu0/chip1") == []  # the second chip shows `-`
    assert sig(signals, "power_w", "npu0/chip0") == [171.2]
    assert sig(signals, "hbm_used_mb", "npu1/chip1") == [3190.0]
    assert sig(signals, "npu_process_count", "npu1/chip1") == [0.0]
    assert sig(signals, "npu_model", "npu1/chip0") == ["Ascend910"]
    assert len(sig(signals, "driver_version")) == 4


def test_310p_duo_memory_without_hbm():
    _, signals = parse("npu-smi", P310)
    assert sig(signals, "mem_used_mb", "npu4/chip0") == [1602.0]
    assert sig(signals, "mem_total_mb", "npu4/chip1") == [43693.0]
    assert sig(signals, "hbm_used_mb") == []
    assert sig(signals, "power_w") == []  # NA
    assert sig(signals, "driver_version", "npu4/chip1") == ["25.2.0"]


def test_widened_layout_parses_by_bars_not_columns():
    _, signals = parse("npu-smi", WIDE)
    assert sig(signals, "hbm_used_mb", "npu0/chip1") == [2870.0]
    assert sig(signals, "power_w", "npu0/chip0") == [160.4]
    assert sig(signals, "driver_version", "npu0/chip0") == ["26.0.rc2"]


def test_reflowed_paste_and_zero_k_health():
    _, signals = parse("npu-smi", REFLOWED)
    assert sig(signals, "npu_health", "npu0") == ["OK"]
    assert sig(signals, "hbm_used_mb", "npu0") == [1460.0]
    assert sig(signals, "driver_version", "npu0") == ["25.0.rc1.1"]


def test_board_and_health_output():
    records, signals = parse("npu-smi", BOARD, node="node-0")
    assert sig(signals, "firmware_version", "npu2") == ["7.5.0.5.220"]
    assert sig(signals, "driver_version", "npu2") == ["24.1.rc3.7"]  # lower-cased like the table header
    assert sig(signals, "npu_compatibility", "npu2") == ["NOK"]
    assert sig(signals, "faulty_chip_count", "npu2") == [1.0]
    # `-t health` prints no NPU ID: the device comes from the command line
    assert sig(signals, "npu_health", "npu3") == ["Alarm"]
    assert records.filter(pl.col("line") == 8)["device"].to_list() == [2]


def test_several_nodes_in_one_paste():
    paste = A2 + A2.replace("node-1", "node-0").replace("24.1.rc2.2", "25.0.rc1.1")
    _, signals = parse("npu-smi", paste, path="support/paste.txt")
    drivers = signals.filter(pl.col("signal") == "driver_version").select("node", "text").unique().sort("node")
    assert drivers.rows() == [("node-0", "25.0.rc1.1"), ("node-1", "24.1.rc2.2")]


def test_folder_node_wins_over_a_single_prompt_host():
    _, signals = parse("npu-smi", A2.replace("node-1", "gx4"), path="node-7/npu-smi.txt", node="node-7")
    assert set(signals["node"].to_list()) == {"node-7"}


def test_malformed_and_empty_input_do_not_raise():
    junk = "| 0 910B2C | OK |\n| garbage | 0000:ZZ | x |\n+====\n\x00\nNo running processes found in NPU x\n"
    records, signals = parse("npu-smi", junk)
    assert records.height == 5
    assert signals.filter(pl.col("signal") == "hbm_used_mb").height == 0
    records, signals = parse("npu-smi", "")
    assert records.height == 0 and signals.height == 0


@pytest.mark.parametrize(
    ("name", "text", "kind"),
    [
        ("npu-smi.txt", A2, "npu-smi"),
        ("info.log", A3, "npu-smi"),
        ("a.txt", P310, "npu-smi"),
        ("b.txt", WIDE, "npu-smi"),
        ("c.txt", REFLOWED, "npu-smi"),
        ("board.txt", BOARD, "npu-smi"),
    ],
)
def test_sniff_npu_smi(name, text, kind):
    assert sniff(name, text.splitlines()) == kind


# --- version files ------------------------------------------------------------------------------

DRIVER_INFO = """\
Version=24.1.rc2.2
ascendhal_version=7.35.23
aicpu_version=1.0
Innerversion=V100R001C18SPC001B233
compatible_version=[V100R001C30],[V100R001C13],[V100R001C15],[V100R001C17],[V100R001C18]
compatible_version_fw=[7.0.0,7.2.99]
package_version=24.1.rc2.2
"""

FIRMWARE_INFO = """\
Version=7.5.0.5.220
firmware_version=1.0
package_version=24.1.rc3.7
"""

TOOLKIT_INFO = """\
package_name=Ascend-cann-toolkit
version=8.3.RC2
innerversion=V100R001C23SPC002B210
compatible_version=[V100R001C15],[V100R001C18],[V100R001C19],[V100R001C20],[V100R001C21],[V100R001C23]
arch=x86_64
os=linux
path=/usr/local/Ascend/ascend-toolkit/8.3.RC2/x86_64-linux
"""

VERSION_CFG = """\
# version: 1.0
runtime_running_version=[7.6.T13.0.B094:8.0.T63]
compiler_running_version=[7.6.T13.0.B094:8.0.T63]
opp_kernel_installed_version=[7.6.T13.0.B094:8.0.T63]
"""

INVENTORY = """\
# cat /usr/local/Ascend/ascend-toolkit/latest/version.cfg
runtime_running_version=[7.6.T13.0.B094:8.0.T63]
hccl_running_version=[7.6.T13.0.B094:8.0.T63]
[root@gpu7 /]# ll /usr/local/Ascend/ascend-toolkit/latest/
total 20
dr-xr-xr-x 14 root root  280 Sep 21 17:01 aarch64-linux
lrwxrwxrwx  1 root root   18 Sep 21 16:55 acllib -> ../8.2.RC2/runtime
lrwxrwxrwx  1 root root   13 Sep 21 17:01 arm64-linux -> aarch64-linux
lrwxrwxrwx  1 root root   18 Sep 21 16:55 runtime -> ../8.2.RC2/runtime
-rw-r--r--  1 root root 1102 Sep 21 17:04 version.cfg
# cat /usr/local/Ascend/driver/version.info
Version=24.1.rc2.2
package_version=24.1.rc2.2
# cat /usr/local/Ascend/atb-models/version.info
ATB-Models Version : 2.0.T3.B010
Platform : aarch64
# cat /usr/local/Ascend/mindie/latest/version.info
Ascend-mindie : MindIE 2.0.T3.B010
mindie-llm: 2.0.T3.B010
# cat /usr/local/Ascend/nnal/atb/latest/version.info
    Ascend-cann-atb : 8.0.T63
    Ascend-cann-atb Version : 8.0.T63.B020
"""

COLLECT_ENV = """\
Collecting environment information...
PyTorch version: 2.7.1+cpu
vLLM Version: 0.11.0
vLLM Ascend Version: 0.11.0rc1 (git sha: 1a2b3c4)
[pip3] torch==2.7.1
[pip3] torch-npu==2.7.1.post1
CANN:
package_name=Ascend-cann-toolkit
version=8.3.RC2
"""


def test_driver_and_firmware_version_info():
    _, s = parse("version-info", DRIVER_INFO, path="node-0/driver/version.info", node="node-0")
    assert sig(s, "driver_version") == ["24.1.rc2.2"]
    assert sig(s, "firmware_version") == []
    _, s = parse("version-info", FIRMWARE_INFO, path="node-0/firmware/version.info", node="node-0")
    assert sig(s, "firmware_version") == ["7.5.0.5.220"]
    assert sig(s, "driver_version") == []
    # without a telling path, the number decides (HDK YY.x is a driver, 7.x a firmware)
    _, s = parse("version-info", FIRMWARE_INFO, path="version.info")
    assert sig(s, "firmware_version") == ["7.5.0.5.220"]


def test_toolkit_install_info_and_version_cfg():
    _, s = parse("version-info", TOOLKIT_INFO, path="x/latest/aarch64-linux/ascend_toolkit_install.info")
    assert sig(s, "cann_version") == ["8.3.RC2"]
    assert s["engine"].to_list() == ["toolkit/install.info"]
    _, s = parse("version-info", VERSION_CFG, path="ascend-toolkit/latest/version.cfg")
    assert sig(s, "cann_version") == ["8.0.T63"] * 3
    assert set(s["engine"].to_list()) == {"toolkit/version.cfg"}
    nnae = "package_name=Ascend-cann-nnae\nversion=8.2.RC2\n"
    _, s = parse("version-info", nnae, path="nnae/ascend_nnae_install.info")
    assert sig(s, "cann_version") == ["8.2.RC2"]


def test_inventory_paste_components():
    records, s = parse("version-info", INVENTORY, path="tickets/inventory.log")
    assert set(sig(s, "cann_version")) == {"8.0.T63", "8.2.RC2"}
    links = s.filter((pl.col("signal") == "cann_version") & (pl.col("engine") == "toolkit/latest"))
    assert links["line"].to_list() == [7, 9]
    assert sig(s, "driver_version") == ["24.1.rc2.2"]
    assert sig(s, "atb_version") == ["8.0.T63"]
    assert sig(s, "atb_models_version") == ["2.0.T3.B010"]
    assert sig(s, "mindie_version") == ["2.0.T3.B010"]
    assert records.height == len(INVENTORY.splitlines())
    assert sniff("tickets/inventory.log", INVENTORY.splitlines()) == "version-info"


def test_collect_env_versions():
    _, s = parse("version-info", COLLECT_ENV)
    assert sig(s, "vllm_version") == ["0.11.0"]
    assert sig(s, "vllm_ascend_version") == ["0.11.0rc1"]
    assert sig(s, "torch_npu_version") == ["2.7.1.post1"]
    assert sig(s, "cann_version") == ["8.3.RC2"]


def test_version_paste_with_an_npu_smi_table():
    _, s = parse("version-info", COLLECT_ENV + "NPU:\n" + A3)
    assert sig(s, "cann_version") == ["8.3.RC2"]
    assert sig(s, "hbm_used_mb", "npu0/chip1") == [3187.0]
    _, s = parse("npu-smi", A3 + DRIVER_INFO.replace("24.1.rc2.2", "24.1.rc3.7"))
    assert set(sig(s, "driver_version")) == {"24.1.rc3.7"}


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("version.info", DRIVER_INFO),
        ("ascend_toolkit_install.info", TOOLKIT_INFO),
        ("version.cfg", VERSION_CFG),
        ("env.txt", COLLECT_ENV),
    ],
)
def test_sniff_version_files(name, text):
    assert sniff(name, text.splitlines()) == "version-info"


def test_startup_versions_in_vllm_log():
    log = (
        "INFO 10-11 09:00:01 [__init__.py:207] Platform plugin ascend is activated\n"
        "INFO 10-11 09:00:02 [utils.py:100] vLLM Ascend version: 0.11.0rc1, torch_npu version: 2.7.1.post1,"
        " CANN version: 8.3.RC2\n"
        "(APIServer pid=1) INFO 10-11 09:00:03 [api_server.py:1839] vLLM API server version 0.11.0\n"
    )
    _, s = parse("vllm", log)
    assert sig(s, "vllm_ascend_version") == ["0.11.0rc1"]
    assert sig(s, "torch_npu_version") == ["2.7.1.post1"]
    assert sig(s, "cann_version") == ["8.3.RC2"]
    assert sig(s, "vllm_version") == ["0.11.0"]


def test_derive_generation_and_combo_per_node():
    rows = [
        ("a", 1, "node-0", "npu0", "driver_version", "24.1.rc2.2"),
        ("b", 2, "node-0", "toolkit", "cann_version", "8.3.RC2"),
        ("c", 3, "node-1", "npu0", "driver_version", "25.3.rc1"),
        ("d", 4, "node-1", "toolkit", "cann_version", "8.3.RC2"),
        ("e", 5, "node-1", "nnal", "atb_version", "8.0.T63"),
    ]
    frame = conform_signals(
        pl.DataFrame(rows, schema=["file", "line", "node", "engine", "signal", "text"], orient="row")
    )
    out = versions.derive_signals(frame)
    combos = out.filter(pl.col("signal") == "driver_cann_combo").select("node", "text").sort("node").rows()
    assert combos == [("node-0", "driver=24.1.rc2.2 cann=8.3.RC2"), ("node-1", "driver=25.3.rc1 cann=8.3.RC2")]
    gens = out.filter(pl.col("signal") == "cann_generation").select("node", "text").sort("node", "text").rows()
    assert gens == [("node-0", "8.3"), ("node-1", "8.0"), ("node-1", "8.3")]


def test_signal_names_documented():
    for name in (
        "driver_version", "firmware_version", "npu_health", "hbm_used_mb", "hbm_total_mb", "aicore_pct", "power_w",
        "temp_c", "npu_process_count", "cann_version", "cann_generation", "driver_cann_combo", "torch_npu_version",
        "vllm_ascend_version", "mindie_version", "atb_version",
    ):
        assert name in signal_docs()


# --- the mismatch kind --------------------------------------------------------------------------


def _frame(rows):
    return conform_signals(
        pl.DataFrame(rows, schema=["file", "line", "node", "engine", "signal", "text"], orient="row")
    )


def _mismatch(**table):
    from diagnose.engine.match_kinds import match_from

    return match_from({"kind": "mismatch", **table}, lambda v, where: 0.0)


def test_mismatch_same_device_on_two_nodes_counts_twice():
    rows = [
        ("n0", 1, "node-0", "npu0", "firmware_version", "7.5.0.5.220"),
        ("n1", 1, "node-1", "npu0", "firmware_version", "7.5.0.1.129"),
    ]
    m = match_mismatch(_mismatch(signal="firmware_version", across="device"), None, _frame(rows), None)
    assert m is not None and m.facts["odd_where"] == "node-1/npu0"


def test_mismatch_tie_reports_the_older_value():
    rows = [
        ("n0", 3, "node-0", "npu0", "driver_version", "25.0.rc1.1"),
        ("n1", 3, "node-1", "npu0", "driver_version", "24.1.rc2.2"),
    ]
    m = match_mismatch(_mismatch(signal="driver_version", across="node"), None, _frame(rows), None)
    assert m.facts["odd_value"] == "24.1.rc2.2" and m.facts["odd_where"] == "node-1"
    assert m.hits["file"][0] == "n1"


def test_mismatch_within_node_ignores_differences_between_nodes():
    rows = [
        ("n0", 1, "node-0", "toolkit", "cann_generation", "8.2"),
        ("n1", 1, "node-1", "toolkit", "cann_generation", "8.3"),
    ]
    rule = _mismatch(signal="cann_generation", across="engine", within="node")
    assert match_mismatch(rule, None, _frame(rows), None) is None
    rows.append(("n1", 2, "node-1", "nnal", "cann_generation", "8.0"))
    m = match_mismatch(rule, None, _frame(rows), None)
    assert m is not None and m.facts["odd_nodes"] in ("node-1",)


# --- rules --------------------------------------------------------------------------------------

MY_RULES = ("VER001", "VER002", "VER003", "VER004", "VER005", "VER006", "DEV020", "DEV021")


@pytest.mark.parametrize("rule_id", MY_RULES)
def test_version_and_device_rules_have_chinese_summaries(catalog, rule_id):
    # Their fixtures run with the whole catalog's (tests/test_rule_catalog.py).
    rule = catalog[rule_id]
    assert rule.title.get("zh") and rule.remediation.get("zh") and rule.summary.get("zh")


def _write(tmp_path, files: dict[str, str]):
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")


def test_two_node_npu_smi_pair_fires_driver_mismatch(tmp_path):
    node0 = A3.replace("24.1.rc3.7", "25.0.rc1.1")
    _write(tmp_path, {"node-0/npu-smi-info.txt": node0, "node-1/npu-smi-info.txt": A3})
    report = analyze([str(tmp_path)], Settings())
    assert not report.errors
    f = next(f for f in report.findings if f.rule_id == "VER001")
    assert f.facts["odd_where"] == "node-1" and f.facts["odd_value"] == "24.1.rc3.7" and f.nodes == ["node-1"]
    assert f.evidence[0].file.endswith("node-1/npu-smi-info.txt") and f.evidence[0].line == 2


def test_driver_on_one_file_cann_on_another_gives_the_combo(tmp_path):
    _write(
        tmp_path,
        {
            "node-1/npu-smi.txt": A3,
            "node-1/ascend_toolkit_install.info": TOOLKIT_INFO.replace("8.3.RC2", "9.0.1"),
        },
    )
    report = analyze([str(tmp_path)], Settings())
    f = next(f for f in report.findings if f.rule_id == "VER004")
    assert "24.1.rc3.7" in said(f.summary) and "9.0.1" in said(f.summary) and f.nodes == ["node-1"]


def test_inventory_paste_gives_a_versions_finding(tmp_path):
    _write(tmp_path, {"inventory.log": INVENTORY})
    report = analyze([str(tmp_path)], Settings())
    assert "VER003" in [f.rule_id for f in report.findings]


def test_healthy_a3_has_no_warning(tmp_path):
    _write(tmp_path, {"npu_smi_info.log": "NPU:\n" + A3})
    report = analyze([str(tmp_path)], Settings())
    assert report.inputs[0].kind == "npu-smi"
    assert [f.rule_id for f in report.findings if f.severity != "info"] == []
    parsed = read_paths([str(tmp_path)], Settings(), RuleFilters())
    assert parsed.signals.filter(pl.col("signal") == "hbm_used_mb").height == 4


def test_npusmi_module_constants():
    assert npusmi.KIND == "npu-smi" and versions.KIND == "version-info"


def test_tail_banners_name_the_node_of_each_part():
    paste = (
        "==> node-0/driver/version.info <==\nVersion=25.0.rc1.1\n"
        "==> node-1/driver/version.info <==\nVersion=24.1.rc2.2\n"
    )
    _, s = parse("version-info", paste, path="support/versions.txt")
    assert s.select("node", "text").rows() == [("node-0", "25.0.rc1.1"), ("node-1", "24.1.rc2.2")]
    node0 = A3.replace("24.1.rc3.7", "25.0.rc1.1")
    table = "==> node-0/npu-smi.txt <==\n" + node0 + "==> node-1/npu-smi.txt <==\n" + A3
    _, s = parse("npu-smi", table, path="support/npu.txt")
    drivers = s.filter(pl.col("signal") == "driver_version").select("node", "text").unique().sort("node").rows()
    assert drivers == [("node-0", "25.0.rc1.1"), ("node-1", "24.1.rc3.7")]


def test_extract_version_signals_for_other_parsers():
    records, _ = parse("vllm", "INFO 10-11 09:00:02 [utils.py:100] MindIE Server version: 2.1.RC1\n")
    out = versions.extract_version_signals(records)
    assert out.select("signal", "text").rows() == [("mindie_version", "2.1.RC1")]
    assert versions.extract_version_signals(records.head(0)).height == 0


def test_prompt_with_a_clock_names_the_host_and_covers_the_lines_above():
    # `[032035 al@maas2 ~]$` (a clock in the prompt); the first dump has no prompt of its own
    before = BOARD.split("\n[root@node-0 ~]# npu-smi info -t health")[0].split("\n", 1)[1]
    paste = before + "\n[032035 al@maas2 ~]$ sudo npu-smi info -t board -i 2\n" + before
    _, signals = parse("npu-smi", paste, path="support/upgrade.txt")
    assert set(signals["node"].drop_nulls().to_list()) == {"maas2"}
