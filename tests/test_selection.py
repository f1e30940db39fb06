"""Rule selection: --select/--ignore by id, id prefix, name, category or ALL, in layers (configuration file, then
command line), for `diagnose check` and `diagnose rules list`; unknown selectors are usage errors."""

from __future__ import annotations

import json

import pytest
from conftest import SAMPLES, run_cli, run_json

from diagnose.engine.selection import (
    RuleKey,
    RuleSelection,
    UnknownSelector,
    check_selectors,
    is_selected,
    split_selectors,
)

KV = SAMPLES / "kv-exhaustion"  # KV001 (error), KV005 and PRF005 (warnings), MTP004 (info)
AICORE = SAMPLES / "two-node-aicore"

KV001 = RuleKey("KV001", "kv-cache-saturated", "kv-cache")
KV005 = RuleKey("KV005", "kv-capacity-below-max-num-seqs", "kv-cache")
KV203 = RuleKey("KV203", "kv-pool-below-one-sequence", "kv-cache")
MTP004 = RuleKey("MTP004", "mtp-not-configured", "mtp", aliases=("MTP099",))
COMM003 = RuleKey("COMM003", "hccl-timeout", "communication")
ALL_KEYS = [KV001, KV005, KV203, MTP004, COMM003]


def chosen(*layers: RuleSelection) -> list[str]:
    return [k.id for k in ALL_KEYS if is_selected(layers, k)]


def cli(select=None, ignore=()):
    return RuleSelection(tuple(select) if select is not None else None, tuple(ignore))


def conf(select=None, ignore=()):
    return RuleSelection(tuple(select) if select is not None else None, tuple(ignore), origin=".diagnose.toml")


def test_selectors_by_id_prefix_name_category_and_all():
    assert chosen() == ["KV001", "KV005", "KV203", "MTP004", "COMM003"]  # no selection: everything
    assert chosen(cli(["KV001"])) == ["KV001"]
    assert chosen(cli(["kv001"])) == ["KV001"]  # ids and prefixes ignore case
    assert chosen(cli(["KV"])) == ["KV001", "KV005", "KV203"]
    assert chosen(cli(["KV0"])) == ["KV001", "KV005"]
    assert chosen(cli(["kv-cache-saturated"])) == ["KV001"]
    assert chosen(cli(["kv-cache"])) == ["KV001", "KV005", "KV203"]
    assert chosen(cli(["MTP099"])) == ["MTP004"]  # a former id (alias)
    assert chosen(cli(["ALL"], ["communication"])) == ["KV001", "KV005", "KV203", "MTP004"]


def test_more_specific_selector_wins_and_ignore_wins_a_tie():
    assert chosen(cli(["KV"], ["KV001"])) == ["KV005", "KV203"]
    assert chosen(cli(["KV001"], ["KV"])) == ["KV001"]  # one layer: the id is more specific than the prefix
    assert chosen(cli(["KV0"], ["KV"])) == ["KV001", "KV005"]  # longer prefix over shorter
    assert chosen(cli(["KV"], ["kv-cache"])) == ["KV001", "KV005", "KV203"]  # a prefix over a category
    assert chosen(cli(["KV"], ["KV"])) == []  # a tie: ignore wins
    assert chosen(cli(["ALL"], ["ALL"])) == []


def test_command_line_over_the_configuration_file_as_ruff_does():
    # --select starts a new selection: the file's ignore no longer applies (ruff #1245)
    assert chosen(conf(ignore=["KV001"]), cli(["KV001"])) == ["KV001"]
    # --ignore alone takes rules out of the file's selection, whatever the specificity
    assert chosen(conf(["KV001", "KV005"]), cli(ignore=["KV"])) == []
    assert chosen(conf(["kv-cache"]), cli(ignore=["KV005"])) == ["KV001", "KV203"]
    # the file alone
    assert chosen(conf(["KV", "mtp"], ["KV2"])) == ["KV001", "KV005", "MTP004"]
    assert chosen(conf(ignore=["mtp"]), cli(ignore=["COMM"])) == ["KV001", "KV005", "KV203"]


def test_comma_lists_and_repeats_are_one_list():
    assert split_selectors(("KV,MEM001", " COMM ", "", "a,,b")) == ("KV", "MEM001", "COMM", "a", "b")
    assert split_selectors("KV001") == ("KV001",)
    assert split_selectors(None) == ()


def test_unknown_selectors_are_named_with_where_they_were_given():
    with pytest.raises(UnknownSelector) as exc:
        check_selectors([conf(["KV", "KVX"]), cli(["kv-cache"], ["nope"])], ALL_KEYS)
    lines = exc.value.lines()
    assert len(lines) == 2
    assert ".diagnose.toml: select: unknown rule selector 'KVX'" in lines[0]
    assert "--ignore: unknown rule selector 'nope'" in lines[1]
    check_selectors([cli(["memory", "ALL"])], ALL_KEYS)  # a category of no loaded rule is still a category


def test_check_select_and_ignore_narrow_the_findings_and_the_exit_code():
    code, report = run_json(str(KV), "--select", "KV,MEM001", "--select", "kv-cache-saturated")
    assert code == 1
    assert sorted(f["rule_id"] for f in report["findings"]) == ["KV001", "KV005"]
    code, report = run_json(str(KV), "--ignore", "KV001")
    assert code == 0  # the only error-level finding is not checked
    assert [f["rule_id"] for f in report["findings"]] == ["KV005", "PRF005", "MTP004"]
    code, report = run_json(str(KV), "--select", "kv-cache", "--ignore", "KV005")
    assert code == 1 and [f["rule_id"] for f in report["findings"]] == ["KV001"]


def test_check_selection_reaches_sarif_rules_and_the_root_cause_finding(tmp_path):
    sarif = tmp_path / "out.sarif"
    result = run_cli(str(KV), "--select", "KV001", "--sarif", str(sarif), "-q")
    assert result.exit_code == 1
    assert [r["id"] for r in json.loads(sarif.read_text())["runs"][0]["tool"]["driver"]["rules"]] == ["KV001"]
    # RC001 (the first failing rank) comes from a pass, not a rule file: it is selectable all the same
    code, report = run_json(str(AICORE), "--select", "COMM,RC001")
    assert code == 1 and [f["rule_id"] for f in report["findings"]] == ["RC001", "COMM003"]
    code, report = run_json(str(AICORE), "--select", "COMM", "--ignore", "first-failing-rank")
    assert [f["rule_id"] for f in report["findings"]] == ["COMM003"]


@pytest.mark.parametrize("args, bad", [
    (["--select", "KV9"], "'KV9'"),
    (["--select", "KV,nope"], "'nope'"),
    (["--ignore", "kv_cache"], "'kv_cache'"),
])
def test_check_unknown_selector_is_a_usage_error_naming_it(args, bad):
    result = run_cli(str(KV), *args)
    assert result.exit_code == 2
    assert f"unknown rule selector {bad}" in result.stderr and "diagnose rules list" in result.stderr
    assert result.stdout == ""  # nothing was run


def test_a_selection_of_nothing_warns_and_finds_nothing():
    result = run_cli(str(KV), "--ignore", "ALL", "--format", "json")
    assert result.exit_code == 0
    assert "leaves no rule to run" in result.stderr
    assert json.loads(result.stdout)["findings"] == []


def test_rules_list_honours_select_and_ignore():
    result = run_cli("rules", "list", "--select", "COMM0", "--format", "json")
    assert result.exit_code == 0
    ids = [r["id"] for r in json.loads(result.stdout)]
    assert ids and all(i.startswith("COMM0") for i in ids)
    result = run_cli("rules", "list", "--select", "kv-cache", "--ignore", "KV0")
    assert result.exit_code == 0
    assert "KV203" in result.stdout and "KV001" not in result.stdout
    result = run_cli("rules", "list", "--select", "bogus")
    assert result.exit_code == 2 and "'bogus'" in result.stderr
    result = run_cli("rules", "list", "--ignore", "KV1")  # no id starts with KV1 (KV010 starts with KV0)
    assert result.exit_code == 2 and "'KV1'" in result.stderr
