"""Following files that grow (diagnose/ingest/follow.py): whole lines only, rotation by rename, truncation,
copytruncate copies, restarts from saved positions, and nothing outside the roots."""

from __future__ import annotations

import json
import os
from pathlib import Path

from diagnose.ingest.follow import PARTIAL_POLLS, Follower
from tests.conftest import SAMPLES

LINES = (SAMPLES / "kv-exhaustion" / "node-0" / "vllm-serve-20250903.log").read_bytes().splitlines(keepends=True)


def _append(path: Path, lines: list[bytes]) -> None:
    with open(path, "ab") as fh:
        fh.writelines(lines)


def _lines(chunks) -> list[tuple[str, int, bytes]]:
    """(file name, line number, text) of every line the chunks carry."""
    out = []
    for c in chunks:
        for i, text in enumerate(c.data.splitlines(keepends=True)):
            out.append((Path(c.path).name, c.first_line + i, text))
    return out


def test_growth_whole_lines_and_a_partial_line(tmp_path):
    log = tmp_path / "node-0" / "vllm-serve.log"
    log.parent.mkdir()
    _append(log, LINES[:10] + [LINES[10][:30]])  # the 11th line is being written
    follow = Follower([str(tmp_path)])
    got = _lines(follow.poll())
    assert [n for _, n, _ in got] == list(range(1, 11)) and got[0][2] == LINES[0]
    chunk_node = follow.poll()
    assert chunk_node == []  # the partial line waits for its newline
    _append(log, [LINES[10][30:]] + LINES[11:13])
    got = _lines(follow.poll())
    assert [(n, t) for _, n, t in got] == [(11, LINES[10]), (12, LINES[11]), (13, LINES[12])]


def test_a_last_line_without_newline_is_taken_once_the_file_stops_growing(tmp_path):
    log = tmp_path / "app.log"
    _append(log, [LINES[0], LINES[1].rstrip(b"\n")])
    follow = Follower([str(tmp_path)])
    assert len(_lines(follow.poll())) == 1
    polls = [_lines(follow.poll()) for _ in range(PARTIAL_POLLS)]
    assert polls[-1] == [("app.log", 2, LINES[1].rstrip(b"\n"))] and not any(polls[:-1])


def test_rotation_by_rename_reads_the_rest_of_the_old_file_then_the_new_one(tmp_path):
    log = tmp_path / "app.log"
    _append(log, LINES[:5])
    follow = Follower([str(log)])  # a file named on the command line brings its rotated siblings
    assert len(_lines(follow.poll())) == 5
    _append(log, LINES[5:8])  # written before the rotation, not yet read
    log.rename(tmp_path / "app.log.1")
    _append(log, LINES[8:10])
    got = _lines(follow.poll())
    assert sorted(got) == sorted([("app.log.1", 6, LINES[5]), ("app.log.1", 7, LINES[6]), ("app.log.1", 8, LINES[7]),
                                  ("app.log", 1, LINES[8]), ("app.log", 2, LINES[9])])


def test_truncation_starts_the_file_again(tmp_path):
    log = tmp_path / "app.log"
    _append(log, LINES[:20])
    follow = Follower([str(tmp_path)])
    follow.poll()
    with open(log, "wb"):
        pass
    _append(log, LINES[20:23])
    chunks = follow.poll()
    assert [c.restarted for c in chunks] == [True]
    assert _lines(chunks) == [("app.log", 1, LINES[20]), ("app.log", 2, LINES[21]), ("app.log", 3, LINES[22])]
    # Truncated and grown past the old offset between two polls: the changed head gives it away.
    with open(log, "wb") as fh:
        fh.writelines(LINES[100:140])
    chunks = follow.poll()
    assert chunks[0].restarted and chunks[0].first_line == 1 and len(_lines(chunks)) == 40


def test_a_copytruncate_copy_is_not_read_twice(tmp_path):
    log = tmp_path / "app.log"
    _append(log, LINES[:30])
    follow = Follower([str(tmp_path)])
    follow.poll()
    _append(log, LINES[30:32])  # written, then copied and truncated before the next poll
    (tmp_path / "app.log.1").write_bytes(log.read_bytes())
    with open(log, "wb"):
        pass
    _append(log, LINES[32:33])
    got = _lines(follow.poll())
    assert sorted(got) == sorted([("app.log.1", 31, LINES[30]), ("app.log.1", 32, LINES[31]),
                                  ("app.log", 1, LINES[32])])
    copy = next(k for k, p in follow.files.items() if p.path.endswith("app.log.1"))
    original = next(k for k, p in follow.files.items() if p.path.endswith("app.log"))
    assert follow.copies == [(original, copy)]  # what was read of app.log is now app.log.1's


def test_positions_survive_a_restart_as_json(tmp_path):
    log = tmp_path / "app.log"
    _append(log, LINES[:10])
    first = Follower([str(tmp_path)])
    first.poll()
    saved = json.loads(json.dumps(first.positions()))
    _append(log, LINES[10:12])
    again = Follower([str(tmp_path)])
    again.restore(saved)
    assert _lines(again.poll()) == [("app.log", 11, LINES[10]), ("app.log", 12, LINES[11])]
    key = next(iter(again.files))
    assert again.read_range(key, 0, len(LINES[0])) == LINES[0]


def test_backlog_links_exclusions_and_compressed_files(tmp_path):
    log = tmp_path / "node-0" / "vllm-serve.log"
    log.parent.mkdir()
    _append(log, LINES)
    outside = tmp_path.parent / f"{tmp_path.name}-outside.log"
    outside.write_bytes(LINES[0])
    os.symlink(outside, tmp_path / "node-0" / "link.log")
    (tmp_path / "node-0" / "old.log.gz").write_bytes(b"\x1f\x8b")
    mine = tmp_path / "node-0" / "diagnose.jsonl"
    mine.write_bytes(b'{"event": "open"}\n')
    tail = sum(len(x) for x in LINES[-5:])
    follow = Follower([str(tmp_path)], exclude=frozenset({str(mine)}), backlog=tail)
    got = _lines(follow.poll())
    assert [(name, n) for name, n, _ in got] == [("vllm-serve.log", len(LINES) - 4 + i) for i in range(5)]
    assert got[-1][2] == LINES[-1]
    chunk = follow.poll()
    assert chunk == []
    # A file that appears later is read whole, and its node comes from its path.
    new = tmp_path / "node-1" / "plog" / "plog-1_20250903140000000.log"
    new.parent.mkdir(parents=True)
    new.write_bytes(b"[INFO] RUNTIME(1,python3):2025-09-03-14:00:00.000.000 [device.cc:1] hello\n")
    chunks = follow.poll()
    assert [(c.node, c.first_line) for c in chunks] == [("node-1", 1)]


def test_reading_is_capped_per_poll(tmp_path):
    log = tmp_path / "app.log"
    _append(log, LINES)
    follow = Follower([str(tmp_path)], max_bytes_per_file=4096)
    taken = []
    for _ in range(200):
        got = _lines(follow.poll())
        assert sum(len(t) for _, _, t in got) <= 4096
        taken += got
        if not got:
            break
    assert [t for _, _, t in taken] == LINES and [n for _, n, _ in taken] == list(range(1, len(LINES) + 1))
