"""Evidence never names a file that does not exist: findings on derived lines (preflight facts, validation facts)
point at the file and line the fact came from; derived inputs are not files read; the comparison's own lines
are not unrecognised errors; Python source is not sniffed as a log (diagnose/analysis/provenance.py)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import SAMPLES, run_cli
from diagnose.parsers import registry

VALIDATION = SAMPLES / "validation-regression"
MODELS = SAMPLES / "models"
SERVE = MODELS / "serve.sh"


def _json(*args: str) -> tuple[int, dict]:
    result = run_cli(*args, "--format", "json")
    return result.exit_code, json.loads(result.stdout)


def _evidence(report: dict) -> list[dict]:
    return [e for f in report["findings"] for e in f["evidence"]]


def _on_disk(path: str) -> bool:
    return Path(path.split("!", 1)[0]).is_file()


def test_validation_findings_point_at_the_result_files():
    code, report = _json(str(VALIDATION / "run"), "--baseline", str(VALIDATION / "baseline"))
    assert code == 1
    assert {"VAL001", "VAL002", "VAL003", "VAL004"} <= {f["rule_id"] for f in report["findings"]}
    assert all(_on_disk(e["file"]) for e in _evidence(report)), [e["file"] for e in _evidence(report)]
    val001 = next(f for f in report["findings"] if f["rule_id"] == "VAL001")
    (ev,) = val001["evidence"]
    summary = Path(ev["file"])
    assert summary.name.startswith("summary_") and "compare metric=accuracy dataset=aime2024" in ev["text"]
    assert "aime2024" in summary.read_text(encoding="utf-8").splitlines()[ev["line"] - 1].lower()
    val004 = next(f for f in report["findings"] if f["rule_id"] == "VAL004")
    assert val004["evidence"][0]["file"].endswith(".json")  # the bench result file
    # The comparison's own lines are what the VAL rules judge, never "unrecognised errors".
    assert not [u for u in report["unrecognised"] if u["signature"].startswith(("compare ", "mismatch "))]
    assert "<validation>" not in json.dumps(report["findings"]) + json.dumps(report["unrecognised"])
    # Derived inputs are listed apart, not counted as files read.
    assert {d["path"] for d in report["derived"]} >= {"<validation>"}
    assert not [i for i in report["inputs"] if i["kind"] in ("validation-facts", "preflight")]
    text = run_cli(str(VALIDATION / "run"), "--baseline", str(VALIDATION / "baseline"), "--no-color").stdout
    assert f"\nRead {len(report['inputs'])} files (" in text


def test_bundle_preflight_facts_point_at_the_log_line_they_came_from(tmp_path):
    log = tmp_path / "conf" / "vllm-serve.log"
    log.parent.mkdir()
    log.write_text(
        "(APIServer pid=1) INFO 08-11 09:10:00 [api_server.py:1] vLLM API server version 0.9.1\n"
        "(APIServer pid=1) INFO 08-11 09:10:00 [utils.py:326] non-default args: {'model_tag': '/models/DeepSeek-R1', "
        "'model': '/models/DeepSeek-R1', 'max_model_len': 8192, 'tensor_parallel_size': 32}\n", encoding="utf-8")
    code, report = _json(str(tmp_path))
    ids = {f["rule_id"] for f in report["findings"]}
    assert {"CFG201", "KV202"} <= ids
    assert {(e["file"], e["line"]) for e in _evidence(report)} == {(str(log), 2)}
    assert report["derived"][0]["path"].endswith("conf/preflight-1.facts")
    assert [i["path"] for i in report["inputs"]] == [str(log)]


def test_preflight_command_points_at_the_launch_script_and_the_model_files():
    code, report = _json("preflight", str(MODELS / "deepseek-r1-w8a8-no-mtp"), "--serve-script", str(SERVE))
    assert code == 1
    (mtp,) = [f for f in report["findings"] if f["rule_id"] == "MTP201"]
    places = {(Path(e["file"]).name, e["line"]) for e in mtp["evidence"]}
    spec_line = next(i for i, line in enumerate(SERVE.read_text(encoding="utf-8").splitlines(), 1)
                     if "--speculative-config" in line)
    assert places == {("serve.sh", spec_line), ("model.safetensors.index.json.gz", 1)}
    assert all(Path(e["file"]).is_file() for e in _evidence(report))
    assert [d["kind"] for d in report["derived"]] == ["preflight"]


def test_a_fact_from_config_json_points_at_its_key(tmp_path):
    model = tmp_path / "DeepSeek-R1"
    model.mkdir()
    config = {"model_type": "deepseek_v3", "num_hidden_layers": 61, "num_attention_heads": 128,
              "num_nextn_predict_layers": 1, "kv_lora_rank": 512, "qk_rope_head_dim": 64}
    (model / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    code, report = _json("preflight", str(model), "--serve-cmd", "vllm serve /m/DeepSeek-R1 --tensor-parallel-size 12")
    assert code == 1
    (cfg,) = [f for f in report["findings"] if f["rule_id"] == "CFG201"]  # 128 heads / TP 12
    # A launch given on the command line has no file: its facts say so instead of naming one.
    assert {e["file"] for e in cfg["evidence"]} == {"--serve-cmd"}
    lines = (model / "config.json").read_text(encoding="utf-8").splitlines()
    from diagnose.preflight import checks, launch as launch_mod, modelcard
    from diagnose.preflight.origins import Sources, fact_origins

    card = modelcard.load_model_dir(model)
    facts = checks.compute(card, launch_mod.parse_serve_script("vllm serve /m/DeepSeek-R1 --tensor-parallel-size 12", "--serve-cmd"),
                           checks.Target())
    sources = Sources(config=(str(model / "config.json"), "\n".join(lines)))
    placed = dict(zip([f.key for f in facts], fact_origins(facts, sources, None)))
    heads_line = next(i for i, line in enumerate(lines, 1) if '"num_attention_heads"' in line)
    assert placed["num_attention_heads"] == (str(model / "config.json"), heads_line)


# --- Python source is not a log ---------------------------------------------------------------------------------

def test_python_source_quoting_log_lines_is_not_read_as_a_log():
    make = SAMPLES / "ci-artifact" / "make.py"
    head = make.read_text(encoding="utf-8").splitlines()[:200]
    assert registry.sniff("make.py", head) == registry.SOURCE_CODE
    code, report = _json(str(SAMPLES / "ci-artifact"))
    assert code == 1
    assert not [e for e in _evidence(report) if e["file"].endswith("make.py")]
    assert {"path": str(make), "reason": "Python source code, not a log (not read)"} in report["skipped"]
    assert report["coverage"]["status"] == "complete"  # not a log: leaving it out loses nothing
    mem = next(f for f in report["findings"] if f["rule_id"] == "MEM001")
    assert mem["count"] == 1  # the OOM once, from the artifact, not again from the script's string


def test_python_files_that_are_results_or_logs_keep_their_kind():
    config = next((VALIDATION / "run").rglob("configs/*.py"))
    assert registry.sniff(config.name, config.read_text(encoding="utf-8").splitlines()) == "aisbench"
    log_lines = ["INFO 07-01 09:00:02 [__init__.py:239] Automatically detected platform npu.",
                 "(APIServer pid=880) INFO 07-01 09:00:05 [api_server.py:1805] vLLM API server version 0.9.1"]
    assert registry.sniff("server.py", log_lines) == "vllm"  # a log saved under a .py name, no statement in it
