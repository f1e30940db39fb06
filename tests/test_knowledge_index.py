"""The message index at run time: the committed file loads and is current with its inputs, realistic log lines
resolve to the right source site and category, and the matching rules (thresholds, builtins, preferences) hold
on a small index the tests build themselves."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from diagnose.knowledge import categories
from diagnose.knowledge.harvest.build import _Harvest, assemble
from diagnose.knowledge.index import message_index
from diagnose.knowledge.indexfile import (
    FORMAT, Header, ReleaseInfo, file_sha256, harvester_sha256, index_path, knowledge_dir, read, write,
)
from diagnose.model import CATEGORIES

REBUILD = "re-run `python -m diagnose.knowledge.harvest` (see docs/knowledge.md) and commit the index"


# ---------------------------------------------------------------- the committed index


def test_the_committed_index_loads():
    idx = message_index()
    assert len(idx) > 50_000
    stats = {(s.project, s.origin): s for s in idx.stats()}
    for project in ("vllm", "vllm-ascend", "sglang", "lmdeploy", "dlinfer-ascend", "torch-npu", "torch"):
        assert stats[(project, "python")].templates > 0, project
    for project in ("torch-npu", "cann-runtime", "hccl", "mindie-llm"):
        assert stats[(project, "native")].templates > 0, project
    assert len(stats[("vllm-ascend", "python")].releases) >= 10


def test_warming_loads_once_and_the_judge_gets_the_same_index():
    from concurrent.futures import ThreadPoolExecutor

    from diagnose.knowledge.index import warm

    thread = warm()
    assert warm() is thread  # once per process
    with ThreadPoolExecutor(4) as pool:  # callers during the load wait for it, and all get one index
        got = list(pool.map(lambda _: message_index(), range(8)))
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert all(i is got[0] for i in got) and got[0] is message_index()
    assert categories.table() is categories.table()


def test_the_committed_index_is_current():
    header = read().header
    assert header.format == FORMAT, f"the index file format changed: {REBUILD}"
    assert header.sources_sha256 == file_sha256(knowledge_dir() / "sources.toml"), \
        f"knowledge/sources.toml changed since the index was built: {REBUILD}"
    assert header.harvester_sha256 == harvester_sha256(), f"the harvester changed since the index was built: {REBUILD}"


def test_the_index_holds_facts_not_code():
    """Templates are messages: no line of code, no comment marker, no source text beyond one message."""
    import re

    code = re.compile(r"^\s*(?:def \w+\(.*\):|class \w+[(:]|#include [<\"]|return [\w.]+\(|//|/\*)", re.M)
    data = read()
    assert not [t for t in data.columns.template if code.search(t)]
    assert index_path().stat().st_size < 4_000_000


# ---------------------------------------------------------------- a site per category, on lines as logs print them

LINES = [
    ("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
     "initializing the engine.", "kv-cache", "vllm", "vllm/v1/core/kv_cache_utils.py"),
    ("RuntimeError: NPU out of memory. Tried to allocate 450.00 MiB (NPU 3; 60.96 GiB total capacity; 60.30 GiB "
     "already allocated; 60.30 GiB current active; 5.78 MiB free; 60.47 GiB reserved in total by PyTorch) If "
     "reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.",
     "memory", "torch-npu", "torch_npu/csrc/core/npu/NPUCachingAllocator.cpp"),
    ("AssertionError: tensor parallel group already initialized, but of unexpected size. got: "
     "get_tensor_model_parallel_world_size()=8 vs. wanted: tensor_model_parallel_size=4",
     "communication", "vllm", "vllm/distributed/parallel_state.py"),
    ("ERROR 08-28 02:33:28 [core.py:634] RuntimeError: ACL stream synchronize failed, error code:507035",
     "device", "torch-npu", "torch_npu/csrc/aten/common/CopyKernel.cpp"),
    ("(Worker_DP0_TP1_EP1 pid=82119) ERROR 05-28 15:56:35 [multiproc_executor.py:962] WorkerProc hit an exception.",
     "engine", "vllm", "vllm/v1/executor/multiproc_executor.py"),
    ("ValueError: This model does not support `--runner pooling`. You can pass `--convert embed to adapt it into "
     "a pooling model.", "config", "vllm", "vllm/config/"),
    ("ValueError: ptpc_fp8 quantization is supported only on ROCm.", "quantization", "vllm",
     "vllm/model_executor/layers/quantization/ptpc_fp8.py"),
    ("WARNING 01-01 10:00:00 [speculative.py:300] EAGLE cannot currently be run with tp>1; setting "
     "speculative_draft_tensor_parallel_size=1", "mtp", "vllm", "vllm/config/speculative.py"),
    ("AssertionError: Sequence parallelism requires enable_expert_parallel=True for MoE models.",
     "moe-load", "vllm-ascend", "vllm_ascend/platform.py"),
    ("NotImplementedError: DCP decode with FlashInfer trtllm-gen does not support FP4 attention output yet.",
     "operators", "vllm", "vllm/v1/attention/backends/flashinfer.py"),
    ("ImportError: fused_qk_rmsnorm requires AITer >= PR #2442. Please upgrade aiter or disable the "
     "fuse_mla_dual_rms_norm pass.", "versions", "vllm", "vllm/_aiter_ops.py"),
    ("[ERROR] PROFILING(2734,python):2025-07-15-12:45:32.997.682 [helper_transport.cpp:80] [Helper SendBuffer] "
     "sendbuffer profiling data failed.", "performance", "cann-runtime", "src/dfx/msprof/"),
]


@pytest.mark.parametrize("line, category, project, path", LINES, ids=[x[1] for x in LINES])
def test_a_site_per_category(line, category, project, path):
    site = message_index().lookup([line])[0]
    assert site is not None, line
    assert (site.category, site.project) == (category, project), site
    assert site.path.startswith(path), site
    assert site.function and site.lineno > 0 and site.versions


def test_every_category_is_covered_by_the_lines():
    assert {c for _, c, _, _ in LINES} == set(CATEGORIES)


def test_a_native_site_names_its_origin_and_versions():
    site = message_index().lookup([LINES[1][0]])[0]
    assert site.origin == "native" and site.kind == "ERROR"
    assert site.version_range.count("..") <= 1 and site.newest == site.versions[-1]


# ---------------------------------------------------------------- the matching rules on an index of our own


def _tiny(tmp_path: Path, sites: list[tuple[str, str, str, str, str, str]]):
    """An index of ``(project, version, path, kind, template, holes)`` sites, written and loaded."""
    acc = _Harvest()
    releases = []
    for project, version, path, kind, template, holes in sites:
        if (project, version) not in acc.labels:
            acc.labels.append((project, version))
            releases.append(ReleaseInfo(project, version, "python", 1, 0, 1))
        number = acc.labels.index((project, version))
        acc.sites.setdefault((project, path, "f", kind, template, holes, ""), {})[number] = 10
    out = tmp_path / "tiny.msgpack.gz"
    write(assemble(Header(FORMAT, "", "", releases, []), acc), out)
    return message_index(out)


def test_a_short_template_is_dropped(tmp_path):
    idx = _tiny(tmp_path, [("p", "1.0", "p/a.py", "ValueError", "bad rank {}", "d"),
                           ("p", "1.0", "p/b.py", "ValueError", "Pipeline parallel size {} is invalid", "d")])
    assert idx.lookup(["ValueError: bad rank 3"]) == [None]
    assert idx.lookup(["ValueError: Pipeline parallel size 3 is invalid"])[0].path == "p/b.py"


def test_a_truncated_line_needs_twenty_leading_characters(tmp_path):
    idx = _tiny(tmp_path, [
        ("p", "1.0", "p/long.py", "ValueError",
         "To serve at least one request with the model's max seq len ({}), ({} GiB KV cache is needed)", "df"),
        ("p", "1.0", "p/short.py", "ValueError", "Bad input {}: the KV cache of this request is larger than {}",
         "ss"),
    ])
    cut = "ValueError: To serve at least one request with the model's max seq len (100000), (4.26 GiB KV cach"
    assert idx.lookup([cut])[0].path == "p/long.py"
    # The second template leads with 9 fixed characters: a line cut in its middle is not attributed.
    assert idx.lookup(["ValueError: Bad input x: the KV cache of this req"]) == [None]


def test_a_search_inside_a_longer_line_needs_twenty_five_characters(tmp_path):
    idx = _tiny(tmp_path, [
        ("p", "1.0", "p/a.py", "ERROR", "ranks are out of sync here", ""),  # 22 fixed characters
        ("p", "1.0", "p/b.py", "ERROR", "the communicator was destroyed while in use", ""),
    ])
    assert idx.lookup(["ERROR 01-01 [a.py:1] ranks are out of sync here"])[0].path == "p/a.py"  # whole message
    assert idx.lookup(["wrapper says ranks are out of sync here (code 7)"]) == [None]  # inside: too short
    assert idx.lookup(["wrapper: the communicator was destroyed while in use (code 7)"])[0].path == "p/b.py"


def test_python_s_own_messages_win(tmp_path):
    idx = _tiny(tmp_path, [("p", "1.0", "p/a.py", "ImportError", "No module named {} was found on this path", "r"),
                           ("p", "1.0", "p/b.py", "AttributeError", "'NoneType' object has no attribute {}", "r")])
    assert idx.lookup(["ModuleNotFoundError: No module named 'custom_ops' was found on this path",
                       "AttributeError: 'NoneType' object has no attribute 'shape'"]) == [None, None]


def test_a_package_template_of_python_s_own_words_claims_nothing(tmp_path):
    idx = _tiny(tmp_path, [("p", "1.0", "p/a.py", "AttributeError", "'{}' object has no attribute '{}'", "ss"),
                           ("p", "1.0", "p/b.py", "ERROR", "Failed to import from vllm._C with {}", "r")])
    assert idx.lookup(["AttributeError: '_OpNamespace' '_C_ascend' object has no attribute 'npu_top_k'"]) == [None]
    # A package message that quotes one of Python's own keeps its package.
    line = "WARNING 08-06 08:32:23 [_custom_ops.py:20] Failed to import from vllm._C with " \
           "ModuleNotFoundError(\"No module named 'vllm._C'\")"
    assert idx.lookup([line])[0].path == "p/b.py"


def test_the_longest_match_then_the_exception_then_the_newest_wins(tmp_path):
    idx = _tiny(tmp_path, [
        ("p", "1.0", "p/generic.py", "RuntimeError", "Worker failed with {}", "s"),
        ("p", "1.0", "p/specific.py", "RuntimeError", "Worker failed with NPU out of memory on rank {}", "d"),
        ("p", "1.0", "p/value.py", "ValueError", "The block size {} is not supported by this backend", "d"),
        ("p", "2.0", "p/runtime.py", "RuntimeError", "The block size {} is not supported by this backend", "d"),
    ])
    assert idx.lookup(["RuntimeError: Worker failed with NPU out of memory on rank 3"])[0].path == "p/specific.py"
    line = "The block size 7 is not supported by this backend"
    assert idx.lookup([f"ValueError: {line}"])[0].path == "p/value.py"
    assert idx.lookup([line], exc_types=["ValueError"])[0].path == "p/value.py"
    assert idx.lookup([line])[0].path == "p/runtime.py"  # no class to agree with: the newest release
    assert idx.lookup([f"RuntimeError: {line}"])[0].versions == ("2.0",)


def test_typed_holes_are_honoured(tmp_path):
    idx = _tiny(tmp_path, [("p", "1.0", "p/a.py", "ERROR", "Allocated {} blocks for the KV cache of this engine",
                            "d")])
    assert idx.lookup(["Allocated 120 blocks for the KV cache of this engine"])[0] is not None
    assert idx.lookup(["Allocated many blocks for the KV cache of this engine"]) == [None]


# ---------------------------------------------------------------- categories


def test_categories_table_is_well_formed():
    data = tomllib.loads((knowledge_dir() / "categories.toml").read_text(encoding="utf-8"))
    entries = data["override"] + data["rule"]
    assert all(e["category"] in CATEGORIES and e.get("why") for e in entries)
    assert data["default"] in CATEGORIES


@pytest.mark.parametrize("project, path, template, category", [
    ("vllm", "vllm/v1/core/kv_cache_utils.py", "All layers in the same KV cache group must share a spec", "kv-cache"),
    ("vllm", "vllm/core/block_manager.py", "Cannot allocate {} blocks", "kv-cache"),
    ("sglang", "sglang/srt/mem_cache/radix_cache.py", "Tree is inconsistent at node {}", "kv-cache"),
    ("vllm-ascend", "vllm_ascend/quantization/w8a8.py", "Unknown scale layout {}", "quantization"),
    ("vllm", "vllm/v1/spec_decode/eagle.py", "Draft layer count mismatch {}", "mtp"),
    ("vllm", "vllm/model_executor/models/deepseek_mtp.py", "Missing weight {}", "mtp"),
    ("vllm-ascend", "vllm_ascend/eplb/adaptor/vllm_adaptor.py", "Bad map {}", "moe-load"),
    ("torch", "torch/distributed/distributed_c10d.py", "Default group is not initialized", "communication"),
    ("vllm", "vllm/engine/arg_utils.py", "--foo must be positive", "config"),
    ("vllm", "vllm/platforms/__init__.py", "No platform detected", "versions"),
    ("torch-npu", "torch_npu/csrc/core/npu/NPUCachingAllocator.cpp", "Could not find pool of id", "memory"),
    ("vllm", "vllm/worker/worker.py", "No available memory for the cache blocks. Try more", "kv-cache"),
    ("vllm", "vllm/v1/worker/gpu_worker.py", "CUDA out of memory while profiling", "memory"),
    ("vllm", "vllm/v1/engine/core.py", "EngineCore failed to start.", "engine"),
])
def test_category_of(project, path, template, category):
    assert categories.category_of(project, path, template) == category


def test_the_docs_table_of_sizes_is_current():
    from diagnose.knowledge.harvest.table import rewrite, size_table

    doc = Path(__file__).resolve().parents[1] / "docs" / "knowledge.md"
    assert rewrite(doc, size_table()) == doc.read_text(encoding="utf-8"), \
        "docs/knowledge.md's table of sizes is stale: run `python -m diagnose.knowledge.harvest table`"
