"""The harvester on sources the tests write themselves: format strings to typed holes, Python sites from the
syntax tree, native sites from macro calls, and a whole build from a pinned release (no download: the release
file is found in a local folder, as pip's find-links would hold it)."""

from __future__ import annotations

import hashlib
import io
import tarfile
import textwrap
from pathlib import Path

import pytest

from diagnose.knowledge.harvest import build as build_mod, cextract, pyextract, sources
from diagnose.knowledge.harvest.format_strings import brace, percent, printf
from diagnose.knowledge.index import message_index
from diagnose.knowledge.indexfile import read, version_key
from diagnose.knowledge.templates import Hole, render, to_regex


def rendered(pieces):
    return render(pieces)


# ---------------------------------------------------------------- format strings


@pytest.mark.parametrize("fmt, text, holes", [
    ("%d blocks of %s", "{} blocks of {}", "ds"),
    ("100%% used by %r", "100% used by {}", "r"),
    ("[%-10s] took %.3f s", "[{}] took {} s", "sf"),
    ("rank %(rank)d of %(world)s", "rank {} of {}", "ds"),
    ("addr %x, %5.1f%%", "addr {}, {}%", "xf"),
    ("no conversions here", "no conversions here", ""),
])
def test_percent_formats(fmt, text, holes):
    assert rendered(percent(fmt)) == (text, holes)


@pytest.mark.parametrize("fmt, text, holes", [
    ("{} blocks of {}", "{} blocks of {}", "ss"),
    ("literal {{braces}} and {0!r}", "literal {{braces}} and {}", "r"),
    ("{name:>8} | {value:.2f}", "{} | {}", "sf"),
    ("{n:d} items, {ratio:.1%}", "{} items, {}", "df"),
    ("{x:{width}.{prec}f} wide", "{} wide", "f"),
    ("{addr:#x}", "{}", "x"),
    ("unbalanced { brace", "unbalanced {{ brace", ""),
])
def test_brace_formats(fmt, text, holes):
    assert rendered(brace(fmt)) == (text, holes)


@pytest.mark.parametrize("fmt, text, holes", [
    ("device %d: %s", "device {}: {}", "ds"),
    ("size %lu, %zu, %llu, %u", "size {}, {}, {}, {}", "dddd"),
    ("ptr %p flags 0x%08x", "ptr {} flags 0x{}", "xx"),
    ("ratio %.2f%%", "ratio {}%", "f"),
])
def test_printf_formats(fmt, text, holes):
    assert rendered(printf(fmt)) == (text, holes)


def test_typed_holes_become_typed_patterns():
    import re
    pattern = re.compile(to_regex(percent("allocated %d blocks (%.1f%%) for %s")))
    assert pattern.fullmatch("allocated 12 blocks (3.5%) for rank 0")
    assert not pattern.fullmatch("allocated many blocks (3.5%) for rank 0")


# ---------------------------------------------------------------- Python sites

FAKE_MODULE = textwrap.dedent('''\
    import logging
    import sys
    import warnings

    logger = logging.getLogger(__name__)
    GIB = 1 << 30
    DEFAULT = "Engine arguments were rejected by the validator"


    def check_enough_kv_cache_memory(config, available, needed):
        if available <= 0:
            raise ValueError("No available memory for the cache blocks. "
                             "Try increasing `gpu_memory_utilization` when initializing the engine.")
        if needed > available:
            raise ValueError(
                f"To serve at least one request with the model's max seq len ({config.max_model_len}), "
                f"({needed / GIB:.2f} GiB KV cache is needed, which is larger than the available KV cache "
                f"memory ({available / GIB:.2f} GiB).")
        assert config.block_size % 16 == 0, "block_size %d must be a multiple of 16" % config.block_size


    class KVCacheManager:
        def allocate(self, request, num_tokens):
            logger.warning("Request %s needs %d blocks but only %d are free", request, num_tokens, 0)
            logger.error("Preempted %(n)d requests on rank %(rank)s" % {"n": 3, "rank": 0})
            self.logger.exception("Allocation failed for {} with {!r}".format(request, num_tokens))
            msg = "Cannot schedule " + str(request) + " because the KV cache is full"
            logger.error(msg)
            logger.critical(f"{request!r} waited {num_tokens:>8} steps in the queue")
            warnings.warn("Prefix caching is disabled for this model", DeprecationWarning)
            print("fatal: cache engine died", file=sys.stderr)
            raise RuntimeError(DEFAULT) from None

        def quiet(self, x):
            logger.info("not an error: %s", x)
            raise ValueError(x)


    class CacheFullError(RuntimeError):
        def __init__(self):
            super().__init__("The KV cache ran out of blocks for this request")
''')


def test_python_sites_from_every_message_style():
    sites = {(f.template, f.holes): f for f in pyextract.extract(FAKE_MODULE)}
    expect = {
        ("No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing "
         "the engine.", ""): ("ValueError", "check_enough_kv_cache_memory", 12),
        ("To serve at least one request with the model's max seq len ({}), ({} GiB KV cache is needed, which is "
         "larger than the available KV cache memory ({} GiB).", "sff"): ("ValueError",
                                                                          "check_enough_kv_cache_memory", 15),
        ("block_size {} must be a multiple of 16", "d"): ("AssertionError", "check_enough_kv_cache_memory", 19),
        ("Request {} needs {} blocks but only {} are free", "sdd"): ("WARNING", "KVCacheManager.allocate", 24),
        ("Preempted {} requests on rank {}", "ds"): ("ERROR", "KVCacheManager.allocate", 25),
        ("Allocation failed for {} with {}", "sr"): ("ERROR", "KVCacheManager.allocate", 26),
        ("Cannot schedule {} because the KV cache is full", "s"): ("ERROR", "KVCacheManager.allocate", 28),
        ("{} waited {} steps in the queue", "rs"): ("CRITICAL", "KVCacheManager.allocate", 29),
        ("Prefix caching is disabled for this model", ""): ("DeprecationWarning", "KVCacheManager.allocate", 30),
        ("fatal: cache engine died", ""): ("STDERR", "KVCacheManager.allocate", 31),
        ("Engine arguments were rejected by the validator", ""): ("RuntimeError", "KVCacheManager.allocate", 32),
        ("The KV cache ran out of blocks for this request", ""): ("CacheFullError", "CacheFullError.__init__", 41),
    }
    for key, (kind, function, lineno) in expect.items():
        assert key in sites, key
        assert (sites[key].kind, sites[key].function, sites[key].lineno) == (kind, function, lineno), key
    # Info lines and a message that is only a variable are not sites.
    assert not any("not an error" in t for t, _ in sites)
    assert len(sites) == len(expect)


def test_conditional_messages_keep_both_branches():
    src = 'def f(x):\n    raise ValueError("prefill is not supported here" if x else "decode is not supported here")\n'
    assert {f.template for f in pyextract.extract(src)} == {"prefill is not supported here",
                                                            "decode is not supported here"}


# ---------------------------------------------------------------- native sites

FAKE_CPP = textwrap.dedent('''\
    // A comment with ASCEND_LOGE("not a site %d", 1);
    namespace c10_npu {
    void NPUCachingAllocator::malloc(int device, size_t size) {
      if (size == 0) {
        ASCEND_LOGE("Device %d: tried to allocate %zu bytes with ptr %p", device, size, ptr);
      }
      TORCH_CHECK(size < limit, "expected size below ", limit, " but got ", size, PTA_ERROR(ErrCode::PARAM));
      REPORT_INNER_ERROR("E19999", "Stream %u synchronize failed, ret=%d", stream_id, ret);
      RT_LOG(RT_LOG_ERROR, "Task exception on stream_id=%u, task_id=%" PRIu64 ".", stream_id, task_id);
      RT_LOG(RT_LOG_INFO, "an info line %d", 3);
      HCCL_WARNING("[Init][Comm]rank[%u] link is slow, retry %lu", rank, count);
      auto retmsg = std::string("NPU out of memory. Tried to allocate ") + format_size(size) + " (NPU " +
          std::to_string(device) + ")";
      TORCH_CHECK_WITH(OutOfMemoryError, false, retmsg.c_str());
    }
    }  // namespace c10_npu
''')


def test_native_sites_from_macro_calls():
    sites = {f.template: f for f in cextract.extract(FAKE_CPP)}
    assert sites["Device {}: tried to allocate {} bytes with ptr {}"].holes == "ddx"
    check = sites["expected size below {} but got {}"]
    assert (check.kind, check.code, check.function, check.lineno) == ("ERROR", "ErrCode::PARAM",
                                                                      "NPUCachingAllocator::malloc", 7)
    assert sites["Stream {} synchronize failed, ret={}"].code == "E19999"
    assert sites["Task exception on stream_id={}, task_id={}."].holes == "dd"
    warn = sites["[Init][Comm]rank[{}] link is slow, retry {}"]
    assert (warn.kind, warn.holes) == ("WARNING", "dd")
    assert sites["NPU out of memory. Tried to allocate {} (NPU {})"].function == "NPUCachingAllocator::malloc"
    assert not any("info line" in t or "not a site" in t for t in sites)


def test_blanking_keeps_offsets():
    src = 'x = "a { b"; // c ( d\n/* e\n f */ y("g");'
    out = cextract.blank(src)
    assert len(out) == len(src) and out.count("\n") == src.count("\n")
    assert "{" not in out and "(" not in out.split("\n")[0].split("//")[0][4:]


# ---------------------------------------------------------------- a whole build


def _sdist(tmp_path: Path) -> Path:
    path = tmp_path / "links" / "fakeproj-1.0.tar.gz"
    path.parent.mkdir()
    with tarfile.open(path, "w:gz") as tf:
        for name, text in {"fakeproj-1.0/vllm/v1/core/kv_cache_utils.py": FAKE_MODULE,
                           "fakeproj-1.0/tests/test_x.py": 'raise ValueError("a test message, never harvested")\n'
                           }.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def test_build_from_a_pinned_release(tmp_path, monkeypatch):
    archive = _sdist(tmp_path)
    sha = hashlib.sha256(archive.read_bytes()).hexdigest()
    toml = tmp_path / "sources.toml"
    toml.write_text(f'[[release]]\nproject = "vllm"\nversion = "9.9.9"\nindex = "local"\nfile = "{archive.name}"\n'
                    f'sha256 = "{sha}"\ninclude = ["vllm/**"]\n', encoding="utf-8")
    monkeypatch.setattr(sources, "CACHE", tmp_path / "cache")
    monkeypatch.setattr(sources, "find_links", lambda: [])
    out = tmp_path / "messages.msgpack.gz"
    assert build_mod.build(toml, out, {}, [], [archive.parent], set()) == 0
    index = read(out)
    assert [(r.project, r.version, r.files) for r in index.header.releases] == [("vllm", "9.9.9", 1)]
    assert index.header.releases[0].templates == 12
    assert not any("never harvested" in t for t in index.columns.template)
    site = message_index(out).lookup(["ValueError: No available memory for the cache blocks. Try increasing "
                                      "`gpu_memory_utilization` when initializing the engine."])[0]
    assert site is not None
    assert (site.project, site.path, site.function, site.lineno, site.category) == (
        "vllm", "vllm/v1/core/kv_cache_utils.py", "check_enough_kv_cache_memory", 12, "kv-cache")


def test_a_changed_release_file_is_refused(tmp_path, monkeypatch):
    archive = _sdist(tmp_path)
    toml = tmp_path / "sources.toml"
    toml.write_text(f'[[release]]\nproject = "vllm"\nversion = "9.9.9"\nindex = "local"\nfile = "{archive.name}"\n'
                    f'sha256 = "{"0" * 64}"\ninclude = ["vllm/**"]\n', encoding="utf-8")
    monkeypatch.setattr(sources, "CACHE", tmp_path / "cache")
    monkeypatch.setattr(sources, "find_links", lambda: [])
    assert build_mod.build(toml, tmp_path / "out.gz", {}, [], [archive.parent], set()) == 1


def test_version_order():
    labels = ["0.11.0", "0.9.1rc1", "0.10.0rc1", "0.9.1", "0.11.0rc0", "0.9.1.post1", "master@abc"]
    assert sorted(labels, key=version_key) == ["0.9.1rc1", "0.9.1", "0.9.1.post1", "0.10.0rc1", "0.11.0rc0",
                                               "0.11.0", "master@abc"]


def test_hole_is_a_str_with_its_type():
    assert Hole("d") == "d" and isinstance(Hole("d"), Hole)
