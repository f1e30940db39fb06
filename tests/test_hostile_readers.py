"""Hostile input for the readers that came after the hostile-input work (tests/test_hostile_inputs.py): the watch
state, the JSON lines read back on start and a fleet dataset's manifests are decoded within the bounds of
diagnose/bounded.py, so a FIFO in a file's place never hangs a run and JSON nested past every recursion limit is a
file that could not be read, not a traceback; and every command reads ``--lang cn`` as Chinese."""

from __future__ import annotations

import json
import os
from datetime import date

import click
import pytest

DEEP = "[" * 100_000 + "]" * 100_000  # past Python's recursion limit for the standard decoder


@pytest.mark.parametrize("spoil", ["deep", "fifo", "huge-number"])
def test_a_spoiled_watch_state_starts_afresh(tmp_path, spoil):
    from diagnose.live import state

    path = tmp_path / state.STATE_FILE
    if spoil == "fifo":
        os.mkfifo(path)  # no writer: an open that waited would never return
    elif spoil == "deep":
        path.write_text('{"version": 1, "x": ' + DEEP + "}")
    else:
        path.write_text('{"version": 1, "files": ' + "9" * 5000 + "}")
    loaded = state.load(tmp_path)
    assert loaded == {} or loaded.get("files") is None
    state.save(tmp_path, {"files": {}})  # the state is written again over whatever was there
    assert state.load(tmp_path)["files"] == {}


def test_a_deep_json_line_is_passed_over_when_events_are_read_back(tmp_path):
    from diagnose.live.sinks import _tail_events

    lines = tmp_path / "events.jsonl"
    good = {"seq": 3, "event": "open", "fingerprint": "abc"}
    lines.write_text(DEEP + "\n" + json.dumps(good) + "\n")
    assert _tail_events(lines, 0) == {("open", "abc")}


def test_a_deep_or_fifo_manifest_costs_its_partition_or_says_which_file(tmp_path):
    from diagnose.fleet.dataset import MANIFEST, Partition, open_parts
    from diagnose.fleet.store import Store, StoreError

    store = Store(str(tmp_path))
    deep, fifo = Partition(date(2025, 9, 3), "c", "node-0"), Partition(date(2025, 9, 3), "c", "node-1")
    for p in (deep, fifo):
        (tmp_path / p.rel).mkdir(parents=True)
    (tmp_path / deep.rel / MANIFEST).write_text('{"tables": ' + DEEP + "}")
    parts, broken = open_parts(store, [deep])
    assert parts == [] and [p for p, _ in broken] == [deep]
    os.mkfifo(tmp_path / fifo.rel / MANIFEST)
    with pytest.raises(StoreError, match="FIFO"):  # named, never waited on
        open_parts(store, [fifo])


def _commands():
    from diagnose.cli import main

    ctx = click.Context(main)
    for name in sorted(main.list_commands(ctx)):
        command = main.get_command(ctx, name)
        command = command._real() if hasattr(command, "_real") else command
        if isinstance(command, click.Group):
            yield from ((f"{name} {n}", command.get_command(ctx, n)) for n in command.list_commands(ctx))
        else:
            yield name, command


def test_every_command_reads_lang_cn_as_chinese():
    seen = []
    for name, command in _commands():
        for param in command.params:
            if "--lang" in getattr(param, "opts", ()):
                ctx = click.Context(command)
                assert param.process_value(ctx, "cn") == "zh", name
                seen.append(name)
    assert {"check", "watch", "npd", "npd-config", "collect", "extract", "fleet"} <= {n.split()[0] for n in seen}
