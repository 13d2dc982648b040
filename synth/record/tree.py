"""The source tree hash of ``/workspace``: did the agent edit the research code?

The hash covers every entry of the tree *except build output*, which setups legitimately
create next to the sources:

* directories named ``build``, ``dist``, ``.eggs``, ``__pycache__``, ``.git``,
  ``.pytest_cache``, ``.mypy_cache``, ``.tox``, ``.nox``, or ending in ``.egg-info`` /
  ``.dist-info`` (at any depth, with everything below them);
* files ending in ``.pyc``, ``.pyo``, ``.so``, ``.pyd``, ``.o``, ``.obj``, ``.a``,
  ``.dylib`` (compiled objects put beside the sources by ``build_ext --inplace`` and
  editable installs).

Per entry the hash takes the relative path, the type (file, dir, symlink), the executable
bit of files, the sha256 of file contents and the target of symlinks; owners and mtimes are
ignored. :func:`compare_trees` lists what changed. *Modified* and *deleted* entries are
source violations (the agent changed the research code); *added* entries are reported but
are not violations (downloaded data, config files written by a setup script).
"""

from __future__ import annotations

import hashlib
import io
import tarfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

IGNORED_DIRS = frozenset({
    "build", "dist", ".eggs", "__pycache__", ".git", ".pytest_cache", ".mypy_cache",
    ".tox", ".nox",
})
IGNORED_DIR_SUFFIXES = (".egg-info", ".dist-info")
IGNORED_FILE_SUFFIXES = (".pyc", ".pyo", ".so", ".pyd", ".o", ".obj", ".a", ".dylib")

EntryKind = Literal["file", "dir", "symlink", "other"]


@dataclass(frozen=True)
class TreeEntry:
    kind: EntryKind
    executable: bool = False
    digest: str = ""  # sha256 of a file's contents, or a symlink's target

    def line(self, path: str) -> str:
        return f"{path}\0{self.kind}\0{int(self.executable)}\0{self.digest}\n"


def is_build_output(rel_path: str, *, is_dir: bool) -> bool:
    """True for paths the tree hash ignores (see the module docstring)."""
    parts = PurePosixPath(rel_path).parts
    if not parts:
        return False
    dirs = parts if is_dir else parts[:-1]
    for part in dirs:
        if part in IGNORED_DIRS or part.endswith(IGNORED_DIR_SUFFIXES):
            return True
    return not is_dir and parts[-1].endswith(IGNORED_FILE_SUFFIXES)


def entries_from_tar(data: bytes | io.BufferedIOBase) -> dict[str, TreeEntry]:
    """Entries of a tar archive of the tree (its top folder stripped), build output left out."""
    fileobj = io.BytesIO(data) if isinstance(data, bytes) else data
    entries: dict[str, TreeEntry] = {}
    with tarfile.open(fileobj=fileobj, mode="r|*") as tar:
        for member in tar:
            parts = PurePosixPath(member.name).parts
            rel = "/".join(parts[1:])
            if not rel or is_build_output(rel, is_dir=member.isdir()):
                continue
            if member.isdir():
                entries[rel] = TreeEntry("dir")
            elif member.issym():
                entries[rel] = TreeEntry("symlink", digest=member.linkname)
            elif member.isfile():
                fh = tar.extractfile(member)
                h = hashlib.sha256()
                while fh is not None and (chunk := fh.read(1 << 20)):
                    h.update(chunk)
                entries[rel] = TreeEntry("file", bool(member.mode & 0o111), h.hexdigest())
            elif member.islnk():
                target = "/".join(PurePosixPath(member.linkname).parts[1:])
                entries[rel] = entries.get(target, TreeEntry("file", digest="hardlink:" + target))
            else:
                entries[rel] = TreeEntry("other")
    return entries


def tree_hash(entries: Mapping[str, TreeEntry]) -> str:
    h = hashlib.sha256()
    for path in sorted(entries):
        h.update(entries[path].line(path).encode("utf-8", "surrogateescape"))
    return h.hexdigest()


@dataclass(frozen=True)
class TreeChange:
    path: str
    change: Literal["modified", "deleted", "added"]

    @property
    def violation(self) -> bool:
        return self.change != "added"

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "change": self.change}


def compare_trees(
    before: Mapping[str, TreeEntry], after: Mapping[str, TreeEntry]
) -> list[TreeChange]:
    changes: list[TreeChange] = []
    for path in sorted(set(before) | set(after)):
        b, a = before.get(path), after.get(path)
        if b == a:
            continue
        if a is None:
            changes.append(TreeChange(path, "deleted"))
        elif b is None:
            changes.append(TreeChange(path, "added"))
        elif not (a.kind == b.kind == "dir"):
            changes.append(TreeChange(path, "modified"))
    return changes


def violations(changes: Iterable[TreeChange]) -> list[dict[str, str]]:
    return [
        {"kind": "source_changed", "path": c.path, "change": c.change,
         "detail": f"/workspace/{c.path} was {c.change} by the agent"}
        for c in changes if c.violation
    ]
