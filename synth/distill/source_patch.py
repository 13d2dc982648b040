"""The artifact's ``source/``: the repository as the agent left it, and ``source.patch``.

The session copied the repository into ``/workspace``; the agent may have edited it (a
``sed -i`` on a config, a fixed import). Those edits are part of the setup, so the
artifact's ``source/`` is the original repository with the agent's changes applied, taken
from the run's live image:

* a file the agent modified, or a file or symlink it replaced, is taken from the final
  ``/workspace``; one it deleted is deleted; ``.git`` follows the final state too;
* a file the agent *added* is carried, except build output (:func:`synth.session.tree.
  is_build_output`: ``build/``, ``*.egg-info``, ``*.so``…, which the native build steps
  make again), a virtual environment inside the repository (recreated from the lock) and
  a file over :data:`MAX_ADDED_BYTES` (data and checkpoints; listed, ``--include`` carries
  them).

``source.patch`` is a binary-safe unified diff (``git diff --binary --full-index``) from
the repository's commit (a git checkout's ``HEAD``; else the original host copy) to
``source/``, made with the host's git under a temporary index and no user configuration,
so it is deterministic; ``git apply source.patch`` on a checkout of the commit gives
``source/``. The manifest records the commit and whether ``source/`` differs from it
(``dirty``).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from synth import safe_tar
from synth.errors import ExportError
from synth.session.tree import is_build_output

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

def _git_env(index: Path, git_dir: Path, work_tree: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(index.parent), "LC_ALL": "C", "TZ": "UTC",
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_INDEX_FILE": str(index), "GIT_DIR": str(git_dir),
        "GIT_WORK_TREE": str(work_tree), "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
    }


#: Settings that would change the diff's text, fixed whatever the repository configures.
_GIT_FIXED = ("-c", "core.quotepath=on", "-c", "diff.noprefix=false", "-c",
              "diff.mnemonicPrefix=false", "-c", "diff.relative=false", "-c", "color.ui=never",
              "-c", "core.autocrlf=false", "-c", "core.safecrlf=false", "-c",
              "diff.external=", "-c", "core.fileMode=true", "-c", "core.symlinks=true")


def _git(args: Sequence[str], env: dict[str, str], *, check: bool = True) -> bytes | None:
    try:
        proc = subprocess.run(["git", *_GIT_FIXED, *args], env=env, capture_output=True,
                              timeout=_GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ExportError(f"git {args[0]} failed while writing {PATCH_NAME}: {exc}",
                          hint="source.patch needs git on this machine.") from exc
    if proc.returncode != 0:
        if not check:
            return None
        raise ExportError(f"git {' '.join(args)} failed while writing {PATCH_NAME}: "
                          f"{proc.stderr.decode('utf-8', 'replace').strip()[-400:]}")
    return proc.stdout


def _stage(env: dict[str, str]) -> None:
    """Every file of the work tree into the temporary index, ignored ones too."""
    _git(["add", "--all", "--force", "--", ".", ":(exclude).git"], env)


def _diff(env: dict[str, str], base: str) -> tuple[bytes, tuple[str, ...]]:
    common = ["--cached", "--no-renames", "--no-ext-diff", "--no-textconv", "--no-color"]
    patch = _git(["diff", *common, "--binary", "--full-index", base, "--"], env) or b""
    names = _git(["diff", *common, "--name-status", "-z", base, "--"], env) or b""
    fields = names.decode("utf-8", "surrogateescape").split("\0")
    files = tuple(sorted(f"{s}\t{p}" for s, p in zip(fields[0::2], fields[1::2], strict=False)
                         if s))
    return patch, files


def git_patch(source: Path) -> SourcePatch:
    """``source/`` (a git checkout) against its HEAD, leaving its ``.git`` as it was: the
    blobs ``git add`` makes of added and edited files go to a temporary object folder (the
    checkout's own objects are read as alternates), so ``source/.git`` stays byte for byte
    the live ``/workspace/.git`` that the rebuilt image's fingerprint is compared with."""
    with tempfile.TemporaryDirectory(prefix="synth-patch-") as tmp:
        env = _git_env(Path(tmp) / "index", source / ".git", source)
        (Path(tmp) / "objects").mkdir()
        env["GIT_OBJECT_DIRECTORY"] = str(Path(tmp) / "objects")
        env["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = str(source / ".git" / "objects")
        head = _git(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], env, check=False)
        commit = head.decode().strip() if head else None
        _git(["read-tree", commit or "--empty"], env)
        _stage(env)
        patch, files = _diff(env, commit or _EMPTY_TREE)
    return SourcePatch(commit=commit, dirty=bool(files), patch=patch, files=files)


def tree_patch(original: Path, source: Path) -> SourcePatch:
    """``source/`` against the original copy, for a repository that is not a git checkout."""
    with tempfile.TemporaryDirectory(prefix="synth-patch-") as tmp:
        git_dir = Path(tmp) / "git"
        init_env = {k: v for k, v in _git_env(Path(tmp) / "i", git_dir, original).items()
                    if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}
        _git(["init", "--quiet", "--bare", str(git_dir)], init_env)
        env = _git_env(Path(tmp) / "index", git_dir, original)
        _stage(env)
        base = (_git(["write-tree"], env) or b"").decode().strip()
        env = _git_env(Path(tmp) / "index2", git_dir, source)
        _stage(env)
        patch, files = _diff(env, base)
    return SourcePatch(commit=None, dirty=bool(files), patch=patch, files=files)


def source_patch(original: Path | None, source: Path, *, edited: bool = True) -> SourcePatch:
    """The patch from the repository's commit (or its original copy) to ``source/``;
    ``edited`` False says ``source/`` is the original copy (no diff to make without git)."""
    if (source / ".git").is_dir():
        try:
            return git_patch(source)
        except ExportError as exc:
            # A checkout git cannot diff (objects missing from a partial clone or snapshot):
            # the patch is taken against the original copy instead, and the report says so.
            if original is None:
                raise
            fallback = tree_patch(original, source)
            return dataclasses.replace(fallback, note=(
                f"git could not diff source/ against its commit ({exc.message.splitlines()[-1]}); "
                f"{PATCH_NAME} is against the repository as the session got it"))
    if original is not None and edited:
        return tree_patch(original, source)
    return SourcePatch(commit=None, dirty=False, patch=b"", files=())
