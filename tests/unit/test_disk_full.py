"""A full disk is a fault like any other: each write path, on a real 4 MiB tmpfs, raises
one DiskFullError naming the file system (or records it), never a bare OSError."""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from synth.config import Settings
from synth.engine.build import BuildCli, BuildRequest, build_image
from synth.errors import DiskFullError
from synth.export.publish import write_archive
from synth.formats.task import load_task
from synth.record.agents import AgentLog, ReplayAgent
from synth.record.audit import Masker
from synth.record.collector import write_private
from synth.record.runner import RunOptions, _Session
from synth.util import atomic
from synth.util.disk import disk_full_error, is_disk_full, log_says_disk_full, mount_point
from tests.distill_runs import NO_ENGINE

REPO = Path(__file__).resolve().parents[2]
MiB = 1024 * 1024


@pytest.fixture
def tiny_fs(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs, unmounted afterwards (needs root, as on the development machines)."""
    where = tmp_path / "tiny"
    where.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(where)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _fill(folder: Path, leave: int = 0) -> None:
    """Fill ``folder``'s file system, leaving about ``leave`` bytes."""
    free = os.statvfs(folder)
    size = free.f_bavail * free.f_frsize - leave
    with (folder / "filler").open("wb") as fh:
        try:
            fh.write(bytes(max(size, 0)))
        except OSError as exc:
            assert exc.errno == errno.ENOSPC


def test_atomic_write_on_a_full_disk_names_the_file_system(tiny_fs: Path) -> None:
    target = tiny_fs / "run.json"
    atomic.write_text(target, "old\n")
    with pytest.raises(DiskFullError) as info:
        atomic.write_bytes(target, os.urandom(6 * MiB))
    err = info.value
    assert err.exit_code == 24
    assert err.mount == str(tiny_fs)
    assert err.needed == 6 * MiB
    assert f"the file system at {tiny_fs} is full" in err.message
    assert "6.0 MiB needed" in err.message
    assert "synth gc" in (err.hint or "") and "docker system df" in (err.hint or "")
    # The old file is as it was, and no temporary file is left.
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tiny_fs.iterdir()) == ["run.json"]


def test_archive_on_a_full_disk(tmp_path: Path, tiny_fs: Path) -> None:
    artifact = tmp_path / "artifact"
    artifact.mkdir()
    (artifact / "big.bin").write_bytes(os.urandom(6 * MiB))  # incompressible
    dest = tiny_fs / "exports" / "t-1.tar.gz"
    dest.parent.mkdir()
    with pytest.raises(DiskFullError) as info:
        write_archive(artifact, dest, "t-1", 0)
    assert str(dest) in info.value.message
    assert info.value.mount == str(tiny_fs)
    assert list(dest.parent.iterdir()) == []  # neither the archive nor a temporary file


def test_agent_log_keeps_what_it_wrote_and_records_the_full_disk(tiny_fs: Path) -> None:
    log = AgentLog(tiny_fs / "agent.log", Masker())
    log.write("stdout", b"first line\n")
    _fill(tiny_fs)
    for _ in range(64):
        log.write("stdout", b"x" * 65536 + b"\n")
    log.note("after")
    log.close()  # no traceback: the log ends, the session goes on
    assert log.full is not None
    assert str(tiny_fs / "agent.log") in log.full.message
    assert (tiny_fs / "agent.log").read_bytes().startswith(b"first line\n")


def test_hook_copy_on_a_full_disk(tiny_fs: Path) -> None:
    _fill(tiny_fs)
    with pytest.raises(DiskFullError, match=r"events\.jsonl"):
        write_private(tiny_fs / "events.jsonl", os.urandom(MiB), append=True)


def _session(artifacts: Path) -> _Session:
    task = load_task(REPO / "tasks" / "numpy-ext")
    script = artifacts.parent / "setup.sh"
    script.write_text("true\n")
    opts = RunOptions(task=task, agent=ReplayAgent(script))
    return _Session(opts, Settings.load(artifacts_dir=artifacts), NO_ENGINE,
                    say=lambda _text: None)


def test_a_run_that_fills_the_disk_ends_with_the_error_in_run_json(tiny_fs: Path) -> None:
    s = _session(tiny_fs / "artifacts")
    s.make_run_dir()
    s.log = AgentLog(s.run_dir / "logs" / "agent.log", s.masker)
    s.log.write("stdout", b"installing\n")
    _fill(tiny_fs)
    s.log.write("stdout", os.urandom(MiB).hex().encode() + b"\n")
    status = s.close("succeeded")
    assert status == "error"
    record = json.loads((s.run_dir / "run.json").read_text())
    assert record["status"] == "error"
    assert "No space left on device" in record["error"]
    assert f"the file system at {tiny_fs} is full" in record["error"]
    assert (s.run_dir / "logs" / "agent.log").read_bytes().startswith(b"installing\n")
    assert not s.reserve_path.exists()


def test_a_build_log_saying_no_space_becomes_disk_full(tmp_path: Path) -> None:
    fake = tmp_path / "docker"
    fake.write_text("#!/bin/sh\n"
                    "if [ \"$1\" = info ]; then echo /var/lib/docker; exit 0; fi\n"
                    "echo '#5 [2/3] RUN pip install torch'\n"
                    "echo 'ERROR: failed to copy: write /var/lib/docker/x: "
                    "no space left on device'\n"
                    "exit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    cli = BuildCli(path=str(fake), mode="builtin", client_version="20.10")
    with pytest.raises(DiskFullError) as info:
        build_image(cli, BuildRequest(context=tmp_path, tag="synth-rebuilt/t:1"),
                    log_path=tmp_path / "build.log")
    assert "No space left on device building synth-rebuilt/t:1" in info.value.message
    assert "the file system at /var/lib/docker is full" in info.value.message
    assert info.value.mount == "/var/lib/docker"
    assert "build.log" in info.value.message


def test_the_command_line_reports_a_stray_enospc_without_a_traceback(tmp_path: Path) -> None:
    code = ("import errno, sys\n"
            "import importlib\n"
            "a = importlib.import_module('synth.cli.app')\n"
            "def boom(**kw):\n"
            f"    raise OSError(errno.ENOSPC, 'No space left on device', {str(tmp_path)!r})\n"
            "a.app = boom\n"
            "sys.argv = ['synth', 'version']\n"
            "a.main()\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, env={**os.environ, "PYTHONPATH": str(REPO),
                                            "COLUMNS": "300"})
    assert proc.returncode == 24, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "DiskFullError" in proc.stderr or "No space left" in proc.stderr
    assert f"file system at {mount_point(tmp_path)}" in " ".join(proc.stderr.split())


def test_disk_full_is_found_through_causes_and_in_logs() -> None:
    inner = OSError(errno.EDQUOT, "Disk quota exceeded")
    outer = RuntimeError("wrapped")
    outer.__cause__ = inner
    assert is_disk_full(outer)
    assert not is_disk_full(OSError(errno.EACCES, "denied"))
    assert log_says_disk_full("write /x: No Space Left On Device")
    assert not log_says_disk_full("exit 1")
    assert "a file system is full" in disk_full_error(None).message
