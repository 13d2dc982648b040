"""Fresh container engines on this machine, for the reader's tests: no image in them, no
network for what they run, no synth on the PATH their commands get.

A privileged container cannot start here (the machine itself withholds the capabilities
docker-in-docker needs), so "a fresh machine with Docker" is a second Docker daemon of
Debian's docker.io, started by the test: its own data root, exec root (and so its own
containerd), socket and cgroup parent, and a bridge of its own the test creates
(``synthrd<pid>``) with no iptables rules, no masquerading and no forwarding: its
containers reach nothing beyond it. Never ``--bridge=none``: that makes dockerd delete the
host's ``docker0``, the other daemon's bridge. It is stopped, its bridge and data removed
afterwards. Podman and Buildah get a fresh storage
the same way (``CONTAINERS_STORAGE_CONF``), with containers on no network, runc (crun cannot
start containers under this machine's hybrid cgroup setup), and open-file and process
limits this machine allows.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DOCKERD = "/usr/sbin/dockerd"
#: What a reader's shell has: system tools, no synth (its venv is never on this PATH).
READER_PATH = "/usr/bin:/bin"


def reader_env(home: Path, **extra: str) -> dict[str, str]:
    """A bare environment: PATH without synth, HOME of its own, nothing of this session's."""
    return {"PATH": READER_PATH, "HOME": str(home), "LANG": "C.UTF-8", **extra}


@contextmanager
def fresh_dockerd(root: Path) -> Iterator[dict[str, str]]:
    """A Docker daemon of its own under ``root``; yields the reader's environment for it
    (``DOCKER_HOST`` its socket)."""
    sock = root / "docker.sock"
    bridge = f"synthrd{os.getpid() % 100000}"
    subprocess.run(["ip", "link", "add", "name", bridge, "type", "bridge"], check=True)
    # Its own /24, for the daemon to hand out: no route leads out of it.
    subprocess.run(["ip", "addr", "add", f"10.217.{os.getpid() % 250}.1/24", "dev", bridge],
                   check=True)
    subprocess.run(["ip", "link", "set", bridge, "up"], check=True)
    log = (root / "dockerd.log").open("w")
    proc = subprocess.Popen(
        [DOCKERD, "--data-root", str(root / "data"), "--exec-root", str(root / "exec"),
         "--pidfile", str(root / "docker.pid"), "--host", f"unix://{sock}",
         f"--bridge={bridge}", "--iptables=false", "--ip6tables=false", "--ip-forward=false",
         "--ip-masq=false", "--cgroup-parent", f"synth-reader-{os.getpid()}",
         "--containerd-namespace", f"synth-reader-{os.getpid()}",
         "--containerd-plugins-namespace", f"synth-reader-{os.getpid()}-plugins"],
        stdout=log, stderr=log, start_new_session=True)
    env = reader_env(root, DOCKER_HOST=f"unix://{sock}")
    try:
        for _ in range(60):
            if subprocess.run(["/usr/bin/docker", "info"], env=env, capture_output=True,
                              check=False).returncode == 0:
                break
            if proc.poll() is not None:
                break
            time.sleep(1)
        else:
            raise RuntimeError("the fresh dockerd did not answer: "
                               + (root / "dockerd.log").read_text()[-2000:])
        if proc.poll() is not None:
            raise RuntimeError("the fresh dockerd exited: "
                               + (root / "dockerd.log").read_text()[-2000:])
        yield env
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
        log.close()
        subprocess.run(["ip", "link", "delete", bridge], capture_output=True, check=False)
        shutil.rmtree(root / "data", ignore_errors=True)


def podman_env(root: Path) -> dict[str, str]:
    """The reader's environment for Podman and Buildah on a fresh storage under ``root``."""
    (root / "storage").mkdir(parents=True, exist_ok=True)
    (root / "storage.conf").write_text(
        f'[storage]\ndriver = "overlay"\ngraphroot = "{root / "storage"}"\n'
        f'runroot = "{root / "run"}"\n')
    runtime = shutil.which("runc", path="/usr/sbin:/usr/bin:/sbin:/bin") or "crun"
    # Podman raises a container's open-file and process limits to the kernel's maximum,
    # which this machine's own limits forbid (runc: "error setting rlimits ... operation not
    # permitted"): the caller's open-file limit, and 4096 processes.
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nproc = min(resource.getrlimit(resource.RLIMIT_NPROC)[1], 4096)
    (root / "containers.conf").write_text(
        f'[containers]\nnetns = "none"\n'
        f'default_ulimits = ["nofile={nofile}:{nofile}", "nproc={nproc}:{nproc}"]\n\n'
        f'[engine]\nruntime = "{runtime}"\n')
    return reader_env(root, CONTAINERS_STORAGE_CONF=str(root / "storage.conf"),
                      CONTAINERS_CONF=str(root / "containers.conf"), BUILDAH_RUNTIME=runtime)


def podman_reset(env: dict[str, str]) -> None:
    """Remove everything of the fresh storage (``podman system reset``: its images, its
    layers), so nothing outlives the test."""
    subprocess.run(["podman", "system", "reset", "--force"], env=env, capture_output=True,
                   check=False, timeout=300)
