"""Fuzz the archive reader and the parsers for a set time.

    pip install atheris            # coverage-guided (libFuzzer); without it a random mutation loop runs
    python bench/fuzz.py --seconds 600

Each input is used three ways: as a file's bytes (decoded, sniffed and parsed), as a tar/zip/gzip stream
(read through the archive walker with a small budget), and line by line through every parser. Any exception
that escapes is a bug: the input is saved under bench/fuzz-crashes/ and the run stops.
"""

from __future__ import annotations

import argparse
import gzip
import io
import random
import sys
import tarfile
import time
import traceback
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from diagnose.ingest.budget import Budget  # noqa: E402
from diagnose.ingest.archives import iter_tar as _iter_tar, iter_zip as _iter_zip  # noqa: E402
from diagnose.ingest.metered import ARCHIVE_ERRORS, Ratio as _Ratio, SourceFile  # noqa: E402
from diagnose.model import Skipped  # noqa: E402
from diagnose.parsers import registry  # noqa: E402
from diagnose.parsers.common import FileContext, lines_frame  # noqa: E402
from diagnose.pipeline import RuleFilters, Settings, read  # noqa: E402

SEEDS = [
    b"(APIServer pid=7) INFO 09-03 14:00:10 [loggers.py:118] Engine 000: Avg prompt throughput: 1.0 tokens/s, "
    b"Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 3.0%\n",
    b"[2025-10-29 09:53:45.928+08:00] [1] [2] [mindie-server] [ERROR] [x.cpp:1] : [MIE04E010109] [daemon] x\n",
    b"[ERROR] HCCL(1,python3):2025-07-23-03:47:57.070.463 [hccl_socket.cc:100] [1][HcclSocket][Listen] fail\n",
    b"| NPU   Name   | Health   | Power(W) Temp(C) |\n| 0     910B3  | OK       | 95.1     45      |\n",
    b"Name,Type,Accelerator Core,Start Time(us),Duration(us),Input Data Types\nMatMul,MatMul,AI_CORE,\"1\t\",2.0,INT8\n",
    b"[rank0]: EI0006: [PID: 1] 2025-04-08-18:07:20.444.436 Getting socket times out.\n",
]


def _archives(data: bytes) -> list[bytes]:
    out = []
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("node-1/x.log")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    out.append(buf.getvalue())
    zbuf = io.BytesIO()
    with zipfile.ZipFile(zbuf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("node-1/x.log", data)
    out.append(zbuf.getvalue())
    out.append(gzip.compress(data))
    return out


def one_input(data: bytes) -> None:
    # 1. The bytes as a file.
    src = SourceFile("fuzz.log", "fuzz.log", None, len(data), None, open=lambda: io.BytesIO(data))
    parsed = read([src], Settings(), RuleFilters())
    if parsed.errors:
        raise AssertionError(parsed.errors)
    # 2. The bytes as an archive stream (and a mangled real archive).
    budget = Budget(max_file_bytes=8 << 20, max_total_bytes=64 << 20, max_members=1000)
    for blob in (data, *(_mutate_bytes(a, data) for a in _archives(data[:4096]))):
        items = list(_iter_tar(io.BytesIO(blob), "f.tgz", None, budget, _Ratio(len(blob)), nested=0))
        try:
            zf = zipfile.ZipFile(io.BytesIO(blob))
        except ARCHIVE_ERRORS:
            zf = None
        if zf is not None:
            items += list(_iter_zip(zf, "f.zip", None, budget, _Ratio(len(blob)), nested=0))
        files = [i for i in items if not isinstance(i, Skipped)]
        if files:
            read(files[:20], Settings(), RuleFilters())
    # 3. Lines through every parser.
    text = data.decode("utf-8", errors="replace").split("\n")[:200]
    for kind in registry.names():
        parse = registry.parser_for(kind)
        records, _ = parse(lines_frame(text), FileContext(f"x/{kind}.log", None, kind, None))
        if kind in ("vllm", "mindie", "plog", "unknown") and records.height != len(text):
            raise AssertionError(f"{kind}: {records.height} records for {len(text)} lines")


def _mutate_bytes(blob: bytes, salt: bytes) -> bytes:
    rng = random.Random(hash(salt) & 0xFFFFFFFF)
    b = bytearray(blob)
    for _ in range(rng.randint(1, 8)):
        if b:
            b[rng.randrange(len(b))] = rng.randrange(256)
    if rng.random() < 0.3:
        b = b[: rng.randrange(len(b) + 1)]
    return bytes(b)


def _random_loop(seconds: float, out: Path) -> int:
    rng = random.Random(0)
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        base = bytearray(rng.choice(SEEDS) * rng.randint(1, 4))
        for _ in range(rng.randint(0, 20)):
            op = rng.random()
            if op < 0.4 and base:
                base[rng.randrange(len(base))] = rng.randrange(256)
            elif op < 0.7:
                base[rng.randrange(len(base) + 1):rng.randrange(len(base) + 1)] = rng.choice(SEEDS)
            elif base:
                del base[rng.randrange(len(base))]
        data = bytes(base)
        try:
            one_input(data)
        except Exception:
            _save(out, data)
            raise
        n += 1
    return n


def _save(out: Path, data: bytes) -> None:
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"crash-{int(time.time())}.bin"
    path.write_bytes(data)
    print(f"crash input saved to {path}", file=sys.stderr)
    traceback.print_exc()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--no-atheris", action="store_true", help="use the random mutation loop")
    args = ap.parse_args()
    out = Path(__file__).resolve().parent / "fuzz-crashes"
    start = time.monotonic()
    try:
        import atheris  # type: ignore
    except ImportError:
        atheris = None
    if atheris is None or args.no_atheris:
        n = _random_loop(args.seconds, out)
        print(f"fuzz: {n} inputs in {time.monotonic() - start:.0f} s, no failure (random mutation loop)")
        return 0
    corpus = Path(__file__).resolve().parent / "fuzz-corpus"
    corpus.mkdir(exist_ok=True)
    for i, seed in enumerate(SEEDS):
        (corpus / f"seed{i}").write_bytes(seed)

    def target(data: bytes) -> None:
        try:
            one_input(data)
        except Exception:
            _save(out, data)
            raise

    atheris.instrument_all()
    atheris.Setup([sys.argv[0], f"-max_total_time={int(args.seconds)}", "-max_len=8192", "-rss_limit_mb=4096",
                   str(corpus)], target)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
