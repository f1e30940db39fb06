"""Peak memory on hostile big inputs: decompression bombs and files with one enormous line.

    python bench/bench_bombs.py                 # every case at 2 GB (needs ~6 GB free in the temp folder)
    python bench/bench_bombs.py --gb 0.5 --case bomb-gz --case line-plain

Each input is generated on the fly in a temporary folder (removed afterwards; nothing big is committed) and
read by the CLI in a subprocess started through ``bench/peak.py``, which reports the CLI's own peak resident
memory. (Linux carries a process's peak RSS across exec, so ``ru_maxrss`` of a child started straight from a big
process, such as pytest after a heavy test, is at least the parent's peak; the small launcher starts the CLI from
a small mark.) A case fails when the peak is over ``--max-rss`` (500 MB) or unknown, or when the run does not say
what it refused (the skip reason or the input's note).
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
import zlib
from pathlib import Path
from typing import Callable, Iterator

import peak  # bench/peak.py, beside this file

ROOT = Path(__file__).resolve().parent.parent
MiB = 1 << 20
OOM = (b"(Worker_TP0 pid=9) ERROR 09-03 14:00:11 [worker.py:1] RuntimeError: NPU out of memory. Tried to allocate "
       b"30.00 MiB (NPU 5; 60.96 GiB total capacity; 60.34 GiB already allocated; 60.34 GiB current active; "
       b"15.87 MiB free; 60.60 GiB reserved in total by PyTorch)\n")


def _blocks(total: int, block: bytes) -> Iterator[bytes]:
    while total > 0:
        piece = block[:total]
        total -= len(piece)
        yield piece


def _text_block() -> bytes:
    """1 MiB of letters that compresses about 4:1, far below a bomb's ratio."""
    rnd = os.urandom(MiB)
    return bytes(97 + (b & 15) for b in rnd)


def _write(path: Path, chunks: Iterator[bytes]) -> None:
    with open(path, "wb") as fh:
        for chunk in chunks:
            fh.write(chunk)


def bomb_gz(folder: Path, size: int) -> Path:
    """One line of ``a`` compressed about 1000:1."""
    path = folder / "bomb.log.gz"
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    _write(path, (comp.compress(c) for c in _blocks(size, b"a" * (64 * MiB))))
    with open(path, "ab") as fh:
        fh.write(comp.flush())
    return path


def bomb_zip(folder: Path, size: int) -> Path:
    path = folder / "bomb.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open("node-0/bomb.log", "w", force_zip64=True) as fh:
            for chunk in _blocks(size, b"a" * (64 * MiB)):
                fh.write(chunk)
    return path


def line_plain(folder: Path, size: int) -> Path:
    """One line of ``size`` bytes, then an OOM line that must still be found."""
    path = folder / "huge-line.log"
    _write(path, [*_blocks(size, _text_block()), b"\n", OOM])
    return path


def line_gz(folder: Path, size: int) -> Path:
    """The same as a .gz that is no bomb (about 4:1): gzip members of one compressed block, concatenated."""
    path = folder / "huge-line.log.gz"
    member = gzip.compress(_text_block(), 1)
    with open(path, "wb") as fh:
        for _ in range(size // MiB):
            fh.write(member)
        fh.write(gzip.compress(b"\n" + OOM))
    return path


def line_table(folder: Path, size: int) -> Path:
    """One line in a file whose name makes it a table kind (read whole, not line by line)."""
    path = folder / "bench_results.json"
    _write(path, [b'{"x": "', *_blocks(size, _text_block()), b'"}\n'])
    return path


def line_tar(folder: Path, size: int) -> Path:
    """A tar whose first member is one huge line and whose second holds the OOM."""
    path = folder / "bundle.tar"

    class Reader(io.RawIOBase):
        def __init__(self):
            self.chunks = _blocks(size, _text_block())
            self.rest = b""

        def readable(self):
            return True

        def readinto(self, buf):
            if not self.rest:
                self.rest = next(self.chunks, b"")
            n = min(len(buf), len(self.rest))
            buf[:n] = self.rest[:n]
            self.rest = self.rest[n:]
            return n

    with tarfile.open(path, "w") as tar:
        big = tarfile.TarInfo("node-0/huge-line.log")
        big.size = size
        tar.addfile(big, io.BufferedReader(Reader()))
        oom = tarfile.TarInfo("node-0/oom.log")
        oom.size = len(OOM)
        tar.addfile(oom, io.BytesIO(OOM))
    return path


CASES: dict[str, tuple[Callable[[Path, int], Path], str]] = {
    # name: (generator, what the run must say)
    "bomb-gz": (bomb_gz, "decompression bomb"),
    "bomb-zip": (bomb_zip, "decompression bomb"),
    "line-plain": (line_plain, "longer than the line limit"),
    "line-gz": (line_gz, "longer than the line limit"),
    "line-table": (line_table, "longer than the line limit"),
    "line-tar": (line_tar, "longer than the line limit"),
    "line-stdin": (line_plain, "longer than the line limit"),
}


def run_case(name: str, path: Path, folder: Path) -> dict:
    out = folder / f"{name}.json"
    report = folder / f"{name}.peak.json"
    report.unlink(missing_ok=True)
    stdin = name == "line-stdin"
    cmd = [sys.executable, "-m", "diagnose", "--format", "json", "-o", str(out), "-" if stdin else str(path)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.monotonic()
    with open(path if stdin else os.devnull, "rb") as source:
        proc = subprocess.run(peak.command(report, cmd), stdin=source, env=env, stderr=subprocess.PIPE, cwd=folder)
    seconds = time.monotonic() - start
    stderr = proc.stderr.decode("utf-8", "replace")
    own = peak.read(report)  # None when the launcher died before it wrote: the peak is unknown, the case fails
    said = stderr
    if out.exists():
        data = json.loads(out.read_text(encoding="utf-8"))
        said += " ".join(s["reason"] for s in data["skipped"]) + " ".join(i["note"] or "" for i in data["inputs"])
        found_oom = any(f["rule_id"] == "MEM001" for f in data["findings"])
    else:
        found_oom = False
    return {"case": name, "exit": proc.returncode, "seconds": round(seconds, 1),
            "peak_rss_mb": round(own["maxrss_mb"]) if own else None, "said": said.strip(), "oom_found": found_oom}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gb", type=float, default=2.0, help="size of each bomb / line in GB (10^9 bytes)")
    ap.add_argument("--case", action="append", choices=sorted(CASES), help="run only these (repeatable)")
    ap.add_argument("--max-rss", type=float, default=500, help="fail above this peak (MB)")
    args = ap.parse_args()
    size = int(args.gb * 1e9)
    failed = 0
    with tempfile.TemporaryDirectory(prefix="diagnose-bombs-") as tmp:
        folder = Path(tmp)
        for name in args.case or list(CASES):
            make, expect = CASES[name]
            path = make(folder, size)
            row = run_case(name, path, folder)
            # Exit 1: the OOM after the long line was found; 4: nothing analysed (the bomb was all); 5: read in part.
            rss = row["peak_rss_mb"]
            ok = rss is not None and rss < args.max_rss and expect in row["said"] and row["exit"] in (1, 4, 5)
            if name.startswith("line") and name != "line-table":
                ok = ok and row["oom_found"]  # the line after the huge one is still read
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name:11} {path.stat().st_size / 1e9:6.2f} GB on disk  "
                  f"exit {row['exit']}  {row['seconds']:6.1f} s  peak RSS {rss if rss is not None else '?':>4} MB  "
                  f"| {row['said'][:150]}", flush=True)
            path.unlink()
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
