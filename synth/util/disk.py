"""Disk space: a full file system turned into one :class:`~synth.errors.DiskFullError`,
and the free space of a folder.

``ENOSPC`` (no space left) and ``EDQUOT`` (quota exceeded) are the same fault to a user:
the file system a write went to is full. Each write path wraps its writes in
:func:`disk_full_as_error`, whose error names the file, the file system's mount point, the
space needed where known and how to free some; :func:`disk_full_error` does the same for
an ``OSError`` caught elsewhere (the CLI's edge, a run's capture steps), and
:func:`log_says_disk_full` reads a build log's words for it.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from synth.errors import DiskFullError

#: The errno values of a full file system.
FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})

_LOG_WORDS = re.compile(r"no space left on device|disk quota exceeded", re.IGNORECASE)

GIB = 1024 ** 3


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it was raised from) says a file system is full."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, DiskFullError):
            return True
        if isinstance(cur, OSError) and cur.errno in FULL_ERRNOS:
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def existing_ancestor(path: Path) -> Path:
    """``path`` itself where it exists, else its nearest existing parent."""
    path = Path(path).resolve()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def mount_point(path: Path) -> Path:
    """The mount point of the file system ``path`` is (or would be) on."""
    path = existing_ancestor(path)
    while not os.path.ismount(path) and path != path.parent:
        path = path.parent
    return path


def free_bytes(path: Path) -> int | None:
    """The bytes free to an unprivileged writer on ``path``'s file system, or None."""
    try:
        return shutil.disk_usage(existing_ancestor(path)).free
    except OSError:
        return None


def human(size: int) -> str:
    """A size for people: ``512 B``, ``3.4 MiB``, ``2.0 GiB``."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def disk_full_error(path: Path | str | None, *, needed: int | None = None,
                    what: str = "writing", mount: Path | str | None = None) -> DiskFullError:
    """The error for a write to ``path`` that found its file system full (``mount``: the
    file system's mount point where the caller knows it better, e.g. the engine's data
    root for a build)."""
    where = Path(mount) if mount is not None else (
        mount_point(Path(path)) if path is not None else None)
    free = free_bytes(where) if where is not None else None
    fs = f"the file system at {where}" if where is not None else "a file system"
    target = f" {path}" if path is not None else ""
    parts = [f"No space left on device {what}{target}: {fs} is full"]
    if free is not None:
        parts.append(f" ({human(free)} free")
        parts.append(f", about {human(needed)} needed)" if needed else ")")
    elif needed:
        parts.append(f" (about {human(needed)} needed)")
    return DiskFullError("".join(parts) + ".", path=str(path) if path is not None else None,
                         mount=str(where) if where is not None else None,
                         needed=needed, free=free)


def from_os_error(exc: OSError, path: Path | str | None = None,
                  needed: int | None = None) -> DiskFullError:
    """:func:`disk_full_error` for a caught ``OSError`` (its own file name where it has
    one and the caller named none)."""
    name = path if path is not None else (exc.filename if isinstance(exc.filename, str)
                                          else None)
    what = "writing (quota exceeded)" if exc.errno == errno.EDQUOT else "writing"
    return disk_full_error(name, needed=needed, what=what)


@contextmanager
def disk_full_as_error(path: Path | str | None, needed: int | None = None) -> Iterator[None]:
    """Writes in this block that find the file system full raise :class:`DiskFullError`
    naming ``path`` (None: the file the error names); every other error passes unchanged."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in FULL_ERRNOS:
            raise
        raise from_os_error(exc, path, needed) from exc


def log_says_disk_full(text: str) -> bool:
    """Whether a tool's output (a build log, an engine's message) reports a full disk."""
    return bool(_LOG_WORDS.search(text))
