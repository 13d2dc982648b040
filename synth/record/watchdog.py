"""The session's watchdog: a host process apart from synth that stops the session container
the moment synth is gone, whatever the agent did inside it.

The lease loop inside the container (:mod:`synth.record.lease`) runs in the agent's world:
the agent is root there, and although it cannot renew the lease, it can replace the tools
the loop calls or trace the loop itself. The guarantee "a session cannot outlive synth"
therefore rests on the host. Right after the container is made, synth starts this module as
its own process, in its own session (a ``kill -9`` of synth, or of synth's process group,
does not reach it), holding the read end of a pipe whose write end only synth holds
(descriptors are not inherited by synth's other children). When synth's process ends in
any way, the kernel closes its end and the watchdog reads end-of-file at once: it kills the
container (its processes end; the container stays, stopped, for ``runs show`` and
``synth gc``). A session that ends normally first writes :data:`RELEASED`, and the watchdog
leaves without touching anything. It reads nothing the container can write.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass

from synth.errors import SynthError

#: What synth writes when the session ended normally and the container is its to handle.
RELEASED = b"released\n"


@dataclass
class Watchdog:
    """synth's side: the write end of the pipe the watchdog waits on."""

    container: str
    _write_fd: int | None = None
    _proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        read_fd, write_fd = os.pipe()  # both not inheritable (PEP 446)
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "synth.record.watchdog", self.container,
                 str(read_fd)],
                pass_fds=(read_fd,), start_new_session=True, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/")
        finally:
            os.close(read_fd)
        self._write_fd = write_fd

    def release(self) -> None:
        """The session is over and synth handles the container itself: stand down."""
        if self._write_fd is None:
            return
        try:
            os.write(self._write_fd, RELEASED)
        except OSError:
            pass
        os.close(self._write_fd)
        self._write_fd = None
        if self._proc is not None:
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()


def wait_for_synth(read_fd: int) -> bytes:
    """Block until synth writes its release or goes away; what it wrote."""
    got = b""
    while True:
        chunk = os.read(read_fd, 64)
        if not chunk:
            return got
        got += chunk
        if len(got) > len(RELEASED):
            return got


def stop_container(container: str) -> None:
    """Kill the container's processes through the engine (the container stays)."""
    # Only the watchdog's own process loads docker-py; synth's side of this module needs
    # nothing of the engine. The watchdog outlives synth, so it opens its own handle.
    from synth.engine.docker import DockerEngine

    try:
        DockerEngine.connect(timeout=30).kill_container(container)
    except SynthError:
        pass  # gone already, or no engine: nothing left to stop


def main(argv: list[str]) -> int:
    container, read_fd = argv[0], int(argv[1])
    if wait_for_synth(read_fd) != RELEASED:
        stop_container(container)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
