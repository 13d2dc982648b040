"""The final state of a session, ``state/*.json`` (docs/formats.md): Python environments
(``python.json``), Debian packages (``apt.json``), the container's changes (``diff.json``),
persisted variables (``env.json``) and change times (``provenance.json``). The session
writes them; distill reads them through the store.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from msgspec import field
from msgspec.structs import force_setattr

from synth.formats.base import Count, Digest, Part

#: The newest format of each state file this synth reads and writes.
APT_STATE_FORMAT: Final = 1
PYTHON_STATE_FORMAT: Final = 1
DIFF_STATE_FORMAT: Final = 1
ENV_STATE_FORMAT: Final = 1
PROVENANCE_STATE_FORMAT: Final = 1

#: Where Debian's python3-* packages live: distributions there are the OS's, never locked.
DEBIAN_SITE = ("/usr/lib/python3/dist-packages", "/usr/lib/python3.")


# --- state/python.json -----------------------------------------------------------------------

class DirInfo(Part, frozen=True):
    editable: bool = False


class VcsInfo(Part, frozen=True):
    vcs: str | None = None
    commit_id: str | None = None
    requested_revision: str | None = None


class ArchiveInfo(Part, frozen=True):
    hash: str | None = None
    hashes: dict[str, str] | None = None


class DirectUrl(Part, frozen=True):
    """PEP 610 ``direct_url.json``, as far as synth reads it."""

    url: str
    dir_info: DirInfo | None = None
    vcs_info: VcsInfo | None = None
    archive_info: ArchiveInfo | None = None
    subdirectory: str | None = None


def direct_url_kind(direct_url: DirectUrl | None) -> str | None:
    """The kind of a PEP 610 ``direct_url.json``: ``vcs``, ``dir``, ``local-archive``
    (a ``file:`` archive), ``archive``; None without one."""
    if direct_url is None:
        return None
    if direct_url.vcs_info is not None:
        return "vcs"
    if direct_url.dir_info is not None:
        return "dir"
    return "local-archive" if direct_url.url.startswith("file:") else "archive"


def distribution_source(
    kind: str | None,
    url: str | None,
    editable: bool = False,
    *,
    installer: str | None = "pip",
    metadata_dir: str = "",
    files_from: str | None = None,
) -> str:
    """Where a distribution came from, in words, from its PEP 610 data and metadata layout.

    "index" (installed by name: an index or a find-links wheelhouse; pip does not record
    which), "local build" (a local directory), "editable", "vcs", "url" (a remote archive),
    "local file" (a wheel or sdist file), "setup.py install" (a legacy egg-info install),
    "os package" (no installer recorded: Debian's python3-* packages).
    """
    if editable:
        return "editable"
    if kind is None:
        if metadata_dir.endswith(".egg-info"):
            return "setup.py install" if files_from == "installed-files.txt" else "os package"
        return "index" if installer else "os package"
    if kind == "vcs":
        return "vcs"
    if kind == "dir":
        return "local build"
    if kind == "local-archive":
        return "local file"
    return "url"


class Distribution(Part, frozen=True):
    """One installed distribution as the probe saw it (``importlib.metadata``)."""

    #: The canonical (PEP 503) name.
    name: str
    #: As written, null when the metadata had none (:attr:`version` reads that as "").
    written_version: str | None = field(name="version")
    installer: str | None
    requested: bool | None
    direct_url: DirectUrl | None
    #: As written: the site folder, null when the probe could not tell (:attr:`location`
    #: reads that as "").
    written_location: str | None = field(name="location")
    display_name: str | None = None
    #: The ``Generator:`` of its ``WHEEL`` file (``setuptools (84.2.1)``, ``hatchling
    #: 1.27.0``): the build backend that made the wheel it was installed from; None when
    #: it has no WHEEL file (or the probe predates this field).
    wheel_generator: str | None = None

    @property
    def version(self) -> str:
        return self.written_version or ""

    @property
    def location(self) -> str:
        return self.written_location or ""

    @property
    def url(self) -> str | None:
        return self.direct_url.url if self.direct_url is not None else None

    @property
    def editable(self) -> bool:
        info = self.direct_url.dir_info if self.direct_url is not None else None
        return info is not None and info.editable

    @property
    def vcs_info(self) -> VcsInfo | None:
        return self.direct_url.vcs_info if self.direct_url is not None else None

    @property
    def unrecorded(self) -> bool:
        """Installed with no record of its installer or source (no INSTALLER, no
        ``direct_url.json``), outside Debian's site: what pip's legacy ``setup.py install``
        leaves (an old pip without ``wheel``)."""
        return (self.installer is None and self.direct_url is None
                and not self.location.startswith(DEBIAN_SITE))

    @property
    def source(self) -> str:
        """Where it came from, in :func:`distribution_source`'s words (an unrecorded one:
        "setup.py install", as the fingerprint of an image says from its egg-info)."""
        if self.unrecorded:
            return "setup.py install"
        return distribution_source(direct_url_kind(self.direct_url), self.url, self.editable,
                                   installer=self.installer)


InterpreterKind = Literal["system", "venv", "uv", "conda", "pyenv"]


class CondaPackage(Part, frozen=True):
    """One conda package of a prefix, from its ``conda-meta/<name>-<version>-<build>.json``
    record (URLs and channels without credentials)."""

    name: str
    version: str | None = None
    build: str | None = None
    #: The channel (``https://conda.anaconda.org/conda-forge``) and the archive's URL.
    channel: str | None = None
    url: str | None = None
    sha256: str | None = None
    md5: str | None = None
    #: ``linux-64``, ``noarch``…
    subdir: str | None = None
    #: The archive's file name (``python-3.11.2-0.tar.bz2``).
    fn: str | None = None
    #: Its record was there before the session (the base image's); None: not known.
    in_base: bool | None = None


class CondaPrefix(Part, frozen=True):
    """A conda prefix (a folder with ``conda-meta/``): its packages, sorted by name, and
    the specs its ``conda-meta/history`` says were asked for, in order."""

    prefix: str
    packages: tuple[CondaPackage, ...]
    requested: tuple[str, ...] = ()
    #: ``(name, value)`` of each variable its ``etc/conda/activate.d/*.sh`` scripts set
    #: (``conda activate``'s own, ``PATH`` and ``CONDA_BACKUP_*`` aside), sorted.
    activation: tuple[tuple[str, str], ...] = ()

    @property
    def added(self) -> tuple[CondaPackage, ...]:
        """The packages the session added (not in the base image's prefix)."""
        return tuple(p for p in self.packages if p.in_base is not True)


class Interpreter(Part, frozen=True):
    """A Python interpreter or environment found in the final state."""

    path: str
    kind: InterpreterKind
    #: The interpreter or its prefix was added during the session (``docker diff``).
    created_by_agent: bool
    #: Sorted by canonical name, then location.
    distributions: tuple[Distribution, ...]
    written_version: str | None = field(name="version", default=None)
    written_prefix: str | None = field(name="prefix", default=None)
    written_base_prefix: str | None = field(name="base_prefix", default=None)
    implementation: str | None = None
    realpath: str | None = None
    sys_path: tuple[str, ...] | None = None
    #: Why the probe could not list its distributions.
    error: str | None = None
    #: Its prefix's conda packages, where the prefix is a conda one (absent from older runs).
    conda: CondaPrefix | None = None

    def __post_init__(self) -> None:
        names = [d.name for d in self.distributions]
        if names != sorted(names):  # readers rely on it; a hand-made file may not be
            force_setattr(self, "distributions",
                          tuple(sorted(self.distributions, key=lambda d: d.name)))

    @property
    def version(self) -> str:
        return self.written_version or ""

    @property
    def prefix(self) -> str:
        return self.written_prefix or ""

    @property
    def base_prefix(self) -> str:
        return self.written_base_prefix or ""


class PythonState(Part, frozen=True, kw_only=True):
    """``state/python.json``: every interpreter and environment, and the one the research
    code runs under."""

    format: Literal[1]
    interpreters: tuple[Interpreter, ...]
    primary: str | None
    #: Interpreters whose probe failed.
    errors: tuple[Any, ...]

    def primary_interpreter(self) -> Interpreter | None:
        return next((i for i in self.interpreters if i.path == self.primary), None)


# --- state/apt.json --------------------------------------------------------------------------

class AptDeb(Part, frozen=True):
    """One pinned .deb as apt's indexes in the live container described it."""

    version: str
    arch: str
    sha256: Digest
    size: Count
    #: The archive root it came from (``http://deb.debian.org/debian``) and the pool path.
    mirror: str
    filename: str


class DebRecord(AptDeb, frozen=True, forbid_unknown_fields=True):
    """A pinned .deb of the plan: :class:`AptDeb` and its package name."""

    name: str


class AptState(Part, frozen=True, kw_only=True):
    """``state/apt.json``: Debian packages, base against final."""

    format: Literal[1]
    base: dict[str, str]
    final: dict[str, str]
    #: Every package new against the base, dependencies included.
    added: dict[str, str]
    changed: dict[str, tuple[str, str]]
    removed: dict[str, str]
    #: What the agent asked for by name (``apt-mark showmanual``, less the base's); sorted.
    manual: tuple[str, ...]
    #: Per pinned package, from apt's indexes in the live container (``apt-get download
    #: --print-uris``); absent from a run made before synth captured them.
    debs: dict[str, AptDeb] | None = None
    #: Pinned packages apt's indexes did not describe (lists removed, version gone).
    debs_missing: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if list(self.manual) != sorted(self.manual):
            force_setattr(self, "manual", tuple(sorted(self.manual)))

    @property
    def debs_captured(self) -> bool:
        """Whether the run captured .deb hashes at all (an older run did not)."""
        return self.debs is not None

    def deb(self, name: str) -> DebRecord | None:
        """The pinned .deb of package ``name``, if apt's indexes described it."""
        d = (self.debs or {}).get(name)
        if d is None:
            return None
        return DebRecord(name=name, version=d.version, arch=d.arch, sha256=d.sha256, size=d.size,
                         mirror=d.mirror, filename=d.filename)


# --- state/provenance.json ---------------------------------------------------------------------

class Provenance(Part, frozen=True, kw_only=True):
    """``state/provenance.json``: mtimes of changed files, apt packages and distributions,
    and the setuid/setgid files the agent added (synth.distill.provenance)."""

    format: Literal[1]
    file_times: dict[str, float]
    apt_times: dict[str, float]
    #: interpreter path -> canonical distribution name -> time
    dist_times: dict[str, dict[str, float]]
    setuid: tuple[str, ...]
    setuid_known: bool | None = None


# --- state/diff.json -------------------------------------------------------------------------

class PathChange(Part, frozen=True, omit_defaults=True):
    """One line of ``docker diff``: ``A`` added, ``C`` changed, ``D`` deleted."""

    kind: Literal["A", "C", "D"]
    path: str
    #: Why a ``noise`` item is noise (synth.util.noise); None for a real change.
    reason: str | None = None


class NoiseChange(PathChange, frozen=True, omit_defaults=True):
    """A change no environment depends on (a cache, a log), and why."""

    reason: str


class DiffState(Part, frozen=True, kw_only=True):
    """``state/diff.json``: the session container's changes, noise apart, each sorted by
    path."""

    format: Literal[1]
    changes: tuple[PathChange, ...]
    noise: tuple[NoiseChange, ...]


# --- state/env.json --------------------------------------------------------------------------

class EnvState(Part, frozen=True, kw_only=True):
    """``state/env.json``: persisted environment variables and where each was set."""

    format: Literal[1]
    persisted: dict[str, str]
    sources: dict[str, str]
