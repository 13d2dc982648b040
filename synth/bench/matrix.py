"""The bench matrix: which task, which agent, which repeat; one :class:`Cell` each."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from synth.bench.presets import check_preset
from synth.errors import UsageError
from synth.formats.task import load_task


@dataclass(frozen=True)
class AgentSpec:
    """An agent of the matrix: a replay transcript by name (``good`` is
    ``tasks/<t>/agents/good.sh``), ``auto`` (synth's own setup agent, ``--agent auto``),
    ``NAME=exec:COMMAND`` (an exec agent), or ``NAME=preset:PRESET:HOST_BINARY`` (a CLI
    agent, :mod:`synth.bench.presets`)."""

    name: str
    kind: str  # "replay", "auto", "exec" or "preset"
    argv: tuple[str, ...] = ()  # exec: the command; preset: (preset, host binary)

    @classmethod
    def parse(cls, text: str) -> AgentSpec:
        name, sep, rest = text.partition("=")
        name = name.strip()
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
            raise UsageError(f"--agent {text!r}: the name must be letters, digits, . _ -.",
                             hint="A transcript name (good, liar) or NAME=exec:COMMAND.",
                             option="--agent")
        if not sep:
            return cls(name, "auto") if name == "auto" else cls(name.removesuffix(".sh"),
                                                                  "replay")
        kind, colon, command = rest.partition(":")
        if kind == "preset" and colon:
            preset, _, binary = command.partition(":")
            check_preset(preset, binary)
            return cls(name, "preset", (preset, str(Path(binary).resolve())))
        if kind != "exec" or not colon or not command.strip():
            raise UsageError(f"--agent {text!r}: expected NAME=exec:COMMAND or "
                             "NAME=preset:PRESET:HOST_BINARY.", option="--agent")
        return cls(name, "exec", tuple(shlex.split(command)))


@dataclass(frozen=True)
class Cell:
    task: str       # the task's name
    task_dir: str   # absolute folder holding task.toml
    agent: AgentSpec
    repeat: int

    @property
    def id(self) -> str:
        return f"{self.task}--{self.agent.name}--r{self.repeat}"

    @property
    def script(self) -> Path | None:
        if self.agent.kind != "replay":
            return None
        return Path(self.task_dir) / "agents" / f"{self.agent.name}.sh"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Cell:
        agent = data["agent"]
        return cls(task=data["task"], task_dir=data["task_dir"], repeat=int(data["repeat"]),
                   agent=AgentSpec(agent["name"], agent["kind"], tuple(agent["argv"])))


def plan_cells(tasks: Sequence[Path], agents: Sequence[AgentSpec], repeats: int) -> list[Cell]:
    """Every (task, agent, repeat), task-major; a transcript a task lacks is an error."""
    if repeats < 1:
        raise UsageError("--repeats must be at least 1.", option="--repeats")
    if not tasks or not agents:
        raise UsageError("A bench needs at least one task and one --agent.")
    names = [a.name for a in agents]
    if len(set(names)) != len(names):
        raise UsageError(f"--agent names repeat: {', '.join(names)}.", option="--agent")
    cells: list[Cell] = []
    seen: set[str] = set()
    for ref in tasks:
        task = load_task(ref)
        if task.name in seen:
            raise UsageError(f"Task {task.name} is named twice.")
        seen.add(task.name)
        for agent in agents:
            cell = Cell(task.name, str(task.task_dir.resolve()), agent, 1)
            if cell.script is not None and not cell.script.is_file():
                raise UsageError(f"Task {task.name} has no transcript {cell.script}.",
                                 hint="Name transcripts every task has, or bench tasks apart.")
            cells += [Cell(task.name, cell.task_dir, agent, r) for r in range(1, repeats + 1)]
    return cells
