"""The error-code tables under knowledge/codes and their loader (diagnose/knowledge/code_tables.py)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diagnose.knowledge.code_tables import (
    CodeTableError,
    _code_group,
    builtin_codes_dir,
    classify,
    find_codes,
    load_families,
    load_family,
    printed_group,
    HANDLING,
)
from diagnose.engine.rulefile import builtin_rules_dir
from conftest import run_json

FAMILIES = {f.family: f for f in load_families(builtin_codes_dir())}
RECOGNISERS = [(name, i) for name, fam in FAMILIES.items() for i in range(len(fam.recognisers))]


def test_builtin_tables_load_and_live_in_the_knowledge_folder():
    assert builtin_codes_dir() == builtin_rules_dir().parent / "knowledge" / "codes"
    assert set(FAMILIES) == {"cann", "acl", "hccl", "mindie", "torch_npu", "fault_event"}
    for fam in FAMILIES.values():
        assert fam.title["en"] and fam.title["zh"] and fam.sources and fam.classes


def test_breadth_of_the_tables():
    counts = {name: len(fam.codes) for name, fam in FAMILIES.items()}
    assert counts["cann"] >= 580 and counts["acl"] >= 278 and counts["mindie"] >= 246 and counts["fault_event"] >= 836
    assert {str(n) for n in range(25)} | {"1041"} == set(FAMILIES["hccl"].codes)  # every HcclResult value
    subs, kinds = ("00", "01", "02", "03", "04"), ("001", "002", "003", "004", "005", "006", "007", "008", "009",
                                                   "010", "011", "012", "100", "200", "300", "999")
    assert {f"ERR{s}{k}" for s in subs for k in kinds} | {"ERR99999"} == set(FAMILIES["torch_npu"].codes)
    cann = FAMILIES["cann"].codes
    # one code of each open CANN table, each with the message it prints
    for code in ("E20001", "EE1023", "EH0014", "EZ9999", "E10001", "E19999", "EZ1013", "E70018", "EI0020", "W40011",
                 "E68089", "EB0500", "EF2008", "EM9002", "EO0004", "EP0008", "EK0204", "EL0015", "E39011"):
        assert code in cann, code
    assert sum(bool(c.message) for c in cann.values()) >= 570
    acl = FAMILIES["acl"].codes
    for code in ("100045", "107045", "148053", "200007", "207021", "507914", "145022", "345104", "545602", "561119",
                 "561201", "161002", "361001"):
        assert code in acl, code


def test_every_cann_module_letter_has_a_class():
    letters = "IJLEHZKPOMFBUC123456789A"
    fam = FAMILIES["cann"]
    for letter in letters:
        _, cls = classify(fam, f"E{letter}0042")
        assert cls.code_regex != "^E", letter  # not the catch-all of unknown modules
    _, cls = classify(fam, "WE0042")
    assert cls.severity == "warning"
    assert find_codes(fam, "W40011: [PID: 12] Failed to create disk cache directory /tmp/x.") == ["W40011"]


@pytest.mark.parametrize(("family", "index"), RECOGNISERS)
def test_recogniser_finds_its_example_and_not_its_near_miss(family, index):
    fam = FAMILIES[family]
    rec = fam.recognisers[index]
    one = type(fam)(fam.family, fam.title, fam.sources, (rec,), fam.classes, fam.codes, printed=fam.printed)
    assert find_codes(one, rec.example)
    assert not find_codes(one, rec.near_miss)


@pytest.mark.parametrize(("family", "line", "code", "name"), [
    ("cann", "EI0002: [PID: 13075] 2025-06-25-10:45:23.586.187 The wait execution of the Notify register times out.",
     "EI0002", "hccl-notify-wait-timeout"),
    ("cann", "EZ9999[PID: 5317] 2026-04-22-08:49:02.433.180 AclNN_Inner_Error(EZ9999):  Nnopbase fails", "EZ9999",
     "aclnn-inner-error"),
    ("cann", "[PID: 2267203] 2025-11-21-11:38:29.575.404 Communication_Error_Bind_IP_Port(EI0019): Failed", "EI0019",
     "hccl-bind-port-failed"),
    ("acl", "RuntimeError: NPU function error: AclrtSynchronizeStreamWithTimeout(copy_stream), error code is 507011",
     "507011", "rt-model-execute"),
    ("acl", "call aclnnMoeDistributeDispatchV3 failed, error code is 561000", "561000", "aclnn-inner"),
    ("acl", "[GetHardwareVersion:37] [T2] get device num fail. ret = 507899", "507899", "rt-drv-internal-error"),
    ("hccl", "RuntimeError: createHCCLComm:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:1508 HCCL function error: "
             "HcclGetRootInfo(&hcclID), error code is 7", "7", "resource-unavailable"),
    ("hccl", "[ERROR] HCCL(1,p):2025-05-13-02:25:58.068.817 [op_base.cc:974][3][Init]errNo[0x0000000005000009] timeout",
     "9", "timeout"),
    ("mindie", "[2025-05-13 02:25:58] [server] [ERROR] [daemon.cpp:88] : [MIE04E010109] worker 1234 exited",
     "MIE04E010109", "daemon-worker-exited"),
    ("torch_npu", "[ERROR] 2025-12-04-14:46:07 (PID:60571, Device:0, RankID:-1) ERR02200 DIST call hccl api failed.",
     "ERR02200", "dist-hccl"),
    ("torch_npu", "[ERROR] 2025-12-29-03:16:15 (PID:749, Device:-1, RankID:-1) ERR99999 UNKNOWN applicaiton exception",
     "ERR99999", "unknown-application-exception"),
    ("fault_event", "[ERROR] DRV(3051,dmp_daemon):2026-03-02-11:20:41.118.902 [fault_manager] event_id: [0x80e01809], "
                    "device_id: 5", "80E01809", "multi-bit-ecc-errors-occur-hbm-patrol"),
    ("fault_event", "hwlog FaultFrequency detected, event id: 80e18005, logic id: 2, fault occurred times: 3",
     "80E18005", "hbmc-parity-error"),
    ("fault_event", "report NPU hang fault, logicID=4, faultCode=0x200001002", "200001002", "npu-hang"),
    # torch_npu prints the ACL code's text (NPUErrorCodes.h), not the code: bare, behind a vLLM worker's prefix,
    # and inside an exception message quoted on one line
    ("acl", "[Error]: Invalid device ID.", "107001", "rt-invalid-device-id"),
    ("acl", "(VllmWorker rank=0 pid=1110) ERROR 08-26 12:16:15 [multiproc_executor.py:492] [Error]: The context is "
            "empty.", "107002", "rt-context-null"),
    ("acl", "RuntimeError: SetDevice failed\\n[Error]: Invalid device ID.\\n        Check whether the device ID is valid.",
     "107001", "rt-invalid-device-id"),
])
def test_listed_code_on_a_line_is_classified_to_its_entry(family, line, code, name):
    fam = FAMILIES[family]
    assert code in find_codes(fam, line)
    known, cls = classify(fam, code)
    assert known is not None and known.name == name
    assert cls.category in {c.category for c in fam.classes}


def test_printed_texts_name_one_code_each():
    acl = FAMILIES["acl"]
    assert len(acl.printed) >= 140  # of the 161 entries of torch_npu's map; the six first lines shared are on none
    assert len(set(acl.printed.values())) == len(acl.printed)
    assert all(acl.codes[code].printed == text for text, code in acl.printed.items())
    # shared by 100000 and 107000: which one torch_npu meant is on the next line only
    assert find_codes(acl, "[Error]: Parameter verification failed.") == []
    assert find_codes(acl, "[Error]: Something no table lists.") == []


@pytest.mark.parametrize(("family", "code", "category"), [
    ("cann", "EI0099", "communication"), ("cann", "EJ0042", "communication"), ("cann", "EL0042", "device"),
    ("cann", "EE3333", "device"), ("cann", "EZ4321", "operators"), ("cann", "EO0099", "quantization"),
    ("cann", "E19001", "engine"), ("cann", "EX0001", "engine"),
    ("acl", "507999", "device"), ("acl", "507058", "device"), ("acl", "207099", "memory"),
    ("acl", "161099", "operators"), ("acl", "561999", "operators"), ("acl", "100099", "config"),
    ("acl", "545999", "engine"),
    ("hccl", "25", "communication"), ("hccl", "2000", "communication"),
    ("mindie", "MIE04E130201", "engine"), ("mindie", "MIE05E01021B", "communication"),
    ("mindie", "MIE04E030101", "config"), ("mindie", "MIE05E010117", "kv-cache"),
    ("mindie", "MIE03E100109", "communication"), ("mindie", "MIE04W01020B", "engine"),
    ("torch_npu", "ERR02013", "communication"), ("torch_npu", "ERR04013", "performance"),
    ("fault_event", "80C9FFF1", "device"), ("fault_event", "81AFFFF0", "communication"),
    ("fault_event", "220009999", "communication"), ("fault_event", "7E000001", "device"),
    ("torch_npu", "ERR01013", "operators"),
])
def test_unlisted_code_falls_into_a_class_with_the_right_category(family, code, category):
    fam = FAMILIES[family]
    known, cls = classify(fam, code)
    assert known is None
    assert cls.category == category


COMMON_NEAR_MISSES = [
    "segfault at ptr=0x7f3a2b1c in libascendcl.so",
    "INFO 2025-04-08 12:00:01 server started",
    "E2E latency 1200 ms, TTFT 80 ms",
    "Uvicorn running on http://0.0.0.0:60000 (port 16666 open)",
    "EPOCH1 finished, EPOCH12 next",
    "hidden_states shape [1, 7168], topk [64, 8]",
    "(VllmWorker rank=2 pid=507011) INFO loading weights",
]
FAMILY_NEAR_MISSES = {
    "cann": ["[rank7]:[E1212 12:10:10.131512730 compiler_depend.ts:1675] ProcessGroupHCCL timeout",
             "addr 0xEE100300 id deadbeefEI0006 EEXIST EAGAIN ENOENT"],
    "acl": ["listening on 0.0.0.0:507035", "pid 507014 exited", "error code is 7", "secret = 100000",
            "error code is 4070351", "retCode=0x25 [aicore timeout]"],
    "hccl": ["RuntimeError: NPU function error: aclrtSetDevice, error code is 1", "gloo: error code is 9",
             "errNo[0x0000000007010009] rtStreamSynchronize failed", "errNo[0x000000000500000b] tcp connect failed"],
    "mindie": ["MIE-04E13030A", "MIE04E13030AZ", "mie04e13030a", "MIE09E000001"],
    "torch_npu": ["ERR02200.log", "ERR_DIST ERR0220 DIST", "ERR05200 DIST", "ERR02200DIST"],
    "fault_event": ["map bar at 0x80000000 size 0x80C98000", "segfault at 80e18008 ip 00007f3a2b1c9e40",
                    "event id: 20260302 processed", "faultCode=0x80000000ff", "fault code 123", "fault_code: 0x12345678",
                    "event_id: [0x80e0180]", "2026-03-02T11:21:07 80E18008 20260302"],
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_lines_that_only_look_like_codes_are_not_recognised(family):
    fam = FAMILIES[family]
    for line in COMMON_NEAR_MISSES + FAMILY_NEAR_MISSES[family]:
        assert find_codes(fam, line) == [], line


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_recognisable_code_falls_into_a_class(data):
    fam = data.draw(st.sampled_from(sorted(FAMILIES.values(), key=lambda f: f.family)))
    group = _code_group(data.draw(st.sampled_from([r for r in fam.recognisers if not printed_group(r.regex)])).regex)
    code = data.draw(st.from_regex(re.compile(rf"\A(?:{group})\Z"), fullmatch=True))
    _, cls = classify(fam, code)
    assert cls.category and cls.meaning["en"] and cls.next_step["zh"]


def test_echo_marks_consequences():
    assert FAMILIES["cann"].codes["EI0002"].echo and FAMILIES["cann"].codes["EI0006"].echo
    assert FAMILIES["hccl"].codes["9"].echo and FAMILIES["torch_npu"].codes["ERR99999"].echo
    assert FAMILIES["mindie"].codes["MIE04E13030A"].echo and FAMILIES["mindie"].codes["MIE04E010109"].echo
    assert not FAMILIES["acl"].codes["507014"].echo


# ---- the validator ------------------------------------------------------------------------------------------------

VALID = """
family = "demo"
title.en = "Demo code"
title.zh = "示例错误码"
sources = ["https://example.org/codes"]

[[recognise]]
regex = '(?-u:\\b)(?P<code>DM[0-9]{3})(?-u:\\b)'
example = "failed with DM042: oops"
near_miss = "DM0420 is a build id"

[[class]]
code_regex = '^DM0'
category = "device"
severity = "error"
meaning.en = "Demo device error."
meaning.zh = "示例设备错误。"
next_step.en = "Run `npu-smi info`."
next_step.zh = "执行 `npu-smi info`。"
source = "https://example.org/codes"

[[class]]
code_regex = '^DM'
category = "engine"
severity = "error"
meaning.en = "Demo error."
meaning.zh = "示例错误。"
next_step.en = "Read the log."
next_step.zh = "阅读日志。"
source = "https://example.org/codes"

[[code]]
code = "DM042"
name = "demo-answer"
category = "device"
severity = "error"
meaning.en = "The answer."
meaning.zh = "答案。"
next_step.en = "Ask again."
next_step.zh = "再问一次。"
source = "https://example.org/codes"
echo = false
"""


def _write(tmp_path, text, stem="demo"):
    folder = tmp_path / "codes"
    folder.mkdir(exist_ok=True)
    path = folder / f"{stem}.toml"
    path.write_text(text, encoding="utf-8")
    return folder, path


def _errors(tmp_path, text, stem="demo"):
    folder, path = _write(tmp_path, text, stem)
    with pytest.raises(CodeTableError) as info:
        load_families(folder)
    return path, info.value.errors


def test_valid_table_loads(tmp_path):
    folder, _ = _write(tmp_path, VALID)
    (fam,) = load_families(folder)
    assert classify(fam, "DM042")[0].name == "demo-answer"
    assert classify(fam, "DM077")[1].category == "device" and classify(fam, "DM777")[1].category == "engine"
    assert find_codes(fam, "x DM042: y DM043") == ["DM042", "DM043"]


def test_bad_category_names_file_and_field(tmp_path):
    bad = VALID.replace('category = "device"\nseverity = "error"\nmeaning.en = "The answer."',
                        'category = "foo"\nseverity = "error"\nmeaning.en = "The answer."')
    path, errors = _errors(tmp_path, bad)
    assert any(e.startswith(f"{path}: code[0].category: 'foo' is not one of mtp, quantization") for e in errors), errors


def test_unknown_field_names_file_and_field(tmp_path):
    path, errors = _errors(tmp_path, VALID.replace('code_regex = \'^DM0\'', 'code_regex = \'^DM0\'\ncolour = "red"'))
    assert f"{path}: class[0].colour: unknown field" in errors
    path, errors = _errors(tmp_path, 'owner = "me"\n' + VALID)
    assert f"{path}: owner: unknown field" in errors


def test_invalid_regex_names_file_and_field(tmp_path):
    path, errors = _errors(tmp_path, VALID.replace("(?P<code>DM[0-9]{3})", "(?P<code>DM[0-9]{3}"))
    assert any(e.startswith(f"{path}: recognise[0].regex: invalid regex") for e in errors), errors
    path, errors = _errors(tmp_path, VALID.replace("code_regex = '^DM0'", "code_regex = '^DM(0'"))
    assert any(e.startswith(f"{path}: class[0].code_regex: invalid regex") for e in errors), errors


def test_unicode_boundary_is_made_ascii_and_lookaround_is_rejected(tmp_path):
    table = tmp_path / "demo.toml"
    table.write_text(VALID.replace("(?-u:\\b)(?P<code>", "\\b(?P<code>"), encoding="utf-8")
    family = load_family(table)
    assert family.recognisers[0].regex.startswith("(?-u:\\b)(?P<code>")  # stays on the DFA on non-ASCII text
    path, errors = _errors(tmp_path, VALID.replace("(?-u:\\b)(?P<code>", "(?<=x)(?P<code>"))
    assert any(e.startswith(f"{path}: recognise[0].regex: invalid regex") for e in errors), errors


def test_cross_checks(tmp_path):
    path, errors = _errors(tmp_path, VALID.replace('near_miss = "DM0420 is a build id"', 'near_miss = "see DM001"'))
    assert f"{path}: recognise[0].near_miss: is found by its regex" in errors
    path, errors = _errors(tmp_path, VALID.replace('code = "DM042"', 'code = "DM42"'))
    assert f"{path}: code[0].code: 'DM42' cannot be produced by any recogniser's code group" in errors
    no_class = VALID.replace("code_regex = '^DM'", "code_regex = '^DM8'").replace("'^DM0'", "'^DM9'")
    path, errors = _errors(tmp_path, no_class)
    assert f"{path}: recognise[0].example: code 'DM042' falls into no class" in errors
    assert f"{path}: code[0].code: 'DM042' falls into no class" in errors
    dup = VALID + VALID[VALID.index("[[code]]"):]
    path, errors = _errors(tmp_path, dup)
    assert f"{path}: code[1].code: duplicate code 'DM042'" in errors
    path, errors = _errors(tmp_path, VALID, stem="other")
    assert f"{path}: family: 'demo' must equal the file stem 'other'" in errors
    path, errors = _errors(tmp_path, VALID.replace('name = "demo-answer"', 'name = "Demo Answer"'))
    assert f"{path}: code[0].name: 'Demo Answer' must be lower-case words joined by '-'" in errors
    path, errors = _errors(tmp_path, VALID.replace('meaning.zh = "答案。"\n', ""))
    assert f"{path}: code[0].meaning.zh: missing" in errors


PRINTED = VALID.replace("""[[class]]""", """[[recognise]]
regex = 'Oops: (?P<printed>[A-Z][a-z ]+\\.)'
example = "Oops: The answer."
near_miss = "Oops: the answer"

[[class]]""", 1).replace('name = "demo-answer"', 'name = "demo-answer"\nprinted = "The answer."')


def test_a_code_found_by_its_printed_text(tmp_path):
    folder, _ = _write(tmp_path, PRINTED)
    (fam,) = load_families(folder)
    assert find_codes(fam, "worker 3: Oops: The answer. Retrying") == ["DM042"]
    assert find_codes(fam, "Oops: The question.") == []
    # two entries may not print the same text
    dup = PRINTED + PRINTED[PRINTED.index("[[code]]"):].replace('code = "DM042"', 'code = "DM043"')
    path, errors = _errors(tmp_path, dup)
    assert f"{path}: code[1].printed: 'The answer.' is also code 'DM042''s: a text must name one code" in errors
    # an example whose printed text no entry has is no example
    path, errors = _errors(tmp_path, PRINTED.replace('example = "Oops: The answer."', 'example = "Oops: Another."'))
    assert f"{path}: recognise[1].example: not found by its regex (or its printed text is no entry's)" in errors
    path, errors = _errors(tmp_path, PRINTED.replace("(?P<printed>", "(?P<words>"))
    assert f"{path}: recognise[1].regex: needs a named group (?P<code>...) or (?P<printed>...)" in errors


def test_load_family_reports_broken_toml(tmp_path):
    _, path = _write(tmp_path, "family = \n")
    with pytest.raises(CodeTableError) as info:
        load_family(path)
    assert info.value.errors[0].startswith(f"{path}: cannot read TOML")


def test_a_generic_wrapper_code_ranks_below_the_code_it_wraps(tmp_path):
    # torch_npu's `PTA call acl api failed` (ERR00100) only says that an ACL call failed; the stream
    # synchronisation timeout beside it (EE1002, 507046) is what to read, although it is an echo itself.
    log = tmp_path / "worker.log"
    log.write_text(
        "[rank0]:[E926 16:06:40.000000000 compiler_depend.ts:387] EE1002: 2024-09-26-16:06:40.180.221 "
        "The stream sync timed out, stream_id=3, timeout=1800000ms.\n"
        "RuntimeError: ACL stream synchronize failed, error code:507046\n"
        "[ERROR] 2024-09-26-16:06:40 (PID:1200, Device:0, RankID:0) ERR00100 PTA call acl api failed\n",
        encoding="utf-8")
    _, report = run_json(str(log))
    ids = [f["rule_id"] for f in report["findings"]]
    assert "CODE005" in ids and ids[0] != "CODE005", ids
    assert all(f.get("caused_by") != "CODE005" for f in report["findings"])
    assert report["verdict"]["rule_id"] != "CODE005"
    # the wrapper takes the category of what it wraps: the stream timeout (communication), not its own (engine)
    (wrapper,) = [f for f in report["findings"] if f["rule_id"] == "CODE005"]
    assert wrapper["category"] == FAMILIES["cann"].codes["EE1002"].category == "communication"


def test_a_wrapper_alone_keeps_its_own_category(tmp_path):
    log = tmp_path / "worker.log"
    log.write_text("[ERROR] 2024-09-26-16:06:40 (PID:1200, Device:0, RankID:0) ERR00100 PTA call acl api failed\n"
                   + "".join(f"INFO step {i} done\n" for i in range(40))
                   + "RuntimeError: ACL stream synchronize failed, error code:507046\n", encoding="utf-8")
    _, report = run_json(str(log))
    (wrapper,) = [f for f in report["findings"] if f["rule_id"] == "CODE005"]
    assert wrapper["category"] == FAMILIES["torch_npu"].codes["ERR00100"].category  # 507046 is 41 lines away


def test_an_invalid_device_id_is_a_configuration_finding_not_the_runtime_fallback_code(tmp_path):
    # torch.npu.set_device(6) under ASCEND_RT_VISIBLE_DEVICES=6: the runtime's fallback EE1001 and torch_npu's
    # wrapper ERR00100 only say that an argument was refused; torch_npu's `[Error]:` line says which (107001).
    log = tmp_path / "worker.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.11/site-packages/torch_npu/npu/utils.py", line 80, in set_device\n'
        "    torch_npu._C._npu_setDevice(device_id)\n"
        "RuntimeError: exchangeDevice:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:35 NPU function error: "
        "c10_npu::SetDevice(d.index()), error code is 107001\n"
        "[ERROR] 2026-03-02-09:14:05 (PID:3071, Device:0, RankID:-1) ERR00100 PTA call acl api failed\n"
        "[Error]: Invalid device ID.\n"
        "        Check whether the device ID is valid.\n"
        "EE1001: [PID: 3071] 2026-03-02-09:14:05.281.517 The argument is invalid.Reason: Set visible device failed, "
        "invalid device=6, input visible devices:6\n"
        "        Solution: 1.Check the input parameter range of the function. 2.Check the function invocation "
        "relationship.\n", encoding="utf-8")
    _, report = run_json(str(log))
    first = report["findings"][0]
    assert first["rule_id"] == "CODE002" and "107001" in first["summary"] and first["category"] == "config"
    by_rule = {f["rule_id"]: f for f in report["findings"]}
    assert by_rule["CODE001"]["category"] == "config"  # EE1001 takes the category of what it wraps
    # and without the runtime code nor torch_npu's text, EE1001 alone keeps its own
    alone = tmp_path / "alone.log"
    alone.write_text(log.read_text(encoding="utf-8").split("[ERROR]")[0].replace(", error code is 107001", "")
                     + "EE1001: [PID: 3071] 2026-03-02-09:14:05.281.517 The argument is invalid.Reason: rtGetDevMsg "
                       "execute failed\n", encoding="utf-8")
    _, report = run_json(str(alone))
    (ee,) = [f for f in report["findings"] if f["rule_id"] == "CODE001"]
    assert ee["category"] == FAMILIES["cann"].codes["EE1001"].category == "engine"


@pytest.mark.parametrize("code", ["EE9999", "EZ9999", "E19999", "EI9999", "EL9999", "EH9999", "ERR00100", "ERR99999",
                                  "ERR02200", "ERR01999", "EE1001"])
def test_inner_errors_and_wrappers_are_generic(code):
    family = "torch_npu" if code.startswith("ERR") else "cann"
    assert FAMILIES[family].codes[code].generic, code


# ---- hardware fault events: MindCluster's handling levels ---------------------------------------------------------

def test_every_chip_fault_code_of_mindcluster_has_its_handling_level():
    fam = FAMILIES["fault_event"]
    levels = {c.handling for c in fam.codes.values()}
    assert levels - {""} == set(HANDLING)  # every level is used
    # a few codes from each list of faultCode.json, with the level the file gives them
    for code, level in [("80E21007", "NotHandleFault"), ("80C98008", "RestartRequest"), ("8C204E00", "RestartBusiness"),
                        ("8C0E4E00", "FreeRestartNPU"), ("8C03A000", "RestartNPU"), ("80E3A201", "SeparateNPU"),
                        ("8118043C", "PreSeparateNPU"), ("81A3880C", "SubHealthFault"), ("110001024", "PreSeparateNPU")]:
        assert fam.codes[code].handling == level, code
    # listed under two levels in the file: the more severe one applies
    assert fam.codes["A2301001"].handling == "SeparateNPU"
    assert sum(1 for c in fam.codes.values() if c.handling) >= 800
    # the level decides the severity: a fault MindCluster does not handle never fails a run by itself
    assert all(c.severity == "info" for c in fam.codes.values() if c.handling == "NotHandleFault")
    assert all(c.severity == "critical" for c in fam.codes.values() if c.handling in ("RestartNPU", "SeparateNPU"))


def test_fault_events_are_found_in_any_case_and_reported_in_upper_case():
    fam = FAMILIES["fault_event"]
    assert find_codes(fam, "Event id=0x80c78008") == ["80C78008"]
    assert find_codes(fam, '{"fault_code":"80E18008,80C98000","fault_handling":"RestartNPU"}') == ["80E18008", "80C98000"]
    known, _ = classify(fam, "80c98000")
    assert known is not None and known.code == "80C98000"


def test_a_fault_event_finding_says_its_handling_level(tmp_path):
    log = tmp_path / "device-os_20260302112041.log"
    log.write_text("[ERROR] DRV(3051,dmp_daemon):2026-03-02-11:20:41.118.902 [fault_manager] event_id: [0x80e18008], "
                   "device_id: 5, severity: 3\n", encoding="utf-8")
    _, report = run_json(str(log))
    (finding,) = [f for f in report["findings"] if f["rule_id"] == "CODE006"]
    assert finding["severity"] == "critical" and finding["category"] == "device"
    assert "MindCluster handles this code at level RestartNPU" in finding["summary"]
    assert finding["remediation"].startswith("Stop the work on the chip, reset it")
    _, report = run_json(str(log), "--lang", "zh")
    (finding,) = [f for f in report["findings"] if f["rule_id"] == "CODE006"]
    assert "处理级别为 RestartNPU" in finding["summary"]


def test_handling_and_case_fields_are_validated(tmp_path):
    bad = VALID.replace('echo = false', 'echo = false\nhandling = "Reboot"')
    path, errors = _errors(tmp_path, bad)
    assert any(e.startswith(f"{path}: code[0].handling: 'Reboot' is not one of NotHandleFault") for e in errors), errors
    folder, _ = _write(tmp_path, VALID.replace('echo = false', 'echo = false\nhandling = "RestartNPU"\nmessage = "oops %s"'))
    (fam,) = load_families(folder)
    assert fam.codes["DM042"].handling == "RestartNPU" and fam.codes["DM042"].message == "oops %s"
    path, errors = _errors(tmp_path, 'case_insensitive = "yes"\n' + VALID)
    assert f"{path}: case_insensitive: must be true or false" in errors
    lower = ('case_insensitive = true\n' + VALID).replace("(?P<code>DM[0-9]{3})", "(?P<code>[Dd][Mm][0-9]{3})")
    path, errors = _errors(tmp_path, lower.replace('code = "DM042"', 'code = "dm042"'))
    assert f"{path}: code[0].code: 'dm042' must be written in upper case (the family is case_insensitive)" in errors


def test_the_trusted_load_of_the_built_in_tables_equals_the_checked_one(tmp_path, monkeypatch):
    # the run loads the built-in tables from the cache without the field checks; the result must be the same
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path))
    load_families(builtin_codes_dir(), check=False)  # fills the cache
    trusted = {f.family: f for f in load_families(builtin_codes_dir(), check=False)}
    assert trusted == FAMILIES
