"""``--output-lang FORMAT=LANG``: one run writes each output in its own language (an English SARIF for the
code-scanning dashboard beside a Chinese incident page for the on-call team); ``--lang`` stays the language of
the others. The report is typed and its words are said at the edge, so every renderer must take the language
of its own output: a mixed run's files are byte for byte those of single-language runs, and the machine
fields of JSON and SARIF do not depend on the language (diagnose/commands/outputs.py)."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import ROOT, SAMPLES
from diagnose.cli import main
from diagnose.report import formats

KV = SAMPLES / "kv-exhaustion"
CJK = re.compile(r"[\u3400-\u9fff\uff00-\uffef]")
NO_CI = {"GITHUB_ACTIONS": None, "GITHUB_STEP_SUMMARY": None}
# The extra outputs and their file names; the main output is text (-o main.txt).
FILES = {"json": "r.json", "sarif": "r.sarif", "junit": "r.xml", "markdown": "r.md", "html": "r.html",
         "gitlab": "r.gitlab.json"}


def run(*args: str, env: dict | None = None):
    return CliRunner().invoke(main, ["check", "--no-config", *args], env=env or NO_CI, catch_exceptions=False)


def write_all(folder: Path, *args: str) -> dict[str, bytes]:
    """One run over the KV sample writing the text report and every extra output into ``folder``."""
    folder.mkdir()
    extras = [a for fmt, name in FILES.items() for a in (f"--{fmt}", str(folder / name))]
    result = run(str(KV), "-q", "-o", str(folder / "main.txt"), *extras, *args)
    assert result.exit_code == 1, result.stderr
    return {name: (folder / name).read_bytes() for name in ["main.txt", *FILES.values()]}


def rule_title(rule_id: str, lang: str) -> str:
    """A built-in rule's title, read from its TOML (the authored text, not through diagnose)."""
    (path,) = (ROOT / "rules").rglob(f"{rule_id}.*.toml")
    return tomllib.loads(path.read_text(encoding="utf-8"))["title"][lang]


def test_one_run_writes_an_english_sarif_and_a_chinese_page_and_markdown(tmp_path):
    sarif, page, md, data = (tmp_path / n for n in ("r.sarif", "r.html", "r.md", "r.json"))
    result = run(str(KV), "-q", "--lang", "en", "--sarif", str(sarif), "--html", str(page), "--markdown", str(md),
                 "--json", str(data), "--output-lang", "html=zh", "--output-lang", "markdown=zh")
    assert result.exit_code == 1, result.stderr
    top = json.loads(data.read_text(encoding="utf-8"))["findings"][0]["rule_id"]
    assert top == "KV001"
    zh_title, en_title = rule_title(top, "zh"), rule_title(top, "en")

    results = json.loads(sarif.read_text(encoding="utf-8"))["runs"][0]["results"]
    texts = [r["message"]["text"] for r in results]
    assert any(t.startswith(en_title) for t in texts)
    assert not [t for t in texts if CJK.search(t)]  # every message of the SARIF is English

    markdown = md.read_text(encoding="utf-8")
    assert markdown.startswith("## diagnose：") and zh_title in markdown and en_title not in markdown
    html = page.read_text(encoding="utf-8")
    assert '<html lang="zh"' in html and zh_title in html and en_title not in html


@pytest.mark.parametrize("run_lang, each", [("zh", "en"), ("en", "zh")])
def test_every_format_takes_the_language_of_its_own_output(tmp_path, run_lang, each):
    """A run in one language whose outputs are all asked in the other writes exactly the files of a run in
    that other language: no renderer reads the run's language behind its output's back."""
    every = ",".join(f"{fmt}={each}" for fmt in ["text", *FILES])
    mixed = write_all(tmp_path / "mixed", "--lang", run_lang, "--output-lang", every)
    plain = write_all(tmp_path / "plain", "--lang", each)
    assert [n for n in mixed if mixed[n] != plain[n]] == []


@pytest.mark.parametrize("fmt", ["json", "markdown", "sarif", "concise"])
def test_the_default_is_unchanged_and_other_formats_settings_do_not_touch_an_output(fmt):
    """Without the option every output is in --lang, as before; naming other formats changes nothing here
    (the byte-identity against the code before the option was measured on the branch; see the report)."""
    others = ",".join(f"{f}=zh" for f in formats.names() if f != fmt)
    plain = run(str(KV), "--format", fmt, "--lang", "en")
    assert plain.exit_code == 1
    assert run(str(KV), "--format", fmt, "--lang", "en", "--output-lang", others).stdout == plain.stdout
    assert run(str(KV), "--format", fmt, "--lang", "en", "--output-lang", f"{fmt}=en").stdout == plain.stdout
    assert run(str(KV), "--format", fmt, "--lang", "zh").stdout == run(
        str(KV), "--format", fmt, "--lang", "en", "--output-lang", f"{fmt}=zh").stdout


def test_machine_fields_do_not_depend_on_the_language(tmp_path):
    en, zh = (write_all(tmp_path / lang, "--output-lang", f"json={lang},sarif={lang}") for lang in ("en", "zh"))
    sarif = {lang: json.loads(out["r.sarif"])["runs"][0] for lang, out in (("en", en), ("zh", zh))}

    def fields(r):
        return r["ruleId"], r["level"], r.get("partialFingerprints"), [
            loc.get("physicalLocation") for loc in r.get("locations", [])]

    assert [fields(r) for r in sarif["en"]["results"]] == [fields(r) for r in sarif["zh"]["results"]]
    assert [r["id"] for r in sarif["en"]["tool"]["driver"]["rules"]] == [
        r["id"] for r in sarif["zh"]["tool"]["driver"]["rules"]]
    assert any(CJK.search(r["message"]["text"]) for r in sarif["zh"]["results"])

    data = {lang: json.loads(out["r.json"]) for lang, out in (("en", en), ("zh", zh))}
    keep = ("rule_id", "name", "category", "severity", "count", "fingerprint", "nodes", "evidence", "first_seen")
    assert data["en"].keys() == data["zh"].keys()
    assert [{k: f[k] for k in keep} for f in data["en"]["findings"]] == [
        {k: f[k] for k in keep} for f in data["zh"]["findings"]]
    assert data["en"]["coverage"] == data["zh"]["coverage"]
    assert [f["title"] for f in data["en"]["findings"]] != [f["title"] for f in data["zh"]["findings"]]


def test_cn_is_chinese_and_items_may_be_comma_separated():
    zh = run(str(KV), "--format", "markdown", "--output-lang", "markdown=zh").stdout
    assert CJK.search(zh)
    assert run(str(KV), "--format", "markdown", "--output-lang", "markdown=CN").stdout == zh
    assert run(str(KV), "--format", "markdown", "--output-lang", "html=en, markdown=zh").stdout == zh
    # a later item wins, as a later --budget KEY= does
    assert run(str(KV), "--format", "markdown", "--output-lang", "markdown=en",
               "--output-lang", "markdown=zh").stdout == zh


@pytest.mark.parametrize("value, problem", [
    ("htm=zh", "unknown format 'htm'"),
    ("html", "'html' is not FORMAT=LANG"),
    ("=zh", "is not FORMAT=LANG"),
    ("html=fr", "unknown language 'fr'"),
    ("prom=en", "unknown format 'prom'"),  # a live output, not a format of a report
])
def test_a_bad_value_is_a_usage_error_naming_the_valid_formats_and_languages(value, problem):
    result = run(str(KV), "--output-lang", value)
    assert result.exit_code == 2 and result.stdout == ""
    err = " ".join(result.stderr.split())
    assert "Invalid value for '--output-lang'" in err and problem in err
    assert f"formats: {', '.join(formats.names())}" in err and "languages: en, zh, cn" in err
    assert "Traceback" not in result.stderr


def test_the_configuration_file_sets_an_outputs_language_and_the_command_line_wins(repo):
    (repo / ".diagnose.toml").write_text('lang = "en"\noutput-lang = { markdown = "zh" }\n', encoding="utf-8")
    args = ["check", str(KV), "--format", "markdown"]
    configured = CliRunner().invoke(main, args, env=NO_CI).stdout
    assert configured.startswith("## diagnose：")
    assert CliRunner().invoke(main, args + ["--output-lang", "markdown=en"], env=NO_CI).stdout.startswith(
        "## diagnose: ")
    # the file's format setting is more specific than --lang: --lang is the default of the formats not named
    assert CliRunner().invoke(main, args + ["--lang", "en"], env=NO_CI).stdout == configured
    text = CliRunner().invoke(main, ["check", str(KV), "--format", "json"], env=NO_CI).stdout
    assert not CJK.search(json.loads(text)["findings"][0]["title"])


@pytest.mark.parametrize("table, problem", [
    ('{ htm = "zh" }', "output-lang.htm: unknown format"),
    ('{ html = "fr" }', "output-lang.html: 'fr' is not one of en, zh"),
    ('"zh"', "output-lang: must be a table"),
])
def test_a_bad_configuration_table_is_a_usage_error(repo, table, problem):
    (repo / ".diagnose.toml").write_text(f"output-lang = {table}\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["check", str(KV)], env=NO_CI)
    assert result.exit_code == 2 and problem in result.stderr


def test_github_annotations_and_the_step_summary_take_their_formats_language(tmp_path):
    summary = tmp_path / "summary.md"
    result = run(str(KV), "--lang", "en", "--output-lang", "github=zh,markdown=zh",
                 env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)})
    annotations = [line for line in result.stdout.splitlines() if line.startswith("::")]
    assert annotations and all(CJK.search(line) for line in annotations if line.startswith("::error"))
    assert "Root cause: " in result.stdout  # the text report on standard output stays in --lang
    assert summary.read_text(encoding="utf-8").startswith("## diagnose：")


def test_fleet_writes_each_output_in_its_own_language(tmp_path):
    """``diagnose fleet`` delivers its outputs as ``check`` does: the same option, the same languages."""
    dataset, md = tmp_path / "dataset", tmp_path / "fleet.md"
    assert CliRunner().invoke(main, ["extract", str(KV), "--node", "node-0", "--out", str(dataset)],
                              env=NO_CI).exit_code == 0
    result = CliRunner().invoke(main, ["fleet", str(dataset), "--no-config", "--lang", "en", "--format", "concise",
                                       "--markdown", str(md), "--output-lang", "markdown=zh"], env=NO_CI)
    assert result.exit_code == 1, result.stderr
    assert rule_title("KV001", "en") in result.stdout and not CJK.search(result.stdout)
    assert rule_title("KV001", "zh") in md.read_text(encoding="utf-8")
