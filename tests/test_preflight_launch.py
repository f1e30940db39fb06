"""Preflight on launches it cannot read (exit 2, naming what), on flag values that do not parse (never read
as "unset"), and on the vendor's tested DeepSeek-R1-W8A8 launch (no warning: capacity notes are info)."""

from __future__ import annotations

import json

import pytest

from diagnose.preflight import launch as launch_mod

from conftest import SAMPLES, run_cli

MODEL = SAMPLES / "models" / "deepseek-r1-w8a8"
UNQUOTED = "{method:deepseek_mtp,num_speculative_tokens:1}"  # what the shell leaves of '{"method":...}' without quotes

# vllm-ascend's DeepSeek-R1 tutorial (docs/source/tutorials/models/DeepSeek-R1.md, validated on v0.13.0): W8A8 on
# one Atlas 800 A3 (16 x 64 GB) or two Atlas 800 A2 (2 x 8 x 64 GB), DP 4 x TP 4 with expert parallelism, MTP
# with 3 speculative tokens. The flags are the tutorial's; the addresses are placeholders.
_TESTED_FLAGS = """\
  --host 0.0.0.0 \\
  --port 8000 \\
  --data-parallel-size 4 \\
{local}  --tensor-parallel-size 4 \\
  --quantization ascend \\
  --seed 1024 \\
  --served-model-name deepseek_r1 \\
  --enable-expert-parallel \\
  --max-num-seqs 16 \\
  --max-model-len 16384 \\
  --max-num-batched-tokens 4096 \\
  --trust-remote-code \\
  --gpu-memory-utilization 0.92 \\
  --speculative-config '{spec}' \\
  --compilation-config '{{"cudagraph_mode": "FULL_DECODE_ONLY"}}'
"""
_HEAD = """#!/bin/sh
local_ip="10.0.0.1"
export HCCL_IF_IP=$local_ip
export HCCL_BUFFSIZE=200
export VLLM_ASCEND_BALANCE_SCHEDULING=1
vllm serve vllm-ascend/DeepSeek-R1-W8A8 \\
"""
TESTED = {
    "a3-one-node": "",
    "a2-node-0": "  --data-parallel-size-local 2 \\\n  --data-parallel-address $local_ip \\\n"
                 "  --data-parallel-rpc-port 13389 \\\n",
    "a2-node-1": "  --headless \\\n  --data-parallel-size-local 2 \\\n  --data-parallel-start-rank 2 \\\n"
                 "  --data-parallel-address 10.0.0.2 \\\n  --data-parallel-rpc-port 13389 \\\n",
}
SPEC_MTP3 = '{"num_speculative_tokens":3,"method":"mtp"}'


def write_tested(tmp_path, layout: str, spec: str = SPEC_MTP3):
    path = tmp_path / f"{layout}.sh"
    path.write_text(_HEAD + _TESTED_FLAGS.format(local=TESTED[layout], spec=spec), encoding="utf-8")
    return path


def preflight(*args: str):
    return run_cli("preflight", *args)


# --- a launch it cannot read: exit 2, nothing computed with defaults ---------------------------------------


def test_a_command_that_is_not_a_vllm_launch_is_an_error_naming_it():
    result = preflight(str(MODEL), "--serve-cmd", "python -m foo")
    assert result.exit_code == 2
    assert "--serve-cmd: not a vLLM launch" in result.stderr and "'python -m foo'" in result.stderr
    assert result.stdout == "" and "KV pool" not in result.stderr  # no report computed with vLLM's defaults


def test_a_script_without_a_launch_is_an_error_naming_the_file(tmp_path):
    script = tmp_path / "start.sh"
    script.write_text("#!/bin/bash\nexport ASCEND_RT_VISIBLE_DEVICES=0,1\necho starting\n", encoding="utf-8")
    result = preflight(str(MODEL), "--serve-script", str(script), "--format", "json")
    assert result.exit_code == 2 and result.stdout == ""
    assert f"{script}: not a vLLM launch" in result.stderr and "non-default args" in result.stderr


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_speculative_config_that_lost_its_quotes_is_named_never_read_as_off(fmt):
    cmd = f"vllm serve /models/DeepSeek-R1-W8A8 -tp 8 --quantization ascend --speculative-config {UNQUOTED}"
    result = preflight(str(MODEL), "--serve-cmd", cmd, "--format", fmt)
    assert result.exit_code == 2 and result.stdout == ""
    assert f"--speculative-config '{UNQUOTED}' is not JSON" in result.stderr
    # The fix is spelled out, with the quotes the shell removed.
    assert """write --speculative-config '{"method":"deepseek_mtp","num_speculative_tokens":1}'""" in result.stderr
    assert "speculative decoding is off" not in result.stderr + result.stdout


def test_every_unreadable_value_is_named():
    cmd = ("vllm serve /models/DeepSeek-R1-W8A8 --tensor-parallel-size eight --max-num-seqs "
           "--gpu-memory-utilization 92 --max-model-len 16384")
    result = preflight(str(MODEL), "--serve-cmd", cmd)
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert "diagnose: error: --serve-cmd: --tensor-parallel-size 'eight' is not a whole number" in lines
    assert any(line.startswith("diagnose: error: --serve-cmd: --max-num-seqs has no value") for line in lines)
    assert "diagnose: error: --serve-cmd: --gpu-memory-utilization 92 is not a fraction between 0 and 1" in lines


def test_an_unclosed_quote_is_an_error():
    result = preflight(str(MODEL), "--serve-cmd", "vllm serve /m --speculative-config '{\"method\":\"mtp\"}")
    assert result.exit_code == 2 and "cannot split the command line into words" in result.stderr


def test_mindie_config_that_does_not_parse_is_an_error(tmp_path):
    broken = tmp_path / "config.json"
    broken.write_text('{"BackendConfig": {"ModelDeployConfig": ', encoding="utf-8")
    result = preflight("--mindie-config", str(broken))
    assert result.exit_code == 2 and f"{broken}: not valid JSON" in result.stderr
    plugin = tmp_path / "plugin.json"
    plugin.write_text(json.dumps({"BackendConfig": {"ModelDeployConfig": {"maxSeqLen": 8192, "ModelConfig": [
        {"modelName": "deepseek-r1", "modelWeightPath": "/data/DeepSeek-R1", "worldSize": 16,
         "plugin_params": "{plugin_type:mtp,num_speculative_tokens:1}"}]}}}), encoding="utf-8")
    result = preflight("--mindie-config", str(plugin))
    assert result.exit_code == 2 and "ModelConfig plugin_params" in result.stderr and "is not JSON" in result.stderr


def test_inside_a_bundle_an_unreadable_value_is_an_error_record_not_mtp_off(tmp_path):
    (tmp_path / "start.sh").write_text(
        f"vllm serve /models/DeepSeek-R1-W8A8 --tensor-parallel-size 16 --speculative-config {UNQUOTED}\n",
        encoding="utf-8")
    result = run_cli("--format", "json", str(tmp_path))
    report = json.loads(result.stdout)
    ids = {f["rule_id"] for f in report["findings"]}
    assert "MTP203" not in ids and "MTP004" not in ids  # never "MTP off"
    assert report["findings"][0]["rule_id"] == "CFG205" and "--speculative-config" in report["findings"][0]["summary"]
    assert result.exit_code == 1


# --- values vLLM accepts are read as vLLM reads them -------------------------------------------------------


@pytest.mark.parametrize("flag, value, expected", [
    ("--max-model-len", "16384", 16384), ("--max-model-len", "16k", 16000), ("--max-model-len", "16K", 16384),
    ("--max-model-len", "auto", None), ("--max-model-len=32K", None, 32768),
])
def test_max_model_len_takes_vllms_human_readable_numbers(flag, value, expected):
    launch = launch_mod.parse_serve_script(f"vllm serve /m {flag}" + (f" {value}" if value else ""))
    assert launch.problems == [] and launch.max_model_len == expected


def test_dotted_speculative_config_and_short_flags():
    launch = launch_mod.parse_serve_script(
        "vllm serve /m -tp 4 -dp 4 -q ascend --speculative-config.method deepseek_mtp "
        "--speculative-config.num_speculative_tokens 3")
    assert launch.problems == []
    assert (launch.tp, launch.dp, launch.quantization) == (4, 4, "ascend")
    assert launch.mtp_enabled and launch.num_spec_tokens == 3


# --- the vendor's tested launch gives no warning -----------------------------------------------------------


@pytest.mark.parametrize("layout", list(TESTED))
@pytest.mark.parametrize("spec", [SPEC_MTP3, '{"method":"deepseek_mtp","num_speculative_tokens":3}'])
def test_vendor_tested_r1_launch_has_only_capacity_notes_with_numbers(tmp_path, layout, spec):
    script = write_tested(tmp_path, layout, spec)
    facts = tmp_path / "facts.txt"
    result = preflight(str(MODEL), "--serve-script", str(script), "--npus", "16", "--format", "json",
                       "--fail-on", "warning", "--facts", str(facts))
    report = json.loads(result.stdout)
    assert result.exit_code == 0, report["findings"]
    assert {f["severity"] for f in report["findings"]} <= {"info"}
    by_id = {f["rule_id"]: f for f in report["findings"]}
    assert set(by_id) == {"KV201", "KV202"}
    kv201 = by_id["KV201"]["summary"]
    assert "9.1 sequences of the full 16384 tokens" in kv201 and "max-num-seqs is 16" in kv201
    assert "KV pool 9.90 GiB per NPU" in kv201 and "71,424 B/token" in kv201
    assert "16384 tokens" in by_id["KV202"]["summary"] and "32768" in by_id["KV202"]["summary"]
    text = facts.read_text(encoding="utf-8")
    assert "mtp_enabled = 1" in text and "num_speculative_tokens = 3" in text and "world_size_mismatch = 0" in text
    assert report["verdict"]["kind"] == "notes"


def test_vendor_tested_launch_text_report_says_no_problem(tmp_path):
    result = preflight(str(MODEL), "--serve-script", str(write_tested(tmp_path, "a3-one-node")), "--npus", "16")
    assert result.exit_code == 0
    assert result.stdout.startswith("No problem found; 2 informational notes.")
    assert "WARNING" not in result.stdout and "INFO" in result.stdout
