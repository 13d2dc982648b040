"""Merging raw hook events into audit.jsonl records; masking; reading the log back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from synth.errors import InputFileError
from synth.record.audit import (
    Masker,
    SynthCommand,
    load_audit,
    merge_audit,
    parse_raw_events,
    write_audit,
)


def raw(*events: dict[str, Any]) -> str:
    return "".join(json.dumps(e) + "\n" for e in events)


SHELL = {"ev": "shell", "shell": "10-1", "parent": "", "depth": 0, "pid": 10, "ppid": 1,
         "cmd": "pip install six && sleep 100", "script": "bash", "interactive": False,
         "cwd": "/workspace", "t": 100.0}


def test_a_killed_session_keeps_its_records_marked_incomplete() -> None:
    text = raw(
        SHELL,
        {"ev": "begin", "shell": "10-1", "n": 1, "pid": 10, "cmd": "pip install six",
         "cwd": "/workspace", "t": 100.1},
        {"ev": "end", "shell": "10-1", "n": 1, "t": 102.0, "rc": 0, "ps": [0]},
        {"ev": "begin", "shell": "10-1", "n": 2, "pid": 10, "cmd": "sleep 100",
         "cwd": "/workspace", "t": 102.1},
    ) + '{"ev":"end","shell":"10-1","n":2,"t":1'  # cut by the kill
    records = merge_audit(parse_raw_events(text), [], session="r1", started="2026")
    header, *cmds = records
    assert header == {"type": "header", "format": 1, "session": "r1", "started": "2026",
                      "raw_events": 4, "unparsed": 1}
    by_cmd = {(r.get("source"), r.get("command")): r for r in cmds}
    shell = by_cmd[("bash-c", "pip install six && sleep 100")]
    assert shell["incomplete"] is True and shell["exit"] is None and shell["seq"] == 1
    assert by_cmd[("bash-hook", "pip install six")]["exit"] == 0
    sleep = by_cmd[("bash-hook", "sleep 100")]
    assert sleep["incomplete"] is True and sleep["parent_seq"] == 1
    assert cmds[-1]["type"] == "unparsed"


def test_seq_follows_start_time_and_synth_records_are_included() -> None:
    synth = [SynthCommand(("bash", "-c", "x"), "x", "/workspace", 99.0, 103.0, 0)]
    records = merge_audit(parse_raw_events(raw(SHELL)), synth, session="r", started="t")
    cmds = records[1:]
    assert [r["source"] for r in cmds] == ["synth", "bash-c"]
    assert [r["seq"] for r in cmds] == [1, 2]
    assert cmds[0]["argv"] == ["bash", "-c", "x"] and cmds[0]["phase"] == "agent"


def test_masker_masks_strings_keys_bytes_longest_first() -> None:
    m = Masker(["abc", "abcdef", ""])
    assert m.mask("x abcdef y abc") == "x *** y ***"
    assert m.mask_json({"k abc": ["abcdef", 1, None]}) == {"k ***": ["***", 1, None]}
    assert m.mask_bytes(b"abc!") == b"***!"
    assert not Masker([""])


def test_masking_applies_to_merged_records() -> None:
    text = raw({**SHELL, "cmd": "curl -H 'token: tok123'"})
    records = merge_audit(parse_raw_events(text), [], session="r", started="t",
                          masker=Masker(["tok123"]))
    assert records[1]["command"] == "curl -H 'token: ***'"


def test_write_and_load_round_trip(tmp_path: Path) -> None:
    records = merge_audit(parse_raw_events(raw(SHELL)), [], session="r",
                          started="2026-11-29T10:15:00Z")
    path = tmp_path / "audit.jsonl"
    write_audit(path, records)
    header, cmds = load_audit(path)
    assert header["format"] == 1 and cmds == records[1:]


def test_load_refuses_newer_formats(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_text('{"type": "header", "format": 99}\n')
    with pytest.raises(InputFileError, match="newer"):
        load_audit(path)


def test_merged_records_are_typed_records_that_round_trip() -> None:
    from synth.formats.audit import AUDIT_KEYS, AuditRecord

    text = raw(
        SHELL,
        {"ev": "begin", "shell": "10-1", "n": 1, "pid": 10, "cmd": "pip install six | tee x",
         "cwd": "/workspace", "t": 100.1},
        {"ev": "end", "shell": "10-1", "n": 1, "t": 100.101, "rc": 0, "ps": [0]},
        {"ev": "begin", "shell": "10-1", "n": 2, "pid": 10, "cmd": "tee x",
         "cwd": "/workspace", "t": 100.102},
        {"ev": "end", "shell": "10-1", "n": 2, "t": 102.0, "rc": 0, "ps": [1, 0]},
        {"ev": "shell-end", "shell": "10-1", "t": 102.1, "rc": 0, "cwd": "/tmp"},
    )
    synth = [SynthCommand(("dpkg-query", "-W"), "dpkg-query -W", "/workspace", 99.0, 99.5, 0,
                          phase="synth")]
    traces = [{"pid": 11, "path": "/usr/bin/tee", "argv": ["tee", "x"], "start": 100.2}]
    records = merge_audit(parse_raw_events(text), synth, session="r", started="t",
                          exec_traces=traces)[1:]
    assert [r["source"] for r in records] == ["synth", "bash-c", "bash-hook", "bash-hook",
                                              "exec-trace"]
    pipe = [r for r in records if r.get("pipeline")]
    assert [(r["command"], r["exit"]) for r in pipe] == [("pip install six | tee x", 1),
                                                        ("tee x", 0)]
    assert records[0]["phase"] == "synth" and records[1]["cwd_end"] == "/tmp"
    for r in records:
        assert set(r) - {"incomplete", "pipeline"} == set(AUDIT_KEYS[r["source"]]), r
        assert AuditRecord.from_json(r).to_json() == r
