"""What ran in the session container, seen from the host: evidence the agent cannot forge.

The hook's records are written by processes the agent controls, so a well-formed record can
be forged: one that says ``pip install six`` ran while the install really came from an
unaudited subprocess would make the install look audited. synth therefore also watches the
container from the host: a :class:`ProcessSampler` reads the container's cgroup (which lists
every process in it, ``docker exec``'d ones included) and each new process's command line (a
shell's or wrapper's again on each look, since it may exec another program after it was
first seen) from the host's ``/proc`` every :data:`INTERVAL` seconds, into
``logs/processes.jsonl`` (host-only). An installer's hook record (pip, uv, apt, conda…) is
then *confirmed* only if a process running that installer was seen alive during it, started
by the very shell that wrote the record (its parent is that shell, in the container's pid
namespace, or reached from it only through wrappers such as ``timeout``, ``sudo`` or
``env``); an unconfirmed one explains no change (:func:`unconfirmed_installers`; provenance
ignores it). So a record forged for an install an unaudited subprocess made (``python -c
"subprocess.run(['pip', …])"``) is named. Installs take far longer than the interval, so a
real one is not missed; a process can rewrite its own command line, but one that runs a real
installer under a shell's own hand has run an audited install.
"""

from __future__ import annotations

import json
import posixpath
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from synth.record.collector import write_private

#: Seconds between two looks at the container's processes.
INTERVAL = 0.1
#: Processes remembered at most (a fork bomb is bounded by the pids limit first).
MAX_PROCESSES = 200_000
_CGROUP_ROOT = Path("/sys/fs/cgroup")
#: Programs whose hook records must be confirmed by a process seen from the host.
INSTALLERS = frozenset({"pip", "pip3", "uv", "apt", "apt-get", "aptitude", "dpkg", "conda",
                        "mamba", "micromamba", "poetry", "pdm", "pipenv", "easy_install"})
#: Slack around a record's start and end when matching processes to it.
_SLACK = 0.3


#: Programs that start another program as they were asked to (no code of their own).
WRAPPERS = frozenset({"timeout", "sudo", "env", "nice", "nohup", "xargs", "stdbuf", "time",
                      "ionice", "setsid", "taskset", "chrt", "flock", "su", "runuser",
                      "sh", "bash", "dash"})


@dataclass
class Seen:
    pid: int
    ppid: int
    argv: tuple[str, ...]
    first: float
    last: float
    #: Its pid in the container's namespace (what the hook records as ``pid``).
    nspid: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"pid": self.pid, "ppid": self.ppid, "nspid": self.nspid,
                "argv": list(self.argv), "first": round(self.first, 3),
                "last": round(self.last, 3)}


def cgroup_procs_file(pid: int, root: Path = _CGROUP_ROOT) -> Path | None:
    """The ``cgroup.procs`` file listing every process of ``pid``'s container (the pids
    controller's cgroup in v1, the one cgroup in v2), or None where it cannot be found."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "pids" in controllers.split(","):
            candidate = root / "pids" / path.lstrip("/") / "cgroup.procs"
            if candidate.is_file():
                return candidate
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            for base in (root / "unified", root):
                candidate = base / path.lstrip("/") / "cgroup.procs"
                if candidate.is_file():
                    return candidate
    return None


def _argv(pid: int) -> tuple[str, ...] | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return tuple(a.decode("utf-8", "replace") for a in raw.split(b"\0") if a)


def _ids(pid: int) -> tuple[int, int]:
    """(parent's host pid, its own pid in its innermost namespace) from ``status``."""
    try:
        text = Path(f"/proc/{pid}/status").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return 0, 0
    ppid = nspid = 0
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key == "PPid" and value.strip().isdigit():
            ppid = int(value)
        elif key == "NSpid" and value.split() and value.split()[-1].isdigit():
            nspid = int(value.split()[-1])
    return ppid, nspid


@dataclass
class ProcessSampler:
    """Samples the processes of one container from the host while a session lasts."""

    procs_file: Path | None
    seen: dict[int, Seen] = field(default_factory=dict)
    done: list[Seen] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    @classmethod
    def for_pid(cls, pid: int) -> ProcessSampler:
        return cls(cgroup_procs_file(pid) if pid > 0 else None)

    @property
    def works(self) -> bool:
        return self.procs_file is not None

    def sample(self, now: float | None = None) -> None:
        if self.procs_file is None:
            return
        now = time.time() if now is None else now
        try:
            pids = {int(p) for p in self.procs_file.read_text(encoding="ascii").split()}
        except (OSError, ValueError):
            return
        for pid in list(self.seen):
            if pid not in pids:
                self.done.append(self.seen.pop(pid))
        for pid in pids:
            if pid in self.seen:
                self._again(self.seen[pid], now)
            elif len(self.seen) + len(self.done) < MAX_PROCESSES:
                argv = _argv(pid)
                if argv is not None:
                    ppid, nspid = _ids(pid)
                    self.seen[pid] = Seen(pid, ppid, argv, now, now, nspid)

    def _again(self, s: Seen, now: float) -> None:
        """``s`` seen again. A process first seen as a shell or wrapper may have been
        caught between its fork and its exec (bash's child, still ``bash``, about to run
        pip): its command line is read again, and a new one starts a new entry. One first
        read with no command line at all (caught inside its ``execve``, when the kernel
        has none to show) is read again until it has one, which is then its own."""
        s.last = now
        if not s.argv:
            argv = _argv(s.pid)
            if argv:
                s.argv = argv
            return
        if not _programs(s.argv[:1]) & WRAPPERS or len(self.done) >= MAX_PROCESSES:
            return
        argv = _argv(s.pid)
        if argv and argv != s.argv:
            self.done.append(s)
            self.seen[s.pid] = Seen(s.pid, s.ppid, argv, now, now, s.nspid)

    def start(self) -> None:
        if self.procs_file is None:
            return
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name="synth-process-sampler")
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(INTERVAL):
            self.sample()

    def stop(self) -> list[Seen]:
        """Stop sampling; every process seen, in the order first seen."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        return sorted([*self.done, *self.seen.values()], key=lambda s: (s.first, s.pid))


def write_processes(path: Path, seen: Sequence[Seen], mask: Callable[[str], str]) -> None:
    """``logs/processes.jsonl``, each command line masked (an agent's secret passed on a
    command line must not reach the run directory)."""
    write_private(path, b"".join(
        json.dumps({**s.to_json(), "argv": [mask(a) for a in s.argv]}, sort_keys=True).encode()
        + b"\n" for s in seen))


def _programs(argv: Sequence[str]) -> set[str]:
    """Programs a process runs: its first words' basenames (``python -m pip``, a venv's
    ``python .../bin/pip``)."""
    names = {posixpath.basename(a) for a in argv[:3]}
    if "-m" in argv[:3]:
        i = list(argv).index("-m")
        if i + 1 < len(argv):
            names.add(argv[i + 1])
    return names


#: The words that make an installer's command an install (what changes the environment).
_INSTALL_VERBS = frozenset({"install", "sync", "add", "create", "-i", "--install"})


def installer_of(command: str) -> str | None:
    """The installer a hook record's command runs to install something, if any (its first
    or ``-m`` word, with an install verb among its words: ``dpkg --print-architecture``
    takes a millisecond and installs nothing)."""
    words = command.split()
    while words and "=" in words[0] and not words[0].startswith("="):
        words = words[1:]  # VAR=value prefixes
    if not _INSTALL_VERBS & set(words):
        return None
    # The first installer among the first words (or -m's module): `pip install pdm` runs
    # pip, with pdm only its argument.
    for word in words[:4]:
        name = posixpath.basename(word)
        if name in INSTALLERS and name in _programs(words):
            return name
    return None


def _under_shell(s: Seen, shell_pid: int, by_pid: Mapping[int, Seen]) -> bool:
    """``s`` is the recording shell itself (bash execs a last command in place) or its
    child, through wrappers only."""
    for _ in range(5):
        if s.nspid == shell_pid:
            return True
        parent = by_pid.get(s.ppid)
        if parent is None:
            return False
        if parent.nspid != shell_pid and not _programs(parent.argv[:1]) & WRAPPERS:
            return False
        s = parent
    return False


def unconfirmed_installers(records: Iterable[Mapping[str, Any]],
                           seen: Sequence[Seen]) -> list[tuple[int, str]]:
    """Hook records of installers for which no process running that installer, under the
    shell that wrote the record, was seen from the host during the record: each with its
    ``seq`` and a finding (a forged record, or one synth could not confirm)."""
    by_pid = {s.pid: s for s in seen}
    out = []
    for r in records:
        if r.get("source") != "bash-hook" or not isinstance(r.get("start"), float | int):
            continue
        program = installer_of(str(r.get("command") or ""))
        if program is None:
            continue
        start = float(r["start"])
        end = float(r["end"]) if isinstance(r.get("end"), float | int) else start
        pid = r.get("pid")
        shell = pid if isinstance(pid, int) else -1
        if not any(program in _programs(s.argv) and s.first <= end + _SLACK
                   and s.last >= start - _SLACK and _under_shell(s, shell, by_pid)
                   for s in seen):
            out.append((int(r.get("seq") or 0), (
                f"the hook's record of `{str(r.get('command'))[:120]}` (at {start:.1f}) "
                f"matches no {program} process synth saw running under the shell that "
                "recorded it: a forged record, or one it could not confirm")))
    return out
