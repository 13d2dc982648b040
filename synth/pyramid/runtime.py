"""What the pyramid needs from the place it runs in, and from the task: defined here, so that
synth/pyramid/ stands on its own (it imports nothing of synth; synth adapts its engine and its task
to these types, see ``synth.verify.command.pyramid_task``).

* :class:`Runtime` — run a command, copy a folder in, copy a folder out. synth's Docker
  container and host runtime satisfy it structurally (no adapter, no import of them here).
* :class:`PyramidTask` — the parts of a task the levels read: the probe commands, the
  levels that do not apply, C0's scope.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from .result import Level


class ExecOutcome(Protocol):
    """One finished command: what a :class:`Runtime`'s ``exec`` returns."""

    @property
    def argv(self) -> Sequence[str]: ...

    @property
    def exit_code(self) -> int: ...

    @property
    def stdout(self) -> str: ...

    @property
    def stderr(self) -> str: ...

    @property
    def timed_out(self) -> bool: ...

    @property
    def ok(self) -> bool: ...

    @property
    def output(self) -> str: ...


class Runtime(Protocol):
    """Where the probes run: a container, or the host with a chosen interpreter."""

    @property
    def description(self) -> str: ...

    def exec(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        workdir: str | None = None,
        timeout: float | None = None,
    ) -> ExecOutcome: ...

    def copy_in(self, src: Path, dest: str) -> None:
        """Copy a host file or directory to ``dest`` (a directory) in the runtime."""
        ...

    def copy_out(self, src: str, dest: Path) -> None:
        """Copy ``src`` from the runtime into the host directory ``dest``."""
        ...


class RuntimeFailure(Exception):
    """The runtime could not host the probes at all (no temporary folder); the caller turns
    it into its own error. A level that fails is a :class:`~synth.pyramid.result.LevelResult`."""


@dataclass(frozen=True)
class Command:
    """A task's entrypoint for one level: a shell command and its timeout in seconds."""

    command: str
    timeout: int = 300


@dataclass(frozen=True)
class DdpCommand(Command):
    #: GPUs the DDP entrypoint wants (C4 runs over min(this, visible)).
    gpus: int = 2


@dataclass(frozen=True)
class C0Scope:
    """C0's scope from the task: include/exclude globs (None: the defaults) and threshold."""

    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] | None = None
    max_missing_ratio: float = 0.0


@dataclass(frozen=True)
class PyramidTask:
    """The parts of a task the pyramid reads (docs/task-format.md)."""

    name: str
    workdir: str = "/workspace"
    cpu: Command | None = None
    gpu: Command | None = None
    ddp: DdpCommand | None = None
    native_modules: tuple[str, ...] = ()
    #: level -> why it does not apply to this task.
    not_applicable: Mapping[Level, str] = field(default_factory=dict)
    c0: C0Scope = C0Scope()

    @property
    def commands(self) -> list[str]:
        """The entrypoints' commands (C0's scope starts from the files they name)."""
        return [c.command for c in (self.cpu, self.gpu, self.ddp) if c is not None]
