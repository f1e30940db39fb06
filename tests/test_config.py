"""The configuration file: where it is found, what it may set, how the command line overrides it, and that
every mistake in it is a usage error naming the file and the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SAMPLES, ids, run_cli, run_json

from diagnose.commands.config import ConfigError, discover, load

KV = SAMPLES / "kv-exhaustion"  # KV001 (error), KV005 and PRF005 (warnings), MTP004 (info)

USER_RULE = (
    'id = "USR001"\nname = "queue-wait"\ncategory = "engine"\nseverity = "critical"\n'
    'title.en = "Requests wait in the queue"\nremediation.en = "Scale out."\n'
    '[match]\nkind = "pattern"\nregex = "waiting for more than \\\\d+ s"\n'
)



def test_discovery_looks_up_to_the_repository_root(tmp_path: Path):
    top = tmp_path / "outside"
    root = top / "repo"
    deep = root / "ci" / "nightly"
    deep.mkdir(parents=True)
    (root / ".git").mkdir()
    assert discover(deep) is None
    (top / ".diagnose.toml").write_text('fail-on = "info"\n')  # above the repository root: not ours
    assert discover(deep) is None
    (root / "pyproject.toml").write_text('[project]\nname = "x"\n')  # no [tool.diagnose]: does not count
    assert discover(deep) is None
    (root / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.diagnose]\nfail-on = "warning"\n')
    assert discover(deep) == root / "pyproject.toml"
    (root / "ci" / ".diagnose.toml").write_text('fail-on = "critical"\n')  # nearer wins
    assert discover(deep) == root / "ci" / ".diagnose.toml"
    (root / "ci" / "pyproject.toml").write_text('[tool.diagnose]\nlang = "zh"\n')  # same folder: .diagnose.toml first
    assert discover(deep) == root / "ci" / ".diagnose.toml"
    assert load(discover(deep)).fail_on == "critical"
    assert load(root / "pyproject.toml").fail_on == "warning"


def test_every_key_is_read(repo: Path):
    (repo / "my-rules").mkdir()
    (repo / "my-rules" / "USR001.queue-wait.toml").write_text(USER_RULE)
    (repo / ".diagnose.toml").write_text(
        'fail-on = "critical"\nselect = ["KV", "USR"]\nignore = "KV005"\nrules = ["my-rules"]\nlang = "zh"\n'
        'budget = { max_file_bytes = "8G", max_members = 1000 }\n'
        '[[suppress]]\nrule = "kv-cache-saturated"\nreason = "soak test"\nnode = ["node-*"]\n')
    cfg = load(repo / ".diagnose.toml")
    assert cfg.fail_on == "critical" and cfg.lang == "zh"
    assert cfg.select == ("KV", "USR") and cfg.ignore == ("KV005",)
    assert cfg.rule_dirs == (repo / "my-rules",)  # relative to the file
    assert cfg.budget == ("max_file_bytes=8G", "max_members=1000")
    (sup,) = cfg.suppressions
    assert (sup.rule, sup.reason, sup.nodes) == ("kv-cache-saturated", "soak test", ("node-*",))


def test_the_file_sets_the_defaults_of_a_run(repo: Path):
    (repo / "my-rules").mkdir()
    (repo / "my-rules" / "USR001.queue-wait.toml").write_text(USER_RULE)
    (repo / ".diagnose.toml").write_text('fail-on = "critical"\nignore = ["MTP004"]\nrules = ["my-rules"]\n')
    sub = repo / "jobs" / "1"
    sub.mkdir(parents=True)
    code, report = run_json(str(KV))
    assert code == 1  # USR001 is critical
    assert "USR001" in ids(report) and "MTP004" not in ids(report)
    (repo / ".diagnose.toml").write_text('fail-on = "critical"\nlang = "zh"\n')
    result = run_cli(str(KV), "--no-color")
    assert result.exit_code == 0  # KV001 is an error, below critical
    assert "KV 缓存饱和" in result.stdout


def test_command_line_options_override_the_file(repo: Path):
    (repo / ".diagnose.toml").write_text('fail-on = "critical"\nignore = ["KV001"]\nlang = "zh"\n')
    code, report = run_json(str(KV), "--fail-on", "error", "--select", "KV001", "--lang", "en")
    assert code == 1 and ids(report) == ["KV001"]  # --select starts over: the file's ignore is gone
    assert report["findings"][0]["title"].startswith("KV cache saturated")
    code, report = run_json(str(KV), "--ignore", "KV005")  # --ignore adds to the file's
    assert code == 0 and ids(report) == ["PRF005", "MTP004"]
    code, report = run_json(str(KV), "--no-config")
    assert code == 1 and "KV001" in ids(report)


def test_budget_from_the_file_and_per_key_override(repo: Path):
    (repo / ".diagnose.toml").write_text('budget = { max_file_bytes = "1K" }\n')
    code, report = run_json(str(KV))
    # the server log is over the file's limit: only the README is left, so nothing was analysed (exit 4)
    assert code == 4 and "KV001" not in ids(report)
    assert any("per-file limit of 1024 bytes" in s["reason"] for s in report["skipped"])
    code, report = run_json(str(KV), "--budget", "max_file_bytes=8G")
    assert code == 1 and report["skipped"] == [] and "KV001" in ids(report)


def test_explicit_config_file_and_pyproject_table(repo: Path, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("configs")
    (elsewhere / "team.toml").write_text('ignore = ["KV", "PRF"]\n')
    code, report = run_json(str(KV), "--config", str(elsewhere / "team.toml"))
    assert code == 0 and ids(report) == ["MTP004"]
    (elsewhere / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.diagnose]\nselect = ["MTP004"]\n')
    code, report = run_json(str(KV), "--config", str(elsewhere / "pyproject.toml"))
    assert ids(report) == ["MTP004"]
    (elsewhere / "pyproject.toml").write_text('[project]\nname = "x"\n')
    result = run_cli(str(KV), "--config", str(elsewhere / "pyproject.toml"))
    assert result.exit_code == 2 and "no [tool.diagnose] table" in result.stderr
    result = run_cli(str(KV), "--config", str(elsewhere / "missing.toml"))
    assert result.exit_code == 2 and "no such file" in result.stderr
    result = run_cli(str(KV), "--config", str(elsewhere / "team.toml"), "--no-config")
    assert result.exit_code == 2


def test_unknown_keys_and_bad_values_name_the_file_and_key_all_at_once(repo: Path):
    (repo / "pyproject.toml").write_text(
        '[project]\nname = "x"\n[tool.diagnose]\nselct = ["KV"]\nfail-on = "fatal"\nlang = "fr"\n'
        'rules = ["no-such-folder"]\nbudget = { max_file_bytez = "8G", max_members = "lots" }\n'
        '[[tool.diagnose.suppress]]\nrule = "KV001"\n'
        '[[tool.diagnose.suppress]]\nrule = "KV001"\nsignature = "x"\nreason = "both"\n'
        '[[tool.diagnose.suppress]]\nsignature = "x <N>"\nreason = "r"\nnode = "node-1"\n'
        '[[tool.diagnose.suppress]]\nrule = "KV001"\nreason = "r"\nwhy = "typo"\n')
    result = run_cli(str(KV))
    assert result.exit_code == 2 and result.stdout == ""
    err = result.stderr
    for expected in (
        "pyproject.toml: tool.diagnose.selct: unknown key (did you mean 'select'?)",
        "pyproject.toml: tool.diagnose.fail-on: 'fatal' is not one of info, warning, error, critical",
        "pyproject.toml: tool.diagnose.lang: 'fr'",
        "pyproject.toml: tool.diagnose.rules: 'no-such-folder': no such rule file or folder",
        "pyproject.toml: tool.diagnose.budget.max_file_bytez",
        "pyproject.toml: tool.diagnose.budget.max_members",
        "pyproject.toml: tool.diagnose.suppress[0].reason: missing",
        "pyproject.toml: tool.diagnose.suppress[1]: give exactly one of `rule`",
        "pyproject.toml: tool.diagnose.suppress[2]: `path` and `node` narrow a rule suppression",
        "pyproject.toml: tool.diagnose.suppress[3].why: unknown key",
    ):
        assert expected in err, (expected, err)
    assert err.count("diagnose: error:") == 10


def test_invalid_toml_and_unknown_names_in_the_file(repo: Path):
    (repo / ".diagnose.toml").write_text('select = ["KV"\n')
    result = run_cli(str(KV))
    assert result.exit_code == 2 and ".diagnose.toml: invalid TOML" in result.stderr
    (repo / ".diagnose.toml").write_text('select = ["KV", "KVX"]\n')
    result = run_cli(str(KV))
    assert result.exit_code == 2 and ".diagnose.toml: select: unknown rule selector 'KVX'" in result.stderr
    (repo / ".diagnose.toml").write_text('[[suppress]]\nrule = "KV999"\nreason = "gone"\n')
    result = run_cli(str(KV))
    assert result.exit_code == 2 and ".diagnose.toml: suppress[0].rule: no rule 'KV999'" in result.stderr
    with pytest.raises(ConfigError):
        load(repo / ".diagnose.toml.missing")


def test_rules_list_reads_the_file_too(repo: Path):
    (repo / "my-rules").mkdir()
    (repo / "my-rules" / "USR001.queue-wait.toml").write_text(USER_RULE)
    (repo / ".diagnose.toml").write_text('select = ["USR", "KV001"]\nrules = ["my-rules"]\n')
    result = run_cli("rules", "list", "--format", "json")
    assert result.exit_code == 0
    assert [r["id"] for r in json.loads(result.stdout)] == ["USR001", "KV001"]
    result = run_cli("rules", "list", "--no-config", "--format", "json")
    assert len(json.loads(result.stdout)) > 50
