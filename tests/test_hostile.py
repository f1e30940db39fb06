"""Hostile and broken input: every file read or skipped with a reason, nothing written, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import hostile
from conftest import ROOT, run_cli, run_json


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("hostile") / "bundle"
    return root, hostile.build(root, bomb_mib=8)


@pytest.fixture(scope="module")
def report(bundle):
    """The whole CLI on the bundle, in a subprocess; a lower bomb floor keeps the test's bombs small."""
    root, _ = bundle
    before = _snapshot(root.parent)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "diagnose", "--format", "json", "--budget", "bomb_floor=4M", str(root)],
                          capture_output=True, text=True, env=env, timeout=300, cwd=root.parent)
    after = _snapshot(root.parent)
    import json

    return proc, json.loads(proc.stdout), before, after


def _snapshot(folder: Path) -> set[str]:
    return {str(p) for p in folder.rglob("*")}


def test_runs_to_completion_without_traceback(report):
    proc, data, _, _ = report
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr
    assert data["errors"] == []


def test_every_case_is_read_or_skipped_with_its_reason(bundle, report):
    root, expect = bundle
    _, data, _, _ = report
    # An archive counts as read when its members were (their paths are `archive!member`).
    read = {Path(i["path"].split("!")[0]).relative_to(root).as_posix() for i in data["inputs"]}
    skipped = {s["path"]: s["reason"] for s in data["skipped"]}
    for name, outcome in expect.items():
        path = str(root / name)
        if outcome == "read":
            assert name in read, f"{name} was not read: {skipped.get(path)}"
        elif name == "deep":
            assert any("nesting" in r for r in skipped.values())
        else:
            reasons = [r for p, r in skipped.items() if p == path or p.startswith(path + "!")]
            reasons += [i["note"] for i in data["inputs"] if i["path"].startswith(path + "!") and i["note"]]
            assert reasons and any(outcome in r for r in reasons), f"{name}: {reasons}"


def test_archive_members_with_links_and_escapes_are_never_followed(bundle, report):
    root, _ = bundle
    _, data, before, after = report
    skipped = {s["path"]: s["reason"] for s in data["skipped"]}
    assert "link" in skipped[f"{root}/evil.tgz!link-out"]
    assert "link" in skipped[f"{root}/evil.tgz!hard-link"]
    assert "special" in skipped[f"{root}/evil.tgz!fifo-in-tar"]
    assert "link" in skipped[f"{root}/evil.zip!zip-link"]
    members = [i["path"] for i in data["inputs"] if "evil" in i["path"]]
    assert f"{root}/evil.tgz!escape.log" in members and f"{root}/evil.tgz!etc/absolute.log" in members
    assert after == before  # nothing written next to or outside the bundle


def test_text_oddities_are_decoded_and_counted(bundle, report):
    root, _ = bundle
    _, data, _, _ = report
    inputs = {Path(i["path"]).name: i for i in data["inputs"]}
    assert inputs["empty.log"]["lines"] == 0
    assert inputs["gbk.log"]["encoding"] == "gb18030"
    assert inputs["utf16.log"]["encoding"] == "utf-16" and inputs["utf16.log"]["lines"] == 2
    assert inputs["crlf.log"]["lines"] == 2 and inputs["cr-only.log"]["lines"] == 2
    assert inputs["huge-line.log"]["lines"] == 2
    assert "truncated" in (inputs["truncated.log.gz"]["note"] or "")
    assert "truncated" in (inputs["serve.log"]["note"] or "")  # the cut tar member: its head is read
    assert inputs["f001999.log"]["lines"] == 1


def test_the_oom_in_each_readable_variant_is_still_found(report):
    _, data, _, _ = report
    oom = next(f for f in data["findings"] if f["rule_id"] == "MEM001")
    assert oom["count"] >= 8  # nul, utf-8, utf16, crlf, cr, huge line, gz, archives …


def test_timestamps_from_1970_and_2999_are_kept(report):
    _, data, _, _ = report
    assert any(i["path"].endswith("ts-1970-2999.log") and i["lines"] == 2 for i in data["inputs"])


def test_text_report_strips_control_sequences(tmp_path: Path):
    log = tmp_path / "evil.log"
    log.write_text("(W pid=1) ERROR 01-01 10:00:00 [w.py:1] RuntimeError: NPU out of memory. Tried to allocate "
                   "1.00 MiB \x1b]0;pwned\x07\x1b[2J\x1b[31m[bold]markup[/bold] %s {0} {count}\n")
    out = run_cli(str(log), "--no-color").stdout
    assert "\x1b" not in out and "\x07" not in out
    # Markup and format placeholders stay literal text (the panel may wrap the line between them).
    flat = "".join(out.replace("│", "").split())
    assert "[bold]markup[/bold]%s{0}{count}" in flat
    code, data = run_json(str(log))
    assert data["findings"][0]["evidence"][0]["text"].endswith("[bold]markup[/bold] %s {0} {count}")


def test_a_file_growing_while_read_does_not_break_the_run(tmp_path: Path):
    log = tmp_path / "node-0" / "growing.log"
    log.parent.mkdir()
    log.write_text(hostile.GOOD * 1000)
    stop = threading.Event()

    def writer():
        with open(log, "a") as fh:
            while not stop.is_set():
                fh.write(hostile.GOOD * 50)
                fh.flush()
                time.sleep(0.001)

    t = threading.Thread(target=writer)
    t.start()
    try:
        code, data = run_json(str(tmp_path))
    finally:
        stop.set()
        t.join()
    assert code == 0 and data["inputs"][0]["lines"] >= 1000


def test_a_file_shrinking_while_read(tmp_path: Path, monkeypatch):
    """A file cut after the walk listed it (a rotation, a truncation) is read up to the cut and said to be read
    in part: never "No findings" with complete coverage after reading a fraction of it."""
    from diagnose.ingest import walk

    log = tmp_path / "shrink.log"
    log.write_text(hostile.OOM * 100)
    real_open = walk.open_regular

    def shrinking_open(path, *a, **kw):
        fd = real_open(path, *a, **kw)
        if str(path) == str(log):
            os.truncate(log, 10)
        return fd

    monkeypatch.setattr(walk, "open_regular", shrinking_open)
    code, data = run_json(str(log))
    assert code == 5 and data["inputs"][0]["path"] == str(log)
    assert data["inputs"][0]["incomplete"].startswith("shrank while read: 10 of ")
    assert data["coverage"]["status"] == "partial"


def test_budget_option_is_validated():
    assert run_cli("--budget", "max_file_bytes=lots", str(ROOT / "samples" / "healthy")).exit_code == 2
    assert run_cli("--budget", "nonsense=1", str(ROOT / "samples" / "healthy")).exit_code == 2
    result = run_cli("--budget", "max_file_bytes=1K", "--format", "json", str(ROOT / "samples" / "healthy"))
    assert "per-file limit of 1024 bytes" in result.stdout + result.stderr


def _many_small_files(tmp_path: Path, n: int) -> None:
    """Small files are parsed in batches (a query per file would take hours for 100,000 of them): every file
    is listed, and the one with an error is named in the evidence with its own line number and node."""
    folder = tmp_path / "node-0"
    folder.mkdir()
    line = hostile.GOOD
    for i in range(n):
        (folder / f"plog-{i:06d}.log").write_text(line)
    (folder / f"plog-{n}.log").write_text(hostile.OOM)
    code, data = run_json(str(tmp_path))
    assert code == 1
    assert len(data["inputs"]) == n + 1 and data["skipped"] == []
    oom = next(f for f in data["findings"] if f["rule_id"] == "MEM001")
    assert oom["evidence"][0]["file"].endswith(f"plog-{n}.log") and oom["evidence"][0]["line"] == 1
    assert oom["nodes"] == ["node-0"]


def test_thousands_of_small_files_are_read_in_batches(tmp_path: Path):
    _many_small_files(tmp_path, 5_000)  # more than two batches (diagnose/pipeline/reading.py _SmallFiles)


@pytest.mark.slow
def test_a_hundred_thousand_small_files(tmp_path: Path):
    _many_small_files(tmp_path, 100_000)


def test_time_budget_lists_what_was_not_reached(tmp_path: Path):
    for i in range(3):
        (tmp_path / f"f{i}.log").write_text(hostile.GOOD)
    result = run_cli("--budget", "max_seconds=1", "--format", "json", str(tmp_path))
    assert result.exit_code == 0  # nothing unreadable, nothing wrong: the budget was not hit this fast
    import diagnose.pipeline.reading as pipeline

    real = pipeline.time.monotonic
    ticks = iter([0.0] + [10.0] * 100)
    try:
        pipeline.time.monotonic = lambda: next(ticks)  # the clock jumps past the budget after the start
        late = run_cli("--budget", "max_seconds=1", str(tmp_path))
    finally:
        pipeline.time.monotonic = real
    # Nothing could be read in time: nothing was analysed (exit 4), each file named with the reason.
    flat = " ".join(late.stdout.split())  # long paths wrap at the report's width
    assert late.exit_code == 4 and flat.count("time budget of 1 s reached") == 3
    assert "none of the 3 inputs could be read" in late.stderr


@pytest.mark.parametrize("case", sorted((ROOT / "tests" / "data" / "fuzz").glob("*.bin")), ids=lambda p: p.name)
def test_inputs_the_fuzzer_once_broke_us_with(case: Path):
    """Regressions from bench/fuzz.py: a zip whose directory and header names differ, an unsupported zip
    version, a gzip header cut inside a tar stream."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import fuzz
    finally:
        sys.path.pop(0)
    from diagnose.parsers import registry

    checked = fuzz.one_input(case.read_bytes())  # raises on any failure of the fuzzer's checks
    # Every view was made and accounted for: the bytes as files, as tar and zip members, as the raw archive.
    assert checked["members"] >= 8 and checked["read"] + checked["skipped"] == checked["members"]
    assert checked["read"] >= 4  # the log, its .gz, and the members of the archives built around it
    assert checked["formats"] == set(fuzz.FORMATS) and checked["parsers"] == len(registry.names())


# --- every output format on the hostile bundle ---------------------------------------------------------------

@pytest.fixture(scope="module")
def outputs(bundle, tmp_path_factory) -> dict[str, str]:
    """Every format from the hostile bundle: the page, the CI outputs and the GitHub annotations in one run (as a CI
    step would run it), the text report in a second."""
    root, _ = bundle
    out = tmp_path_factory.mktemp("outputs")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GITHUB_ACTIONS": "true",
           "GITHUB_STEP_SUMMARY": str(out / "summary.md")}
    common = ["--budget", "bomb_floor=4M", str(root)]
    ci = subprocess.run([sys.executable, "-m", "diagnose", "--format", "html", "-o", str(out / "page.html"),
                         "--json", str(out / "r.json"), "--sarif", str(out / "r.sarif"), "--junit", str(out / "r.xml"),
                         "--markdown", str(out / "r.md"), *common], capture_output=True, env=env, timeout=600)
    env.pop("GITHUB_ACTIONS")
    env.pop("GITHUB_STEP_SUMMARY")
    text = subprocess.run([sys.executable, "-m", "diagnose", "--no-color", *common], capture_output=True, env=env,
                          timeout=600)
    for proc in (ci, text):
        stderr = proc.stderr.decode("utf-8")  # strict: everything the run prints is UTF-8
        assert proc.returncode in (0, 1), stderr
        assert "Traceback" not in stderr
    read = {name: (out / name).read_bytes().decode("utf-8") for name in ("page.html", "r.json", "r.sarif", "r.xml",
                                                                         "r.md", "summary.md")}
    return {**read, "github": ci.stdout.decode("utf-8"), "text": text.stdout.decode("utf-8")}


def _shown(raw: bytes) -> str:
    from diagnose.ingest.names import display

    return display(os.fsdecode(raw))


def test_hostile_names_survive_into_the_report_in_one_display_form(bundle, outputs):
    import json

    root, _ = bundle
    data = json.loads(outputs["r.json"])
    paths = {i["path"] for i in data["inputs"]}
    for raw in hostile.HOSTILE_NAMES:
        shown = _shown(raw)
        assert f"{root}/names/{shown}" in paths, shown  # on disk
        assert f"{root}/raw-names.tgz!{shown}" in paths, shown  # the same bytes in a tar: the same form
    # zip names without the UTF-8 flag: GBK when they read as Chinese (as from Chinese-locale Windows).
    assert f"{root}/windows-gbk.zip!显存日志.log" in paths
    assert f"{root}/windows-gbk.zip!日志/节点-1.log" in paths
    assert f"{root}/names/显存日志.log" in paths and f"{root}/names/\\xff\\xfe broken.log" in paths
    assert f"{root}/names/new\\x0aline.log" in paths and f"{root}/names/rtl\\u202egol.txt.log" in paths
    named = [i for i in data["inputs"] if any(k in i["path"] for k in ("/names/", "raw-names", "windows-gbk"))]
    assert len(named) == 3 * len(hostile.HOSTILE_NAMES) + 1 and all(i["lines"] >= 1 for i in named)  # each was read
    oom = next(f for f in data["findings"] if f["rule_id"] == "MEM001")
    assert oom["count"] >= 8 + len(named)
    for text in outputs.values():
        assert "\x1b" not in text and "\u202e" not in text and "\udcff" not in text


def test_sarif_validates_against_the_2_1_0_schema(outputs):
    import json
    import re

    import jsonschema

    schema = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    sarif = json.loads(outputs["r.sarif"])
    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(sarif)]
    assert not errors, errors[:5]
    uris = re.findall(r'"uri": "([^"]*)"', outputs["r.sarif"])
    assert uris and all(re.fullmatch(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+", u) for u in uris), uris


def test_junit_and_markdown_are_well_formed(outputs):
    import xml.etree.ElementTree as ET

    assert ET.fromstring(outputs["r.xml"]).tag in ("testsuites", "testsuite")
    from markdown_it import MarkdownIt

    for name in ("r.md", "summary.md"):
        tags = _tags(MarkdownIt("commonmark", {"html": True}).enable("table").render(outputs[name]))
        assert not {"img", "script", "iframe"} & {t for t, _ in tags}, name
        assert not [a for _, attrs in tags for a, _ in attrs if a.startswith("on")], name


def test_html_page_has_no_markup_from_names_or_log_text(outputs):
    import re

    page = outputs["page.html"]
    tags = _tags(page)
    assert "img" not in {t for t, _ in tags}
    assert not [a for _, attrs in tags for a, _ in attrs if a.startswith("on")]
    assert not [s for s in _scripts(page) if s.strip().startswith("alert(")]  # no script of the log's own
    # The log's markup is there, as text: escaped in the page, escaped again inside the page's data.
    hits = [m.start() for m in re.finditer(r"alert\(1\)", page)]
    assert hits and all(page[:at].endswith(("&lt;script&gt;", "script\\u0026gt;", "script\\u003e")) for at in hits)
    assert "&lt;img src=x onerror=alert(3)&gt;.log" in page  # the name, as text


def test_github_annotations_are_one_command_a_line(outputs):
    lines = [line for line in outputs["github"].splitlines() if line]
    assert lines and all(line.startswith(("::error", "::warning", "::notice")) for line in lines)
    assert "%0A::error::forged" not in outputs["github"]  # the log's forged command stays escaped data


def _tags(html_text: str) -> list[tuple[str, list[tuple[str, str | None]]]]:
    from html.parser import HTMLParser

    found: list = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, attrs))

    Collect().feed(html_text)
    return found


def _scripts(html_text: str) -> list[str]:
    from html.parser import HTMLParser

    bodies: list[str] = []

    class Collect(HTMLParser):
        inside = False

        def handle_starttag(self, tag, attrs):
            self.inside = tag == "script"
            if self.inside:
                bodies.append("")

        def handle_endtag(self, tag):
            self.inside = False

        def handle_data(self, data):
            if self.inside:
                bodies[-1] += data

    Collect().feed(html_text)
    return bodies
