"""The interface every runtime offers: run a command, stream its output, get its exit code.

Two runtimes implement it: a Docker container (:mod:`synth.engine.docker`) and the host
itself with a chosen interpreter (:mod:`synth.engine.host`), for GPU machines and clusters
without Docker. Session recording and verification only ever talk to this interface.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

#: Called with each chunk of output as it arrives: (stream name, bytes).
OutputCallback = Callable[[str, bytes], None]

#: Exit status coreutils ``timeout`` uses; synth uses it for every timed-out command.
TIMEOUT_EXIT = 124


@dataclass(frozen=True)
class ExecResult:
    argv: tuple[str, ...]
    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


@dataclass(frozen=True)
class Mount:
    source: Path
    target: str
    read_only: bool = True


@dataclass(frozen=True)
class ContainerSpec:
    image: str
    labels: Mapping[str, str] = field(default_factory=dict)
    mounts: Sequence[Mount] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    workdir: str | None = None
    #: The container's main process; it only keeps the container alive, work is exec'd.
    command: Sequence[str] = ("sleep", "infinity")
    network: bool = True
    gpus: bool = False
    name: str | None = None
    tty: bool = False


class Runtime(Protocol):
    """Where commands run: a container, or the host."""

    description: str

    def exec(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        workdir: str | None = None,
        timeout: float | None = None,
        on_output: OutputCallback | None = None,
    ) -> ExecResult: ...

    def copy_in(self, src: Path, dest: str) -> None:
        """Copy a host file or directory to ``dest`` (a directory) in the runtime."""
        ...

    def copy_out(self, src: str, dest: Path) -> None:
        """Copy ``src`` from the runtime into the host directory ``dest``."""
        ...
