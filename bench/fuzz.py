"""Fuzz the archive reader, every parser and every output format for a set time.

    pip install atheris            # coverage-guided (libFuzzer); without it a random mutation loop runs
    python bench/fuzz.py --seconds 600

Each input is used four ways:
  1. as files: its bytes as a log (kind sniffed), as a .gz, and as the members of a tar and of a zip whose member
     names are taken from the input too (raw bytes, a zip without the UTF-8 flag), read in one run with the
     catalog's rules; the bytes as a tar or zip stream themselves (with a mangled real archive);
  2. the report of that run in every format (text, JSON, SARIF, JUnit, Markdown, GitHub, HTML), each checked:
     JSON parses, SARIF validates against the 2.1.0 schema, JUnit is XML, HTML and rendered Markdown hold no
     markup from the input, GitHub output is one workflow command a line, no output has a control character;
  3. its bytes read as a forced kind (three kinds an input, in turn: every kind within a few inputs);
  4. its lines through every parser.
Everywhere: no exception, no internal error, every file read or skipped with a reason, every line of a read
file parsed or kept raw and the counts adding up. Any failure is a bug: the input is saved under
bench/fuzz-crashes/ and the run stops. ``one_input`` returns what it checked (tests/test_hostile.py asserts it).
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import random
import re
import sys
import tarfile
import time
import traceback
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from diagnose.ingest.archives import iter_tar, iter_zip  # noqa: E402
from diagnose.ingest.budget import Budget  # noqa: E402
from diagnose.ingest.metered import ARCHIVE_ERRORS, Ratio, SourceFile, source  # noqa: E402
from diagnose.messages import messages  # noqa: E402
from diagnose.model import RECORD_SCHEMA, Skipped, skip  # noqa: E402
from diagnose.parsers import registry  # noqa: E402
from diagnose.parsers.lineframe import FileContext, lines_frame  # noqa: E402
from diagnose.pipeline import RuleFilters, Settings, diagnose, filters_for, load_catalog, read  # noqa: E402
from diagnose.report import render  # noqa: E402

FORMATS = ("text", "json", "sarif", "junit", "markdown", "github", "html")
KINDS = registry.names()
SEEDS = [
    b"(APIServer pid=7) INFO 09-03 14:00:10 [loggers.py:118] Engine 000: Avg prompt throughput: 1.0 tokens/s, "
    b"Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 3.0%\n",
    b"(Worker_TP0 pid=9) ERROR 09-03 14:00:11 [worker.py:1] RuntimeError: NPU out of memory. Tried to allocate "
    b"30.00 MiB (NPU 5; 60.96 GiB total capacity; 60.34 GiB already allocated; 15.87 MiB free)\n",
    b"[2025-10-29 09:53:45.928+08:00] [1] [2] [mindie-server] [ERROR] [x.cpp:1] : [MIE04E010109] [daemon] x\n",
    b"[ERROR] HCCL(1,python3):2025-07-23-03:47:57.070.463 [hccl_socket.cc:100] [1][HcclSocket][Listen] fail\n",
    b"| NPU   Name   | Health   | Power(W) Temp(C) |\n| 0     910B3  | OK       | 95.1     45      |\n",
    b"Name,Type,Accelerator Core,Start Time(us),Duration(us),Input Data Types\nMatMul,MatMul,AI_CORE,\"1\t\",2.0,INT8\n",
    b"[rank0]: EI0006: [PID: 1] 2025-04-08-18:07:20.444.436 Getting socket times out.\n",
    b"Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\nValueError: bad </script><img src=x>\n",
    b"# HELP vllm:num_requests_running x\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n",
    b'{"date": "20251118-093012", "request_throughput": 3.2, "mean_ttft_ms": 80.1}\n',
    "显存不足 NPU out of memory \u202e ::error::x %0A\n".encode("gb18030"),
    b"\xff\xfe" + "(W pid=1) ERROR 09-03 14:00:11 [w.py:1] RuntimeError: NPU out of memory\r\n".encode("utf-16-le"),
    # The hostile JSON of bench/attacks.py: deep nesting, numbers no float holds, a lone surrogate, NaN.
    b"[" * 3000 + b"]" * 3000,
    b'{"completed": ' + b"9" * 5000 + b', "request_throughput": 1' + b"0" * 400 + b', "mean_ttft_ms": NaN}\n',
    b'[{"ph":"X","name":"Op\\ud800x_NonZero","pid":1,"ts":"1700000000000000","dur":1e400,"args":{"Task Type":'
    b'"AI_CPU"}}]\n',
    b'a = ' + b"{b=" * 2000 + b"1" + b"}" * 2000 + b"\n",
]
SPECIAL = [b"\x00", b"\xff", b"\r", b"\n", b"\r\n", b"\x1b[31m", b"\xe2\x80\xae", b"<script>", b"&amp;", b"]]>",
           b"%0A", b"::error::", b"\\", b"!", b"/", b"\xc3", b"\xed\xa0\x80", b"a" * 300]
BUDGET = dict(max_file_bytes=8 << 20, max_total_bytes=64 << 20, max_members=1000, bomb_floor=1 << 20)

_catalog: tuple | None = None
_schema = None


def _rules():
    global _catalog
    if _catalog is None:
        settings = Settings()
        rules, errors = load_catalog(settings)
        _catalog = (settings, rules, errors, filters_for(rules))
    return _catalog


def _tar(data: bytes, names: list[bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.GNU_FORMAT, encoding="utf-8",
                      errors="surrogateescape") as tar:
        for i, name in enumerate(names):
            info = tarfile.TarInfo(f"node-{i}/" + name.decode("utf-8", "surrogateescape"))
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class _RawName(zipfile.ZipInfo):
    def __init__(self, raw: bytes):
        super().__init__(raw.decode("cp437"))
        self.raw = raw

    def _encodeFilenameFlags(self):  # noqa: N802 - zipfile's hook: the header name as these bytes, no UTF-8 flag
        return self.raw, self.flag_bits


def _zip(data: bytes, names: list[bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in names:
            zf.writestr(_RawName(b"node-1/" + name), data)
    return buf.getvalue()


def _names(data: bytes) -> list[bytes]:
    """Member names out of the input: its first bytes (no NUL, no slash), and a log-like name."""
    raw = data[:40].replace(b"\x00", b"_").replace(b"/", b"_").strip(b" ") or b"x"
    return [raw + b".log", b"serve-" + raw[-8:] + b".log"]


def _memory(path: str, data: bytes, budget: Budget) -> SourceFile:
    return source(path, path, None, len(data), None, lambda: io.BytesIO(data), budget)


def _views(data: bytes, budget: Budget, count: list[int]):
    """The input as files and archive members (use 1), lazily: a tar member can only be read while its archive
    is at it, so the reader must take each one before the next is made (as from the walk). ``count`` counts them."""
    names = _names(data)

    def all_items():
        yield _memory("fuzz.log", data, budget)
        yield source("fuzz.log.gz", "fuzz.log", None, None, None,
                     lambda: gzip.GzipFile(fileobj=io.BytesIO(gzip.compress(data, 1))), budget, Ratio(len(data) or 1))
        tgz, zipped = _tar(data[:4096], names), _zip(data[:4096], names)
        for shown, blob, formats in (("named.tgz", tgz, "tar"), ("named.zip", zipped, "zip"),
                                     ("mangled.tgz", _mutate_bytes(tgz, data), "tar"),
                                     ("mangled.zip", _mutate_bytes(zipped, data), "zip"), ("raw", data, "tar zip")):
            if "tar" in formats:
                yield from iter_tar(io.BytesIO(blob), f"{shown}.tar", None, budget, Ratio(len(blob) or 1), nested=0)
            if "zip" in formats:
                try:
                    zf = zipfile.ZipFile(io.BytesIO(blob))
                except ARCHIVE_ERRORS as exc:
                    yield Skipped(f"{shown}.zip", skip("corrupt_zip", error=str(exc)))
                    continue
                yield from iter_zip(zf, f"{shown}.zip", None, budget, Ratio(len(blob) or 1), nested=0)

    for item in all_items():
        count[0] += 1
        yield item


def _check_read(parsed, kind: str | None = None) -> None:
    if parsed.errors:
        raise AssertionError(parsed.errors)
    for s in parsed.skipped:
        s.path.encode("utf-8")
        if not s.reason or _NAME_CONTROL.search(s.path):
            raise AssertionError(f"skipped without a reason: {s.path}")
    subset_ok = kind == "profiler" or kind is None  # the profiler keeps ordinary kernel rows out of the records
    for one in parsed.inputs:
        one.path.encode("utf-8")  # strict: a display path, never surrogates
        if _NAME_CONTROL.search(one.path):
            raise AssertionError(f"control character in a path: {one.path!r}")
        mine = parsed.records.filter(parsed.records["file"] == one.path)
        lines = mine["line"].to_list()
        if len(lines) != len(set(lines)) or not all(1 <= x <= one.lines for x in lines):
            raise AssertionError(f"{one.path}: record lines {lines[:20]} for {one.lines} lines")
        if kind is not None and not subset_ok and len(lines) != one.lines:
            raise AssertionError(f"{one.path} as {kind}: {len(lines)} records for {one.lines} lines")
        if one.raw_lines != int((~mine["parsed"]).sum()) and kind is not None:
            raise AssertionError(f"{one.path}: raw_lines {one.raw_lines} != records kept raw")


# In names (display form: ingest/names.py): no control, bidirectional or line-separator character. In outputs: no
# C0 control character but tab, LF and CR (log text may carry bidirectional marks; data formats keep them as data).
_NAME_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")


def _check_outputs(report, rules, turn: int = 0) -> set[str]:
    """Every format of ``report``, each checked as its readers would read it (use 2)."""
    global _schema
    import xml.etree.ElementTree as ET

    import jsonschema
    from markdown_it import MarkdownIt

    opts = dict(lang="en", paths=["fuzz.log"], fail_on="error", catalog=rules)
    done = set()
    for fmt in FORMATS:
        text = render(fmt, report, **opts)
        text.encode("utf-8")
        # (The page is left out: its own scripts (plotly) hold control characters, and in HTML text they are
        # no markup: a browser shows them as nothing.)
        if fmt != "html" and _CONTROL.search(text):
            raise AssertionError(f"{fmt}: control character in the output")
        if fmt == "json":
            json.loads(text)
        elif fmt == "sarif":
            if _schema is None:
                schema = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
                _schema = jsonschema.validators.validator_for(schema)(schema)
            sarif = json.loads(text)
            if turn % 50:  # the catalog's rule list is the same every time: in full only now and then
                for run in sarif.get("runs", []):
                    run["tool"]["driver"]["rules"] = run["tool"]["driver"].get("rules", [])[:3]
            errors = [e.message for e in _schema.iter_errors(sarif)]
            if errors:
                raise AssertionError(f"sarif: {errors[:3]}")
        elif fmt == "junit":
            ET.fromstring(text)
        elif fmt == "github":
            bad = [line for line in text.splitlines() if line and not line.startswith(("::error", "::warning",
                                                                                        "::notice"))]
            if bad:
                raise AssertionError(f"github: not a workflow command: {bad[0][:200]}")
        elif fmt in ("html", "markdown"):
            page = text if fmt == "html" else MarkdownIt("commonmark", {"html": True}).enable("table").render(text)
            _check_markup(page, fmt)
        done.add(fmt)
    return done


def _check_markup(page: str, fmt: str) -> None:
    from html.parser import HTMLParser

    problems: list[str] = []

    class Check(HTMLParser):
        def handle_starttag(self, tag, attrs):
            if tag in ("img", "iframe", "object") or any(a.startswith("on") for a, _ in attrs):
                problems.append(f"<{tag} {attrs}>")

        def handle_data(self, data):
            if self.lasttag == "script" and data.strip().startswith(("alert", "<")):
                problems.append(data[:80])

    Check().feed(page)
    if problems:
        raise AssertionError(f"{fmt}: markup from the input: {problems[:3]}")


def one_input(data: bytes, turn: int = 0) -> dict:
    """Use one input the four ways of the module docstring; raise on the first failure; return what was checked."""
    settings, rules, rule_errors, filters = _rules()
    budget = Budget(**BUDGET)
    # 1. Files and archive members, with the catalog's rules, as a run reads a bundle.
    count = [0]
    parsed = read(_views(data, budget, count), settings, filters)
    _check_read(parsed)
    members = count[0]
    if len(parsed.inputs) + len(parsed.skipped) != members:
        raise AssertionError(f"{members} files and skips in, {len(parsed.inputs)} read + {len(parsed.skipped)} out")
    if any("closed" in messages("en").say(s.reason) for s in parsed.skipped):
        raise AssertionError(f"a member was made after its archive moved on: {parsed.skipped}")
    # 2. That run's report in every format.
    report = diagnose(parsed, rules, rule_errors, settings, filters)
    formats = _check_outputs(report, rules, turn)
    # 3. The bytes as forced kinds (every line kept: counts add up exactly).
    kinds = [KINDS[(3 * turn + i) % len(KINDS)] for i in range(3)]
    for kind in kinds:
        src = _memory(f"node-0/{kind}.log", data, budget)
        _check_read(read([src], Settings(kind=kind), RuleFilters()), kind)
    # 4. Lines through every parser.
    text = data.decode("utf-8", errors="replace").split("\n")[:200]
    for kind in KINDS:
        records, signals = registry.parser_for(kind)(lines_frame(text), FileContext(f"x/{kind}.log", None, kind, None))
        if not set(RECORD_SCHEMA) <= set(records.columns):
            raise AssertionError(f"{kind}: records without the contract's columns")
        lines = records["line"].to_list()
        if len(set(lines)) != len(lines) or (kind != "profiler" and sorted(lines) != list(range(1, len(text) + 1))):
            raise AssertionError(f"{kind}: {records.height} records for {len(text)} lines")
    return {"members": members, "read": len(parsed.inputs), "skipped": len(parsed.skipped), "formats": formats,
            "kinds": kinds, "parsers": len(KINDS)}


def _mutate_bytes(blob: bytes, salt: bytes) -> bytes:
    rng = random.Random(hash(salt) & 0xFFFFFFFF)
    b = bytearray(blob)
    for _ in range(rng.randint(1, 8)):
        if b:
            b[rng.randrange(len(b))] = rng.randrange(256)
    if rng.random() < 0.3:
        b = b[: rng.randrange(len(b) + 1)]
    return bytes(b)


def _mutate(rng: random.Random) -> bytes:
    base = bytearray(b"".join(rng.choice(SEEDS) for _ in range(rng.randint(1, 4))))
    for _ in range(rng.randint(0, 20)):
        op = rng.random()
        at = rng.randrange(len(base) + 1)
        if op < 0.3 and base:
            base[rng.randrange(len(base))] = rng.randrange(256)
        elif op < 0.5:
            base[at:at] = rng.choice(SPECIAL) * rng.choice((1, 1, 3, 100))
        elif op < 0.7:
            base[at:rng.randrange(at, len(base) + 1)] = rng.choice(SEEDS)
        elif op < 0.8 and base:  # duplicate a stretch (long runs, repeated records)
            end = rng.randrange(at, len(base) + 1)
            base[at:at] = base[at:end] * rng.randint(1, 4)
        elif base:
            del base[at:at + rng.randint(1, 16)]
    return bytes(base[:65536])


def _random_loop(seconds: float, out: Path, seed: int) -> tuple[int, float]:
    rng = random.Random(seed)
    end = time.monotonic() + seconds
    n, slowest = 0, 0.0
    while time.monotonic() < end:
        data = _mutate(rng)
        start = time.monotonic()
        try:
            one_input(data, n)
        except Exception:
            _save(out, data)
            raise
        slowest = max(slowest, time.monotonic() - start)
        n += 1
    return n, slowest


def _save(out: Path, data: bytes) -> None:
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"crash-{int(time.time())}.bin"
    path.write_bytes(data)
    print(f"crash input saved to {path}", file=sys.stderr)
    traceback.print_exc()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--seed", type=int, default=0, help="seed of the random mutation loop")
    ap.add_argument("--no-atheris", action="store_true", help="use the random mutation loop")
    args = ap.parse_args()
    out = Path(__file__).resolve().parent / "fuzz-crashes"
    start = time.monotonic()
    try:
        import atheris  # type: ignore
    except ImportError:
        atheris = None
    if atheris is None or args.no_atheris:
        n, slowest = _random_loop(args.seconds, out, args.seed)
        print(f"fuzz: {n} inputs in {time.monotonic() - start:.0f} s, no failure (random mutation loop; each input as "
              f"{len(FORMATS)} output formats, {len(KINDS)} parsers, 3 forced kinds, files and archive members; "
              f"slowest input {slowest:.2f} s)")
        return 0
    corpus = Path(__file__).resolve().parent / "fuzz-corpus"
    corpus.mkdir(exist_ok=True)
    for i, seed in enumerate(SEEDS):
        (corpus / f"seed{i}").write_bytes(seed)
    turns = iter(range(1 << 62))

    def target(data: bytes) -> None:
        try:
            one_input(data, next(turns))
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
