"""The session's one exec path: every command run in the session container is recorded.

:class:`RecordingContainer` wraps the engine's container (:class:`EngineContainer`) and
records each exec as a :class:`SynthCommand` for ``audit.jsonl``: synth's own setup and
snapshot commands with ``phase = "synth"``, the agent's with ``phase = "agent"``
(:meth:`RecordingContainer.agent_exec`). Nothing else in the session holds the bare
container, so no command escapes the record.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from synth.engine.base import EngineContainer, ExecResult, OutputCallback
from synth.record.audit import Phase, SynthCommand


class RecordingContainer:
    """An :class:`EngineContainer` whose execs are recorded in ``commands``."""

    def __init__(self, inner: EngineContainer, commands: list[SynthCommand], *,
                 default_cwd: str) -> None:
        self.inner = inner
        self.commands = commands
        #: The agent's commands during which the kernel enforced a limit: what hit it and
        #: how often (``{"command", "kind", "count"}``), for run.json's ``limit_hits``.
        self.limit_hits: list[dict[str, Any]] = []
        self.default_cwd = default_cwd
        self.id = inner.id
        self.name = inner.name
        self.description = inner.description

    @contextmanager
    def recording(self, argv: Sequence[str], *, command: str | None = None,
                  cwd: str | None = None, phase: Phase = "synth") -> Iterator[SynthCommand]:
        """Record one command around its execution; the caller sets ``exit``. A command
        that raises keeps no end time, so its record says it is incomplete."""
        rec = SynthCommand(tuple(argv), command or shlex.join(argv), cwd or self.default_cwd,
                           time.time(), phase=phase)
        self.commands.append(rec)
        yield rec
        rec.end = time.time()

    def exec(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        workdir: str | None = None,
        timeout: float | None = None,
        on_output: OutputCallback | None = None,
    ) -> ExecResult:
        """One of synth's own commands (``phase = "synth"``)."""
        with self.recording(argv, cwd=workdir) as rec:
            res = self.inner.exec(argv, env=env, workdir=workdir, timeout=timeout,
                                  on_output=on_output)
            rec.exit, rec.timed_out = res.exit_code, res.timed_out
        return res

    def agent_exec(
        self,
        shown: Sequence[str],
        argv: Sequence[str],
        *,
        command: str | None = None,
        env: Mapping[str, str] | None = None,
        workdir: str | None = None,
        on_output: OutputCallback | None = None,
        timed_out: Callable[[], bool] | None = None,
    ) -> ExecResult:
        """One of the agent's commands (``phase = "agent"``): ``argv`` runs, recorded as
        ``shown`` (the command before synth wrapped it in strace or a process group).
        ``timed_out`` says, once it ended, whether synth killed it."""
        before = self.inner.limit_events()
        with self.recording(shown, command=command, cwd=workdir, phase="agent") as rec:
            res = self.inner.exec(argv, env=env, workdir=workdir, on_output=on_output)
            rec.exit = res.exit_code
            rec.timed_out = timed_out() if timed_out is not None else res.timed_out
        after = self.inner.limit_events()
        for kind, count in sorted(after.items()):
            if count > before.get(kind, 0):
                self.limit_hits.append({"command": rec.command, "kind": kind,
                                        "count": count - before.get(kind, 0),
                                        "exit": rec.exit})
        return res

    # ------------------------------------------------- the rest, passed through
    def copy_in(self, src: Path, dest: str) -> None:
        self.inner.copy_in(src, dest)

    def copy_out(self, src: str, dest: Path) -> None:
        self.inner.copy_out(src, dest)

    def put_archive(self, dest: str, data: bytes | IO[bytes]) -> None:
        self.inner.put_archive(dest, data)

    def get_archive(self, src: str) -> bytes | None:
        return self.inner.get_archive(src)

    def save_archive(self, src: str, dest: Path) -> bool:
        return self.inner.save_archive(src, dest)

    def read_file(self, path: str, *, max_bytes: int | None = None) -> bytes | None:
        return self.inner.read_file(path, max_bytes=max_bytes)

    def diff(self) -> list[tuple[str, str]]:
        return self.inner.diff()

    def commit(self, ref: str, *, labels: Mapping[str, str]) -> str:
        return self.inner.commit(ref, labels=labels)

    def ensure_running(self) -> None:
        self.inner.ensure_running()

    def labels(self) -> dict[str, str]:
        return self.inner.labels()

    def limit_events(self) -> dict[str, int]:
        return self.inner.limit_events()

    def layer_size(self) -> int | None:
        return self.inner.layer_size()

    def processes(self) -> list[dict[str, Any]]:
        return self.inner.processes()

    def main_pid(self) -> int:
        return self.inner.main_pid()

    def remove(self) -> None:
        self.inner.remove()
