"""Every rule in the catalog proves itself on its own fixtures, and the catalog is well-formed."""

from __future__ import annotations

import json

import pytest
from helpers import said

from diagnose.engine import builtin_rules_dir, load_rules
from diagnose.authoring.fixtures import run_rule_tests
from diagnose.model import CATEGORIES

RULES, ERRORS = load_rules([builtin_rules_dir()])


def test_catalog_loads_without_errors():
    # Loaded without `trusted`, so every pattern is compiled here: a run trusts the built-in catalog.
    assert not ERRORS, [str(e) for e in ERRORS]


def _as_dicts(rules):
    return [vars(r) | {"tests": [vars(t) for t in r.tests]} for r in rules]


def test_the_cached_catalog_is_the_catalog(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path))
    trusted = builtin_rules_dir()
    first, _ = load_rules([trusted], trusted=trusted)  # parses the TOML and writes the cache
    cached = list(tmp_path.glob("rules-*.json"))
    second, errors = load_rules([trusted], trusted=trusted)  # reads the cache
    assert len(cached) == 1 and not errors
    assert _as_dicts(first) == _as_dicts(second) == _as_dicts(RULES)
    cached[0].write_text("{not json")  # a broken cache is parsed again and rewritten
    assert _as_dicts(load_rules([trusted], trusted=trusted)[0]) == _as_dicts(RULES)
    assert json.loads(cached[0].read_text())


def test_the_catalog_cache_can_be_off_or_unwritable(tmp_path, monkeypatch):
    trusted = builtin_rules_dir()
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", "")
    assert _as_dicts(load_rules([trusted], trusted=trusted)[0]) == _as_dicts(RULES)
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("")
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(blocked / "cache"))
    assert _as_dicts(load_rules([trusted], trusted=trusted)[0]) == _as_dicts(RULES)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_rule_has_firing_and_quiet_fixtures(rule):
    assert any(t.fires for t in rule.tests), f"{rule.id} has no fixture that must fire"
    assert any(not t.fires for t in rule.tests), f"{rule.id} has no near-miss fixture"


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_rule_fixtures_pass(rule):
    failures = [r for r in run_rule_tests([rule]) if not r.ok]
    assert not failures, "\n".join(f"{r.name}: {r.detail}" for r in failures)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_rule_is_bilingual_and_filed_by_category(rule):
    assert rule.title.get("en") and rule.title.get("zh")
    assert rule.remediation.get("en") and rule.remediation.get("zh")
    assert rule.category in CATEGORIES
    assert f"/{rule.category}/" in rule.path.replace("\\", "/")
    assert rule.path.endswith(f"{rule.id}.{rule.name}.toml")


# --- catalog coverage, languages, ranking -------------------------------------------------------

from click.testing import CliRunner  # noqa: E402

from diagnose.cli import main  # noqa: E402
from diagnose.authoring.fixtures import evaluate  # noqa: E402

BY_ID = {r.id: r for r in RULES}


def test_catalog_covers_every_category():
    assert len(RULES) >= 35
    assert {r.category for r in RULES} == set(CATEGORIES)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_every_text_has_a_chinese_version(rule):
    for what in ("title", "summary", "description", "remediation"):
        table = getattr(rule, what)
        if table.get("en"):
            assert table.get("zh", "").strip(), f"{rule.id}: {what}.zh missing"


@pytest.mark.parametrize("rule", [r for r in RULES if r.summary.get("zh")], ids=lambda r: r.id)
def test_lang_zh_gives_chinese_title_summary_and_remediation(rule):
    fixture = next(t for t in rule.tests if t.fires)
    findings, errors = evaluate(rule, fixture.log, fixture.path, fixture.kind, lang="zh")
    assert findings and not errors
    f = findings[0]
    if rule.match.kind == "code":  # the title and next step of an error code come from its table, in Chinese
        text = said(f.title, "zh") + said(f.remediation, "zh")
        assert any("\u4e00" <= ch <= "\u9fff" for ch in text), text
    else:
        assert said(f.title, "zh") == rule.title["zh"]
        assert said(f.remediation, "zh") == rule.remediation["zh"].strip()
    assert any("\u4e00" <= ch <= "\u9fff" for ch in said(f.summary, "zh")), said(f.summary, "zh")


def test_echo_rules_are_marked_consequences():
    # engine death / RPC timeouts, HCCL timeouts of the waiting ranks, MindIE daemon kills
    for rid in ("ENG001", "ENG010", "COMM002", "COMM003", "COMM009"):
        assert BY_ID[rid].consequence, rid
    # root causes are never consequences
    for rid in ("QNT001", "MEM001", "DEV010", "COMM004", "KV003"):
        assert not BY_ID[rid].consequence, rid


_LOAD_FAILURE = """\
(VllmWorker rank=2 pid=812) ERROR 04-02 11:20:01 [multiproc_executor.py:470] WorkerProc failed to start.
(VllmWorker rank=2 pid=812) ERROR 04-02 11:20:01 [multiproc_executor.py:470] Traceback (most recent call last):
(VllmWorker rank=2 pid=812) ERROR 04-02 11:20:01 [multiproc_executor.py:470]   File "/vllm-workspace/vllm/vllm/model_executor/models/deepseek_v2.py", line 801, in load_weights
(VllmWorker rank=2 pid=812) ERROR 04-02 11:20:01 [multiproc_executor.py:470] KeyError: 'model.layers.23.mlp.experts.w2_weight_offset'
(EngineCore_DP0 pid=640) ERROR 04-02 11:20:03 [core.py:700] EngineCore failed to start.
(APIServer pid=500) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
"""


def test_consequence_points_to_its_cause_and_ranks_after_it(tmp_path):
    log = tmp_path / "serve.log"
    log.write_text(_LOAD_FAILURE, encoding="utf-8")
    result = CliRunner().invoke(main, ["--format", "json", str(log)])
    import json

    findings = json.loads(result.output)["findings"]
    ids = [f["rule_id"] for f in findings]
    assert "QNT001" in ids and "ENG001" in ids
    assert ids.index("QNT001") < ids.index("ENG001")
    eng = findings[ids.index("ENG001")]
    assert eng["caused_by"] == "QNT001"
    text = CliRunner().invoke(main, ["--format", "text", "--lang", "en", str(log)]).output
    assert "because of" in text and "QNT001" in text
    zh = CliRunner().invoke(main, ["--format", "text", "--lang", "zh", str(log)]).output
    assert "起因" in zh and "QNT001" in zh
    flat = "".join(ch for ch in zh if ch not in " \n│")
    assert BY_ID["QNT001"].title["zh"][:8] in flat


def test_an_edited_rule_is_parsed_again_not_taken_from_the_cache(tmp_path, monkeypatch):
    import shutil

    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "rules"
    shutil.copytree(builtin_rules_dir(), folder)
    before, _ = load_rules([folder], trusted=folder)
    path = next(folder.rglob("KV001.*.toml"))
    path.write_text(path.read_text().replace('\ntitle.en = "', '\ntitle.en = "Edited: ', 1))
    after, errors = load_rules([folder], trusted=folder)
    assert not errors
    titles = {r.id: r.title["en"] for r in after}
    assert titles["KV001"].startswith("Edited: ")
    assert {r.id: r.title["en"] for r in before}["KV001"] == titles["KV001"][len("Edited: "):]
