"""Agents: who works in the session container.

* :class:`ReplayAgent` — a setup script; each top-level statement runs as its own
  ``bash -c`` call in ``/workspace`` (as LLM agents' command tools run them). Working
  directory and variables do not carry over between statements.
* :class:`ExecAgent` — any program run inside the container; its tooling is mounted
  read-only, its secrets passed through the exec environment only.
* :class:`ShellAgent` — an interactive, audited terminal for a person.

An agent gets an :class:`AgentContext` and returns its exit code; the runner owns the
container's lifecycle, the timeout and the capture of the final state.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from synth.engine.base import Mount
from synth.errors import DiskFullError, RunError, UsageError
from synth.formats.limits import human
from synth.formats.task import Task
from synth.record.audit import Masker
from synth.record.recorder import RecordingContainer
from synth.record.transcript import split_statements
from synth.util.disk import FULL_ERRNOS, from_os_error
from synth.util.text import without_ansi

WORKDIR = "/workspace"
#: Where the hook's directory is mounted; the hook is sourced from there by BASH_ENV.
CONTAINER_HOOK_DIR = "/synth/hook"
CONTAINER_HOOK = CONTAINER_HOOK_DIR + "/audit_hook.sh"
CONTAINER_SHELL_RC = CONTAINER_HOOK_DIR + "/shell_rc.sh"
#: Runs a statement in its own process group, killed whole when the statement is killed.
CONTAINER_RUN_GROUP = CONTAINER_HOOK_DIR + "/run_group.sh"
#: Writable bind mount of the run's ``logs/hook`` folder: raw events stream there.
CONTAINER_AUDIT_DIR = "/synth/audit"
CONTAINER_AUDIT_FILE = CONTAINER_AUDIT_DIR + "/events.jsonl"
#: Where a download cache shared between sessions is mounted (``RunOptions.download_cache``).
CONTAINER_DOWNLOAD_CACHE = "/synth/cache"


#: A line longer than this (a progress bar redrawn with ``\r``, a binary dump) is written
#: in pieces of this size; only a secret's length is held back across a piece's end.
LOG_LINE_BYTES = 1 << 20
#: ``agent.log`` stops growing here; one line says how much was left out.
LOG_MAX_BYTES = 1 << 30


class AgentLog:
    """``logs/agent.log``: the agent's output, secrets masked, written line by line.

    A full file system ends the log, not the session: what was written stays, the rest is
    dropped, and :attr:`full` holds the error the run records. However much the agent
    prints, the log holds at most ``max_bytes`` and memory one line piece per stream."""

    def __init__(self, path: Path, masker: Masker, *, max_bytes: int = LOG_MAX_BYTES,
                 line_bytes: int = LOG_LINE_BYTES) -> None:
        self.masker = masker
        self.path = path
        self.max_bytes, self.line_bytes = max_bytes, line_bytes
        # Unbuffered: a write that finds the disk full leaves nothing behind to fail again.
        self._fh = path.open("ab", buffering=0)
        self._written = self._fh.tell()
        #: Bytes of an unfinished line kept back when a piece of it is written: all but
        #: the last of the longest secret form's.
        self._held = max((len(v.encode("utf-8", "surrogateescape")) for v in masker.values),
                         default=1) - 1
        #: Each stream's unfinished line, as the chunks it came in.
        self._pending: dict[str, list[bytes]] = {}
        self._sizes: dict[str, int] = {}
        self._lock = threading.Lock()
        #: Set when a write found the file system full; nothing is written after it.
        self.full: DiskFullError | None = None
        #: Bytes of output not logged once the log reached ``max_bytes``.
        self.left_out = 0

    def _put(self, data: bytes) -> None:
        room = max(self.max_bytes - self._written, 0)
        if len(data) > room:
            self.left_out += len(data) - room
            data = data[:room]
        self._append(data)

    def _append(self, data: bytes) -> None:
        if self.full is not None or not data:
            return
        self._written += len(data)
        view = memoryview(data)
        try:
            while view:
                view = view[self._fh.write(view) or 0:]
        except OSError as exc:
            if exc.errno not in FULL_ERRNOS:
                raise
            self.full = from_os_error(exc, self.path, needed=len(view))

    def write(self, stream: str, data: bytes) -> bytes:
        """Log the complete lines in ``data``; returns them as written (masked)."""
        with self._lock:
            parts = self._pending.setdefault(stream, [])
            end = data.rfind(b"\n")
            if end >= 0:
                # The unfinished line so far, then this chunk up to its last line's end.
                lines = b"".join((*parts, data[:end + 1]))
                parts[:] = [data[end + 1:]] if end + 1 < len(data) else []
            else:
                parts.append(data)
                self._sizes[stream] = self._sizes.get(stream, 0) + len(data)
                if self._sizes[stream] <= self.line_bytes + self._held:
                    return b""
                # A line with no end yet, written in a piece: masked whole, then cut; a
                # secret that ends in later output begins in the bytes held back, which
                # are masked again with what follows.
                line = self.masker.mask_bytes(b"".join(parts))
                cut = max(len(line) - self._held, 0)
                lines = line[:cut]
                parts[:] = [line[cut:]] if cut < len(line) else []
            self._sizes[stream] = len(parts[0]) if parts else 0  # one part at most here
            masked = self.masker.mask_bytes(lines)
            self._put(masked)
            return masked

    def note(self, text: str) -> None:
        self.flush()
        with self._lock:
            self._put(self.masker.mask(text).encode("utf-8") + b"\n")

    def flush(self) -> bytes:
        """Log what is left of unfinished lines; returns it as written (masked)."""
        written = b""
        with self._lock:
            for parts in self._pending.values():
                if rest := b"".join(parts):
                    written += self.masker.mask_bytes(rest) + b"\n"
            self._put(written)
            self._pending.clear()
            self._sizes.clear()
        return written

    def close(self) -> None:
        try:
            self.flush()
            if self.left_out:
                self._append(f"[synth: {self.left_out} more bytes of output not logged: "
                             f"the log stops at {human(self.max_bytes)}]\n".encode())
        finally:
            self._fh.close()


@dataclass
class AgentContext:
    #: The session's one exec path: every command it runs is recorded.
    container: RecordingContainer
    #: Exec environment of every agent command: the hook, the CA variables, secrets.
    env: dict[str, str]
    log: AgentLog
    say: Callable[[str], None]
    cancelled: threading.Event
    docker_cli: str | None = None
    #: Wraps an agent command before it is executed (``--trace-exec``: in strace).
    wrap: Callable[[Sequence[str]], list[str]] | None = None
    #: The task being set up (its probes are what the auto agent aims at).
    task: Task | None = None

    def wrapped(self, argv: Sequence[str]) -> list[str]:
        return self.wrap(argv) if self.wrap is not None else list(argv)

    def run(self, argv: Sequence[str], *, command: str | None = None,
            group: bool = False, echo: Callable[[bytes], None] | None = None) -> int:
        """Exec ``argv`` in /workspace, recorded host-side as a ``synth`` command; its output
        goes to the log and, masked as there, to ``echo`` (the terminal) if given.

        ``group``: in a process group of its own, killed whole if the command is killed."""
        self.log.note(f"$ {command or shlex.join(argv)}")

        def on_output(stream: str, data: bytes) -> None:
            written = self.log.write(stream, data)
            if echo is not None and written:
                echo(written)

        full = self.wrapped(argv)
        if group:
            full = ["sh", CONTAINER_RUN_GROUP, *full]
        res = self.container.agent_exec(argv, full, command=command, env=self.env,
                                        workdir=WORKDIR, on_output=on_output,
                                        timed_out=self.cancelled.is_set)
        rest = self.log.flush()
        if echo is not None and rest:
            echo(rest)
        return res.exit_code


class Agent(Protocol):
    @property
    def kind(self) -> str: ...

    def describe(self) -> dict[str, Any]: ...

    def agent_mounts(self) -> list[Mount]: ...

    def secret_names(self) -> list[str]: ...

    def run(self, ctx: AgentContext) -> int: ...


def first_line(text: str, width: int = 100) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    more = "…" if len(line) > width or "\n" in text.strip() else ""
    return line[:width] + more


@dataclass(frozen=True)
class ReplayAgent:
    script: Path
    stop_on_error: bool = False
    kind: str = field(default="replay", init=False)

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "script": str(self.script.resolve()), "argv": None,
                "stop_on_error": self.stop_on_error}

    def agent_mounts(self) -> list[Mount]:
        return []

    def secret_names(self) -> list[str]:
        return []

    def statements(self) -> list[str]:
        try:
            text = self.script.read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"Cannot read the replay script {self.script}: {exc}") from exc
        return split_statements(text)

    def run(self, ctx: AgentContext) -> int:
        statements = self.statements()
        exit_code = 0
        for number, stmt in enumerate(statements, start=1):
            if ctx.cancelled.is_set():
                break
            ctx.say(f"[{number}/{len(statements)}] $ {ctx.log.masker.mask(first_line(stmt))}")
            exit_code = ctx.run(["bash", "-c", stmt], command=stmt, group=True)
            if ctx.cancelled.is_set():
                break
            if exit_code != 0:
                ctx.say(f"    exit {exit_code}")
                if self.stop_on_error:
                    ctx.say("    stopping (--stop-on-error)")
                    break
        return exit_code


@dataclass(frozen=True)
class ExecAgent:
    argv: Sequence[str]
    mounts: Sequence[Mount] = ()
    env_names: Sequence[str] = ()
    #: Stream the agent's output to the terminal as well as logs/agent.log (not --quiet).
    echo: bool = True
    kind: str = field(default="exec", init=False)

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "script": None, "argv": list(self.argv),
            "mounts": [{"source": str(m.source), "target": m.target, "read_only": m.read_only}
                       for m in self.mounts],
            "env_names": list(self.env_names),
        }

    def agent_mounts(self) -> list[Mount]:
        return list(self.mounts)

    def secret_names(self) -> list[str]:
        return list(self.env_names)

    def run(self, ctx: AgentContext) -> int:
        if not self.argv:
            raise UsageError(
                "The exec agent needs a command: `synth run TASK --agent exec -- CMD…`."
            )
        ctx.say(f"$ {ctx.log.masker.mask(shlex.join(self.argv))}")
        return ctx.run(list(self.argv), echo=echo_to_terminal if self.echo else None)


def terminal_safe(data: bytes) -> str:
    """An agent's output as plain text: its escape sequences dropped and any other control
    character shown escaped (its text must not drive our terminal), tabs and newlines
    kept (synth.util.text)."""
    return without_ansi(data.decode("utf-8", errors="replace"))


def echo_to_terminal(data: bytes) -> None:
    sys.stderr.write(terminal_safe(data))
    sys.stderr.flush()


@dataclass(frozen=True)
class ShellAgent:
    """An interactive bash in the container (``docker exec -it``), audited by the hook."""

    kind: str = field(default="shell", init=False)

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "script": None, "argv": None}

    def agent_mounts(self) -> list[Mount]:
        return []

    def secret_names(self) -> list[str]:
        return []

    def run(self, ctx: AgentContext) -> int:
        cli = ctx.docker_cli or shutil.which("docker")
        if cli is None:
            raise RunError("The shell agent needs the docker CLI, and none is on PATH.",
                           hint="Install docker.io or set SYNTH_DOCKER_CLI.")
        env = {**ctx.env, "SYNTH_AUDIT_HOOK": CONTAINER_HOOK}
        env.pop("BASH_ENV", None)  # an interactive shell sources the hook from its rc file
        argv = [cli, "exec", "-i"] + (["-t"] if sys.stdin.isatty() else [])
        argv += ["-w", WORKDIR]
        for name in sorted(env):
            argv += ["-e", name]  # values come from the CLI's environment, not its argv
        argv += [ctx.container.id, *ctx.wrapped(["bash", "--rcfile", CONTAINER_SHELL_RC, "-i"])]
        ctx.say("Interactive shell in the session container; every command is audited. "
                "Type `exit` when done.")
        with ctx.container.recording(("bash", "-i"), command="bash -i (interactive shell)",
                                     cwd=WORKDIR, phase="agent") as rec:
            proc = subprocess.run(argv, env={**os.environ, **env}, check=False)
            rec.exit = proc.returncode
        return proc.returncode


def secret_values(names: Sequence[str], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Values of ``--agent-env`` names from the host environment; a missing one is an error."""
    environ = os.environ if environ is None else environ
    values: dict[str, str] = {}
    for name in names:
        if not name.isidentifier():
            raise UsageError(f"--agent-env {name!r} is not a variable name.", option="--agent-env")
        if name not in environ:
            raise UsageError(f"--agent-env {name}: not set in this environment.",
                             hint=f"export {name}=… before `synth run`.", option="--agent-env")
        values[name] = environ[name]
    return values


def parse_mount(text: str) -> Mount:
    """``HOST:CONTAINER`` (read-only) as given to ``--agent-mount``."""
    host, sep, target = text.partition(":")
    if not sep or not host or not target.startswith("/"):
        raise UsageError(f"--agent-mount {text!r}: expected HOST:CONTAINER with an absolute "
                         "container path.", option="--agent-mount")
    source = Path(host).expanduser().resolve()
    if not source.exists():
        raise UsageError(f"--agent-mount {text!r}: {source} does not exist.",
                         option="--agent-mount")
    return Mount(source, target, read_only=True)
