"""The artifact's ``source/``: the repository as the agent left it, and ``source.patch``.

The session copied the repository into ``/workspace``; the agent may have edited it (a
``sed -i`` on a config, a fixed import). Those edits are part of the setup, so the
artifact's ``source/`` is the original repository with the agent's changes applied, taken
from the run's live image:

* a file the agent modified, or a file or symlink it replaced, is taken from the final
  ``/workspace``; one it deleted is deleted; ``.git`` follows the final state too;
* a file the agent *added* is carried, except build output (:func:`synth.record.tree.
  is_build_output`: ``build/``, ``*.egg-info``, ``*.so``…, which the native build steps
  make again), a virtual environment inside the repository (recreated from the lock) and
  a file over :data:`MAX_ADDED_BYTES` (data and checkpoints; listed, ``--include`` carries
  them).

``source.patch`` is a binary-safe unified diff (``git diff-tree --binary --full-index``)
from the repository's commit (the ``HEAD`` of the checkout the session got; else the
original host copy) to ``source/``, made in a throwaway repository of synth's own with no
configuration, attributes or hooks of anybody's (see "the patch" below), so it is
deterministic and no agent-written ``.git`` steers a host process; ``git apply
source.patch`` on a checkout of the commit gives ``source/`` byte for byte. The manifest
records the commit and whether ``source/`` differs from it (``dirty``).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import stat
import subprocess
import tarfile
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from synth.errors import ExportError
from synth.record.tree import is_build_output
from synth.util import safe_tar

PATCH_NAME = "source.patch"
#: An added file larger than this is not carried in ``source/`` (it is listed instead).
MAX_ADDED_BYTES = 8 * 1024 * 1024
#: Never part of the source: bytecode and tool caches differ between machines.
SKIP_NAMES = frozenset({"__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"})
#: git's empty tree (SHA-1 object format): the base of a repository with no commit.
_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_GIT_TIMEOUT_S = 600


@dataclass(frozen=True)
class SourceEdits:
    """What the final ``/workspace`` changed against the original, as applied to source/."""

    modified: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    #: Added paths left out of ``source/``, each with why.
    not_carried: tuple[str, ...] = ()


@dataclass(frozen=True)
class SourcePatch:
    """``source.patch`` and the facts the manifest records about the source."""

    #: The commit the patch starts from (a git checkout's HEAD), None without one.
    commit: str | None
    #: ``source/`` differs from the commit (or from the original copy without git).
    dirty: bool
    #: The diff's bytes; empty when ``source/`` equals its base.
    patch: bytes
    #: Paths the patch changes, ``M``/``A``/``D`` + tab + path, sorted.
    files: tuple[str, ...]
    #: Why the patch is not against the commit although ``source/`` is a git checkout.
    note: str | None = None


def skipped(rel: str) -> bool:
    """Bytecode and caches: never copied, never compared."""
    parts = PurePosixPath(rel).parts
    return any(p in SKIP_NAMES for p in parts) or rel.endswith((".pyc", ".pyo"))


def _under(rel: str, roots: Iterable[str]) -> bool:
    return any(rel == r or rel.startswith(r.rstrip("/") + "/") for r in roots)


def carry_added(rel: str, *, is_dir: bool, size: int, venvs: Sequence[str]) -> str | None:
    """Why an added path stays out of ``source/``, or None to carry it."""
    if rel == ".git" or rel.startswith(".git/"):
        return None
    if _under(rel, venvs):
        return "a Python environment (recreated from the lock)"
    if is_build_output(rel, is_dir=is_dir):
        return "build output (made again by the native build steps)"
    if not is_dir and size > MAX_ADDED_BYTES:
        return f"{size} bytes, over {MAX_ADDED_BYTES} (carry it with --include)"
    return None


def workspace_venvs(prefixes: Iterable[str], workdir: str = "/workspace") -> tuple[str, ...]:
    """Interpreter prefixes inside the repository, relative to it."""
    root = workdir.rstrip("/") + "/"
    return tuple(sorted({p[len(root):].rstrip("/") for p in prefixes if p.startswith(root)}))


def _tree_paths(root: Path) -> dict[str, bool]:
    """Relative path -> is a directory, for everything under ``root`` (symlinks not followed)."""
    out: dict[str, bool] = {}
    for dirpath, dirs, files in os.walk(root):
        base = Path(dirpath)
        for name in dirs:
            rel = (base / name).relative_to(root).as_posix()
            out[rel] = not (base / name).is_symlink()
        for name in files:
            out[(base / name).relative_to(root).as_posix()] = False
    return out


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _same_file(member: tarfile.TarFile, info: tarfile.TarInfo, path: Path) -> bool:
    if info.issym():
        return path.is_symlink() and str(path.readlink()) == info.linkname
    if not info.isfile() or path.is_symlink() or not path.is_file():
        return False
    if path.stat().st_size != info.size or bool(path.stat().st_mode & 0o111) != bool(
            info.mode & 0o111):
        return False
    fh = member.extractfile(info)
    return fh is not None and fh.read() == path.read_bytes()


def _through_link(dest: Path, rel: str) -> bool:
    """A parent of ``rel`` under ``dest`` is a symlink: writing there would leave ``dest``."""
    parts = PurePosixPath(rel).parts
    return any((dest.joinpath(*parts[:i])).is_symlink() for i in range(1, len(parts)))


#: A member refused by the extraction policy, or one the system could not write.
_NOT_PLACED: tuple[type[BaseException], ...] = (*safe_tar.REFUSED, OSError)


def _place(tar: tarfile.TarFile, info: tarfile.TarInfo, rel: str, dest: Path) -> None:
    target = dest / rel
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        target.unlink()
    elif target.is_dir() and not info.isdir():
        shutil.rmtree(target)
    info.name = rel
    safe_tar.extract(tar, info, dest, policy="tar")


def apply_workspace(tar_path: Path, dest: Path, venvs: Sequence[str]) -> SourceEdits:
    """Make ``dest`` (a copy of the original repository) the final ``/workspace``.

    ``tar_path`` is the engine's archive of ``/workspace`` (its top folder stripped)."""
    original = {r: d for r, d in _tree_paths(dest).items() if not skipped(r)}
    seen: set[str] = set()
    modified: list[str] = []
    added: list[str] = []
    left_out: dict[str, str] = {}
    with tarfile.open(tar_path, mode="r:") as tar:
        for info in tar:
            rel = "/".join(PurePosixPath(info.name).parts[1:])
            if not rel or skipped(rel) or not (info.isfile() or info.isdir() or info.issym()):
                continue
            seen.add(rel)
            if _through_link(dest, rel) or ".." in PurePosixPath(rel).parts:
                left_out[rel] = "below a symlink (not followed)"
                continue
            if rel in original:
                if (info.isdir() and original[rel]) or _same_file(tar, info, dest / rel):
                    continue
                modified.append(rel)
            elif _under(rel, left_out):
                continue
            else:
                why = carry_added(rel, is_dir=info.isdir(), size=info.size, venvs=venvs)
                if why is not None:
                    left_out[rel] = why
                    continue
                if not info.isdir():
                    added.append(rel)
            try:
                _place(tar, info, rel, dest)
            except _NOT_PLACED as exc:
                left_out[rel] = f"could not be extracted safely ({exc})"
    deleted = sorted(r for r in original if r not in seen)
    for rel in sorted(deleted, key=lambda r: -r.count("/")):
        if not _through_link(dest, rel):
            _remove(dest / rel)
    return SourceEdits(
        modified=tuple(sorted(modified)),
        added=tuple(sorted(added)),
        deleted=tuple(d for d in deleted if not original[d]),
        not_carried=tuple(f"{r}: {w}" for r, w in sorted(left_out.items())),
    )


# ------------------------------------------------------------------------ the patch
#
# Every ``.git`` here came out of a container or a download: its config (``core.fsmonitor``,
# filter and diff drivers, ``core.hooksPath``), hooks, attributes and info files are code or
# steer code, and a host git that honoured them would run an agent's commands as the user
# (git's CVE-2022-24765 lesson). So no git process here ever has such a folder as its
# ``GIT_DIR``, its work tree or its current directory. synth makes a fresh repository of
# its own in a private temporary folder (no template, no config but the fixed one below),
# reads the commit's objects through ``objects/info/alternates`` (object files are data:
# git only inflates and hashes them), resolves ``HEAD`` itself (:func:`read_head`), and
# builds the trees of ``source/`` itself, blob by blob with ``hash-object --no-filters``
# (no attribute, filter or end-of-line rule applies: the patch holds the bytes as they
# are). The only work tree git sees is an empty folder of synth's.

_HEX40 = re.compile(r"[0-9a-f]{40}")
_REF = re.compile(r"refs/[A-Za-z0-9._/-]{1,200}")
#: A ref file, ``HEAD`` or ``packed-refs`` longer than this is not read.
_MAX_REF_BYTES = 4096
_MAX_PACKED_REFS_BYTES = 64 * 1024 * 1024


def _read_small(path: Path, limit: int) -> str | None:
    """A regular file's text (never through a symlink, never past ``limit``), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return None
        data = fh.read(limit + 1)
    return None if len(data) > limit else data.decode("utf-8", "replace")


def read_head(git_dir: Path) -> str | None:
    """The commit ``HEAD`` names in ``git_dir``, read as data (no git process, no config):
    a detached ``HEAD``, or a branch from its ref file or ``packed-refs``. None when it
    names nothing synth can read."""
    head = _read_small(git_dir / "HEAD", _MAX_REF_BYTES)
    if head is None:
        return None
    head = head.strip()
    if _HEX40.fullmatch(head):
        return head
    if not head.startswith("ref: "):
        return None
    ref = head[5:].strip()
    if not _REF.fullmatch(ref) or ".." in ref.split("/"):
        return None
    loose = _read_small(git_dir.joinpath(*ref.split("/")), _MAX_REF_BYTES)
    if loose is not None and _HEX40.fullmatch(loose.strip()):
        return loose.strip()
    packed = _read_small(git_dir / "packed-refs", _MAX_PACKED_REFS_BYTES) or ""
    for line in packed.splitlines():
        sha, _, name = line.partition(" ")
        if name == ref and _HEX40.fullmatch(sha):
            return sha
    return None


@dataclass(frozen=True)
class _Git:
    """synth's own throwaway repository: the only ``GIT_DIR`` any git process here gets."""

    root: Path

    @classmethod
    def make(cls, tmp: Path, alternates: Sequence[Path] = ()) -> _Git:
        (tmp / "work").mkdir()
        repo = cls(tmp)
        repo.run(["init", "--quiet", "--template=", str(tmp / "repo")], init=True)
        if alternates:
            info = tmp / "repo" / ".git" / "objects" / "info"
            info.mkdir(parents=True, exist_ok=True)
            (info / "alternates").write_text(
                "".join(f"{a.absolute()}\n" for a in alternates), encoding="utf-8")
        return repo

    def env(self, *, init: bool = False) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.root / "work"), "LC_ALL": "C", "TZ": "UTC",
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0",
            "GIT_ATTR_NOSYSTEM": "1", "GIT_NO_REPLACE_OBJECTS": "1",
        }
        if not init:
            env.update(GIT_DIR=str(self.root / "repo" / ".git"),
                       GIT_WORK_TREE=str(self.root / "work"),
                       GIT_INDEX_FILE=str(self.root / "index"),
                       GIT_CEILING_DIRECTORIES=str(self.root))
        return env

    def run(self, args: Sequence[str], *, stdin: bytes | None = None, check: bool = True,
            init: bool = False) -> bytes | None:
        try:
            proc = subprocess.run(["git", *_GIT_FIXED, *args], env=self.env(init=init),
                                  cwd=self.root / "work", input=stdin, capture_output=True,
                                  timeout=_GIT_TIMEOUT_S, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            raise ExportError(f"git {args[0]} failed while writing {PATCH_NAME}: {exc}",
                              hint="source.patch needs git on this machine.") from exc
        if proc.returncode != 0:
            if not check:
                return None
            raise ExportError(f"git {' '.join(args[:2])} failed while writing {PATCH_NAME}: "
                              f"{proc.stderr.decode('utf-8', 'replace').strip()[-400:]}")
        return proc.stdout


#: Settings that would change the diff's text, fixed whatever anything configures; hooks
#: and the file-system monitor off even if a config were read.
_GIT_FIXED = ("-c", "core.quotepath=on", "-c", "diff.noprefix=false", "-c",
              "diff.mnemonicPrefix=false", "-c", "diff.relative=false", "-c", "color.ui=never",
              "-c", "core.autocrlf=false", "-c", "core.safecrlf=false", "-c",
              "diff.external=", "-c", "core.fileMode=true", "-c", "core.symlinks=true",
              "-c", f"core.hooksPath={os.devnull}", "-c", "core.fsmonitor=false",
              "-c", f"core.attributesFile={os.devnull}", "-c", "protocol.allow=never")


def _gitlink(root: Path, rel: str, base_links: dict[str, str]) -> str | None:
    """The commit a nested repository (a submodule or a clone inside the tree) is recorded
    at: its own ``HEAD`` when it is a ``.git`` folder, else the base tree's gitlink."""
    nested = root / rel / ".git"
    if nested.is_dir() and not nested.is_symlink():
        head = read_head(nested)
        if head:
            return head
    return base_links.get(rel)


def _tree_entries(root: Path, base_links: dict[str, str]) -> tuple[
        list[tuple[str, Path]], list[tuple[str, bytes]], dict[str, str]]:
    """What the tree of ``root`` holds, read without following links: regular files
    (mode, path), symlinks (mode 120000, their target's bytes) and gitlinks; the top
    ``.git``, bytecode and caches left out. A submodule of the commit that was never
    checked out (its folder empty, as ``git clone`` without ``--recursive`` leaves it) is
    the commit's gitlink, unchanged, as git itself sees it."""
    files: list[tuple[str, Path]] = []
    links: list[tuple[str, bytes]] = []
    gitlinks: dict[str, str] = {}
    for dirpath, dirs, names in os.walk(root):
        base = Path(dirpath)
        rel_dir = base.relative_to(root).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        if rel_dir and not dirs and not names and rel_dir[:-1] in base_links:
            gitlinks[rel_dir[:-1]] = base_links[rel_dir[:-1]]
            continue
        if rel_dir and (".git" in dirs or ".git" in names):
            commit = _gitlink(root, rel_dir[:-1], base_links)
            if commit is not None:
                gitlinks[rel_dir[:-1]] = commit
                dirs[:] = []
                continue
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in sorted([*names, *(d for d in list(dirs) if (base / d).is_symlink())]):
            rel = rel_dir + name
            if name == ".git" or skipped(rel):
                continue
            path = base / name
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                links.append((rel, os.fsencode(path.readlink())))
            elif stat.S_ISREG(st.st_mode):
                files.append((rel, path))
        dirs[:] = [d for d in dirs if not (base / d).is_symlink()]
    return files, links, gitlinks


def _write_tree(git: _Git, root: Path, base: str | None) -> str:
    """The tree object of ``root`` in ``git``'s repository, built by synth (blob by blob,
    no attributes or filters), with the nested repositories as gitlinks."""
    base_links: dict[str, str] = {}
    if base:
        listing = git.run(["ls-tree", "-r", "-z", base]) or b""
        for entry in listing.split(b"\0"):
            head, _, path = entry.partition(b"\t")
            fields = head.split()
            if len(fields) == 3 and fields[0] == b"160000":
                base_links[path.decode("utf-8", "surrogateescape")] = fields[2].decode()
    files, links, gitlinks = _tree_entries(root, base_links)
    link_dir = git.root / "links"
    link_dir.mkdir(exist_ok=True)
    paths = []
    for i, (_, file) in enumerate(files):
        if "\n" in str(file):  # --stdin-paths is line-based: hash a copy of this one
            shutil.copyfile(file, link_dir / f"f{i}")
            file = link_dir / f"f{i}"
        paths.append(str(file))
    for i, (_, target) in enumerate(links):
        (link_dir / str(i)).write_bytes(target)
        paths.append(str(link_dir / str(i)))
    shas: list[str] = []
    if paths:
        out = git.run(["hash-object", "-w", "--no-filters", "--stdin-paths"],
                      stdin="".join(f"{p}\n" for p in paths).encode("utf-8",
                                                                    "surrogateescape"))
        shas = (out or b"").decode().split()
    if len(shas) != len(paths):
        raise ExportError(f"git hash-object read {len(shas)} of {len(paths)} files while "
                          f"writing {PATCH_NAME}")
    index: list[bytes] = []
    for (rel, file), sha in zip(files, shas, strict=False):
        mode = "100755" if file.lstat().st_mode & stat.S_IXUSR else "100644"
        index.append(f"{mode} {sha}\t".encode() + rel.encode("utf-8", "surrogateescape"))
    for (rel, _), sha in zip(links, shas[len(files):], strict=True):
        index.append(f"120000 {sha}\t".encode() + rel.encode("utf-8", "surrogateescape"))
    for rel, commit in sorted(gitlinks.items()):
        index.append(f"160000 {commit}\t".encode() + rel.encode("utf-8", "surrogateescape"))
    index_file = git.root / "index"
    index_file.unlink(missing_ok=True)
    git.run(["update-index", "-z", "--index-info"], stdin=b"".join(e + b"\0" for e in index))
    tree = (git.run(["write-tree"]) or b"").decode().strip()
    index_file.unlink(missing_ok=True)
    return tree


def _diff(git: _Git, base: str, tree: str) -> tuple[bytes, tuple[str, ...]]:
    common = ["-r", "--no-renames", "--no-ext-diff", "--no-textconv", "--no-color"]
    patch = git.run(["diff-tree", "-p", *common, "--binary", "--full-index", base, tree,
                     "--"]) or b""
    names = git.run(["diff-tree", *common, "--name-status", "-z", base, tree, "--"]) or b""
    fields = names.decode("utf-8", "surrogateescape").split("\0")
    files = tuple(sorted(f"{s}\t{p}" for s, p in zip(fields[0::2], fields[1::2], strict=False)
                         if s))
    return patch, files


def git_patch(original: Path, source: Path) -> SourcePatch:
    """``source/`` against the commit the original checkout's ``HEAD`` names. Neither
    ``.git`` is used as a repository: ``HEAD`` is read as data and the objects through
    alternates, so the agent's ``source/.git`` is carried byte for byte (the rebuilt
    image's fingerprint is compared with it) and never configures anything."""
    commit = read_head(original / ".git")
    with tempfile.TemporaryDirectory(prefix="synth-patch-") as tmp:
        git = _Git.make(Path(tmp), alternates=[original / ".git" / "objects"])
        if commit is not None:
            git.run(["cat-file", "-e", f"{commit}^{{commit}}"])
        base = f"{commit}^{{tree}}" if commit else _EMPTY_TREE
        patch, files = _diff(git, base, _write_tree(git, source, commit))
    return SourcePatch(commit=commit, dirty=bool(files), patch=patch, files=files)


def tree_patch(original: Path, source: Path) -> SourcePatch:
    """``source/`` against the original copy, for a repository that is not a git checkout."""
    with tempfile.TemporaryDirectory(prefix="synth-patch-") as tmp:
        git = _Git.make(Path(tmp))
        base = _write_tree(git, original, None)
        patch, files = _diff(git, base, _write_tree(git, source, None))
    return SourcePatch(commit=None, dirty=bool(files), patch=patch, files=files)


def source_patch(original: Path | None, source: Path, *, edited: bool = True) -> SourcePatch:
    """The patch from the repository's commit (or its original copy) to ``source/``;
    ``edited`` False says ``source/`` is the original copy (no diff to make without git)."""
    if original is not None and _is_git_dir(original / ".git"):
        try:
            return git_patch(original, source)
        except ExportError as exc:
            # A checkout git cannot diff (objects missing from a partial clone or snapshot):
            # the patch is taken against the original copy instead, and the report says so.
            fallback = tree_patch(original, source)
            return dataclasses.replace(fallback, note=(
                f"git could not diff source/ against its commit ({exc.message.splitlines()[-1]}); "
                f"{PATCH_NAME} is against the repository as the session got it"))
    if original is not None and edited:
        return tree_patch(original, source)
    return SourcePatch(commit=None, dirty=False, patch=b"", files=())


def _is_git_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()
