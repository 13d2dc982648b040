"""The session container's lease: it lives only while synth does.

synth touches ``logs/lease/lease`` on the host every fraction of a second; the folder is
mounted read-only in the container, whose main process exits once the file is older than
:data:`LEASE_SECONDS`. A synth killed outright (``kill -9``) therefore leaves no container
running the agent's commands unattended: it stops within the lease. The agent cannot renew
the lease (the mount is read-only and a container has no right to remount it), but the loop
runs in its world and calls the image's tools, which a root agent can replace: the first
guard is therefore the host-side watchdog (:mod:`synth.record.watchdog`); this loop is the
second, for when the watchdog was killed too.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

LEASE_DIR = "/synth/lease"
LEASE_SECONDS = 30
#: How often synth renews the lease at most (the poller runs more often).
_RENEW_EVERY = 2.0


def lease_command(seconds: int = LEASE_SECONDS, folder: str = LEASE_DIR) -> tuple[str, ...]:
    """The container's main process: POSIX sh and coreutils only (every Debian image).

    synth stops an agent with ``kill -KILL -1``, which spares this process (pid 1) but not
    the subshells it forks. A killed ``$(stat …)`` would leave ``m`` empty, which reads as
    a lease last renewed in 1970, and the container would stop before its final state is
    captured; so a substitution that did not exit 0 is not a reading, and the loop only
    sleeps again.
    A lease file that is gone reads as 0: the lease has ended."""
    script = (
        "trap 'exit 0' TERM INT; "
        "while :; do "
        "sleep 2 & wait $!; "
        f"m=$(stat -c %Y {folder}/lease 2>/dev/null || echo 0) || continue; "
        "n=$(date +%s) || continue; "
        f"[ $((n - m)) -gt {seconds} ] && exit 0; "
        "done"
    )
    return ("sh", "-c", script)


@dataclass
class Lease:
    folder: Path
    _renewed: float = 0.0

    @property
    def path(self) -> Path:
        return self.folder / "lease"

    def start(self) -> None:
        self.folder.mkdir(mode=0o755, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        os.close(fd)
        self.renew(force=True)

    def renew(self, *, force: bool = False) -> None:
        now = time.time()
        if force or now - self._renewed >= _RENEW_EVERY:
            os.utime(self.path, (now, now), follow_symlinks=False)
            self._renewed = now


def lapsed(folder: Path, now: float | None = None) -> bool:
    """True when the lease in ``folder`` exists and has not been renewed in time."""
    try:
        mtime = os.lstat(folder / "lease").st_mtime
    except OSError:
        return False
    return (now or time.time()) - mtime > LEASE_SECONDS
