"""Hostile inputs, made on the fly: each attack writes its input into a folder and says how to run the CLI on it
and what the run must say. bench/bench_hostile.py runs them all with time and peak memory; tests/test_attacks.py
asserts each one (no traceback, exit code, the reason, peak RSS through bench/peak.py).

    ATTACKS[name] = Attack(make, said, codes, ...)
    case = ATTACKS[name].make(folder, scale)   # scale 1.0: the size the attack was found at; tests use less

Nothing big is committed: a zip whose entries overlap is built with ``struct``, a 250,000-member tar.gz in a
loop, JSON nested 100,000 deep as bytes. The groups: profiler traces and other JSON read from logs; archives;
files that change while read; the cache folder; rule and configuration files; templates, regexes and the page;
memory on dense logs. ``codes`` is every exit code that is a correct answer (diagnose/commands/exitcodes.py).
"""

from __future__ import annotations

import gzip
import io
import json
import os
import struct
import tarfile
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

MiB = 1 << 20
OOM = ("(Worker_TP0 pid=9) ERROR 09-03 14:00:11 [worker.py:1] RuntimeError: NPU out of memory. Tried to allocate "
       "30.00 MiB (NPU 5; 60.96 GiB total capacity; 60.34 GiB already allocated; 60.34 GiB current active; "
       "15.87 MiB free; 60.60 GiB reserved in total by PyTorch)\n")
METRIC = ("(APIServer pid=7) INFO 09-03 14:{m:02d}:{s:02d} [loggers.py:118] Engine {e:03d}: Avg prompt throughput: "
          "{p:.1f} tokens/s, Avg generation throughput: {g:.1f} tokens/s, Running: {r} reqs, Waiting: {w} reqs, "
          "GPU KV cache usage: {k:.1f}%, Prefix cache hit rate: 0.0%\n")


@dataclass
class Case:
    """How to run one attack: the CLI's arguments (after ``--format json -o OUT``), standard input (a path),
    extra environment, and an action to run in a thread while the CLI runs (``during(seconds_since_start)``)."""

    args: list[str]
    stdin: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    during: Callable[[], None] | None = None  # run in a thread once the CLI has started
    cwd: str | None = None


@dataclass
class Attack:
    make: Callable[[Path, float], Case]
    said: str  # what the run must say (a skip reason, a note, a finding's text, standard error): a substring
    codes: tuple[int, ...]
    group: str
    slow: bool = False  # more than a few seconds even fixed: the slow marker
    max_rss_mb: int = 500
    timeout: int = 300
    known: bool = False  # a weakness not fixed yet: measured by the bench, expected to fail in the tests


ATTACKS: dict[str, Attack] = {}


def attack(name: str, said: str, codes: tuple[int, ...], group: str, **kw):
    def register(make):
        ATTACKS[name] = Attack(make, said, codes, group, **kw)
        return make
    return register


def scaled(n: int | float, scale: float, least: int = 1) -> int:
    return max(int(n * scale), least)


# --- profiler traces ----------------------------------------------------------------------------------------

def _trace(folder: Path, body: bytes, name: str = "trace_view.json") -> Case:
    out = folder / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True, exist_ok=True)
    (out / name).write_bytes(body)
    (folder / "serve.log").write_text(OOM)  # a second file whose finding must survive the bad one
    return Case([str(folder)])


_LANE = b'{"ph":"M","name":"process_name","pid":1,"args":{"name":"Ascend Hardware"}}'


def _ev(name: bytes = b"MatMul", dur: bytes = b"5", task: bytes = b"AI_CORE", ts: bytes = b'"1700000000000000"') -> bytes:
    return (b'{"ph":"X","name":"' + name + b'","pid":1,"ts":' + ts + b',"dur":' + dur
            + b',"args":{"Task Type":"' + task + b'"}}')


def _events(*events: bytes) -> bytes:
    return b"[" + b",\n".join((_LANE, *events)) + b"]\n"


@attack("trace-400-digit-duration", "MEM001", (1,), "trace")
def _(folder, scale):
    return _trace(folder, _events(_ev(dur=b"1" + b"0" * 400), _ev()))


@attack("trace-lone-surrogate", "Op\ufffdx_NonZero", (1,), "trace")
def _(folder, scale):
    return _trace(folder, _events(_ev(b"Op\\ud800x_NonZero", b"50", b"AI_CPU"), _ev()))


@attack("trace-5000-digit-integer", "MEM001", (1,), "trace")
def _(folder, scale):
    return _trace(folder, _events(_ev(dur=b"9" * 5000), _ev()))


@attack("trace-5000-digit-pid", "MEM001", (1,), "trace")
def _(folder, scale):
    return _trace(folder, _events(_ev().replace(b'"pid":1', b'"pid":' + b"7" * 5000), _ev()))


@attack("trace-deep-array", "could not be read", (1,), "trace")
def _(folder, scale):
    n = scaled(100_000, scale, 2000)
    return _trace(folder, b"[" * n + b"]" * n)


@attack("trace-deep-object-in-event", "could not be read", (1,), "trace")
def _(folder, scale):
    n = scaled(100_000, scale, 2000)
    return _trace(folder, _events(_ev(), b'{"ph":"X","args":' + b'{"a":' * n + b"1" + b"}" * n + b"}", _ev()))


@attack("trace-deep-member-before-events", "not a JSON array of trace events", (1,), "trace")
def _(folder, scale):
    n = scaled(100_000, scale, 2000)
    return _trace(folder, b'{"meta":' + b"[" * n + b"]" * n + b',"traceEvents":' + _events(_ev()) + b"}")


@attack("trace-nan-and-infinity", "MEM001", (1,), "trace")
def _(folder, scale):
    return _trace(folder, _events(_ev(dur=b"NaN"), _ev(dur=b"Infinity"), _ev(dur=b"-Infinity"), _ev(dur=b"1e400")))


@attack("trace-huge-event", "could not be read", (1,), "trace", slow=True)
def _(folder, scale):
    size = scaled(300 * MiB, scale, 20 * MiB)
    out = folder / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    with open(out / "trace_view.json", "wb") as fh:
        fh.write(b"[" + _LANE + b',{"ph":"X","name":"')
        block = b"abcdefgh" * (MiB // 8)
        for _ in range(size // MiB):
            fh.write(block)
        fh.write(b'","pid":1,"dur":1},' + _ev() + b"]\n")
    (folder / "serve.log").write_text(OOM)
    return Case([str(folder)])


@attack("trace-huge-member-before-events", "not a JSON array of trace events", (1,), "trace", slow=True)
def _(folder, scale):
    size = scaled(100 * MiB, scale, 20 * MiB)
    return _trace(folder, b'{"meta":"' + b"x" * size + b'","traceEvents":' + _events(_ev()) + b"}")


@attack("trace-not-events", "MEM001", (1,), "trace")
def _(folder, scale):
    return _trace(folder, b'[1, "x", null, true, [], {"ph": 5, "pid": {"a": [1]}, "ts": [], "dur": "x"}]')


@attack("trace-invalid-utf8", "MEM001", (1,), "trace")
def _(folder, scale):
    return _trace(folder, _events(_ev(b"Op\xff\xfe\xc3(_NonZero", b"50", b"AI_CPU"), _ev()))


@attack("trace-pretty-deep", "could not be read", (1,), "trace")
def _(folder, scale):
    n = scaled(20_000, scale, 2000)
    deep = b"".join(b" " * min(i, 40) + b'{"a":\n' for i in range(n)) + b"1" + b"}\n" * n
    return _trace(folder, b"[\n" + _LANE + b",\n" + _ev() + b",\n" + deep + b",\n" + _ev() + b"\n]\n")


@attack("trace-truncated-in-string", "truncated", (1,), "trace")
def _(folder, scale):
    return _trace(folder, _events(_ev(), _ev())[:-20])


# --- JSON inside other logs ---------------------------------------------------------------------------------

def _json_file(folder: Path, name: str, body: bytes) -> Case:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(body)
    (folder / "serve.log").write_text(OOM)
    return Case([str(folder)])


@attack("bench-result-deep", "MEM001", (1,), "json")
def _(folder, scale):
    n = scaled(100_000, scale, 2000)
    return _json_file(folder, "bench_result.json", b'{"completed": 5, "x": ' + b"[" * n + b"]" * n + b"}")


@attack("bench-result-huge-numbers", "MEM001", (1,), "json")
def _(folder, scale):
    big = b"9" * 5000
    return _json_file(folder, "bench_result.json", b'{"completed": ' + big + b', "request_throughput": 1' + b"0" * 400
                      + b', "mean_ttft_ms": NaN, "num_prompts": ' + big + b"}")


@attack("lm-eval-deep", "MEM001", (1,), "json")
def _(folder, scale):
    n = scaled(100_000, scale, 2000)
    return _json_file(folder, "results_lm_eval.json",
                      b'{"lm_eval_version": "0.4", "results": ' + b'{"a":' * n + b"1" + b"}" * n + b"}")


@attack("mindie-config-deep", "MEM001", (1,), "json")
def _(folder, scale):
    n = scaled(100_000, scale, 2000)
    return _json_file(folder, "config.json", b'{"ServerConfig": ' + b"[" * n + b"]" * n + b"}")


@attack("mindie-config-surrogate", "MEM001", (1,), "json")
def _(folder, scale):
    return _json_file(folder, "config.json", b'{"ServerConfig": {"ipAddress": "\\udc00"}, "BackendConfig": {'
                      b'"ModelDeployConfig": {"ModelConfig": [{"modelName": "\\ud800", "maxSeqLen": ' + b"9" * 5000
                      + b"}]}}}")


@attack("profiler-json-deep", "MEM001", (1,), "json")
def _(folder, scale):
    n = scaled(100_000, scale, 2000)
    return _trace(folder, b'{"p2p": ' + b"[" * n + b"]" * n + b"}", name="cluster_communication.json")


# --- archives -----------------------------------------------------------------------------------------------

def overlapping_zip(entries: int, kernel_bytes: int, quoted: bool = False) -> bytes:
    """A zip whose ``entries`` central-directory entries all decompress one deflate kernel of ``kernel_bytes``
    (text lines): with ``quoted`` each entry has its own local header and its data runs over the headers after it
    (David Fifield's non-recursive bomb, simplified: the headers are stored blocks of the kernel's deflate stream);
    without, every entry points at one local header. Built with ``struct``: zipfile refuses to write this."""
    line = b"INFO 09-03 14:00:10 [a.py:1] the same line again and again\n"
    plain = (line * (kernel_bytes // len(line) + 1))[:kernel_bytes]
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    kernel = comp.compress(plain) + comp.flush()
    crc = zlib.crc32(plain)
    out, central = io.BytesIO(), io.BytesIO()
    names = [f"node-0/m{i:05d}.log".encode() for i in range(entries)]
    if not quoted:
        offset = 0
        out.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, crc, len(kernel), len(plain),
                              len(names[0]), 0) + names[0] + kernel)
        for name in names:
            central.write(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0, crc, len(kernel),
                                      len(plain), len(name), 0, 0, 0, 0, 0, offset) + name)
    else:
        # Layout: LH_0 [stored block quoting LH_1] LH_1 [stored block quoting LH_2] ... LH_(n-1) kernel. Entry i's
        # data is everything after its own header: the quoted headers after it and the kernel (built from the end).
        data = [b""] * entries
        tail = kernel
        for i in range(entries - 1, -1, -1):
            data[i] = tail
            lh = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, 0, len(tail), 0, len(names[i]), 0) + names[i]
            if i:
                tail = struct.pack("<BHH", 0, len(lh), len(lh) ^ 0xFFFF) + lh + tail
        first = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, 0, len(data[0]), 0, len(names[0]), 0)
        out.write(first + names[0] + data[0])
        offset = 0
        for i, name in enumerate(names):
            # CRC unknown without inflating: the reader refuses the overlap before it would check it.
            central.write(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0, 0, len(data[i]),
                                      kernel_bytes + 64 * (entries - i), len(name), 0, 0, 0, 0, 0, offset) + name)
            offset += 30 + len(name) + 5
    cd = central.getvalue()
    start = out.tell()
    out.write(cd)
    out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, entries, entries, len(cd), start, 0))
    return out.getvalue()


@attack("zip-overlapping-entries", "entries overlap", (1,), "archive")
def _(folder, scale):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bomb.zip").write_bytes(overlapping_zip(scaled(100, scale, 10), 60 * MiB))
    (folder / "serve.log").write_text(OOM)
    return Case([str(folder)])


@attack("zip-overlapping-1000-entries", "entries overlap", (1,), "archive")
def _(folder, scale):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bomb.zip").write_bytes(overlapping_zip(1000, scaled(20 * MiB, scale, MiB)))
    (folder / "serve.log").write_text(OOM)
    return Case([str(folder)])


@attack("zip-overlapping-quoted", "entries overlap", (1,), "archive")
def _(folder, scale):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bomb.zip").write_bytes(overlapping_zip(scaled(250, scale, 20), 30 * MiB, quoted=True))
    (folder / "serve.log").write_text(OOM)
    return Case([str(folder)])


@attack("zip-overlapping-in-tar", "entries overlap", (1,), "archive")
def _(folder, scale):
    folder.mkdir(parents=True, exist_ok=True)
    inner = overlapping_zip(scaled(100, scale, 10), 60 * MiB)
    with tarfile.open(folder / "bundle.tar.gz", "w:gz") as tar:
        info = tarfile.TarInfo("node-0/inner.zip")
        info.size = len(inner)
        tar.addfile(info, io.BytesIO(inner))
        info = tarfile.TarInfo("node-0/serve.log")
        info.size = len(OOM)
        tar.addfile(info, io.BytesIO(OOM.encode()))
    return Case([str(folder)])


def _many_members_tar(path: Path, n: int) -> None:
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        for i in range(n):
            info = tarfile.TarInfo(f"node-0/m{i:06d}.log")
            tar.addfile(info)
        info = tarfile.TarInfo("node-0/serve.log")
        info.size = len(OOM)
        tar.addfile(info, io.BytesIO(OOM.encode()))


@attack("tar-gz-250k-empty-members", "MEM001", (1,), "archive", slow=True, timeout=900, max_rss_mb=800)
def _(folder, scale):
    folder.mkdir(parents=True, exist_ok=True)
    _many_members_tar(folder / "many.tar.gz", scaled(150_000, scale, 1000))  # under the member budget
    return Case([str(folder)])


@attack("tar-gz-members-over-budget", "members; the rest was not read", (1,), "archive", slow=True, max_rss_mb=800)
def _(folder, scale):
    folder.mkdir(parents=True, exist_ok=True)
    _many_members_tar(folder / "many.tar.gz", scaled(250_000, scale, 1000))
    (folder / "a-serve.log").write_text(OOM)  # read before the archive exhausts the budget
    return Case(["--budget", f"max_members={scaled(200_000, scale, 500)}", str(folder)])


@attack("zip-250k-empty-members", "MEM001", (1,), "archive", slow=True, timeout=900, max_rss_mb=800)
def _(folder, scale):
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / "many.zip", "w") as zf:
        for i in range(scaled(150_000, scale, 1000)):
            zf.writestr(f"node-0/m{i:06d}.log", b"")
        zf.writestr("node-0/serve.log", OOM)
    return Case([str(folder)])


@attack("tar-gz-huge-long-name", "decompression bomb", (1,), "archive")
def _(folder, scale):
    folder.mkdir(parents=True, exist_ok=True)
    name = "a" * scaled(200 * MiB, scale, 80 * MiB)
    with tarfile.open(folder / "longname.tar.gz", "w:gz", format=tarfile.GNU_FORMAT) as tar:
        info = tarfile.TarInfo(name)
        tar.addfile(info)
    (folder / "serve.log").write_text(OOM)
    return Case([str(folder)])


@attack("tar-gz-huge-pax-header", "decompression bomb", (1,), "archive")
def _(folder, scale):
    folder.mkdir(parents=True, exist_ok=True)
    with tarfile.open(folder / "pax.tar.gz", "w:gz", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("x.log")
        info.pax_headers = {"comment": "b" * scaled(200 * MiB, scale, 80 * MiB)}
        tar.addfile(info)
    (folder / "serve.log").write_text(OOM)
    return Case([str(folder)])


@attack("tar-sparse-member", "binary", (1,), "archive")
def _(folder, scale):
    folder.mkdir(parents=True, exist_ok=True)
    # A GNU sparse member: 512 bytes of data declared as a 100 GB file of holes.
    info = tarfile.TarInfo("node-0/sparse.log")
    info.type = tarfile.GNUTYPE_SPARSE
    info.size = 512
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        tar.addfile(info, io.BytesIO(b"x" * 512))
    raw = bytearray(buf.getvalue())
    head = raw[:512]
    struct.pack_into("12s", head, 386, b"%011o" % 0)  # one sparse map entry: offset 0 ...
    struct.pack_into("12s", head, 398, b"%011o" % 512)  # ... 512 bytes
    struct.pack_into("12s", head, 483, b"%011o" % (100 << 30))  # real size: 100 GB
    head[148:156] = b" " * 8
    head[148:156] = b"%06o\0 " % (sum(head) & 0o777777)
    raw[:512] = head
    (folder / "sparse.tar").write_bytes(bytes(raw))
    (folder / "serve.log").write_text(OOM)
    return Case([str(folder)])


@attack("gz-100k-empty-members", "MEM001", (1,), "archive")
def _(folder, scale):
    folder.mkdir(parents=True, exist_ok=True)
    empty = gzip.compress(b"", 1)
    (folder / "many.log.gz").write_bytes(empty * scaled(100_000, scale, 1000) + gzip.compress(OOM.encode()))
    return Case([str(folder)])


def _tar_of(name: str, size: int) -> bytes:
    """A tar (uncompressed) with one member of ``size`` bytes of ``a`` (built as a stream: header, data, end)."""
    info = tarfile.TarInfo(name)
    info.size = size
    return info.tobuf(format=tarfile.GNU_FORMAT)


@attack("tar-xz-bomb", "decompression bomb", (1,), "archive")
def _(folder, scale):
    return _compressed_tar_bomb(folder, "xz", scale)


@attack("tar-bz2-bomb", "decompression bomb", (1,), "archive")
def _(folder, scale):
    return _compressed_tar_bomb(folder, "bz2", scale)


@attack("tar-zst-bomb", "decompression bomb", (1,), "archive")
def _(folder, scale):
    return _compressed_tar_bomb(folder, "zst", scale)


def _compressed_tar_bomb(folder: Path, kind: str, scale: float) -> Case:
    folder.mkdir(parents=True, exist_ok=True)
    size = scaled(1024 * MiB, scale, 80 * MiB)
    head = _tar_of("node-0/bomb.log", size)
    if kind == "xz":
        import lzma
        comp = lzma.LZMACompressor(preset=1)
    elif kind == "bz2":
        import bz2
        comp = bz2.BZ2Compressor(9)
    else:
        import zstandard
        comp = zstandard.ZstdCompressor(level=3).compressobj()
    parts = [comp.compress(head)]
    block = b"a" * MiB
    parts += [comp.compress(block) for _ in range(size // MiB)]
    parts.append(comp.compress(b"\0" * 1024))
    parts.append(comp.flush())
    (folder / f"bomb.tar.{kind}").write_bytes(b"".join(parts))
    (folder / "serve.log").write_text(OOM)
    return Case([str(folder)])


@attack("tar-zst-read", "MEM001", (1,), "archive")
def _(folder, scale):
    import zstandard

    folder.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("node-0/serve.log")
        info.size = len(OOM)
        tar.addfile(info, io.BytesIO(OOM.encode()))
    (folder / "logs.tar.zst").write_bytes(zstandard.ZstdCompressor().compress(buf.getvalue()))
    return Case([str(folder)])


# --- files that change while read ---------------------------------------------------------------------------

# Installed through PYTHONPATH as sitecustomize: the walk lists ``victim.log`` (or the folder ``victim``), and
# before the run opens it the file is swapped for something else. Patches names that every version of the
# walk has (``_from_file``, ``os.scandir``), so the same attack runs on the code before and after a fix.
_SWAP = """
import os, sys
MODE, VICTIM, TARGET = {mode!r}, {victim!r}, {target!r}
import diagnose.ingest.walk as walk

def swap():
    if os.path.isdir(VICTIM) and not os.path.islink(VICTIM):
        os.rename(VICTIM, VICTIM + ".away")
    elif os.path.lexists(VICTIM):
        os.unlink(VICTIM)
    if MODE == "fifo":
        os.mkfifo(VICTIM)
    else:
        os.symlink(TARGET, VICTIM)

if MODE == "dir":
    real_scandir = os.scandir
    class Listing(list):
        def __enter__(self): return self
        def __exit__(self, *a): return False
    def scandir(path="."):
        shown = os.readlink(f"/proc/self/fd/{{path}}") if isinstance(path, int) else str(path)
        entries = Listing(real_scandir(path))
        if shown == os.path.dirname(VICTIM) and os.path.isdir(VICTIM) and not os.path.islink(VICTIM):
            swap()
        return entries
    walk.os.scandir = scandir
else:
    real_from_file = walk._from_file
    def _from_file(path, *a, **kw):
        for item in real_from_file(path, *a, **kw):
            if str(path) == VICTIM:
                swap()
            yield item
    walk._from_file = _from_file
"""


def _swapped(folder: Path, mode: str, target: str | None = None) -> Case:
    inside = folder / "in"
    inside.mkdir(parents=True)
    (inside / "a.log").write_text(OOM)
    secret = folder / "secret.log"
    secret.write_text("OUTSIDE-THE-INPUT-FOLDER " + OOM)
    if mode == "dir":
        (inside / "victim").mkdir()
        (inside / "victim" / "b.log").write_text("fine\n")
        (folder / "outside").mkdir()
        (folder / "outside" / "c.log").write_text("OUTSIDE-THE-INPUT-FOLDER " + OOM)
        victim, target = inside / "victim", str(folder / "outside")
    else:
        victim = inside / "victim.log"
        victim.write_text("fine\n")
    hook = folder / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_SWAP.format(mode=mode, victim=str(victim), target=target or str(secret)))
    return Case([str(inside)], env={"PYTHONPATH": str(hook)})


@attack("swap-file-for-symlink", "changed after it was listed", (1,), "change")
def _(folder, scale):
    return _swapped(folder, "link")


@attack("swap-file-for-fifo", "changed after it was listed", (1,), "change", timeout=60)
def _(folder, scale):
    return _swapped(folder, "fifo")


@attack("swap-file-for-dev-zero", "changed after it was listed", (1,), "change", timeout=120)
def _(folder, scale):
    return _swapped(folder, "link", "/dev/zero")


@attack("swap-folder-for-symlink", "changed after it was listed", (1,), "change")
def _(folder, scale):
    return _swapped(folder, "dir")


def _opened_by_another(path: Path) -> bool:
    """Whether a process other than this one has ``path`` open (Linux: its /proc/PID/fd links)."""
    target, me = str(path.resolve()), str(os.getpid())
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or proc.name == me:
            continue
        try:
            if any(os.readlink(fd) == target for fd in (proc / "fd").iterdir()):
                return True
        except OSError:
            continue
    return False


@attack("truncated-while-read", "shrank while read", (5,), "change", slow=True, timeout=600, max_rss_mb=1000)
def _(folder, scale):
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "serve.log"
    size = scaled(419 * 1000 * 1000, scale, 50 * MiB)
    with open(log, "w") as fh:
        lines = "".join(METRIC.format(m=i // 60 % 60, s=i % 60, e=0, p=1.0, g=2.0, r=1, w=0, k=3.0)
                        for i in range(1000))
        for _ in range(size // len(lines) + 1):
            fh.write(lines)
        fh.write(OOM)

    def cut():
        import time
        # Truncate once the CLI holds the file open (a loaded machine can take seconds to start it): a cut
        # before the read began would be a smaller file, not one that shrank while read.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not _opened_by_another(log):
            time.sleep(0.05)
        time.sleep(0.3)
        os.truncate(log, size // 4)
    return Case([str(log)], during=cut)


@attack("stdin-dev-zero", "binary", (4,), "change", timeout=120)
def _(folder, scale):
    return Case(["-"], stdin="/dev/zero")


@attack("fifo-on-command-line", "FIFO", (4,), "change", timeout=60)
def _(folder, scale):
    folder.mkdir(parents=True, exist_ok=True)
    os.mkfifo(folder / "pipe.log")
    return Case([str(folder / "pipe.log")])


# --- the cache folder ---------------------------------------------------------------------------------------

def _cache(folder: Path, spoil: Callable[[Path], None]) -> Case:
    """A cache folder filled by a first run, each of its files then spoiled."""
    import subprocess
    import sys

    cache = folder / "cache"
    logs = folder / "logs"
    logs.mkdir(parents=True)
    (logs / "serve.log").write_text(OOM)
    env = {**os.environ, "DIAGNOSE_CACHE_DIR": str(cache), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    subprocess.run([sys.executable, "-m", "diagnose", "-q", str(logs)], env=env, capture_output=True, check=False)
    files = sorted(p for p in cache.iterdir() if p.is_file())
    assert files, "the first run left no cache"
    for path in files:
        path.unlink()
        spoil(path)
    return Case([str(logs)], env={"DIAGNOSE_CACHE_DIR": str(cache)})


@attack("cache-links-to-dev-zero", "MEM001", (1,), "cache", timeout=120)
def _(folder, scale):
    return _cache(folder, lambda p: os.symlink("/dev/zero", p))


@attack("cache-fifos", "MEM001", (1,), "cache", timeout=60)
def _(folder, scale):
    return _cache(folder, os.mkfifo)


@attack("cache-deep-json", "MEM001", (1,), "cache")
def _(folder, scale):
    n = scaled(100_000, scale, 2000)
    return _cache(folder, lambda p: p.write_bytes(b"[" * n + b"]" * n))


@attack("cache-huge-file", "MEM001", (1,), "cache")
def _(folder, scale):
    n = scaled(100 * MiB, scale, 8 * MiB)
    return _cache(folder, lambda p: p.write_bytes(b"[" + b"1," * (n // 2) + b"1]"))


@attack("cache-wrong-shapes", "MEM001", (1,), "cache")
def _(folder, scale):
    return _cache(folder, lambda p: p.write_text('[1, "x", null, {"id": []}]' if p.name.startswith("rules")
                                                 else '{"tables": 5, "en": [1]}'))


# --- rule and configuration files ---------------------------------------------------------------------------

def _rules(folder: Path, text: bytes | None = None, special: str | None = None) -> Case:
    rules = folder / "my-rules"
    rules.mkdir(parents=True)
    path = rules / "USR900.deep.toml"
    if special == "fifo":
        os.mkfifo(path)
    elif special == "zero":
        os.symlink("/dev/zero", path)
    else:
        path.write_bytes(text or b"")
    (folder / "serve.log").write_text(OOM)
    return Case(["--rules", str(rules), str(folder / "serve.log")])


def _deep_toml(n: int, inline: bool = False) -> bytes:
    return b"a = " + (b"{b=" * n + b"1" + b"}" * n if inline else b"[" * n + b"]" * n) + b"\n"


@attack("rules-file-deep-array", "USR900.deep.toml", (2,), "rules")
def _(folder, scale):
    return _rules(folder, _deep_toml(scaled(100_000, scale, 2000)))


@attack("rules-file-deep-inline-table", "USR900.deep.toml", (2,), "rules")
def _(folder, scale):
    return _rules(folder, _deep_toml(scaled(100_000, scale, 2000), inline=True))


@attack("rules-file-200-mb", "USR900.deep.toml", (2,), "rules", slow=True)
def _(folder, scale):
    body = (b'id = "USR900"\nname = "big"\ncategory = "engine"\nseverity = "error"\ntitle.en = "x"\n'
            b'title.zh = "x"\nremediation.en = "x"\nremediation.zh = "x"\ndescription.zh = "x"\n')
    return _rules(folder, body + b'description.en = "' + b"x" * scaled(200 * MiB, scale, 8 * MiB) + b'"\n'
                  + b'[match]\nkind = "pattern"\nregex = "NPU out of memory"\n')


@attack("rules-file-fifo", "USR900.deep.toml", (2,), "rules", timeout=60)
def _(folder, scale):
    return _rules(folder, special="fifo")


@attack("rules-file-link-to-dev-zero", "USR900.deep.toml", (2,), "rules", timeout=120)
def _(folder, scale):
    return _rules(folder, special="zero")


def _config(folder: Path, name: str, text: bytes) -> Case:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".git").mkdir()
    (folder / name).write_bytes(text)
    (folder / "serve.log").write_text(OOM)
    return Case(["serve.log"], cwd=str(folder))


@attack("config-deep", ".diagnose.toml", (2,), "rules")
def _(folder, scale):
    return _config(folder, ".diagnose.toml", _deep_toml(scaled(100_000, scale, 2000)))


@attack("pyproject-deep", "pyproject.toml", (2,), "rules")
def _(folder, scale):
    return _config(folder, "pyproject.toml", b"[tool.diagnose]\n" + _deep_toml(scaled(100_000, scale, 2000)))


@attack("config-200-mb", ".diagnose.toml", (2,), "rules", slow=True)
def _(folder, scale):
    return _config(folder, ".diagnose.toml", b'# ' + b"x" * scaled(200 * MiB, scale, 8 * MiB) + b"\nfail_on = 'error'\n")


@attack("config-link-to-dev-zero", ".diagnose.toml", (2,), "rules", timeout=120)
def _(folder, scale):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".git").mkdir()
    os.symlink("/dev/zero", folder / ".diagnose.toml")
    (folder / "serve.log").write_text(OOM)
    return Case(["serve.log"], cwd=str(folder))


@attack("baseline-deep-json", "MEM001", (1,), "json")  # not a report: read as the baseline run (a log)
def _(folder, scale):
    folder.mkdir(parents=True, exist_ok=True)
    n = scaled(100_000, scale, 2000)
    (folder / "base.json").write_bytes(b'{"version": "0.1.0", "findings": ' + b"[" * n + b"]" * n + b"}")
    (folder / "serve.log").write_text(OOM)
    return Case(["--baseline", str(folder / "base.json"), str(folder / "serve.log")])


# --- templates, regexes, the page ---------------------------------------------------------------------------

def _user_rule(folder: Path, summary: str, regex: str = "NPU out of memory", log: str = OOM,
               page: bool = True) -> Case:
    rules = folder / "my-rules"
    rules.mkdir(parents=True)
    (rules / "USR901.tmpl.toml").write_text(
        'id = "USR901"\nname = "tmpl"\ncategory = "memory"\nseverity = "error"\ntitle.en = "template"\n'
        f'title.zh = "模板"\nsummary.en = {json.dumps(summary)}\nsummary.zh = {json.dumps(summary)}\n'
        'remediation.en = "Look."\nremediation.zh = "查看。"\n'
        f'[match]\nkind = "pattern"\nregex = {json.dumps(regex)}\n', encoding="utf-8")
    (folder / "serve.log").write_text(log)
    extra = ["--html", str(folder / "page.html")] if page else []
    return Case(["--rules", str(rules), *extra, str(folder / "serve.log")])


@attack("template-width-million", "USR901", (1,), "template")
def _(folder, scale):
    return _user_rule(folder, "{count:>1000000} events")


@attack("template-precision-million", "USR901", (1,), "template")
def _(folder, scale):
    return _user_rule(folder, "{count:.1000000f} events and {first_seen:^999999}")


@attack("template-attribute-access", "{count.__class__", (1,), "template")
def _(folder, scale):
    return _user_rule(folder, "{count.__class__.__mro__} {count[0]} {count!r}")


@attack("template-nested-spec", "USR901", (1,), "template")
def _(folder, scale):
    return _user_rule(folder, "{count:{count}} {count:>{count}} {where:,>99999999999999999999}")


@attack("page-long-blank-operator-name", "OPS002", (1,), "template")
def _(folder, scale):
    out = folder / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    name = "Op" + " \t" * scaled(50_000, scale, 5000) + "_NonZero"
    rows = ["Name,Type,Accelerator Core,Start Time(us),Duration(us),Input Data Types,Output Data Types"]
    rows += [f'"{name}",NonZero,AI_CPU,"1700000000000000\t",5000.0,INT64,INT64',
             'MatMul,MatMul,AI_CORE,"1700000000010000\t",20.0,FLOAT16,FLOAT16']
    (out / "kernel_details.csv").write_text("\n".join(rows) + "\n")
    (folder / "serve.log").write_text(OOM)
    return Case(["--html", str(folder / "page.html"), str(folder)])


@attack("user-regex-bounded-repeat", "fast path", (1,), "template", timeout=900)
def _(folder, scale):
    line = "ZQZX" + "x" * 20_000 + "\n"  # holds the pattern's literal: the whole regex must be tried on it
    return _user_rule(folder, "{count} slow matches", regex=".{1,5000}ZQZX",
                      log=line * scaled(300, scale, 30) + OOM, page=False)


# --- memory on dense logs -----------------------------------------------------------------------------------

# Six samples a metric line (40 bytes each in the compact series): 900 MB of them was a series of 950 MB and a
# run past 4 GB. The series now keeps at most Budget.max_series_rows samples (diagnose/pipeline/samples.py): at
# full size the run keeps that many, says the file was read in part (exit 5) and peaks at 1.25 GB alone, 1.64 GB
# measured inside the slow suite on 2 cores (the rules pass over the kept samples is the peak); the limit is 2 GB,
# against more than 4 GB without the budget. Under the budget (a smaller scale) it reads every sample.
@attack("metric-only-log", "periodic metric samples past the first", (5,), "memory", slow=True, timeout=900,
        max_rss_mb=2000)
def _(folder, scale):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "serve.log"
    size = scaled(900 * MiB, scale, 20 * MiB)
    written, i = 0, 0
    with open(path, "w") as fh:
        while written < size:
            chunk = "".join(METRIC.format(m=(j // 60) % 60, s=j % 60, e=j % 16, p=100.0 + j % 7, g=900.0 + j % 11,
                                          r=j % 64, w=j % 5, k=(j % 90) + 0.5) for j in range(i, i + 10_000))
            fh.write(chunk)
            written += len(chunk)
            i += 10_000
    return Case([str(path)])


# --- held up well: kept so ----------------------------------------------------------------------------------

@attack("stdin-one-huge-line", "longer than the line limit", (1,), "change", slow=True)
def _(folder, scale):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "line.log"
    with open(path, "wb") as fh:
        block = b"abcdefgh" * (MiB // 8)
        for _ in range(scaled(200, scale, 8)):
            fh.write(block)
        fh.write(b"\n" + OOM.encode())
    return Case(["-"], stdin=str(path))


@attack("many-small-files", "MEM001", (1,), "change", slow=True)
def _(folder, scale):
    node = folder / "node-0"
    node.mkdir(parents=True)
    for i in range(scaled(20_000, scale, 500)):
        (node / f"plog-{i:06d}.log").write_text("[INFO] RUNTIME(1,python3):2025-07-23-03:47:57.070.463 ok\n")
    (node / "serve.log").write_text(OOM)
    return Case([str(folder)])


@attack("deep-folders", "nesting", (1,), "change")
def _(folder, scale):
    deep = folder
    for i in range(80):
        deep = deep / f"d{i}"
    deep.mkdir(parents=True)
    (deep / "deep.log").write_text(OOM)
    (folder / "serve.log").write_text(OOM)
    return Case([str(folder)])


@attack("symlink-loop-in-folder", "symbolic link", (1,), "change")
def _(folder, scale):
    (folder / "loop").mkdir(parents=True)
    os.symlink("..", folder / "loop" / "up")
    os.symlink("/etc/passwd", folder / "passwd.log")
    (folder / "serve.log").write_text(OOM)
    return Case([str(folder)])


@attack("zip-directory-lies", "MEM001", (1,), "archive")
def _(folder, scale):
    folder.mkdir(parents=True, exist_ok=True)
    raw = bytearray(overlapping_zip(1, MiB))
    struct.pack_into("<HH", raw, len(raw) - 22 + 8, 65535, 65535)  # the end record claims 65,535 entries
    (folder / "lies.zip").write_bytes(bytes(raw))
    (folder / "serve.log").write_text(OOM)
    return Case([str(folder)])


@attack("gz-truncated", "truncated", (1,), "archive")
def _(folder, scale):
    folder.mkdir(parents=True, exist_ok=True)
    data = gzip.compress((OOM * 2000).encode())
    (folder / "serve.log.gz").write_bytes(data[: len(data) // 2])
    return Case([str(folder)])


@attack("config-fifo", ".diagnose.toml", (2,), "rules", timeout=60)
def _(folder, scale):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".git").mkdir()
    os.mkfifo(folder / ".diagnose.toml")
    (folder / "serve.log").write_text(OOM)
    return Case(["serve.log"], cwd=str(folder))


@attack("rules-file-not-utf8", "USR900.deep.toml", (2,), "rules")
def _(folder, scale):
    return _rules(folder, b'id = "USR900"\nname = "\xff\xfe"\n')
