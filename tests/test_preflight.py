"""Preflight: model metadata, launch parsing, derived facts, the facts parser, the command and the bundle hook."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from diagnose.parsers.kinds import preflight_facts as facts_parser
from diagnose.parsers.lineframe import FileContext, lines_frame
from diagnose.preflight import checks, launch as launch_mod, modelcard

from conftest import SAMPLES, run_cli

MODELS = SAMPLES / "models"
SERVE = MODELS / "serve.sh"
SAMPLE_DIRS = ["deepseek-r1-w8a8", "deepseek-r1-w8a8-no-mtp", "deepseek-r1-w8a8-attn-unquantized-desc"]


def facts_of(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        if " = " in line and not line.startswith("#"):
            key, _, rest = line.partition(" = ")
            out.setdefault(key, rest.split("  # ")[0])
    return out


def preflight_json(*args: str) -> tuple[int, dict]:
    result = run_cli("preflight", *args, "--format", "json")
    return result.exit_code, json.loads(result.stdout)


@pytest.fixture(scope="session")
def sample_facts(tmp_path_factory) -> dict[str, tuple[int, dict, str]]:
    """Each sample directory with serve.sh on 2 x 8 x 64 GiB: (exit code, report, facts text)."""
    out = {}
    for name in SAMPLE_DIRS:
        facts = tmp_path_factory.mktemp("facts") / f"{name}.facts"
        code, report = preflight_json(str(MODELS / name), "--serve-script", str(SERVE), "--npus", "16",
                                      "--npu-mem-gb", "64", "--facts", str(facts))
        out[name] = (code, report, facts.read_text(encoding="utf-8"))
    return out


# --- launch ------------------------------------------------------------------------------------------


def test_serve_script_continuations_env_and_json_args():
    launch = launch_mod.parse_serve_script(SERVE.read_text(encoding="utf-8"), "serve.sh")
    assert launch.problems == []
    assert launch.model == "/models/deepseek-r1-w8a8"  # ${MODEL_PATH} expanded from the export line
    assert (launch.tp, launch.dp, launch.expert_parallel) == (8, 2, True)
    assert (launch.max_model_len, launch.max_num_seqs, launch.mem_util) == (32768, 4, 0.92)
    assert launch.quantization == "ascend"
    assert launch.spec_method == "mtp" and launch.num_spec_tokens == 1 and launch.mtp_enabled
    assert launch.served_name == "deepseek-r1"


def test_serve_cmd_equals_form_additional_config_and_deprecated_method():
    cmd = ("vllm serve /m/DeepSeek-V3 --tensor-parallel-size=16 --max-model-len=65536 "
           "--speculative-config '{\"method\":\"deepseek_mtp\",\"num_speculative_tokens\":2}' "
           "--additional-config '{\"torchair_graph_config\":{\"enabled\":true},"
           "\"eplb_config\":{\"dynamic_eplb\":true,\"num_redundant_experts\":8}}' --enable-expert-parallel")
    launch = launch_mod.parse_serve_script(cmd)
    assert (launch.tp, launch.dp, launch.max_model_len) == (16, None, 65536)
    assert launch.spec_method == "deepseek_mtp" and launch.mtp_enabled and launch.num_spec_tokens == 2
    assert launch.graph_mode and launch.redundant_experts == 8 and launch.expert_parallel


def test_oldest_num_speculative_tokens_flag_and_api_server_entrypoint():
    launch = launch_mod.parse_serve_script(
        "python -m vllm.entrypoints.openai.api_server --model /m/DeepSeek-R1 --num-speculative-tokens 1 -tp 8")
    assert launch.model == "/m/DeepSeek-R1" and launch.mtp_enabled


def test_script_without_serve_is_a_problem_not_an_error():
    launch = launch_mod.parse_serve_script("#!/bin/bash\nexport A=1\necho hello\n", "run.sh")
    assert launch.problems and "not a vLLM launch: no `vllm serve MODEL ...`" in launch.problems[0]
    assert launch.command == ""


def test_non_default_args_line():
    line = ("(APIServer pid=1) INFO 08-11 09:10:00 [utils.py:326] non-default args: {'model_tag': '/models/DeepSeek-R1-W8A8', "
            "'host': '0.0.0.0', 'model': '/models/DeepSeek-R1-W8A8', 'trust_remote_code': True, 'max_model_len': 16384, "
            "'quantization': 'ascend', 'tensor_parallel_size': 16, 'enable_expert_parallel': True, "
            "'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 1}, 'max_num_seqs': 64}")
    launch = launch_mod.parse_non_default_args(line, "serve.log line 3")
    assert launch is not None and launch.problems == []
    assert (launch.tp, launch.max_model_len, launch.max_num_seqs) == (16, 16384, 64)
    assert launch.expert_parallel and launch.mtp_enabled and launch.quantization == "ascend"
    broken = launch_mod.parse_non_default_args("non-default args: {'a': os.system('x')}")
    assert broken is not None and broken.problems  # never evaluated
    assert launch_mod.parse_non_default_args("INFO nothing here") is None


MINDIE = {
    "ServerConfig": {"port": 1025},
    "BackendConfig": {
        "npuDeviceIds": [[0, 1, 2, 3, 4, 5, 6, 7]],
        "multiNodesInferEnabled": True,
        "ModelDeployConfig": {
            "maxSeqLen": 8192,
            "maxInputTokenLen": 4096,
            "ModelConfig": [{
                "modelName": "deepseek-v3", "modelWeightPath": "/data/DeepSeek-V3-w8a8", "worldSize": 8,
                "npuMemSize": -1, "backendType": "atb",
                "plugin_params": "{\"plugin_type\":\"mtp\",\"num_speculative_tokens\": 1}",
            }],
        },
        "ScheduleConfig": {"maxBatchSize": 200, "maxPrefillTokens": 8192},
    },
}


def test_mindie_config_fields():
    launch = launch_mod.parse_mindie_config(json.dumps(MINDIE))
    assert launch.engine == "mindie" and launch.world_size == 8 and launch.tp is None
    assert (launch.max_model_len, launch.max_num_seqs, launch.kv_pool_gb) == (8192, 200, None)
    assert launch.spec_method == "mtp" and launch.mtp_enabled
    bad = launch_mod.parse_mindie_config("{ not json")
    assert bad.problems and bad.model is None


# --- model card --------------------------------------------------------------------------------------


def test_tensor_table_shapes_bytes_and_splits():
    names = {
        "model.embed_tokens.weight": "s1",
        "model.layers.0.self_attn.q_b_proj.weight": "s1",
        "model.layers.0.self_attn.q_b_proj.weight_scale": "s1",
        "model.layers.0.self_attn.kv_b_proj.weight": "s1",
        "model.layers.5.mlp.experts.17.down_proj.weight": "s1",
        "model.layers.5.mlp.experts.17.down_proj.weight_scale": "s1",
        "model.layers.5.mlp.gate.e_score_correction_bias": "s1",
        "model.layers.0.self_attn.weird_thing.weight": "s1",
    }
    card = modelcard.fill(modelcard.ModelCard("m"), {"model_type": "deepseek_v3"}, {"weight_map": names},
                          {"model.layers.5.mlp.experts.17.down_proj.weight": "W8A8_DYNAMIC"})
    t = {r["name"]: r for r in modelcard.tensor_table(card).iter_rows(named=True)}
    assert t["model.embed_tokens.weight"]["elements"] == 129280 * 7168 and t["model.embed_tokens.weight"]["bytes_per"] == 2
    assert t["model.layers.0.self_attn.q_b_proj.weight"]["bytes_per"] == 1  # int8: a weight_scale sits beside it
    assert t["model.layers.0.self_attn.q_b_proj.weight"]["split"] == "tp"
    assert t["model.layers.0.self_attn.q_b_proj.weight_scale"]["elements"] == 128 * 192
    assert t["model.layers.0.self_attn.kv_b_proj.weight"]["bytes_per"] == 2
    assert t["model.layers.5.mlp.experts.17.down_proj.weight"]["elements"] == 7168 * 2048
    assert t["model.layers.5.mlp.experts.17.down_proj.weight"]["split"] == "moe"
    assert t["model.layers.5.mlp.experts.17.down_proj.weight"]["in_desc"]
    assert t["model.layers.5.mlp.gate.e_score_correction_bias"]["elements"] == 256
    assert t["model.layers.0.self_attn.weird_thing.weight"]["elements"] == 0  # unknown shape: not counted


def test_missing_and_broken_model_files_are_problems(tmp_path):
    (tmp_path / "config.json").write_text("{ broken", encoding="utf-8")
    (tmp_path / "model.safetensors.index.json").write_text('{"metadata": {}}', encoding="utf-8")
    card = modelcard.load_model_dir(tmp_path)
    assert card.config == {} and card.weight_map is None and card.quant_desc is None
    assert any("config.json: not valid JSON" in p for p in card.problems)
    assert any("no `weight_map`" in p for p in card.problems)


# --- facts parser ------------------------------------------------------------------------------------


def test_facts_parser_records_and_signals():
    text = [
        "# diagnose preflight facts",
        "mtp_enabled = 1  # speculative method 'mtp', num_speculative_tokens 1",
        "quantization = ascend  # --quantization",
        "kv_tokens_per_engine = 1,234",
        "fp8_checkpoint = true",
        "free text that is not a fact",
    ]
    records, signals = facts_parser.parse(lines_frame(text), FileContext("x.facts", None, "preflight", None))
    assert records.height == 6 and records["parsed"].to_list() == [True, True, True, True, True, False]
    assert records["component"].to_list()[1] == "mtp_enabled"
    sig = {r["signal"]: (r["value"], r["text"]) for r in signals.iter_rows(named=True)}
    assert sig["mtp_enabled"] == (1.0, None)
    assert sig["quantization"] == (None, "ascend")
    assert sig["kv_tokens_per_engine"] == (1234.0, None)
    assert sig["fp8_checkpoint"] == (1.0, None)
    assert signals["line"].to_list() == [2, 3, 4, 5]


# --- the samples, end to end -------------------------------------------------------------------------


def test_correct_sample_is_clean_and_capacity(sample_facts):
    code, report, text = sample_facts["deepseek-r1-w8a8"]
    assert code == 0 and report["findings"] == []
    f = facts_of(text)
    assert f["mtp_layer_in_weights"] == "1" and f["mtp_layer_in_quant_desc"] == "1"
    assert f["quant_desc_missing_tensors"] == "0" and f["quant_desc_extra_entries"] == "0"
    assert f["heads_per_attention_rank"] == "16" and f["experts_mod_ep"] == "0" and f["world_size_mismatch"] == "0"
    assert f["kv_bytes_per_token"] == "71424"  # (512 + 64) x 62 layers x 2 B
    assert abs(float(f["weight_gib_per_npu"]) - 42.53) < 0.05
    assert abs(float(f["kv_pool_gib_per_npu"]) - (64 * 0.92 - 42.53 - 4)) < 0.05
    assert abs(float(f["concurrent_seqs_at_max_len"]) - 5.67) < 0.02
    assert f["concurrency_shortfall"] == "0"
    kinds = [i["kind"] for i in report["inputs"]]
    assert kinds.count("model-metadata") == 3 and "launch" in kinds and "preflight" not in kinds
    assert [d["kind"] for d in report["derived"]] == ["preflight"]  # the facts: derived, not a file read


def test_no_mtp_sample_reports_only_mtp201(sample_facts):
    code, report, text = sample_facts["deepseek-r1-w8a8-no-mtp"]
    assert code == 1
    assert [f["rule_id"] for f in report["findings"]] == ["MTP201"]
    evidence = " ".join(e["text"] for e in report["findings"][0]["evidence"])
    assert "0 of 136,313 weight-map tensors" in evidence and "mtp_enabled = 1" in evidence


def test_attention_description_sample_reports_only_qnt201(sample_facts):
    code, report, text = sample_facts["deepseek-r1-w8a8-attn-unquantized-desc"]
    assert code == 1
    assert [f["rule_id"] for f in report["findings"]] == ["QNT201"]
    finding = report["findings"][0]
    assert finding["severity"] == "critical" and finding["summary"].startswith("1922 weight-map tensors")
    assert "self_attn.q_a_proj (434 tensors, 62 layers)" in finding["summary"]
    assert any("model.layers.0.self_attn.q_a_proj.weight" in e["text"] for e in finding["evidence"]) or \
        "quant_desc_missing = model.layers.0.self_attn" in text


def _ids(report: dict) -> list[str]:
    return sorted(f["rule_id"] for f in report["findings"])


@pytest.fixture(scope="session")
def r1_card():
    return modelcard.load_model_dir(MODELS / "deepseek-r1-w8a8")


def check_facts(tmp_path, card, launch, npus=None) -> dict:
    """Facts for (card, launch) written to a .facts file and checked by `diagnose FILE` (kind sniffed)."""
    facts = checks.compute(card, launch, checks.Target(npus=npus))
    path = tmp_path / "check.facts"
    path.write_text(checks.render(facts, card.path, launch.source), encoding="utf-8")
    return json.loads(run_cli("--format", "json", str(path)).stdout)


@pytest.mark.parametrize("extra, npus, expected", [
    # TP 16 on 16 NPUs with graph mode: 8 heads per rank (MLA ok), graph mode needs >= 32.
    ("--tensor-parallel-size 16 --enable-expert-parallel --additional-config '{\"torchair_graph_config\":{\"enabled\":true}}'",
     16, ["CFG202"]),
    # TP 32: 4 heads per rank, and 32 ranks on 16 NPUs.
    ("--tensor-parallel-size 32 --enable-expert-parallel", 16, ["CFG201", "CFG204"]),
    # 8 redundant experts on EP 16.
    ("--tensor-parallel-size 8 --data-parallel-size 2 --enable-expert-parallel "
     "--additional-config '{\"eplb_config\":{\"num_redundant_experts\":8}}'", 16, ["CFG203"]),
])
def test_parallel_layout_checks(tmp_path, r1_card, extra, npus, expected):
    cmd = (f"vllm serve /models/deepseek-r1-w8a8 --quantization ascend --max-model-len 32768 --max-num-seqs 2 "
           f"--speculative-config '{{\"method\":\"mtp\",\"num_speculative_tokens\":1}}' {extra}")
    report = check_facts(tmp_path, r1_card, launch_mod.parse_serve_script(cmd), npus)
    assert report["inputs"][0]["kind"] == "preflight"
    assert _ids(report) == expected, [f["summary"] for f in report["findings"]]


def test_launch_problems_quantization_short_context_and_capacity(tmp_path, r1_card):
    cmd = ("vllm serve /models/deepseek-r1-w8a8 --tensor-parallel-size 8 --data-parallel-size 2 --enable-expert-parallel "
           "--max-model-len 16384 --max-num-seqs 64")
    report = check_facts(tmp_path, r1_card, launch_mod.parse_serve_script(cmd), 16)
    assert _ids(report) == ["KV201", "KV202", "MTP203", "QNT205"]
    by_id = {f["rule_id"]: f for f in report["findings"]}
    assert "max-num-seqs is 64" in by_id["KV201"]["summary"] and "16384 tokens" in by_id["KV201"]["summary"]
    assert "GiB per sequence" in by_id["KV201"]["summary"]
    assert "16384" in by_id["KV202"]["summary"]
    assert by_id["MTP203"]["severity"] == "info"


def test_exit_code_follows_fail_on(tmp_path):
    cmd = "vllm serve /models/deepseek-r1-w8a8 --tensor-parallel-size 8 --max-model-len 16384"
    config_only = tmp_path / "deepseek-r1-w8a8"
    config_only.mkdir()
    (config_only / "config.json").write_text((MODELS / "deepseek-r1-w8a8" / "config.json").read_text(), encoding="utf-8")
    ok = run_cli("preflight", str(config_only), "--serve-cmd", cmd, "--format", "json")
    assert ok.exit_code == 0 and "KV202" in _ids(json.loads(ok.stdout))  # a note: below --fail-on error
    assert run_cli("preflight", str(config_only), "--serve-cmd", cmd, "--fail-on", "warning").exit_code == 0
    strict = run_cli("preflight", str(config_only), "--serve-cmd", cmd, "--fail-on", "info", "-q")
    assert strict.exit_code == 1 and strict.stdout == ""


def test_mindie_world_size_without_tp_gives_four_heads(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(MINDIE), encoding="utf-8")
    model = tmp_path / "DeepSeek-V3-w8a8"
    model.mkdir()
    (model / "config.json").write_text((MODELS / "deepseek-r1-w8a8" / "config.json").read_text(), encoding="utf-8")
    code, report = preflight_json(str(model), "--mindie-config", str(cfg), "--npus", "32")
    assert "CFG201" in _ids(report)
    cfg201 = next(f for f in report["findings"] if f["rule_id"] == "CFG201")
    assert cfg201["summary"].startswith("The attention tensor-parallel size leaves 4 heads per rank")
    assert code == 1


def test_fp8_checkpoint_and_mtp_missing_from_description(tmp_path):
    config = {"model_type": "deepseek_v3", "num_hidden_layers": 61, "num_nextn_predict_layers": 1,
              "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}}
    names = ["model.layers.0.self_attn.o_proj.weight", "model.layers.0.self_attn.o_proj.weight_scale_inv",
             "model.layers.61.eh_proj.weight"]
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {n: "a.safetensors" for n in names}}),
                                                           encoding="utf-8")
    (tmp_path / "quant_model_description.json").write_text(json.dumps({n: "FLOAT" for n in names[:2]}), encoding="utf-8")
    cmd = "vllm serve /x/DeepSeek-V3 -tp 8 --tensor-parallel-size 8 --quantization ascend --speculative-config '{\"method\":\"mtp\"}'"
    code, report = preflight_json(str(tmp_path), "--serve-cmd", cmd)
    ids = _ids(report)
    assert "QNT204" in ids and "MTP202" in ids and "MTP201" not in ids


def test_usage_errors():
    assert run_cli("preflight").exit_code == 2
    assert run_cli("preflight", str(MODELS / "nope")).exit_code == 2
    assert run_cli("preflight", str(MODELS / "deepseek-r1-w8a8"), "--serve-cmd", "vllm serve x",
                   "--serve-script", str(SERVE)).exit_code == 2


# --- inside `diagnose PATH` ----------------------------------------------------------------------------


def test_bundle_with_model_files_and_launch_script(tmp_path):
    model = tmp_path / "models" / "deepseek-r1-w8a8"
    model.mkdir(parents=True)
    (model / "config.json").write_text(json.dumps({"model_type": "deepseek_v3", "num_hidden_layers": 61,
                                                   "num_nextn_predict_layers": 1}), encoding="utf-8")
    names = [f"model.layers.{i}.self_attn.o_proj.weight" for i in range(61)]
    (model / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {n: "a" for n in names}}), encoding="utf-8")
    (tmp_path / "start.sh").write_text(SERVE.read_text(encoding="utf-8"), encoding="utf-8")
    result = run_cli("--format", "json", str(tmp_path))
    report = json.loads(result.stdout)
    assert "MTP201" in _ids(report)
    facts_inputs = [i for i in report["derived"] if i["kind"] == "preflight"]
    assert facts_inputs and facts_inputs[0]["path"].endswith("deepseek-r1-w8a8/preflight.facts")
    assert not [i for i in report["inputs"] if i["kind"] == "preflight"]  # not counted as a file read
    # The evidence points at the files the facts came from: the launch script line and the weight map.
    places = {(Path(e["file"]).name, e["line"]) for f in report["findings"] for e in f["evidence"]}
    assert all(Path(e["file"]).exists() for f in report["findings"] for e in f["evidence"])
    script = (tmp_path / "start.sh").read_text(encoding="utf-8").splitlines()
    spec_line = next(i for i, line in enumerate(script, 1) if "--speculative-config" in line)
    assert ("start.sh", spec_line) in places and ("model.safetensors.index.json", 1) in places


def test_bundle_non_default_args_line_only(tmp_path):
    log = tmp_path / "vllm-serve.log"
    log.write_text(
        "(APIServer pid=1) INFO 08-11 09:10:00 [utils.py:326] non-default args: {'model_tag': '/models/DeepSeek-R1', "
        "'model': '/models/DeepSeek-R1', 'max_model_len': 8192, 'tensor_parallel_size': 32}\n", encoding="utf-8")
    report = json.loads(run_cli("--format", "json", str(tmp_path)).stdout)
    ids = _ids(report)
    assert "CFG201" in ids and "KV202" in ids  # 128 / 32 = 4 heads; R1 with 8192 tokens


def test_rule_fixtures_do_not_run_the_bundle_tap():
    from diagnose.pipeline import RuleFilters, Settings, read
    from diagnose.ingest.walk import SourceFile
    import io

    data = b"non-default args: {'model': '/m/DeepSeek-R1', 'tensor_parallel_size': 32}\n"
    src = SourceFile(path="x.log", rel="x.log", node=None, size=len(data), mtime=None, open=lambda: io.BytesIO(data))
    parsed = read([src], Settings(kind="vllm"), RuleFilters())
    assert parsed.signals.filter(pl.col("source") == "preflight").height == 0


def test_serve_script_may_be_a_log_with_non_default_args(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("INFO 08-11 09:10:00 [utils.py:326] non-default args: {'model': '/models/DeepSeek-R1', "
                   "'max_model_len': 32768, 'tensor_parallel_size': 12}\n", encoding="utf-8")
    code, report = preflight_json("--serve-script", str(log))
    assert _ids(report) == ["CFG201"]  # 128 / 12 = 10.67 heads per rank
    assert "10.67 heads" in report["findings"][0]["summary"]


def test_mindie_npu_mem_size_is_the_kv_pool(r1_card):
    cfg = json.loads(json.dumps(MINDIE))
    model = cfg["BackendConfig"]["ModelDeployConfig"]["ModelConfig"][0]
    model.update({"npuMemSize": 8, "tp": 8, "dp": 4, "moe_tp": 1, "moe_ep": 32})
    cfg["BackendConfig"]["ModelDeployConfig"]["maxSeqLen"] = 32768
    launch = launch_mod.parse_mindie_config(json.dumps(cfg))
    facts = {f.key: f for f in checks.compute(r1_card, launch, checks.Target(npus=32))}
    assert facts["world_size"].value == 32 and facts["world_size_mismatch"].value == 0
    assert facts["moe_world_mismatch"].value == 0 and facts["heads_per_attention_rank"].value == 16
    assert facts["kv_pool_gib_per_npu"].value == 8 and "npuMemSize 8 GiB" in facts["kv_pool_gib_per_npu"].note
    assert "weight_gib_per_npu" not in facts  # MindIE gave the KV size itself
    assert facts["max_num_seqs"].value == 200 and facts["concurrency_shortfall"].value > 0


def test_multi_node_mindie_without_npus_makes_no_world_claim(r1_card):
    cfg = json.loads(json.dumps(MINDIE))
    cfg["BackendConfig"]["ModelDeployConfig"]["ModelConfig"][0].update({"tp": 32, "dp": 1})
    facts = {f.key: f for f in checks.compute(r1_card, launch_mod.parse_mindie_config(json.dumps(cfg)), checks.Target())}
    assert "world_size_mismatch" not in facts  # worldSize 8 is per node; the rank table decides
    assert facts["world_size"].value == 32 and facts["heads_per_attention_rank"].value == 4


def test_facts_dash_prints_the_arithmetic(tmp_path):
    model = tmp_path / "deepseek-r1"
    model.mkdir()
    (model / "config.json").write_text((MODELS / "deepseek-r1-w8a8" / "config.json").read_text(), encoding="utf-8")
    result = run_cli("preflight", str(model), "--serve-cmd", "vllm serve /m/deepseek-r1 --tensor-parallel-size 16",
                     "--facts", "-")
    assert result.exit_code == 0
    assert "kv_bytes_per_token = 70272  # MLA: (kv_lora_rank 512 + qk_rope_head_dim 64) x 61 layers x 2 B" in result.stdout
    assert "heads_per_attention_rank = 8" in result.stdout


@pytest.mark.parametrize("name", SAMPLE_DIRS)
def test_facts_as_records_equal_the_facts_file_read_back(name):
    """A run takes its facts as values (``from_facts``); a rule's fixture and ``diagnose FILE.facts`` read
    them from text (``parse``). Both must give a rule the same records and signals, or fixtures would test
    something a run never sees."""
    from diagnose.preflight.facts import build_facts

    target = checks.Target(npus=16)
    source, text = build_facts(str(MODELS / name), None, str(SERVE), None, target, "x/preflight.facts")
    direct_records = pl.concat(source.records)
    direct_signals = pl.concat(source.signals)
    read_records, read_signals = facts_parser.parse(
        lines_frame(text.splitlines()), FileContext(path="x/preflight.facts", node=None, kind="preflight", mtime=None))
    facts = read_records.filter(pl.col("component").is_not_null())
    cols = ["component", "message", "level", "source", "parsed"]
    assert facts.height > 15
    assert direct_records.select(cols).equals(facts.select(cols))
    sig = ["signal", "value", "text", "engine", "source"]
    assert direct_signals.select(sig).equals(read_signals.select(sig))
    # Each fact keeps its own place (fact n of the derived input); where it came from is beside it.
    assert direct_records["line"].to_list() == list(range(1, facts.height + 1))
    assert set(source.origins["x/preflight.facts"]) == set(range(1, facts.height + 1))
    origin_files = {f for f, _ in source.origins["x/preflight.facts"].values()}
    assert str(SERVE) in origin_files and any(f.endswith("config.json") for f in origin_files)
    assert [i.path for i in source.inputs] == ["x/preflight.facts"]
    assert source.inputs[0].lines == facts.height and source.inputs[0].bytes == len(text.encode())


def test_weight_map_in_a_bundle_is_preflight_input_not_log_lines(tmp_path):
    """A model directory in a bundle: its weight map and quantization description are read by the preflight
    (facts with their origins) and counted as model metadata, not kept as ~140,000 raw lines each."""
    import gzip

    folder = tmp_path / "bundle" / "model"
    folder.mkdir(parents=True)
    src = MODELS / "deepseek-r1-w8a8-no-mtp"
    for name in ("config.json", "model.safetensors.index.json.gz", "quant_model_description.json.gz"):
        (folder / name).write_bytes((src / name).read_bytes())
    (tmp_path / "bundle" / "serve.sh").write_text(SERVE.read_text())
    result = run_cli(str(tmp_path / "bundle"), "--format", "json")
    report = json.loads(result.stdout)
    meta = {Path(i["path"]).name: i for i in report["inputs"] if i["kind"] == "model-metadata"}
    assert set(meta) == {"model.safetensors.index.json.gz", "quant_model_description.json.gz"}
    for name, row in meta.items():
        assert row["lines"] == 0 and row["raw_lines"] == 0
        assert row["bytes"] == len(gzip.decompress((src / name).read_bytes()))
    assert sum(i["raw_lines"] for i in report["inputs"]) < 200
    assert [d["kind"] for d in report["derived"]] == ["preflight"]
    mtp = [f for f in report["findings"] if f["rule_id"] == "MTP201"]
    assert mtp and any(e["file"].endswith("model.safetensors.index.json.gz") for e in mtp[0]["evidence"])
