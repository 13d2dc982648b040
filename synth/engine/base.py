"""The interfaces of the engine seam: what a runtime, a container and an engine offer.

* :class:`Runtime` — run a command, stream its output, get its exit code. Two runtimes
  implement it: a Docker container (:mod:`synth.engine.docker`) and the host itself with a
  chosen interpreter (:mod:`synth.engine.host`), for GPU machines and clusters without
  Docker. Verification only ever talks to this interface.
* :class:`EngineContainer` — a runtime that is a container: files in and out as tar
  archives, its filesystem changes, a commit to an image, its labels. The session talks
  only to this (through its one recording exec path, :mod:`synth.record.recorder`).
* :class:`Engine` — makes containers, inspects, imports and builds images.

One command opens one engine (``synth.cli.app.open_engine``) and passes it down: library
code takes an ``engine: Engine`` parameter and never connects itself. A command that can
do without an engine (export, diff, runs, doctor) gets a :class:`NoEngine` where none
answers: every use raises the error the connection got, as an engine failing at that call.

This module loads no engine library (docker-py stays unloaded until the Docker engine is
used); every engine error surfaces as :class:`synth.errors.EngineError` (no engine at all:
:class:`synth.errors.EngineUnavailableError`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NoReturn, Protocol

from synth.errors import EngineUnavailableError
from synth.formats.limits import Limits

if TYPE_CHECKING:
    from synth.engine.build import BuildCli, BuildRequest

#: Called with each chunk of output as it arrives: (stream name, bytes).
OutputCallback = Callable[[str, bytes], None]

#: Exit status coreutils ``timeout`` uses; synth uses it for every timed-out command.
TIMEOUT_EXIT = 124
#: Output of one stream of one command kept in memory: its first bytes up to this, and its
#: last :data:`EXEC_KEEP_TAIL` (where errors and a probe's answer are). A command in a
#: container is the agent's or reads what the agent wrote; however much it prints, the
#: host keeps this much.
EXEC_KEEP_BYTES = 64 << 20
EXEC_KEEP_TAIL = 1 << 20


@dataclass(frozen=True)
class ExecResult:
    argv: tuple[str, ...]
    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool = False
    #: A stream printed more than :data:`EXEC_KEEP_BYTES`: its middle was not kept.
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


class OutputSink:
    """One stream of a command's output, kept up to ``keep`` bytes from its start and
    ``tail`` from its end; what lies between is counted, not kept."""

    def __init__(self, keep: int = EXEC_KEEP_BYTES, tail: int = EXEC_KEEP_TAIL) -> None:
        self.keep, self.tail = keep, tail
        self._head: list[bytes] = []
        self._kept = 0
        #: The last chunks past the head: together at least ``tail`` bytes, once there are.
        self._end: deque[bytes] = deque()
        self._end_bytes = 0
        self._beyond = 0

    def add(self, chunk: bytes) -> None:
        room = self.keep - self._kept
        if room > 0:
            self._head.append(chunk[:room])
            self._kept += min(room, len(chunk))
            chunk = chunk[room:]
        if chunk:
            self._beyond += len(chunk)
            self._end.append(chunk)
            self._end_bytes += len(chunk)
            while self._end_bytes - len(self._end[0]) >= self.tail:
                self._end_bytes -= len(self._end.popleft())

    @property
    def dropped(self) -> int:
        """Bytes neither in the head nor in the tail."""
        return max(0, self._beyond - self.tail)

    @property
    def truncated(self) -> bool:
        return self.dropped > 0

    def text(self) -> str:
        end = b"".join(self._end)[-self.tail:] if self._end else b""
        middle = f"\n[synth: {self.dropped} bytes of output not kept]\n".encode() \
            if self.dropped else b""
        return (b"".join(self._head) + middle + end).decode("utf-8", "replace")


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
    #: Memory, processes, CPUs and disk: every container synth starts has limits, the
    #: host's defaults unless the task or the command line says otherwise.
    limits: Limits = field(default_factory=Limits.host_default)


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


class EngineContainer(Runtime, Protocol):
    """One started container. Every method raises :class:`synth.errors.EngineError` when
    the engine fails, never an engine library's own exception."""

    id: str
    name: str

    def put_archive(self, dest: str, data: bytes | IO[bytes]) -> None:
        """Unpack the tar archive ``data`` (its bytes, or a file to stream) into the
        directory ``dest``."""
        ...

    def get_archive(self, src: str) -> bytes | None:
        """``src`` as a tar archive, or None when it does not exist."""
        ...

    def save_archive(self, src: str, dest: Path) -> bool:
        """Stream ``src`` as a tar archive into the host file ``dest``; False when the
        container has no ``src``."""
        ...

    def read_file(self, path: str, *, max_bytes: int | None = None) -> bytes | None: ...

    def diff(self) -> list[tuple[str, str]]:
        """(kind, path): kind A (added), C (changed) or D (deleted) since the image."""
        ...

    def commit(self, ref: str, *, labels: Mapping[str, str]) -> str:
        """Commit the filesystem as image ``ref``; returns the image ID."""
        ...

    def layer_size(self) -> int | None:
        """The bytes its writable layer holds, as the engine counts them (what a commit
        writes again); None where the engine does not say."""
        ...

    def ensure_running(self) -> None:
        """Start the container again if it stopped (after a kill), to read its state."""
        ...

    def labels(self) -> dict[str, str]: ...

    def main_pid(self) -> int:
        """The host's pid of its main process (0: not running or not known)."""
        ...

    def processes(self) -> list[dict[str, Any]]:
        """Its processes but the main one (``pid``, ``ppid``, ``command``), listed from
        outside the container."""
        ...

    def limit_events(self) -> dict[str, int]:
        """How often its limits were enforced so far: ``memory`` (OOM kills), ``pids``
        (forks refused); read outside the container, empty where it cannot be read."""
        ...

    def remove(self) -> None: ...


class Engine(Protocol):
    """A container engine: containers from specs, images inspected, imported and built."""

    #: Where the engine listens (``DOCKER_HOST``), for messages.
    address: str

    def ping(self) -> None:
        """Nothing when the engine answers; :class:`~synth.errors.EngineUnavailableError`
        when none does."""
        ...

    def version(self) -> dict[str, Any]: ...

    def has_gpu_runtime(self) -> bool: ...

    def host_address(self) -> str:
        """The host's address as the engine's containers and builds see it (the default
        network's gateway): what a folder served to them binds to."""
        ...

    def create(self, spec: ContainerSpec) -> EngineContainer: ...

    def disk_limits_supported(self) -> bool:
        """Whether a container's writable layer can be capped (``ContainerSpec.limits``)."""
        ...

    def container(self, spec: ContainerSpec) -> AbstractContextManager[EngineContainer]:
        """A container from ``spec``, removed on every way out of the ``with``."""
        ...

    def image_exists(self, ref: str) -> bool: ...

    def image_inspect(self, ref: str) -> dict[str, Any]: ...

    def image_labels(self, ref: str) -> dict[str, str]: ...

    def remove_image(self, ref: str) -> None: ...

    def import_image(
        self, tar_path: Path, ref: str, *, labels: Mapping[str, str], cmd: str = "bash"
    ) -> str: ...

    def save_image(self, ref: str, dest: Path) -> None:
        """``docker save`` of ``ref`` into the file ``dest``."""
        ...

    def load_image(self, archive: Path) -> None:
        """``docker load`` of an image archive, tagged as the archive names it."""
        ...

    def tag_image(self, image: str, ref: str) -> None: ...

    def push_image(self, ref: str) -> str:
        """Push ``ref`` to its registry; the manifest digest the registry gave it."""
        ...

    def build(
        self, request: BuildRequest, *, cli: BuildCli | None = None,
        log_path: Path | None = None, on_line: Callable[[str], None] | None = None,
    ) -> None: ...

    def gc(self, *, images: bool = False, force: bool = False, label: str | None = None,
           scope: str | None = None, dry_run: bool = False,
           keep_runs: int | None = None) -> list[str]:
        """Remove what synth left behind (``synth gc``); returns what was removed."""
        ...

    def prune_runs(self, keep: int, *, scope: str | None = None, label: str | None = None,
                   dry_run: bool = False) -> list[str]:
        """Remove the live and rebuilt images older than each task's latest ``keep``."""
        ...


class NoEngine:
    """The engine of a command that can do without one, when none answered: every use
    raises the :class:`~synth.errors.EngineUnavailableError` the connection got."""

    def __init__(self, error: EngineUnavailableError) -> None:
        self.error = error
        self.address = error.engine or ""

    def _fail(self, *_args: object, **_kwargs: object) -> NoReturn:
        raise self.error

    ping = version = has_gpu_runtime = host_address = create = container = _fail
    image_exists = image_inspect = image_labels = remove_image = import_image = _fail
    disk_limits_supported = save_image = load_image = tag_image = push_image = _fail
    build = gc = prune_runs = _fail


if TYPE_CHECKING:
    def _conforms(engine: NoEngine) -> Engine:
        """mypy proves here that the stand-in meets the protocol."""
        return engine
