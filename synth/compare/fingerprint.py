"""Comparing two environment fingerprints (:mod:`synth.formats.fingerprint`): pure.

Image IDs never repeat between builds, so "is the rebuilt image the live one?" is answered
by content. :func:`compare_fingerprints` says exactly what differs; where two images'
digests of a distribution differ at the same version, :func:`name_content_files` asks each
side's probe (:class:`DistFiles`, :mod:`synth.engine.fingerprint` for images) once more for
just those distributions' files, and the comparison names each file that differs.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from msgspec import structs

from synth.formats import verify
from synth.formats.fingerprint import (
    DistributionPrint,
    Fingerprint,
    NativeFile,
    VenvFiles,
)
from synth.record.tree import is_build_output


class DistFiles(Protocol):
    """What lists a distribution's files on one side of a comparison."""

    def with_dist_files(self, fp: Fingerprint, names: list[str]) -> Fingerprint: ...


# ---------------------------------------------------------------------------- comparing
#: One difference (the shared :class:`synth.formats.verify.Difference`).
Change = verify.Difference


@dataclass(frozen=True)
class DpkgOwner:
    """The Debian package that owns a differing path or distribution, with its version in
    each fingerprint (None: not installed there)."""

    package: str
    a: str | None
    b: str | None

    @property
    def same_version(self) -> bool:
        return self.a is not None and self.a == self.b

    @property
    def text(self) -> str:
        if self.same_version:
            return f"Debian package {self.package} {self.a} on both sides"
        return f"Debian package {self.package} ({self.a or 'absent'} -> {self.b or 'absent'})"


@dataclass(frozen=True)
class FingerprintComparison:
    """What differs between two fingerprints, by kind; every tuple is sorted by key."""

    interpreter: tuple[Change, ...]
    #: Distributions added / removed / at another version (kind "added", "removed", "version").
    packages: tuple[Change, ...]
    #: Same name and version, different files (kind "content", with ``files``: each file
    #: that differs, where both sides listed them), the same files outside the
    #: metadata folder and a different metadata folder ("metadata"), or scripts ("scripts").
    content: tuple[Change, ...]
    #: Same name and version, installed from elsewhere (kind "source"); informational.
    sources: tuple[Change, ...]
    #: Native .so files added / removed / with another sha256 (kind "added", "removed",
    #: "changed", or "debug-only" when the loaded code is identical and only debug info,
    #: symbols or the build-id differ).
    native: tuple[Change, ...]
    unowned: tuple[Change, ...]
    dpkg: tuple[Change, ...]
    #: The venv's own files outside its site directory (activation scripts, ``pyvenv.cfg``,
    #: the interpreter's links), by absolute path; nothing where either side has no record.
    venv: tuple[Change, ...] = ()
    #: The venv's prefix and what made it on each side, where both are venvs.
    venv_made: VenvMade | None = None
    #: Installed files that differ from their distribution's RECORD on one side and not on
    #: the other (kind "patched"), key "<distribution>: <path in site dir>".
    patched: tuple[Change, ...] = ()
    #: The working directory's files added / removed / changed, by relative path.
    workspace: tuple[Change, ...] = ()
    #: Environment variables the research code sees.
    environment: tuple[Change, ...] = ()
    #: (section, key) -> the Debian package owning that difference's path or distribution
    #: on every side where it is present (``dpkg -S``).
    dpkg_owned: Mapping[tuple[str, str], DpkgOwner] = field(default_factory=dict)
    #: The working directory both sides were fingerprinted in (the rebuilt side's).
    workdir: str = "/workspace"

    @property
    def packages_equal(self) -> bool:
        """Same distributions at the same versions."""
        return not self.packages

    @property
    def content_equal(self) -> bool:
        """Same distributions, versions and installed code (launcher scripts and the
        metadata folder's layout aside: kinds ``scripts`` and ``metadata``)."""
        return not self.packages and not any(c.kind == "content" for c in self.content)

    @property
    def native_equal(self) -> bool:
        """Every native file byte-identical."""
        return not self.native

    @property
    def native_code_equal(self) -> bool:
        """Same native files with the same loaded code (debug info may differ)."""
        return all(c.kind == "debug-only" for c in self.native)

    @property
    def equal(self) -> bool:
        """Equal in everything the fingerprint sees except the informational sources."""
        return not (self.interpreter or self.packages or self.content or self.native
                    or self.unowned or self.venv or self.dpkg or self.patched
                    or self.workspace or self.environment)

    def sections(self) -> dict[str, tuple[Change, ...]]:
        return {
            "interpreter": self.interpreter, "packages": self.packages,
            "patched": self.patched, "content": self.content, "sources": self.sources,
            "native": self.native, "unowned": self.unowned, "venv": self.venv,
            "dpkg": self.dpkg,
            "workspace": self.workspace, "environment": self.environment,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "equal": self.equal,
            "packages_equal": self.packages_equal,
            "content_equal": self.content_equal,
            "native_equal": self.native_equal,
            "native_code_equal": self.native_code_equal,
            **{name: [c.to_json() for c in changes] for name, changes in self.sections().items()},
        }

    def summary(self) -> list[str]:
        """One line per difference, most important first."""
        return [
            f"{name}: {c.kind} {c.key}" + (f" ({c.a} -> {c.b})" if c.a and c.b else "")
            + (f" [{c.detail}]" if c.detail else "")
            for name, changes in self.sections().items()
            for c in changes
        ]


@dataclass(frozen=True)
class VenvMade:
    """A venv compared on two sides: its prefix, and what made it on each (``uv 0.13.9``,
    ``virtualenv 20.29.1``, ``venv``)."""

    prefix: str
    a: str
    b: str


def _mapping_changes(a: Mapping[str, str], b: Mapping[str, str]) -> list[Change]:
    out: list[Change] = []
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key), b.get(key)
        if va == vb:
            continue
        kind = "added" if va is None else "removed" if vb is None else "changed"
        out.append(Change(kind, key, va, vb))
    return out


def _native_key(n: NativeFile) -> str:
    return n.path


def _native_value(n: NativeFile) -> str:
    return f"symlink:{n.symlink}" if n.symlink is not None else (n.sha256 or "")


def compare_fingerprints(a: Fingerprint, b: Fingerprint) -> FingerprintComparison:
    """What differs between ``a`` and ``b`` (pure; "added" means present in ``b`` only)."""
    interp = [Change("changed", key, va, vb) for key, va, vb in (
        ("python", a.python_version, b.python_version),
        ("implementation", a.implementation, b.implementation),
        ("glibc", a.glibc, b.glibc),
        ("machine", a.machine, b.machine),
    ) if va != vb]
    packages, content, sources = _package_changes(a, b)
    content = [_name_files(c, a, b) if c.kind in _NAMED else c for c in content]
    unowned = _mapping_changes(
        {f"{u.site}/{u.path}": u.sha256 for u in a.unowned},
        {f"{u.site}/{u.path}": u.sha256 for u in b.unowned},
    )
    unowned = [Change(c.kind, c.key, _short(c.a), _short(c.b)) for c in unowned]
    dpkg = _mapping_changes(a.dpkg, b.dpkg) if a.dpkg is not None and b.dpkg is not None else []
    workspace, env = _workspace_and_environment(a, b)
    venv, made = _venv_changes(a, b)
    by_path = {"packages": packages, "content": content, "patched": _patched(a, b),
               "native": _native_changes(a, b), "unowned": unowned, "venv": venv}
    owned = _dpkg_owned(a, b, by_path)
    sections = {name: tuple(_with_owner(name, c, owned) for c in changes)
                for name, changes in by_path.items()}
    return FingerprintComparison(
        interpreter=tuple(interp), sources=tuple(sources), dpkg=tuple(dpkg),
        workspace=tuple(workspace), environment=tuple(env), dpkg_owned=owned,
        workdir=b.workdir, venv_made=made, **sections,
    )


def _with_owner(section: str, change: Change,
                owned: Mapping[tuple[str, str], DpkgOwner]) -> Change:
    """The change with its owning Debian package named in ``detail``."""
    owner = owned.get((section, change.key))
    if owner is None:
        return change
    return structs.replace(change, detail="; ".join(filter(None, [change.detail, owner.text])))


def _dpkg_owned(a: Fingerprint, b: Fingerprint, sections: Mapping[str, Iterable[Change]]
                ) -> dict[tuple[str, str], DpkgOwner]:
    """The Debian package owning each difference's distribution or path: the same package on
    every side where it is present (a path apt owns on one side and something else wrote on
    the other has no owner)."""
    def maps(fp: Fingerprint) -> dict[str, dict[str, str | None]]:
        return {"dist": {d.name: d.dpkg for d in fp.effective.values()},
                "native": {n.path: n.dpkg for n in fp.native},
                "unowned": {f"{u.site}/{u.path}": u.dpkg for u in fp.unowned}}

    ma, mb = maps(a), maps(b)
    out: dict[tuple[str, str], DpkgOwner] = {}
    for section, changes in sections.items():
        kind = section if section in ("native", "unowned") else "dist"
        for c in changes:
            key = c.key.split(": ", 1)[0] if section == "patched" else c.key
            present = [m[kind][key] for m in (ma, mb) if key in m[kind]]
            package = present[0] if present and len(set(present)) == 1 else None
            if package:
                out[(section, c.key)] = DpkgOwner(package, _dpkg_version(a, package),
                                                  _dpkg_version(b, package))
    return out


def _dpkg_version(fp: Fingerprint, package: str) -> str | None:
    """``package``'s version in ``fp`` (a ``name:arch`` list name matches ``name`` too)."""
    if fp.dpkg is None:
        return None
    return fp.dpkg.get(package) or fp.dpkg.get(package.split(":", 1)[0])


def _package_changes(a: Fingerprint,
                     b: Fingerprint) -> tuple[list[Change], list[Change], list[Change]]:
    """(distributions added, removed or of another version; same version with other
    contents; same distribution installed from another source or by another installer)."""
    da, db = a.effective, b.effective
    packages: list[Change] = []
    content: list[Change] = []
    sources: list[Change] = []
    for name in sorted(set(da) | set(db)):
        x, y = da.get(name), db.get(name)
        if x is None and y is not None:
            packages.append(Change("added", name, None, y.version, y.source))
        elif y is None and x is not None:
            packages.append(Change("removed", name, x.version, None, x.source))
        elif x is not None and y is not None:
            if x.version != y.version:
                packages.append(Change("version", name, x.version, y.version,
                                       _source_detail(x, y)))
                continue
            content += _content_changes(name, x, y)
            if x.source != y.source or x.installer != y.installer:
                sources.append(Change("source", name, x.source, y.source,
                                      f"installer {x.installer} vs {y.installer}"))
    return packages, content, sources


def _content_changes(name: str, x: DistributionPrint, y: DistributionPrint) -> list[Change]:
    """Same name and version: ``editable`` (both editable installs of one source folder,
    linked in by different tools), ``content`` (the installed code differs), ``metadata``
    (the files outside the metadata folder are equal, the metadata folder is not: an
    egg-info from ``setup.py install`` against a wheel's dist-info), ``scripts`` (launchers
    only)."""
    if x.digest != y.digest and x.editable and y.editable and x.direct_url and \
            x.direct_url == y.direct_url:
        return [Change("editable", name, x.installer, y.installer,
                       f"both editable installs of {x.direct_url}")]
    if x.digest != y.digest and not (x.module_digest and x.module_digest == y.module_digest):
        return [Change("content", name, x.digest[:12], y.digest[:12],
                       f"{x.files} vs {y.files} files")]
    out = []
    if x.digest != y.digest:
        out.append(Change("metadata", name, x.metadata_dir, y.metadata_dir,
                          f"{x.module_files} module files equal; metadata from "
                          f"{x.files_from} vs {y.files_from}"))
    if x.scripts_digest != y.scripts_digest:
        out.append(Change("scripts", name, x.installer, y.installer, "launcher scripts differ"))
    return out


#: The content changes whose files are named: the code differs, or only its metadata
#: folder does (``METADATA``, ``WHEEL``: another backend built it).
_NAMED = frozenset({"content", "metadata"})


def _name_files(change: Change, a: Fingerprint, b: Fingerprint) -> Change:
    """A ``content`` or ``metadata`` change with the files that differ, where both sides
    listed them (:func:`name_content_files`); else with why they are not named, where that
    is known."""
    fa, fb = a.dist_files.get(change.key), b.dist_files.get(change.key)
    if fa is None or fb is None:
        why = "; ".join(e for e in (a.dist_files_error, b.dist_files_error) if e)
        return structs.replace(change, detail=f"{change.detail}; files not named: {why}") if why \
            else change
    files = content_file_changes(fa, fb)
    return structs.replace(change, files=files, detail=f"{change.detail}; {files_text(files)}")


def content_file_changes(a: Mapping[str, str], b: Mapping[str, str]) -> tuple[Change, ...]:
    """The files (path relative to the site dir -> digest) that differ between two listings
    of one distribution: added / removed / changed, by path, with short digests."""
    return tuple(Change(c.kind, c.key, _short_file(c.a), _short_file(c.b))
                 for c in _mapping_changes(a, b))


def files_text(files: Iterable[Change], limit: int = verify.FILES_NAMED) -> str:
    """``2 files differ: changed a.py, b.so; added c.py`` (the first ``limit`` by path,
    grouped by kind, then how many more)."""
    files = list(files)
    if not files:
        return "no file differs"
    shown = files[:limit]
    groups = [f"{kind} " + ", ".join(f.key for f in shown if f.kind == kind)
              for kind in ("changed", "added", "removed") if any(f.kind == kind for f in shown)]
    more = f" (and {len(files) - limit} more)" if len(files) > limit else ""
    return (f"{len(files)} file{'s' if len(files) != 1 else ''} "
            f"differ{'' if len(files) != 1 else 's'}: " + "; ".join(groups) + more)


def _short_file(value: str | None) -> str | None:
    """A file's digest, short: a native file's is its loaded code's (``code:…``)."""
    if value is not None and value.startswith("elf-code:"):
        return "code:" + value[len("elf-code:"):][:12]
    return _short(value)


def _native_changes(a: Fingerprint, b: Fingerprint) -> list[Change]:
    """Native files that differ; where only debug info or symbols differ (the loaded code
    is identical), a ``debug-only`` change."""
    native = _mapping_changes(
        {_native_key(n): _native_value(n) for n in a.native},
        {_native_key(n): _native_value(n) for n in b.native},
    )
    owners = {n.path: n.owner for n in (*a.native, *b.native) if n.owner}
    code_a = {n.path: n.code_sha256 for n in a.native}
    code_b = {n.path: n.code_sha256 for n in b.native}
    return [
        Change("debug-only", c.key, _short(c.a), _short(c.b),
               "; ".join(filter(None, [owners.get(c.key), "loaded code identical, "
                                       "debug info or symbols differ"])))
        if c.kind == "changed" and code_a.get(c.key) and code_a.get(c.key) == code_b.get(c.key)
        else Change(c.kind, c.key, _short(c.a), _short(c.b), owners.get(c.key) or "")
        for c in native
    ]


def _workspace_and_environment(a: Fingerprint,
                               b: Fingerprint) -> tuple[list[Change], list[Change]]:
    """Working-directory files (native ones left to the native section) and environment
    variables that differ; nothing where either side did not record them."""
    workspace = [Change(c.kind, c.key, _short(c.a), _short(c.b)) for c in _mapping_changes(
        a.workspace, b.workspace) if not _native_in_workdir(c.key, a, b)] if (
        a.workspace is not None and b.workspace is not None) else []
    env = _mapping_changes(a.environment, b.environment) if (
        a.environment is not None and b.environment is not None) else []
    return workspace, env


def _venv_changes(a: Fingerprint, b: Fingerprint) -> tuple[list[Change], VenvMade | None]:
    """The venv's own files that differ, by absolute path, and what made each side's venv;
    nothing where either side is not a venv or did not record it."""
    if a.venv is None or b.venv is None:
        return [], None

    def files(v: VenvFiles) -> dict[str, str]:
        root = v.prefix.rstrip("/")
        return {f"{root}/{rel}": digest for rel, digest in v.files.items()}

    def cfg(v: VenvFiles) -> dict[str, str]:
        return {f"{v.prefix.rstrip('/')}/pyvenv.cfg: {key}": value
                for key, value in v.cfg.items()}

    changes = _mapping_changes(cfg(a.venv), cfg(b.venv)) + [
        Change(c.kind, c.key, _short(c.a), _short(c.b))
        for c in _mapping_changes(files(a.venv), files(b.venv))]
    return (sorted(changes, key=lambda c: c.key),
            VenvMade(b.venv.prefix.rstrip("/"), a.venv.tool, b.venv.tool))


def _native_in_workdir(rel: str, a: Fingerprint, b: Fingerprint) -> bool:
    """A working-directory file the ``native`` section compares already (by its code)."""
    return any(n.path == f"{fp.workdir.rstrip('/')}/{rel}" and n.where == "workdir"
               for fp in (a, b) for n in fp.native)


def _patched(a: Fingerprint, b: Fingerprint) -> list[Change]:
    """Installed files that match their RECORD on one side and not on the other (or differ
    from it differently): each named with its distribution."""
    da, db = a.effective, b.effective
    out: list[Change] = []
    for name in sorted(set(da) & set(db)):
        x, y = da[name], db[name]
        gone_x, gone_y = set(x.missing_paths), set(y.missing_paths)
        for path in sorted(set(x.modified) | set(y.modified) | (gone_x ^ gone_y)):
            va = "missing" if path in gone_x else x.modified.get(path)
            vb = "missing" if path in gone_y else y.modified.get(path)
            if va == vb:
                continue
            pristine = "as packaged" if _apt_checked(x) else "as RECORD"
            out.append(Change("patched", f"{name}: {path}", _short(va) or pristine,
                              _short(vb) or pristine, _patched_how(x)))
    return out


def _apt_checked(d: DistributionPrint) -> bool:
    """Whether ``d.modified`` was checked against a Debian package's md5sums (no RECORD)."""
    return bool(d.dpkg) and d.files_from != "RECORD"


def _patched_how(d: DistributionPrint) -> str:
    if _apt_checked(d):
        return f"modified after apt installed it (md5 differs from {d.dpkg}'s md5sums)"
    return "modified after install (sha256 differs from RECORD)"


def _source_detail(x: DistributionPrint, y: DistributionPrint) -> str:
    return x.source if x.source == y.source else f"{x.source} -> {y.source}"


def _short(value: str | None) -> str | None:
    if value is None or value.startswith("symlink:"):
        return value
    return value[:12]


def native_files(fp: Fingerprint, where: Iterable[str] = ("site", "workdir")) -> list[NativeFile]:
    wanted = set(where)
    return [n for n in fp.native if n.where in wanted]


# ---------------------------------------------------------------------------- explaining
#: Workspace paths that a rebuild regenerates rather than copies: build byproducts of the
#: recorded build steps (setuptools' ``build/`` and ``*.egg-info``). docs/verify.md lists
#: each rule with why.
_REGENERATED_WORKSPACE = ("build/*", "*/build/*", "*.egg-info/*", ".eggs/*")
#: Intermediate object files of a compile (never loaded): a build's compiler checks and its
#: temporary objects leave them under names of its own (``tmp/tmpXXXXXXXX.o``).
_OBJECT_SUFFIXES = (".o", ".obj")


def explain(section: str, change: Change,
            rebuilt_env: Mapping[str, str] | None = None,
            owner: DpkgOwner | None = None, workdir: str = "/workspace",
            venv_made: VenvMade | None = None,
            left_behind: Mapping[str, str] | None = None) -> str | None:
    """Why a live (a) / rebuilt (b) difference is expected, or None when it is not (a failed
    check). ``rebuilt_env``: the rebuilt image's environment, for the activation rule;
    ``owner``: the Debian package that owns the path or distribution, for the dpkg rule;
    ``workdir``: the working directory, for the build-byproduct rule of its native files;
    ``venv_made``: what made the venv on each side, for its own files; ``left_behind``: the
    artifact's build output that a command it does not replay wrote last (workdir-relative
    path -> the command's ref; the manifest's ``source.left_behind``).

    Every rule here is documented line by line in docs/verify.md ("Explained differences").
    """
    if owner is not None and not owner.same_version:
        return (f"owned by the {owner.text}: apt's files, the package set is compared on "
                "its own (dpkg section)")
    if section == "content" and change.kind == "metadata":
        return _explain_metadata(change)
    if section == "environment":
        return _explain_env(change, rebuilt_env or {})
    if section == "venv":
        return explain_venv(change, venv_made)
    if section == "sources":
        return "same files, recorded as installed by another installer or from another source"
    if section == "native" and change.kind == "debug-only":
        return "loaded code identical; only debug info, symbols or the build-id differ"
    if section == "content" and change.kind == "editable":
        return ("an editable install of the same source folder by another tool: the code is "
                "the working tree (compared in the workspace section); only how the tool "
                "links it in (.pth files, METADATA, WHEEL) differs")
    if section == "content" and change.kind == "scripts":
        return "launcher scripts are written by the installer at install time"
    rel = change.key
    if section == "native":  # a native file of the working directory, by its absolute path
        root = workdir.rstrip("/") + "/"
        rel = change.key[len(root):] if change.key.startswith(root) else ""
    if section in ("workspace", "native") and rel and change.kind != "removed" and any(
            fnmatch.fnmatchcase(rel, p) for p in _REGENERATED_WORKSPACE):
        return "a build byproduct the rebuild regenerates"
    if (section in ("workspace", "native") and rel and change.kind == "removed"
            and is_build_output(rel, is_dir=False)):  # whatever the manifest says
        ref = next((r for top, r in (left_behind or {}).items()
                    if rel == top or rel.startswith(top.rstrip("/") + "/")), None)
        if ref is not None:
            return (f"build output that audit {ref} wrote last, a command the artifact does "
                    "not replay (an install a later one replaced, a failed build): the export "
                    "said so, and the rebuild does not make it")
    if section == "workspace" and rel.startswith(".pdm-build/"):
        return ("pdm-backend's build folder: the metadata of its editable build, which the "
                "export leaves out of source/ (build output) and a build makes again where "
                "it needs it; the code is the working tree")
    if section == "workspace" and rel.endswith(_OBJECT_SUFFIXES):
        return ("an intermediate object file of a compile, never loaded: each build's "
                "compiler writes its own, under names of its own")
    if section == "workspace" and rel == ".git/index" and change.kind == "changed":
        return ("git's index caches the stat data (times, inode numbers) of the machine "
                "that last ran git in the tree; the commits and files are compared apart")
    return None


def _explain_metadata(change: Change) -> str | None:
    """Equal module files under two metadata layouts: an ``.egg-info`` (pip's legacy
    ``setup.py install``, or a Debian package) against a ``.dist-info`` (a wheel)."""
    layouts = {Path(v).suffix for v in (change.a or "", change.b or "")}
    if layouts != {".egg-info", ".dist-info"}:
        return None
    return ("the same module files; only the metadata layout differs: an .egg-info (pip's "
            "legacy `setup.py install`, or a Debian package) against a .dist-info (installed "
            "from a built wheel)")


#: What a venv-making tool writes itself, relative to the venv (``python3.11`` and the like
#: by :data:`_VENV_PYTHON`): its activation scripts, markers and the interpreter's links
#: (``.project``: pipenv's record of the project folder its virtualenv belongs to).
_VENV_TOOL_FILES = ("bin/activate", "bin/activate.*", "bin/Activate.ps1", "bin/activate_this.py",
                    "bin/deactivate.*", "bin/pydoc.bat", ".gitignore", "CACHEDIR.TAG", "lib64",
                    ".project")
_EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
_VENV_PYTHON = re.compile(r"bin/python(3(\.\d+)?)?w?")


def explain_venv(change: Change, made: VenvMade | None) -> str | None:
    """A venv made by another tool on each side (the live run's ``uv venv`` or virtualenv,
    the rebuild's ``python3 -m venv``) has that tool's activation scripts and
    ``pyvenv.cfg``; ``pyvenv.cfg``'s ``command`` is the command line as typed, and the
    interpreter's links name the python it was typed with."""
    if made is None or not change.key.startswith(made.prefix + "/"):
        return None
    rel = change.key[len(made.prefix) + 1:]
    if rel == ".lock" and change.kind in ("added", "removed") and (
            change.a or change.b) == _EMPTY_SHA256[:12]:
        return ("uv's lock of the environment while it installs (an empty `.lock` it leaves "
                "in every venv it installs into): the rebuild installs the lock with uv")
    if made.a != made.b and (rel.startswith("pyvenv.cfg: ") or _VENV_PYTHON.fullmatch(rel)
                             or any(fnmatch.fnmatchcase(rel, p) for p in _VENV_TOOL_FILES)):
        return (f"the venv was made by {made.a} in the run and by {made.b} in the rebuild: "
                "its activation scripts, markers and pyvenv.cfg are the tool's own; the "
                "interpreter and the packages are compared apart")
    if rel == "pyvenv.cfg: command" and change.kind == "changed":
        return ("the command line that made the venv, as it was typed (`python3` or "
                "`python3.11`, a relative or absolute path); the interpreter, version and "
                "settings it made are compared apart")
    if _VENV_PYTHON.fullmatch(rel) and change.kind == "changed" and all(
            (v or "").startswith("symlink:") for v in (change.a, change.b)):
        return ("the interpreter's links name the python the venv was made with (`python3` "
                "or `python3.11`, one link to the other): which interpreter it is "
                "(pyvenv.cfg's home and executable, the interpreter section) is compared apart")
    return None


def _explain_env(change: Change, rebuilt_env: Mapping[str, str]) -> str | None:
    """The rebuilt image activates the primary environment, as verify does for the live
    image's probes: a venv (``ENV VIRTUAL_ENV``) or a conda prefix (``ENV CONDA_PREFIX``),
    its ``bin`` first on PATH."""
    why = "the rebuilt image activates the primary environment, as verify does for the live one"
    for key in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = rebuilt_env.get(key)
        if not prefix:
            continue
        if change.key == key and change.kind == "added":
            return why
        if change.key == "PATH" and change.a is not None and change.b is not None:
            first, _, rest = change.b.partition(":")
            if first.rstrip("/") == f"{prefix.rstrip('/')}/bin" and rest == change.a:
                return why
    return None


@dataclass(frozen=True)
class Difference:
    section: str
    change: Change
    explained: str | None

    def to_json(self) -> dict[str, Any]:
        return {"section": self.section, **self.change.to_json(), "explained": self.explained}

    @property
    def line(self) -> str:
        c = self.change
        text = f"{self.section}: {c.kind} {c.key}" + (
            f" ({c.a} -> {c.b})" if c.a and c.b else "") + (f" [{c.detail}]" if c.detail else "")
        return text + (f" — explained: {self.explained}" if self.explained else "")


def differences(cmp: FingerprintComparison,
                rebuilt_env: Mapping[str, str] | None = None,
                left_behind: Mapping[str, str] | None = None) -> list[Difference]:
    """Every difference, each with its explanation or None (unexplained)."""
    return [Difference(name, c, explain(name, c, rebuilt_env, cmp.dpkg_owned.get((name, c.key)),
                                        cmp.workdir, cmp.venv_made, left_behind))
            for name, changes in cmp.sections().items() for c in changes]


def name_content_files(probe: DistFiles, a: Fingerprint,
                       b: Fingerprint) -> tuple[Fingerprint, Fingerprint]:
    """``a`` and ``b`` with the per-file digests of every distribution whose content
    differs between them (one more probe call per image), so that
    :func:`compare_fingerprints` names the files that differ. A side that is not an image,
    or whose probe fails, is returned with ``dist_files_error`` saying why."""
    names = sorted(c.key for c in compare_fingerprints(a, b).content if c.kind in _NAMED)
    if not names:
        return a, b
    return probe.with_dist_files(a, names), probe.with_dist_files(b, names)
