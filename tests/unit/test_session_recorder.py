"""The session's one exec path: synth's own commands and the agent's, both recorded, each
with its phase; distill reads the agent's only. Pure logic over a fake container."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from synth.engine.base import EngineContainer, ExecResult, OutputCallback
from synth.errors import EngineError
from synth.formats.store import read_audit
from synth.record.audit import RawEvents, merge_audit, write_audit
from synth.record.recorder import RecordingContainer


class FakeContainer:
    """Answers each exec with exit 3, or raises for argv ``["boom"]``."""

    id = "c0ffee"
    name = "fake"
    description = "container fake"

    def __init__(self) -> None:
        self.ran: list[list[str]] = []
        self.oom_kills = 0

    def exec(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None,
             workdir: str | None = None, timeout: float | None = None,
             on_output: OutputCallback | None = None) -> ExecResult:
        self.ran.append(list(argv))
        if list(argv) == ["boom"]:
            raise EngineError("exec in container fake failed: gone")
        if list(argv) == ["hog"]:
            self.oom_kills += 1
            return ExecResult(tuple(argv), 137, "", "Killed")
        return ExecResult(tuple(argv), 3, "out", "", timed_out=timeout == 0.5)

    def copy_in(self, src: Path, dest: str) -> None: ...
    def copy_out(self, src: str, dest: Path) -> None: ...
    def put_archive(self, dest: str, data: bytes) -> None: ...
    def get_archive(self, src: str) -> bytes | None:
        return None
    def read_file(self, path: str, *, max_bytes: int | None = None) -> bytes | None:
        return None
    def diff(self) -> list[tuple[str, str]]:
        return []
    def commit(self, ref: str, *, labels: Mapping[str, str]) -> str:
        return "sha256:1"
    def ensure_running(self) -> None: ...
    def labels(self) -> dict[str, str]:
        return {}
    def layer_size(self) -> int | None:
        return None

    def limit_events(self) -> dict[str, int]:
        return {"memory": self.oom_kills, "pids": 0}
    def remove(self) -> None: ...


def _recorder() -> tuple[FakeContainer, RecordingContainer]:
    fake = FakeContainer()
    inner: EngineContainer = fake  # the fake meets the protocol (mypy checks this line)
    return fake, RecordingContainer(inner, [], default_cwd="/workspace")


def test_synth_commands_are_recorded_with_phase_synth() -> None:
    fake, rc = _recorder()
    res = rc.exec(["dpkg-query", "-W"], timeout=0.5)
    assert res.exit_code == 3 and fake.ran == [["dpkg-query", "-W"]]
    [rec] = rc.commands
    assert rec.phase == "synth" and rec.argv == ("dpkg-query", "-W")
    assert rec.command == "dpkg-query -W" and rec.cwd == "/workspace"
    assert rec.exit == 3 and rec.timed_out and rec.end is not None and rec.end >= rec.start


def test_agent_commands_run_wrapped_but_are_recorded_as_shown() -> None:
    fake, rc = _recorder()
    rc.agent_exec(["bash", "-c", "make"], ["sh", "/synth/hook/run_group.sh", "bash", "-c",
                                           "make"], command="make", workdir="/workspace",
                  timed_out=lambda: True)
    assert fake.ran == [["sh", "/synth/hook/run_group.sh", "bash", "-c", "make"]]
    [rec] = rc.commands
    assert (rec.phase, rec.argv, rec.command, rec.exit, rec.timed_out) == (
        "agent", ("bash", "-c", "make"), "make", 3, True)


def test_a_command_that_raises_stays_incomplete() -> None:
    _fake, rc = _recorder()
    with pytest.raises(EngineError):
        rc.exec(["boom"])
    [rec] = rc.commands
    assert rec.end is None and rec.exit is None
    [_header, record] = merge_audit(RawEvents(()), rc.commands, session="s", started="t")
    assert record["incomplete"] is True and record["phase"] == "synth"


def test_the_audit_keeps_both_phases_and_distill_sees_the_agents_only(tmp_path: Path) -> None:
    _fake, rc = _recorder()
    rc.exec(["rm", "-rf", "/workspace"])
    rc.agent_exec(["bash", "-c", "pip install x"], ["bash", "-c", "pip install x"],
                  command="pip install x")
    rc.exec(["dpkg-query", "-W"])
    records = merge_audit(RawEvents(()), rc.commands, session="s",
                          started="2026-12-01T04:00:00Z")
    assert [(r["phase"], r["seq"]) for r in records[1:]] == [
        ("synth", 1), ("agent", 2), ("synth", 3)]
    from synth.formats.schemas import validate

    for r in records:
        assert validate(r, "audit-record") == [], r
    write_audit(tmp_path / "audit.jsonl", records)
    log = read_audit(tmp_path / "audit.jsonl")
    assert [c.phase for c in log.commands()] == ["synth", "agent", "synth"]



def test_distill_loads_no_record_of_synths_own_work(tmp_path: Path) -> None:
    import json

    from synth.distill.load import load_run
    from tests.distill_runs import cmd, make_run_dir

    run_dir = make_run_dir(tmp_path, [cmd("python3 -m venv /opt/venv",
                                          hooks=[("python3 -m venv /opt/venv", 0)])])
    audit = run_dir / "audit.jsonl"
    own = {"type": "command", "source": "synth", "session": "s", "seq": 99, "phase": "synth",
           "command": "dpkg-query -W", "argv": ["dpkg-query", "-W"], "cwd": "/workspace",
           "start": 1.0, "end": 2.0, "exit": 0, "pipestatus": [0], "timed_out": False}
    audit.write_text(audit.read_text() + json.dumps(own) + "\n")
    records = load_run(run_dir).records
    assert records and all(r.phase != "synth" for r in records)
    assert "dpkg-query -W" not in [r.command for r in records]


def test_an_agent_command_that_hits_a_limit_is_named() -> None:
    fake = FakeContainer()
    rc = RecordingContainer(fake, [], default_cwd="/workspace")
    rc.agent_exec(["bash", "-c", "ok"], ["bash", "-c", "ok"])
    rc.agent_exec(["hog"], ["hog"], command="python3 -c 'x = bytearray(10**10)'")
    rc.exec(["hog"])  # synth's own command: not the agent's limit hit
    assert rc.limit_hits == [{"command": "python3 -c 'x = bytearray(10**10)'",
                              "kind": "memory", "count": 1, "exit": 137}]
