"""A short-lived Ray cluster on 127.0.0.1, for the bench's Ray executor: a head that runs no
cells (0 CPUs) and worker nodes offering one ``synth_docker`` slot each. Used by
tests/integration/test_bench.py and bench/scale.py.

Each ``ray start --block`` is a process group of its own, ended by its id on exit. Ports are
fixed up front: without them a raylet on a busy 2-core machine times out waiting for its
agents' port files. Ray gives a node 30 s to register with its head, which such a machine
running image builds beside it does not always meet, so a node that dies or hangs starting
is started again (``tries`` times)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
#: The ``ray`` command of the interpreter running this (the ``bench`` extra installs it).
RAY_CLI = Path(sys.executable).parent / "ray"


class RayClusterError(RuntimeError):
    """A node did not come up in any of its tries; the message ends with its log."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def local_ray_cluster(tmp: Path, workers: int = 1, *, tries: int = 3) -> Iterator[str]:
    """Start a head and ``workers`` worker nodes under ``tmp``; yield the head's address."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "RAY_USAGE_STATS_ENABLED": "0"}
    procs: list[subprocess.Popen[bytes]] = []
    # Ray's session folder holds its nodes' Unix sockets, whose paths may not pass 107
    # bytes: a short folder of its own, not one under ``tmp``.
    sessions = Path(tempfile.mkdtemp(prefix="synth-ray-"))

    def start(name: str, *args: str) -> bool:
        """Start one node; True once it blocks (is up), False if it died or hung meanwhile
        (its process group is then ended)."""
        ports = [f"--{flag}={free_port()}" for flag in (
            "dashboard-agent-grpc-port", "dashboard-agent-listen-port",
            "runtime-env-agent-port", "metrics-export-port", "node-manager-port",
            "object-manager-port")]
        log = tmp / f"{name}.log"
        with log.open("wb") as fh:
            proc = subprocess.Popen(
                [str(RAY_CLI), "start", "--block", "--node-ip-address=127.0.0.1",
                 "--disable-usage-stats", "--object-store-memory=80000000", *ports, *args],
                env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 240
        while proc.poll() is None and time.monotonic() < deadline:
            if "block forever" in log.read_text(errors="replace"):
                procs.append(proc)
                return True
            time.sleep(1)
        end_node(proc)
        return False

    def start_with_retries(name: str, args_for: Callable[[int], list[str]]) -> list[str]:
        """Start a node, again with fresh arguments if it fails; the arguments it took."""
        for i in range(tries):
            args = args_for(i)
            if start(f"{name}-try{i}", *args):
                return args
        raise RayClusterError(f"ray node {name} did not start in {tries} tries:\n"
                              + (tmp / f"{name}-try{tries - 1}.log").read_text()[-3000:])

    try:
        head = start_with_retries("head", lambda i: [
            "--head", f"--port={free_port()}", "--num-cpus=0", "--include-dashboard=false",
            f"--temp-dir={sessions / str(i)}"])
        address = "127.0.0.1:" + head[1].removeprefix("--port=")
        for w in range(workers):
            start_with_retries(f"worker{w}", lambda _i: [
                f"--address={address}", "--num-cpus=1", '--resources={"synth_docker": 1}'])
        yield address
    finally:
        for proc in reversed(procs):
            end_node(proc)
        shutil.rmtree(sessions, ignore_errors=True)


def end_node(proc: subprocess.Popen[bytes]) -> None:
    """End a node's process group (its GCS, raylet and agents with it), even if the
    ``ray start`` that leads it has exited."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(5)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(15)
