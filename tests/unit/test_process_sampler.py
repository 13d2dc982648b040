"""Host-side evidence of what ran: an installer's hook record is confirmed only by a process
seen from the host under the shell that wrote the record (synth/record/processes.py)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from synth.record.processes import (
    ProcessSampler,
    Seen,
    installer_of,
    unconfirmed_installers,
)


def _rec(command: str, pid: int, start: float = 10.0, end: float = 12.0) -> dict[str, object]:
    return {"source": "bash-hook", "command": command, "pid": pid, "start": start, "end": end}


SHELL = Seen(pid=900, ppid=1, argv=("bash", "-c", "..."), first=9.0, last=13.0, nspid=7)


def test_an_installer_run_by_the_recording_shell_is_confirmed() -> None:
    pip = Seen(901, 900, ("/opt/venv/bin/python", "/opt/venv/bin/pip", "install", "six"),
               10.2, 11.5, nspid=8)
    assert unconfirmed_installers([_rec("/opt/venv/bin/pip install six", 7)],
                                  [SHELL, pip]) == []
    # bash -c 'pip install six': the shell execs pip in place (same pid).
    inplace = Seen(900, 1, ("/usr/bin/python3", "-m", "pip", "install", "six"), 10.0, 11.0,
                   nspid=7)
    assert unconfirmed_installers([_rec("python3 -m pip install six", 7)], [inplace]) == []
    # Through a wrapper (timeout) the shell started.
    wrap = Seen(902, 900, ("timeout", "600", "pip", "install", "x"), 10.0, 11.0, nspid=9)
    pip2 = Seen(903, 902, ("pip", "install", "x"), 10.1, 11.0, nspid=10)
    assert unconfirmed_installers([_rec("timeout 600 pip install x", 7)],
                                  [SHELL, wrap, pip2]) == []


def test_a_forged_record_is_not_confirmed() -> None:
    # The install came from `python -c "subprocess.run(['pip', ...])"`, not from the shell;
    # the agent then wrote a record saying its shell ran pip.
    py = Seen(910, 900, ("python3", "-c", "import subprocess; ..."), 10.0, 12.0, nspid=11)
    pip = Seen(911, 910, ("pip", "install", "six"), 10.1, 11.9, nspid=12)
    found = unconfirmed_installers([{**_rec("pip install six", 7), "seq": 4}],
                                   [SHELL, py, pip])
    assert len(found) == 1 and found[0][0] == 4 and "matches no pip process" in found[0][1]
    # No process at all during the record.
    assert unconfirmed_installers([_rec("apt-get install -y curl", 7)], [SHELL])
    # Not an install: nothing to confirm.
    assert unconfirmed_installers([_rec("dpkg --print-architecture", 7),
                                   _rec("pip list", 7)], []) == []


def test_installer_of() -> None:
    assert installer_of("PIP_NO_CACHE_DIR=1 pip install -r r.txt") == "pip"
    assert installer_of("/opt/venv/bin/python -m pip install .") == "pip"
    assert installer_of("uv pip install six") == "uv"  # uv's own pip: one uv process
    # The installer is the program, not a package it installs (seen on aics-cytoparam:
    # `pip install pdm` was told to match a pdm process and called forged).
    assert installer_of("/opt/pdm/bin/pip install pdm") == "pip"
    assert installer_of("python3 -m pip install conda poetry") == "pip"
    assert installer_of("timeout 600 apt-get install -y pipenv") == "apt-get"
    assert installer_of("uv sync --frozen") == "uv"
    assert installer_of("dpkg -i x.deb") == "dpkg"
    assert installer_of("pip freeze") is None and installer_of("echo install") is None


def test_the_sampler_sees_this_hosts_processes(tmp_path: Path) -> None:
    """A real sample: the cgroup of this test process lists a child started now."""
    sampler = ProcessSampler.for_pid(os.getpid())
    if not sampler.works:  # pragma: no cover - another cgroup layout
        pytest.skip("this host's cgroup files cannot be read")
    child = subprocess.Popen(["sleep", "2"])
    try:
        time.sleep(0.2)
        sampler.sample()
        seen = {s.pid: s for s in sampler.seen.values()}
        assert child.pid in seen and seen[child.pid].argv == ("sleep", "2")
        assert seen[child.pid].ppid == os.getpid() and seen[child.pid].nspid > 0
    finally:
        child.kill()
        child.wait()


def test_a_shell_seen_before_its_exec_is_seen_again_after_it(tmp_path: Path) -> None:
    """bash's child caught between fork and exec is still ``bash``; once it runs the
    program its command line is read again, so the installer it became is seen."""
    sampler = ProcessSampler.for_pid(os.getpid())
    if not sampler.works:  # pragma: no cover - another cgroup layout
        pytest.skip("this host's cgroup files cannot be read")
    child = subprocess.Popen(["bash", "-c", "sleep 0.5; exec sleep 3"])
    try:
        time.sleep(0.2)
        sampler.sample()
        assert sampler.seen[child.pid].argv[0] == "bash"
        time.sleep(0.8)
        sampler.sample()
        assert sampler.seen[child.pid].argv == ("sleep", "3")
        entries = [s.argv[0] for s in sampler.stop() if s.pid == child.pid]
        assert entries == ["bash", "sleep"]
    finally:
        child.kill()
        child.wait()


def test_the_process_log_masks_secrets_on_command_lines(tmp_path: Path) -> None:
    from synth.record.audit import Masker
    from synth.record.processes import write_processes

    seen = [Seen(1, 0, ("agent", "--api-key", "sk-s3cret", "--key=sk-s3cret"), 1.0, 2.0, 1)]
    write_processes(tmp_path / "p.jsonl", seen, Masker(["sk-s3cret"]).mask)
    text = (tmp_path / "p.jsonl").read_text()
    assert "s3cret" not in text and '"--key=***"' in text


def test_a_process_read_inside_its_exec_is_read_again_until_it_has_a_command_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """/proc/PID/cmdline is empty while the kernel runs a process's ``execve``: the sampler
    saw a 22-second ``pip install`` as ``[]`` once and called its hook record forged. The
    entry is read again, and the command line it then has is its own (one entry)."""
    from synth.record import processes

    procs = tmp_path / "cgroup.procs"
    procs.write_text("42\n")
    reads = iter([(), (), ("/opt/poetry/bin/python3", "/opt/poetry/bin/pip", "install", "x")])
    monkeypatch.setattr(processes, "_argv", lambda _pid: next(reads))
    monkeypatch.setattr(processes, "_ids", lambda _pid: (900, 8))
    sampler = ProcessSampler(procs)
    for now in (10.0, 10.5, 11.0):
        sampler.sample(now)
    (entry,) = sampler.stop()
    assert entry.argv[1:3] == ("/opt/poetry/bin/pip", "install")
    assert (entry.first, entry.last) == (10.0, 11.0)
    assert unconfirmed_installers([_rec("/opt/poetry/bin/pip install x", 7, 10.2, 11.0)],
                                  [SHELL, entry]) == []
