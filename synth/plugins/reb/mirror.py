"""Is a local git mirror complete enough to check out a commit?

REB ships no repository archives: its ``.gitignore`` leaves ``/repos/`` out and ``m2``
clones each repository from GitHub at job time (``git clone URL && git checkout SHA``,
without submodules). Offline, ``synth task import-reb --mirror URL=PATH`` points a task at a
local mirror instead; a partial one (a blob-less clone, a snapshot without its largest
files) makes the session's checkout fail later with git's words for one object. This module
lists, before any task is written, every file of the commit the mirror lacks.

A mirror is untrusted input: its ``config``, hooks and attributes are code. git runs here in
a throwaway repository of synth's own whose ``objects/info/alternates`` names the mirror's
object folder, with every configuration source off and no protocol allowed, so git reads
the mirror's objects and nothing else of it.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

_TIMEOUT_S = 600
_FIXED = ("-c", f"core.hooksPath={os.devnull}", "-c", "core.fsmonitor=false",
          "-c", "protocol.allow=never", "-c", f"core.attributesFile={os.devnull}")


@dataclass(frozen=True)
class MirrorCheck:
    mirror: Path
    commit: str
    #: Why the mirror cannot serve the commit at all (not a git folder, no such commit).
    problem: str | None = None
    #: Paths of the commit's files whose blobs the mirror lacks, sorted.
    missing: tuple[str, ...] = ()
    files: int = 0
    #: Submodule paths (REB clones without them, so they are not needed).
    submodules: tuple[str, ...] = field(default=())

    @property
    def complete(self) -> bool:
        return self.problem is None and not self.missing

    def describe(self, limit: int = 20) -> str:
        if self.problem is not None:
            return f"{self.mirror}: {self.problem}"
        if not self.missing:
            return f"{self.mirror}: all {self.files} files of {self.commit[:12]} present"
        shown = ", ".join(self.missing[:limit])
        more = len(self.missing) - limit
        return (f"{self.mirror} lacks {len(self.missing)} of the {self.files} files of "
                f"commit {self.commit[:12]}: {shown}" + (f" and {more} more" if more > 0
                                                         else ""))


def objects_dir(mirror: Path) -> Path | None:
    """The mirror's object folder: a bare repository's ``objects/``, else ``.git/objects/``
    (a ``.git`` file, a link elsewhere, is not followed)."""
    dot_git = mirror / ".git"
    for folder in (mirror, dot_git):
        if folder is dot_git and (dot_git.is_symlink() or not dot_git.is_dir()):
            continue
        candidate = folder / "objects"
        if candidate.is_dir() and not candidate.is_symlink():
            return candidate
    return None


def _git(git_dir: Path, args: list[str],
         stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(git_dir),
           "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "GIT_ATTR_NOSYSTEM": "1",
           "GIT_NO_REPLACE_OBJECTS": "1", "GIT_NO_LAZY_FETCH": "1",
           "GIT_DIR": str(git_dir), "GIT_CEILING_DIRECTORIES": str(git_dir.parent)}
    return subprocess.run(["git", *_FIXED, *args], env=env, input=stdin,
                          capture_output=True, timeout=_TIMEOUT_S, check=False)


def _tree(git_dir: Path, commit: str) -> tuple[list[tuple[str, str]], list[str]] | str:
    """(blob sha, path) of every file of ``commit`` and its submodule paths, or why not."""
    if _git(git_dir, ["cat-file", "-e", f"{commit}^{{commit}}"]).returncode != 0:
        return f"has no commit {commit}"
    proc = _git(git_dir, ["ls-tree", "-r", "-z", "--full-tree", commit])
    if proc.returncode != 0:
        why = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
        return f"cannot list the tree of {commit[:12]} (a tree object is missing: {why})"
    blobs, subs = [], []
    for entry in proc.stdout.split(b"\0"):
        if not entry:
            continue
        meta, _, path = entry.partition(b"\t")
        _mode, kind, sha = meta.decode().split()
        name = path.decode("utf-8", "replace")
        (blobs.append((sha, name)) if kind == "blob" else subs.append(name))
    return blobs, sorted(subs)


def check_mirror(mirror: Path, commit: str) -> MirrorCheck:
    """Which of ``commit``'s files ``mirror`` lacks (an empty list: it can be checked out)."""
    objects = objects_dir(mirror)
    if objects is None:
        return MirrorCheck(mirror, commit, problem="not a git repository (no objects/ folder)")
    with tempfile.TemporaryDirectory(prefix="synth-mirror-") as tmp:
        git_dir = Path(tmp) / "probe.git"
        init = subprocess.run(["git", "init", "--quiet", "--bare", "--template=", str(git_dir)],
                              capture_output=True, check=False, env={
                                  "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                                  "HOME": tmp, "GIT_CONFIG_NOSYSTEM": "1",
                                  "GIT_CONFIG_GLOBAL": os.devnull})
        if init.returncode != 0:
            return MirrorCheck(mirror, commit, problem="git cannot make a probe repository")
        (git_dir / "objects" / "info").mkdir(parents=True, exist_ok=True)
        (git_dir / "objects" / "info" / "alternates").write_text(f"{objects.resolve()}\n")
        listed = _tree(git_dir, commit)
        if isinstance(listed, str):
            return MirrorCheck(mirror, commit, problem=listed)
        blobs, subs = listed
        query = "".join(f"{sha}\n" for sha, _ in blobs).encode()
        out = _git(git_dir, ["cat-file", "--batch-check=%(objectname) %(objecttype)"],
                   stdin=query).stdout.decode().splitlines()
    absent = {line.split()[0] for line in out if line.endswith(" missing")}
    missing = tuple(sorted(path for sha, path in blobs if sha in absent))
    return MirrorCheck(mirror, commit, None, missing, len(blobs), tuple(subs))
