"""Resource limits of the containers synth starts: memory, processes, CPUs and disk.

Every container synth starts runs under limits — a session's, verify's probe containers,
the throwaway ones on a live image — so that an agent's fork bomb or memory hog ends its
own statement, never the host. The defaults (:meth:`Limits.host_default`) protect the host:
memory at 80 % of its RAM (no swap beyond it), 16,384 processes, all its CPUs (a CPU hog
slows the host but cannot take it down; ``--cpus`` limits it, at most to the host's CPUs).
``[limits]`` in ``task.toml``
and the command line (``--memory``, ``--pids``, ``--cpus``, ``--disk``) override them, the
command line last. A disk limit is enforced only where the engine's storage driver can
(overlay2 on xfs with project quotas); elsewhere it is recorded as not enforced.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from typing import Any

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", re.IGNORECASE)
#: Process limit a session gets by default: far above what builds need, far below a host's.
DEFAULT_PIDS = 16384
#: Share of the host's memory a container may use by default.
DEFAULT_MEMORY_SHARE = 0.8
#: The least memory a limit may give (Docker refuses less than 6 MB; builds need far more).
MIN_MEMORY = 64 << 20


def parse_size(text: str | int) -> int:
    """``"8g"``, ``"512m"``, ``"1.5GiB"`` or a number of bytes -> bytes."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    m = _SIZE.fullmatch(str(text))
    if m is None:
        raise ValueError(f"{text!r} is not a size (e.g. 8g, 512m, 1.5GiB or bytes)")
    return int(float(m[1]) * _UNITS[m[2].lower()])


def human(n: int | None) -> str:
    if n is None:
        return "none"
    for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f}{unit}".replace(".0", "")
    return f"{n}B"


def host_memory() -> int:
    """The host's physical memory in bytes."""
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


@dataclass(frozen=True)
class Limits:
    """Limits of one container; None: not limited."""

    memory: int | None = None
    pids: int | None = None
    cpus: float | None = None
    disk: int | None = None

    @classmethod
    def host_default(cls) -> Limits:
        return cls(memory=max(MIN_MEMORY, int(host_memory() * DEFAULT_MEMORY_SHARE)),
                   pids=DEFAULT_PIDS)

    def over(self, other: Limits) -> Limits:
        """``self``'s limits where it sets them, ``other``'s elsewhere."""
        return replace(other, **{k: v for k, v in self.to_json().items() if v is not None})

    def checked(self) -> Limits:
        """Refuse limits a container cannot run under, with the field named."""
        if self.memory is not None and self.memory < MIN_MEMORY:
            raise ValueError(f"memory {human(self.memory)} is below {human(MIN_MEMORY)}")
        if self.pids is not None and self.pids < 16:
            raise ValueError(f"pids {self.pids} is below 16")
        if self.cpus is not None and self.cpus < 0.01:
            raise ValueError(f"cpus {self.cpus} is below 0.01")
        if self.disk is not None and self.disk < (1 << 30):
            raise ValueError(f"disk {human(self.disk)} is below 1G")
        return self

    def to_json(self) -> dict[str, Any]:
        return {"memory": self.memory, "pids": self.pids, "cpus": self.cpus,
                "disk": self.disk}

    def describe(self) -> str:
        return (f"memory {human(self.memory)}, pids {self.pids or 'none'}, "
                f"cpus {self.cpus or 'all'}, disk {human(self.disk)}")


def from_options(memory: str | int | None = None, pids: int | None = None,
                 cpus: float | None = None, disk: str | int | None = None) -> Limits:
    """Limits from a task file's ``[limits]`` or the command line (sizes as text)."""
    return Limits(memory=parse_size(memory) if memory is not None else None, pids=pids,
                  cpus=cpus, disk=parse_size(disk) if disk is not None else None).checked()
