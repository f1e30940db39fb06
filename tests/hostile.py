"""Build a bundle of hostile and broken inputs (names, encodings, archives, bombs, special files), for tests and fuzzing."""

from __future__ import annotations

import gzip
import io
import os
import socket
import tarfile
import zipfile
from pathlib import Path

from diagnose.ingest.names import display

GOOD = (
    "(APIServer pid=7) INFO 09-03 14:00:10 [loggers.py:118] Engine 000: Avg prompt throughput: 1.0 tokens/s, "
    "Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 3.0%, "
    "Prefix cache hit rate: 0.0%\n"
)
OOM = ("(Worker_TP0 pid=9) ERROR 09-03 14:00:11 [worker.py:1] RuntimeError: NPU out of memory. Tried to allocate "
       "30.00 MiB (NPU 5; 60.96 GiB total capacity; 60.34 GiB already allocated; 60.34 GiB current active; "
       "15.87 MiB free; 60.60 GiB reserved in total by PyTorch)\n")


# Log text that must stay text in every output: markup, a script end, format placeholders, a workflow command.
MARKUP = ("(Worker_TP0 pid=9) ERROR 09-03 14:00:12 [worker.py:1] RuntimeError: NPU out of memory. Tried to allocate "
          "1.00 MiB </script><script>alert(1)</script> <img src=x onerror=alert(2)> ]]> <![CDATA[ x ]]> "
          "&amp; %0A::error::forged {0} %s | `tick` *star*\n")

# File names as they come from other machines: bytes that are not UTF-8 (GBK from Chinese-locale Windows,
# broken bytes), a newline, a leading dash, shell and HTML syntax, a bidirectional override.
HOSTILE_NAMES = [
    "显存日志.log".encode("gbk"), b"\xff\xfe broken.log", b"new\nline.log", b"-rf --help.log",
    b"$(touch pwned).log", b"a;b|c&d.log", b"<img src=x onerror=alert(3)>.log", "rtl\u202egol.txt.log".encode(),
    b"tab\tand\x1b[31mesc.log",
]


class _RawZipName(zipfile.ZipInfo):
    """A zip member whose header name is these bytes, without the UTF-8 flag (as Windows zip tools write)."""

    def __init__(self, raw: bytes):
        super().__init__(raw.decode("cp437"))
        self.raw = raw

    def _encodeFilenameFlags(self):  # noqa: N802 - zipfile's hook for the header name
        return self.raw, self.flag_bits


def _tar_bytes(members: list[tarfile.TarInfo | tuple[tarfile.TarInfo, bytes]], mode: str = "w:gz") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tar:
        for m in members:
            if isinstance(m, tuple):
                tar.addfile(m[0], io.BytesIO(m[1]))
            else:
                tar.addfile(m)
    return buf.getvalue()


def _info(name: str, data: bytes = b"", **kw) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    for k, v in kw.items():
        setattr(info, k, v)
    return info, data


def build(root: Path, many_files: int = 2000, bomb_mib: int = 80) -> dict[str, str]:
    """Write the bundle under ``root``; return {relative path: what is expected ('read' or a reason word)}."""
    expect: dict[str, str] = {}
    root.mkdir(parents=True, exist_ok=True)

    def put(name: str, data: bytes, outcome: str) -> Path:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        expect[name] = outcome
        return path

    put("empty.log", b"", "read")
    put("binary.bin", bytes(range(256)) * 64, "binary")
    put("nul-inside.log", GOOD.encode() + b"half a line\x00\x00 then more\n" + OOM.encode(), "read")
    put("invalid-utf8.log", GOOD.encode() + b"\xff\xfe\xfa broken bytes \xc3\x28\n" + OOM.encode(), "read")
    put("gbk.log", ("[2025-10-29 09:53:45.928+08:00] [1] [2] [mindie-server] [ERROR] [x.cpp:1] : 显存不足 NPU out of memory\n")
        .encode("gbk"), "read")
    put("utf16.log", (GOOD + OOM).encode("utf-16"), "read")
    put("crlf.log", (GOOD + OOM).replace("\n", "\r\n").encode(), "read")
    put("cr-only.log", (GOOD + OOM).replace("\n", "\r").encode(), "read")
    put("ansi.log", ("\x1b[1;36m(APIServer pid=7)\x1b[0;0m \x1b[32mINFO\x1b[0m 09-03 14:00:10 [a.py:1] hi\n").encode(), "read")
    put("huge-line.log", b"x" * (12 * 1024 * 1024) + b"\n" + OOM.encode(), "read")
    put("ts-1970-2999.log", b"[ERROR] 1970-01-01-00:00:00 (PID:1, Device:0, RankID:-1) ERR99999 UNKNOWN\n"
                            b"[ERROR] 2999-12-31-23:59:59 (PID:1, Device:0, RankID:-1) ERR99999 UNKNOWN\n", "read")
    put("interleaved.log", b"(Worker_TP0 pid=1) ERROR 09-03 14:00:11 [w.py:1] Trace(Worker_TP1 pid=2) ERROR 09-03 "
                           b"14:00:11 [w.py:1] back (most recent\n(Worker_TP0 pid=1) call last):\n", "read")
    good_gz = gzip.compress((GOOD + OOM).encode())
    put("ok.log.gz", good_gz, "read")
    put("truncated.log.gz", good_gz[: len(good_gz) // 2], "read")  # head read, with a note
    put("corrupt.zip", b"PK\x03\x04" + os.urandom(200), "corrupt")
    put("corrupt.tgz", b"\x1f\x8b\x08\x00" + os.urandom(200), "corrupt")
    noisy = "".join(f"INFO 09-03 14:00:10 [a.py:1] {os.urandom(40).hex()}\n" for _ in range(3000)).encode()
    truncated = _tar_bytes([_info("node-9/serve.log", noisy), _info("node-9/after.log", OOM.encode())])
    put("truncated.tgz", truncated[: len(truncated) // 2], "truncated")
    zeros = b"a" * (1024 * 1024)  # text, so only the ratio can stop it
    bomb = io.BytesIO()
    with gzip.GzipFile(fileobj=bomb, mode="wb", compresslevel=9) as gz:
        for _ in range(bomb_mib):
            gz.write(zeros)
    put("bomb.log.gz", bomb.getvalue(), "bomb")
    zbomb = io.BytesIO()
    with zipfile.ZipFile(zbomb, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open("bomb.log", "w") as fh:
            for _ in range(bomb_mib):
                fh.write(zeros)
    put("bomb.zip", zbomb.getvalue(), "bomb")
    big = b"a" * (bomb_mib * 1024 * 1024)
    put("bomb.tgz", _tar_bytes([_info("big.log", big)]), "bomb")
    evil = _tar_bytes([
        _info("../../escape.log", OOM.encode()),
        _info("/etc/absolute.log", OOM.encode()),
        _info("link-out", type=tarfile.SYMTYPE, linkname="/etc/passwd"),
        _info("hard-link", type=tarfile.LNKTYPE, linkname="../../escape.log"),
        _info("fifo-in-tar", type=tarfile.FIFOTYPE),
    ])
    put("evil.tgz", evil, "read")
    zevil = io.BytesIO()
    with zipfile.ZipFile(zevil, "w") as zf:
        zf.writestr("../../zip-escape.log", OOM)
        link = zipfile.ZipInfo("zip-link")
        link.external_attr = (0o120777 << 16)
        zf.writestr(link, "/etc/passwd")
    put("evil.zip", zevil.getvalue(), "read")

    # Hostile names: on disk, in a zip without the UTF-8 flag (GBK names) and in a tar (raw bytes).
    for raw in HOSTILE_NAMES:
        path = root / "names" / os.fsdecode(raw)
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(MARKUP.encode() + OOM.encode())
        expect[display(f"names/{os.fsdecode(raw)}")] = "read"
    zraw = io.BytesIO()
    with zipfile.ZipFile(zraw, "w") as zf:
        for raw in [*HOSTILE_NAMES, "日志/节点-1.log".encode("gbk")]:
            zf.writestr(_RawZipName(raw), OOM)
    put("windows-gbk.zip", zraw.getvalue(), "read")
    traw = io.BytesIO()
    with tarfile.open(fileobj=traw, mode="w:gz", format=tarfile.GNU_FORMAT, encoding="utf-8",
                      errors="surrogateescape") as tar:  # the names' bytes as they are
        for raw in HOSTILE_NAMES:
            info = tarfile.TarInfo(os.fsdecode(raw))
            info.size = len(OOM)
            tar.addfile(info, io.BytesIO(OOM.encode()))
    put("raw-names.tgz", traw.getvalue(), "read")

    (root / "loop").mkdir()
    os.symlink("..", root / "loop" / "up")
    expect["loop/up"] = "symbolic link"
    os.mkfifo(root / "fifo")
    expect["fifo"] = "FIFO"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(root / "sock"))
    sock.close()
    expect["sock"] = "socket"
    locked = put("no-permission.log", OOM.encode(), "permission" if os.geteuid() != 0 else "read")
    locked.chmod(0)

    deep = root
    for i in range(80):
        deep = deep / f"d{i}"
    deep.mkdir(parents=True)
    (deep / "deep.log").write_text(GOOD)
    expect["deep"] = "nesting"

    many = root / "many"
    many.mkdir()
    for i in range(many_files):
        (many / f"f{i:06d}.log").write_text(GOOD)
    return expect
