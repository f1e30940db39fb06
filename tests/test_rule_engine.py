"""Rule files are validated precisely, and each match kind behaves as documented."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from helpers import said

from diagnose.authoring.fixtures import evaluate
from diagnose.engine.rulefile import RuleError, load_rule, rule_from_dict
from diagnose.messages import fill as render

BASE = {
    "id": "USR001",
    "name": "user-rule",
    "category": "engine",
    "severity": "error",
    "title": {"en": "t", "zh": "t"},
    "remediation": {"en": "r", "zh": "r"},
}


def make(match: dict, **extra):
    return rule_from_dict({**BASE, **extra, "match": match}, "user/USR001.toml")


@pytest.mark.parametrize(
    "data, field",
    [
        ({**BASE, "match": {"kind": "pattern", "regex": "x"}, "sevrity": "error"}, "sevrity"),
        ({**BASE, "category": "nope", "match": {"kind": "pattern", "regex": "x"}}, "category"),
        ({**BASE, "severity": "fatal", "match": {"kind": "pattern", "regex": "x"}}, "severity"),
        ({**BASE, "match": {"kind": "regexp", "regex": "x"}}, "match.kind"),
        ({**BASE, "match": {"kind": "pattern", "regex": "(unclosed"}}, "match.regex"),
        ({**BASE, "match": {"kind": "pattern", "regex": "(?<=a)b"}}, "match.regex"),
        ({**BASE, "match": {"kind": "pattern", "regex": r"(a)\1"}}, "match.regex"),
        ({**BASE, "match": {"kind": "threshold", "signal": "x", "above": 1, "below": 2}}, "match"),
        ({**BASE, "match": {"kind": "threshold", "signal": "x", "above": 1, "sustained": "ten"}}, "match.sustained"),
        ({**BASE, "match": {"kind": "absence", "when": {"regex": "a"}}}, "match.missing"),
        ({**BASE, "id": "bad id", "match": {"kind": "pattern", "regex": "x"}}, "id"),
    ],
)
def test_invalid_rules_name_the_field(data, field):
    with pytest.raises(RuleError) as err:
        rule_from_dict(data, "user/USR001.toml")
    assert err.value.field == field
    assert "user/USR001.toml" in str(err.value)


def test_look_around_error_explains_the_linear_time_engine():
    with pytest.raises(RuleError, match="linear-time"):
        make({"kind": "pattern", "regex": "foo(?!bar)"})


def test_invalid_toml_names_the_file(tmp_path: Path):
    bad = tmp_path / "X001.bad.toml"
    bad.write_text("id = 'X001'\nname = [unclosed\n")
    with pytest.raises(RuleError, match="invalid TOML"):
        load_rule(bad)


def test_pathological_regex_runs_in_linear_time():
    rule = make({"kind": "pattern", "regex": "(a+)+$"})
    log = "a" * 50_000 + "!\n"
    findings, errors = evaluate(rule, log, "x.log", None)
    assert not errors and not findings


def test_pattern_counts_a_multiline_event_once_and_honours_window():
    log = textwrap.dedent("""\
        (W pid=1) ERROR 01-01 10:00:00 [a.py:1] boom one
        (W pid=1) ERROR 01-01 10:00:00 [a.py:1] boom continues
        (W pid=1) ERROR 01-01 10:00:30 [a.py:2] boom two
        (W pid=1) ERROR 01-01 10:09:00 [a.py:3] boom three
    """)
    rule = make({"kind": "pattern", "regex": "boom"})
    findings, _ = evaluate(rule, log, "x.log", "vllm")
    assert findings[0].count == 3
    assert [e.line for e in findings[0].evidence] == [1, 3, 4]
    within = make({"kind": "pattern", "regex": "boom", "min_count": 3, "window": "60s"})
    assert evaluate(within, log, "x.log", "vllm")[0] == []
    wide = make({"kind": "pattern", "regex": "boom", "min_count": 3, "window": "10m"})
    assert len(evaluate(wide, log, "x.log", "vllm")[0]) == 1


def test_pattern_captures_feed_the_summary():
    rule = make({"kind": "pattern", "regex": r"code is (?P<code>\d+)"}, summary={"en": "code {code}, {count}x"})
    findings, _ = evaluate(rule, "ERROR 01-01 10:00:00 [a.py:1] error code is 507014\n", "x.log", "vllm")
    assert said(findings[0].summary) == "code 507014, 1x"


def test_threshold_sustained_duration():
    lines = [
        f"(APIServer pid=1) INFO 01-01 10:00:{s:02d} [l.py:1] Engine 000: Avg prompt throughput: 1.0 tokens/s, "
        f"Avg generation throughput: 1.0 tokens/s, Running: 1 reqs, Waiting: 2 reqs, GPU KV cache usage: 99.0%, Prefix cache hit rate: 0.0%"
        for s in (0, 10, 20)
    ]
    calm = [ln.replace("99.0%", "40.0%").replace("10:00:", "09:59:") for ln in lines] * 8  # a long log, then 3 high
    short = make({"kind": "threshold", "signal": "kv_cache_usage_pct", "above": 95, "sustained": "60s"})
    assert evaluate(short, "\n".join(calm + lines), "x.log", "vllm")[0] == []
    ok = make({"kind": "threshold", "signal": "kv_cache_usage_pct", "above": 95, "sustained": "20s"})
    assert evaluate(ok, "\n".join(calm + lines), "x.log", "vllm")[0][0].facts["samples"] == 3
    # The same three lines alone are a short excerpt: every sample of it is beyond, so 60 s is not asked for.
    excerpt = evaluate(short, "\n".join(lines), "x.log", "vllm")[0]
    assert excerpt and "from all 3 samples of a short excerpt" in said(excerpt[0].summary)


SPEC = ("(APIServer pid=1) INFO 07-13 09:49:{s:02d} [metrics.py:120] SpecDecoding metrics: Mean acceptance length: "
        "1.35, Accepted throughput: 0.11 tokens/s, Drafted throughput: 2.28 tokens/s, Accepted: {a} tokens, Drafted: "
        "{d} tokens, Per-position acceptance rate: 0.259, 0.083, 0.009, Avg Draft acceptance rate: {pct}%")


@pytest.mark.parametrize("drafted, severity", [(756, "error"), (120, "info")])
def test_a_short_excerpt_keeps_its_severity_when_its_samples_weigh_enough(drafted, severity):
    rule = make({"kind": "threshold", "signal": "spec_acceptance_pct", "below": 10, "samples": 3,
                 "also": [{"signal": "spec_drafted_tokens", "above": 0}],
                 "weight": "spec_drafted_tokens", "weight_enough": 500})
    # one interval: 756 drafted tokens at 5% is no blip; 120 might be
    (found,), _ = evaluate(rule, SPEC.format(s=10, a=drafted // 20, d=drafted, pct=5.0), "x.log", "vllm")
    assert found.severity == severity
    # two intervals of 300 weigh 600 together
    two = "\n".join(SPEC.format(s=s, a=15, d=300, pct=5.0) for s in (10, 20))
    assert evaluate(rule, two, "x.log", "vllm")[0][0].severity == "error"
    # an excerpt that ends low after a healthy interval is still only its end, whatever it weighs
    ends = "\n".join([SPEC.format(s=0, a=480, d=600, pct=80.0), SPEC.format(s=10, a=30, d=600, pct=5.0)])
    assert evaluate(rule, ends, "x.log", "vllm")[0][0].severity == "info"


@pytest.mark.parametrize("extra, field", [
    ({"weight": "spec_drafted_tokens"}, "match"),
    ({"weight": "spec_accepted_tokens", "weight_enough": 5}, "match.weight"),
])
def test_weight_needs_its_bound_and_an_also_signal(extra, field):
    match = {"kind": "threshold", "signal": "spec_acceptance_pct", "below": 10,
             "also": [{"signal": "spec_drafted_tokens", "above": 0}], **extra}
    with pytest.raises(RuleError) as info:
        rule_from_dict({**BASE, "match": match}, "user/USR001.toml")
    assert field in str(info.value)


def test_absence_fires_only_without_the_companion():
    rule = make({"kind": "absence", "when": {"regex": "start"}, "missing": {"regex": "ready"}})
    assert evaluate(rule, "INFO 01-01 10:00:00 [a.py:1] start\n", "x.log", "vllm")[0]
    assert not evaluate(rule, "INFO 01-01 10:00:00 [a.py:1] start\nINFO 01-01 10:00:01 [a.py:1] ready\n", "x.log", "vllm")[0]


def test_summary_template_is_not_a_format_string_attack():
    assert render("{count} {x.__class__} {missing}", {"count": 3}) == "3 {x.__class__} "  # unknown: said as nothing
    assert render("{msg}", {"msg": "{count} %s {}"}) == "{count} %s {}"
    assert render("{v:.1f}%", {"v": 97.456}) == "97.5%"


def test_signal_selector_not_regex_excludes_text():
    rule = make({
        "kind": "absence", "scope": "file",
        "when": {"signal": "served_model", "text_regex": "(?i)deepseek-r1", "not_regex": "(?i)distill"},
        "missing": {"signal": "speculative_method"},
    }, sources=["vllm"])
    head = "(APIServer pid=1) INFO 10-02 09:00:01 [utils.py:233] non-default args: {'model': '%s'}\n"
    fired, _ = evaluate(rule, head % "/m/DeepSeek-R1", "a/serve.log", "vllm")
    quiet, _ = evaluate(rule, head % "/m/DeepSeek-R1-Distill-Qwen-7B", "a/serve.log", "vllm")
    assert fired and not quiet


def test_fixture_banners_make_several_files_for_mismatch_rules():
    rule = make({"kind": "mismatch", "signal": "quantization", "across": "file"}, sources=["vllm"])
    line = "(APIServer pid=1) INFO 08-14 07:00:00 [core.py:75] Initializing a V1 LLM engine (v0.9.1) with config: model='/m', quantization=%s, enforce_eager=False\n"
    two = "==> node-1/vllm/serve.log <==\n" + line % "ascend" + "==> node-2/vllm/serve.log <==\n" + line % "None"
    findings, errors = evaluate(rule, two, "fixture/x.log", "vllm")
    assert not errors and findings
    # `quantization=None` is read as `none` (no Python None in a summary); on a tie the lower value is the odd one
    assert {(e.file, e.line) for e in findings[0].evidence} == {("node-1/vllm/serve.log", 1), ("node-2/vllm/serve.log", 1)}
    assert "none (node-2/vllm/serve.log)" in findings[0].facts["values"] and "None" not in findings[0].facts["values"]
    same = "==> node-1/vllm/serve.log <==\n" + line % "ascend" + "==> node-2/vllm/serve.log <==\n" + line % "ascend"
    assert evaluate(rule, same, "fixture/x.log", "vllm")[0] == []


def test_derived_signals_position_decay_and_dp_imbalance():
    rule = make({"kind": "threshold", "signal": "spec_last_pos_acceptance", "below": 0.1,
                 "also": [{"signal": "spec_first_pos_acceptance", "above": 0.4}]}, sources=["vllm"])
    spec = ("(APIServer pid=9) INFO 08-05 12:25:03 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: 2.9, "
            "Accepted: 44 tokens, Drafted: 161 tokens, Per-position acceptance rate: %s, Avg Draft acceptance rate: 27.3%%\n")
    assert evaluate(rule, spec % "0.739, 0.261, 0.043", "a.log", "vllm")[0]
    assert not evaluate(rule, spec % "0.043", "a.log", "vllm")[0]  # one position: no decay to speak of
    dp = make({"kind": "threshold", "signal": "dp_running_imbalance", "above": 1.5,
               "also": [{"signal": "dp_kv_usage_gap", "above": 30}]}, sources=["vllm"])
    tl = ("(APIServer pid=5) INFO 09-01 12:00:10 [loggers.py:123] Engine 00%d: Avg prompt throughput: 1.0 tokens/s, "
          "Avg generation throughput: 1.0 tokens/s, Running: %d reqs, Waiting: 0 reqs, GPU KV cache usage: %.1f%%, Prefix cache hit rate: 0.0%%\n")
    found, _ = evaluate(dp, tl % (0, 3, 10.0) + tl % (1, 40, 90.0), "a.log", "vllm")
    assert found and found[0].facts["engine"] == "Engine 001"
    assert not evaluate(dp, tl % (0, 20, 50.0) + tl % (1, 22, 55.0), "a.log", "vllm")[0]


def test_rules_run_together_fire_exactly_as_they_do_alone():
    # run_rules first asks all pattern rules in one query which can match, then runs only those.
    log = "(W pid=1) ERROR 01-01 10:00:00 [a.py:1] boom\n(W pid=1) INFO 01-01 10:00:01 [a.py:2] fine\n"
    rules = [
        make({"kind": "pattern", "regex": "boom"}, id="USR001"),
        make({"kind": "pattern", "regex": "fine", "level": "ERROR"}, id="USR002"),
        make({"kind": "pattern", "regex": "boom"}, id="USR003", sources=["plog"]),  # text-first: reads every kind
        make({"kind": "pattern", "regex": "boom", "level": "ERROR"}, id="USR007", sources=["plog"]),  # a level: plog only
        make({"kind": "pattern", "regex": "nowhere"}, id="USR004"),
        make({"kind": "pattern", "regex": "fine", "not_regex": "fi"}, id="USR005"),
        make({"kind": "pattern", "regex": "fine", "field": "text", "level": ["INFO"]}, id="USR006"),
    ]
    alone = [r.id for r in rules if evaluate(r, log, "x.log", "vllm")[0]]
    from diagnose.authoring.fixtures import _source
    from diagnose.engine.run import run_rules
    from diagnose.pipeline import RuleFilters, Settings, read

    parsed = read([_source("x.log", log)], Settings(kind="vllm"), RuleFilters())
    together, errors = run_rules(rules, parsed.records, parsed.signals)
    assert alone == ["USR001", "USR003", "USR006"] and [f.rule_id for f in together] == alone and not errors
