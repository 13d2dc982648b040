"""What a file of an artifact is, and its digest: the one rule export's manifest, verify's
check, the build context, the archive and the bundle share.

An artifact holds regular files, folders and symbolic links, nothing else. A link is a
link wherever synth meets it: it is never followed (not to hash it, not to copy it, not to
pack it), it travels as a link (``source/``, the build context, the archive), and its
digest is the sha256 of ``symlink:`` followed by its target as written — the notation the
environment fingerprint uses for a link in ``/workspace`` — so a link's digest never
depends on what it points at, on this machine or the reader's. A regular file's digest is
the sha256 of its bytes. A FIFO, a socket or a device, and a file with the setuid or setgid
bit, have no place in an artifact: the walk refuses them with the path named.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import stat
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from synth.errors import InputFileError

#: A link's digest is the sha256 of this prefix and its target.
LINK_PREFIX = "symlink:"
#: Written into an artifact folder by ``synth verify``, after the export: not one of the
#: artifact's files (the manifest check and the rebuilt tag leave it out), and kept when
#: ``synth export`` replaces the folder.
VERIFICATION_FILE = "verification.json"
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Entry:
    """One thing under an artifact's root, as found (nothing followed)."""

    rel: str
    path: Path
    kind: str  # "file" | "link" | "dir"
    mode: int

    @property
    def target(self) -> str:
        """A link's target as written (``kind == "link"`` only)."""
        return str(self.path.readlink())


def link_digest(target: str) -> str:
    """The digest of a link to ``target``."""
    return hashlib.sha256((LINK_PREFIX + target).encode("utf-8", "surrogateescape")).hexdigest()


def file_digest(path: Path) -> str:
    """sha256 of a regular file's bytes, read without following a link at ``path``."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise InputFileError(f"{path} is not a regular file; an artifact holds only "
                                 "files, folders and links.", path=path)
        h = hashlib.sha256()
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def _kind(path: Path, st: os.stat_result) -> str:
    if stat.S_ISLNK(st.st_mode):
        return "link"
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    if not stat.S_ISREG(st.st_mode):
        what = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket"
                if stat.S_ISSOCK(st.st_mode) else "a device")
        raise InputFileError(f"{path} is {what}; an artifact holds only files, folders and "
                             "links.", hint="Remove it, or export the artifact again.",
                             path=path)
    if st.st_mode & (stat.S_ISUID | stat.S_ISGID):
        raise InputFileError(f"{path} has the setuid or setgid bit; synth never carries or "
                             "builds such a file from an artifact.",
                             hint="Remove the bit (chmod u-s,g-s) or export the artifact "
                             "again.", path=path)
    return "file"


def walk(root: Path, skip: Collection[str] = ()) -> Iterator[Entry]:
    """Every file, link and folder under ``root`` in sorted order of their paths, links
    not followed; ``skip``: relative paths left out (with what is under them)."""
    def visit(folder: Path, prefix: str) -> Iterator[Entry]:
        with os.scandir(folder) as it:
            names = sorted(e.name for e in it)
        for name in names:
            rel = prefix + name
            if rel in skip:
                continue
            path = folder / name
            st = path.lstat()
            entry = Entry(rel, path, _kind(path, st), st.st_mode)
            yield entry
            if entry.kind == "dir":
                yield from visit(path, rel + "/")

    # Sorted by full path: a name sorts with its own children before a sibling "name.x".
    yield from sorted(visit(root, ""), key=lambda e: e.rel)


def digests(root: Path, skip: Collection[str] = (),
            known: Mapping[str, str] | None = None) -> dict[str, str]:
    """Relative path -> digest of every file and link under ``root`` (folders have none);
    ``known``: digests of files already hashed from the bytes written."""
    known = known or {}
    out: dict[str, str] = {}
    for e in walk(root, skip):
        if e.kind == "link":
            out[e.rel] = link_digest(e.target)
        elif e.kind == "file":
            out[e.rel] = known.get(e.rel) or file_digest(e.path)
    return out


def leaves(rel: str, target: str, top: str = "") -> bool:
    """The link at ``rel`` to ``target`` points outside ``top`` (a relative folder of the
    artifact, the whole of it by default): an absolute target, or one that climbs out."""
    if target.startswith("/"):
        return True
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target))
    if top:
        return not (resolved == top or resolved.startswith(top.rstrip("/") + "/"))
    return resolved == ".." or resolved.startswith("../")


def outward_links(root: Path, top: str) -> list[tuple[str, str]]:
    """``(path, target)`` of every link under ``root/top`` whose target leaves ``top``."""
    base = root / top
    if not base.is_dir() or base.is_symlink():
        return []
    return [(f"{top}/{e.rel}", e.target) for e in walk(base)
            if e.kind == "link" and leaves(f"{top}/{e.rel}", e.target, top)]
