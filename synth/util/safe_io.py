"""Reading input synth did not make, so that it cannot steer the host.

A downloaded tree (a ResearchEnvBench checkout, a published artifact, a bench results
folder) and anything a container could write are untrusted: a name there may be a link to
a host file, a FIFO that blocks a reader forever, ``/dev/zero`` that never ends, or a file
of many gigabytes. Every read here therefore

* opens without following a link at the last step (``O_NOFOLLOW``) and without blocking
  (``O_NONBLOCK``: a FIFO opens at once, and is then refused), and accepts a regular file
  only (``fstat`` ``S_ISREG``), never a device, FIFO, socket or folder;
* reads at most a size cap (and refuses a larger file unread, by its size);
* under a root (:func:`read_beneath`): refuses a path whose links lead out of the root,
  and opens the resolved path one folder at a time from the root, each without following
  a link, so a link swapped in after the check is refused too;
* fails with :class:`synth.errors.InputFileError` naming the file and what is wrong.

:func:`sha256_regular` hashes such a file in chunks, never holding it whole.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from synth.errors import InputFileError

MiB = 1 << 20
_CHUNK = MiB
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _open_error(path: Path | str, exc: OSError) -> InputFileError:
    if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a link
        return InputFileError(f"{path}: a symbolic link; links are never followed here")
    if exc.errno == errno.ENOENT:
        return InputFileError(f"{path}: missing")
    if exc.errno == errno.ENOTDIR:
        return InputFileError(f"{path}: a folder on its path is not a folder")
    return InputFileError(f"{path}: cannot be opened ({exc.strerror or exc})")


def _kind(mode: int) -> str:
    return ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "a device" if
            stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file")


def read_fd(fd: int, where: Path | str, max_bytes: int) -> bytes:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise InputFileError(f"{where}: {_kind(info.st_mode)}, not a regular file")
    if info.st_size > max_bytes:
        raise InputFileError(f"{where}: {info.st_size} bytes, over the {max_bytes}-byte "
                             "limit; refused unread")
    chunks, size = [], 0
    while size <= max_bytes:
        chunk = os.read(fd, min(_CHUNK, max_bytes + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if size > max_bytes:  # it grew while being read
        raise InputFileError(f"{where}: over the {max_bytes}-byte limit")
    return b"".join(chunks)


@contextmanager
def opened_regular(path: Path) -> Iterator[int]:
    """An fd of ``path``, a regular file reached without following a link at its last
    step; InputFileError otherwise."""
    try:
        fd = os.open(path, _READ)
    except OSError as exc:
        raise _open_error(path, exc) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputFileError(f"{path}: {_kind(info.st_mode)}, not a regular file")
        yield fd
    finally:
        os.close(fd)


def read_regular(path: Path, max_bytes: int) -> bytes:
    """The bytes of ``path``: a regular file, not a link, at most ``max_bytes``."""
    with opened_regular(path) as fd:
        return read_fd(fd, path, max_bytes)


def sha256_regular(path: Path) -> str:
    """The sha256 of a regular file (not a link), read in 1 MiB chunks."""
    h = hashlib.sha256()
    with opened_regular(path) as fd:
        while chunk := os.read(fd, _CHUNK):
            h.update(chunk)
    return h.hexdigest()


def decode_utf8(data: bytes, where: Path | str) -> str:
    """``data`` as UTF-8 text; an error names the line and the byte that is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputFileError(f"{where}:{line}: not UTF-8 (byte {exc.start})") from None


# ----------------------------------------------------------------- under a root
def resolve_beneath(root: Path, rel: str | Path) -> Path:
    """``rel`` under ``root`` with every link resolved, as a path relative to ``root``'s
    real path; InputFileError when a link leads out of ``root``."""
    real_root = Path(os.path.realpath(root))
    where = root / rel
    real = Path(os.path.realpath(where))
    if not real.is_relative_to(real_root):
        raise InputFileError(f"{where}: a symbolic link leads out of {root} (to {real}); "
                             "links are followed only inside it",
                             hint="Remove the link, or copy what it points at into the folder.")
    return real.relative_to(real_root)


@contextmanager
def opened_beneath(root: Path, rel: str | Path) -> Iterator[int]:
    """An fd of the regular file ``rel`` under ``root``: links inside ``root`` are followed
    (resolved first), one leading out is refused, and the resolved path is then opened one
    folder at a time from ``root`` without following any link."""
    inside = resolve_beneath(root, rel)
    where = root / rel
    try:
        fd = os.open(os.path.realpath(root), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise _open_error(root, exc) from None
    try:
        parts = inside.parts
        for name in parts[:-1]:
            nxt = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                          dir_fd=fd)
            os.close(fd)
            fd = nxt
        if not parts:
            raise InputFileError(f"{where}: a folder, not a regular file")
        leaf = os.open(parts[-1], _READ, dir_fd=fd)
    except OSError as exc:
        raise _open_error(where, exc) from None
    finally:
        os.close(fd)
    try:
        info = os.fstat(leaf)
        if not stat.S_ISREG(info.st_mode):
            raise InputFileError(f"{where}: {_kind(info.st_mode)}, not a regular file")
        yield leaf
    finally:
        os.close(leaf)


def read_beneath(root: Path, rel: str | Path, max_bytes: int) -> bytes:
    """The bytes of the regular file ``rel`` under ``root`` (:func:`opened_beneath`), at
    most ``max_bytes``."""
    with opened_beneath(root, rel) as fd:
        return read_fd(fd, root / rel, max_bytes)


def lexists_beneath(root: Path, rel: str | Path) -> bool:
    """Whether anything (a link included) is at ``root / rel``; never raises."""
    try:
        return os.path.lexists(root / rel)
    except (OSError, ValueError):
        return False
