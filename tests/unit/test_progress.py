"""Progress that shows work: an exec agent's output is streamed (masked, without escape
sequences) as well as logged; a rebuild shows BuildKit's steps as they come."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from synth.record.agent_choice import make_agent
from synth.record.agents import (
    AgentContext,
    AgentLog,
    ExecAgent,
    terminal_safe,
)
from synth.record.audit import Masker
from synth.record.recorder import RecordingContainer


class FakeResult:
    exit_code = 0
    timed_out = False


class FakeContainer:
    """Pure logic only: exec replays chunks of output through on_output."""

    id = name = description = "fake"

    def __init__(self, chunks: Sequence[bytes]) -> None:
        self.chunks = chunks

    def exec(self, argv: Sequence[str], *, env: dict[str, str], workdir: str,
             on_output: Callable[[str, bytes], None]) -> FakeResult:
        for chunk in self.chunks:
            on_output("stdout", chunk)
        return FakeResult()

    def layer_size(self) -> int | None:

        return None


    def limit_events(self) -> dict[str, int]:
        return {}


def context(tmp_path: Path, chunks: Sequence[bytes]) -> AgentContext:
    log = AgentLog(tmp_path / "agent.log", Masker(["s3cret"]))
    container = RecordingContainer(FakeContainer(chunks), [],  # type: ignore[arg-type]
                                   default_cwd="/workspace")
    return AgentContext(container=container, env={}, log=log, say=lambda _m: None,
                        cancelled=threading.Event())


def test_exec_output_is_echoed_as_logged(tmp_path: Path) -> None:
    ctx = context(tmp_path, [b"step 1 tok", b"en=s3cret\n\x1b[31mred\x1b[0m\n", b"no newline"])
    seen: list[bytes] = []
    assert ctx.run(["agent"], echo=seen.append) == 0
    ctx.log.close()
    echoed = b"".join(seen)
    assert echoed == b"step 1 token=***\n\x1b[31mred\x1b[0m\nno newline\n"
    assert (tmp_path / "agent.log").read_bytes().endswith(echoed)
    assert terminal_safe(echoed) == "step 1 token=***\nred\nno newline\n"


def test_exec_agent_streams_unless_quiet(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         ) -> None:
    agent = make_agent("exec", command=["agent"])
    assert isinstance(agent, ExecAgent) and agent.echo
    ExecAgent(["agent"]).run(context(tmp_path, [b"hello [/] :x:\n"]))
    assert capsys.readouterr().err == "hello [/] :x:\n"
    quiet = make_agent("exec", command=["agent"], quiet=True)
    quiet.run(context(tmp_path, [b"hidden\n"]))
    assert "hidden" not in capsys.readouterr().err


def test_describe_is_unchanged_by_echo() -> None:
    described: dict[str, Any] = ExecAgent(["a"], echo=False).describe()
    assert "echo" not in described


def test_step_lines_show_each_step_once_with_long_durations() -> None:
    from synth.engine.build import StepLines

    log = """#1 [internal] load build definition from Dockerfile
#1 DONE 0.0s
#5 [base 1/4] FROM docker.io/synth/python:bookworm
#5 DONE 0.1s
#6 [base 2/4] RUN apt-get update
#6 0.312 Get:1 http://deb.debian.org/debian bookworm InRelease
#7 [3/4] COPY requirements.lock /tmp/
#6 [base 2/4] RUN apt-get update
#6 DONE 14.2s
#7 DONE 0.0s
#8 [4/4] RUN pip install
#8 ERROR: process "/bin/sh -c pip install" did not complete successfully: exit code: 1
ERROR: failed to solve: exit code: 1""".splitlines()
    steps = StepLines()
    shown = [s for s in (steps(line) for line in log) if s is not None]
    assert shown == [
        "#5 [base 1/4] FROM docker.io/synth/python:bookworm",
        "#6 [base 2/4] RUN apt-get update",
        "#7 [3/4] COPY requirements.lock /tmp/",
        "#6 DONE 14.2s",
        "#8 [4/4] RUN pip install",
        '#8 ERROR: process "/bin/sh -c pip install" did not complete successfully: exit code: 1',
        "ERROR: failed to solve: exit code: 1",
    ]
    long = StepLines(width=30)("#9 [5/7] RUN apt-get install -y      a  b  c  d  e  f  g  h")
    assert long == "#9 [5/7] RUN apt-get install …"
