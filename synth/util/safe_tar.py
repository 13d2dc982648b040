"""Extracting a tar that came from outside (a container's files, a bench node's task
folder) so that it cannot write outside its destination.

Python 3.11.4 and later have extraction filters for this (PEP 706): ``tar`` (a member's
own path stays inside the destination; setuid/setgid/sticky and group/other write bits
go) and ``data`` (also: no link to an absolute path or out of the destination, no device
or pipe, owner-readable files, no ownership taken from the archive). Earlier 3.11
releases, Debian 12's ``python3`` (3.11.2) among them, have no filters at all: there the
same rules are checked here, member by member as each is extracted (a symlink extracted
first changes where a later member's path leads), by :func:`extract_checked`. Where a rule
is in doubt this check is the stricter; a test compares it with the standard library's
filters on crafted archives. One rule is stricter on purpose: a hard link whose target is
an absolute path or resolves (through any link already extracted) outside the destination
is refused under both policies, here and (added to the standard filter) where Python has
filters. A hard link is the very file it names, so the standard ``tar`` filter, which
checks only the link's own path, would let a later write into the destination land in a
host file (and its content into an artifact).
"""

from __future__ import annotations

import copy
import os
import stat
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Literal

Policy = Literal["tar", "data"]

#: Python's own filters, where this Python has them.
HAS_FILTERS = hasattr(tarfile, "data_filter")


class UnsafeMemberError(tarfile.TarError):
    """A member that would leave the destination, or that the ``data`` policy refuses."""


#: What a refused member raises (``except (*REFUSED, OSError)``): the standard library's
#: FilterError where it has filters, UnsafeMemberError otherwise; both are TarErrors.
REFUSED: tuple[type[tarfile.TarError], ...] = (
    (tarfile.FilterError,) if HAS_FILTERS else (UnsafeMemberError,))

_MODE_DROPPED = stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX | stat.S_IWGRP | stat.S_IWOTH


def extract_all(tar: tarfile.TarFile, dest: Path, *, policy: Policy) -> None:
    """Every member of ``tar`` into ``dest`` under ``policy``; raises a
    :data:`REFUSED` error at the first member the policy refuses."""
    if HAS_FILTERS:
        tar.extractall(dest, filter=_standard_filter(policy))
    else:
        extract_checked(tar, tar.getmembers(), dest, policy=policy)


def extract(tar: tarfile.TarFile, member: tarfile.TarInfo, dest: Path, *,
            policy: Policy) -> None:
    """One member of ``tar`` into ``dest`` under ``policy``."""
    if HAS_FILTERS:
        tar.extract(member, dest, filter=_standard_filter(policy))
    else:
        extract_checked(tar, [member], dest, policy=policy)


def _standard_filter(policy: Policy) -> Callable[[tarfile.TarInfo, str], tarfile.TarInfo]:
    """The standard library's filter for ``policy``, refusing also a hard link out of the
    destination (which its ``tar`` filter lets through)."""
    standard = tarfile.tar_filter if policy == "tar" else tarfile.data_filter

    def check(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo:
        if member.islnk():
            root = Path(dest).resolve()
            if Path(member.linkname).is_absolute():
                raise tarfile.AbsoluteLinkError(member)
            target = (root / member.linkname).resolve()
            if not target.is_relative_to(root):
                raise tarfile.LinkOutsideDestinationError(member, str(target))
        return standard(member, dest)
    return check


def extract_checked(tar: tarfile.TarFile, members: list[tarfile.TarInfo], dest: Path, *,
                    policy: Policy) -> None:
    """``members`` into ``dest``, each checked by :func:`checked_member` right before it is
    extracted; directories get their mode and times last, as ``extractall`` does (a
    read-only directory would refuse the files that go into it)."""
    directories: list[tuple[tarfile.TarInfo, str]] = []
    for member in members:
        safe = checked_member(member, dest, policy)
        if safe.islnk() and not (dest / safe.linkname).exists():
            safe = _link_content(tar, member, dest, policy)
        if safe.isdir():
            directories.append((safe, str(dest / safe.name)))
            safe = copy.copy(safe)
            safe.mode = 0o700
        tar.extract(safe, dest, set_attrs=not safe.isdir(), numeric_owner=policy == "data")
    for info, path in sorted(directories, key=lambda d: d[0].name, reverse=True):
        tar.chown(info, path, numeric_owner=policy == "data")
        tar.utime(info, path)
        tar.chmod(info, path)


def _link_content(tar: tarfile.TarFile, member: tarfile.TarInfo, dest: Path,
                  policy: Policy) -> tarfile.TarInfo:
    """A hard link whose target is not on disk gets the content of the archive's member
    of that name before it (as ``extract`` does; this Python's own lookup wants the very
    TarInfo it listed, not a checked copy), or KeyError when the archive has none."""
    listed = tar.getmembers()
    before = listed[:listed.index(member)] if member in listed else listed
    target = next((m for m in reversed(before) if m.name == member.linkname), None)
    if target is None or not target.isreg():
        raise KeyError(f"linkname {member.linkname!r} not found")
    content = copy.copy(target)
    content.name = member.name
    return checked_member(content, dest, policy)


def _check_hard_link(member: tarfile.TarInfo, root: Path, dest: Path) -> None:
    """A hard link names its target from the destination's root; ``os.link`` follows a
    symlink there. Its target must be a path under ``root`` once every link is resolved."""
    if Path(member.linkname).is_absolute():
        raise UnsafeMemberError(f"{member.name!r} is a hard link to an absolute path "
                                f"({member.linkname!r})")
    if not (root / member.linkname).resolve().is_relative_to(root):
        raise UnsafeMemberError(f"{member.name!r} is a hard link outside {dest} "
                                f"({member.linkname!r})")


def checked_member(member: tarfile.TarInfo, dest: Path, policy: Policy) -> tarfile.TarInfo:
    """A copy of ``member`` that is safe to extract into ``dest`` now (paths resolved,
    symlinks followed, as they are at this moment), or UnsafeMemberError."""
    root = dest.resolve()
    name = member.name.lstrip("/" + os.sep)
    if not (root / name).resolve().is_relative_to(root):
        raise UnsafeMemberError(f"{member.name!r} would be extracted outside {dest}")
    if member.islnk():
        _check_hard_link(member, root, dest)
    safe = copy.copy(member)
    safe.name = name
    if safe.mode is not None:
        safe.mode &= ~_MODE_DROPPED
    if policy == "tar":
        return safe
    if member.islnk() or member.issym():
        if Path(member.linkname).is_absolute():
            raise UnsafeMemberError(f"{member.name!r} links to an absolute path "
                                    f"({member.linkname!r})")
        base = (root / name).parent if member.issym() else root
        if not (base / member.linkname).resolve().is_relative_to(root):
            raise UnsafeMemberError(f"{member.name!r} links outside {dest} "
                                    f"({member.linkname!r})")
    elif not (member.isreg() or member.isdir()):
        raise UnsafeMemberError(f"{member.name!r} is a device or pipe; refused")
    if member.isreg() or member.islnk():
        safe.mode = (safe.mode or 0) | stat.S_IRUSR | stat.S_IWUSR
        if not safe.mode & stat.S_IXUSR:
            safe.mode &= ~(stat.S_IXGRP | stat.S_IXOTH)
    elif member.isdir():
        safe.mode = 0o755
    # No ownership from the archive: the files are the extracting user's.
    safe.uid, safe.gid, safe.uname, safe.gname = os.geteuid(), os.getegid(), "", ""
    return safe
