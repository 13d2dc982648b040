"""The environment fingerprint: what an environment contains, by content.

The probe ``synth/pyramid/probes/fingerprint.py`` runs under the target's own Python (in a
container or on a host) and prints the interpreter, glibc, every distribution with a digest
of its files, unowned site files, a venv's own files, native ``.so`` files and dpkg
packages, with the Debian
package owning each distribution and file (``dpkg -S``). :class:`Fingerprint` is that
document, read; :mod:`synth.compare.fingerprint` compares two of them and
:mod:`synth.engine.fingerprint` runs the probe.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from synth.errors import VerifyError
from synth.formats.state import distribution_source

#: The fingerprint format this module reads; the probe writes it in ``format``.
FINGERPRINT_FORMAT = 1


@dataclass(frozen=True)
class DistributionPrint:
    """One installed distribution as the probe saw it."""

    name: str
    version: str | None
    installer: str | None
    direct_url: str | None
    #: None (installed by name from an index or find-links), "vcs", "dir", "archive",
    #: "local-archive" — PEP 610 ``direct_url.json``.
    direct_url_kind: str | None
    editable: bool
    location: str
    files: int
    #: sha256 over sorted (path relative to the site dir, sha256) of the files it installed.
    digest: str
    scripts_digest: str | None = None
    shadowed: bool = False
    requested: bool = False
    #: The metadata directory's name (``numpy-1.26.4.dist-info``, ``foo-1.0.egg-info``).
    metadata_dir: str = ""
    #: Where the file list came from: "RECORD", "installed-files.txt", "top_level.txt".
    files_from: str | None = None
    #: Files (relative to the site dir) whose sha256 differs from RECORD's: path -> sha256.
    modified: Mapping[str, str] = field(default_factory=dict)
    #: Files RECORD lists that are gone.
    missing_paths: tuple[str, ...] = ()
    #: sha256 over the files outside the metadata folder (the installed code), and how
    #: many; None from a probe that did not record it.
    module_digest: str | None = None
    module_files: int | None = None
    #: The Debian package that owns the metadata folder (``dpkg -S``); then ``modified``
    #: holds the files whose md5 differs from that package's ``md5sums`` (no RECORD).
    dpkg: str | None = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> DistributionPrint:
        """One entry of the probe's ``distributions``."""
        return cls(
            name=d["name"], version=d.get("version"), installer=d.get("installer"),
            direct_url=d.get("direct_url"), direct_url_kind=d.get("direct_url_kind"),
            editable=bool(d.get("editable")), location=d["location"],
            files=int(d.get("files", 0)), digest=d["digest"],
            scripts_digest=d.get("scripts_digest"),
            shadowed=bool(d.get("shadowed")), requested=bool(d.get("requested")),
            metadata_dir=str(d.get("metadata_dir", "")), files_from=d.get("files_from"),
            modified={str(m["path"]): str(m["sha256"]) for m in d.get("modified") or []},
            missing_paths=tuple(d.get("missing_paths") or ()),
            module_digest=d.get("module_digest"), module_files=d.get("module_files"),
            dpkg=d.get("dpkg"),
        )

    @property
    def source(self) -> str:
        """Where it came from, in words (see :func:`distribution_source`)."""
        return distribution_source(
            self.direct_url_kind, self.direct_url, self.editable,
            installer=self.installer, metadata_dir=self.metadata_dir,
            files_from=self.files_from,
        )


@dataclass(frozen=True)
class NativeFile:
    path: str
    sha256: str | None
    size: int | None
    owner: str | None
    #: "site" (a site-packages/dist-packages dir) or "workdir" (the repository).
    where: str
    symlink: str | None = None
    #: sha256 of what the loader maps (allocated ELF sections, build-id note aside): equal
    #: for two builds that differ only in debug info. None when not parsable as ELF.
    code_sha256: str | None = None
    #: The Debian package that owns the file (``dpkg -S``), if any.
    dpkg: str | None = None


@dataclass(frozen=True)
class SiteFile:
    """A file in a site dir that no distribution owns."""

    site: str
    path: str
    sha256: str
    #: The Debian package that owns the file (``dpkg -S``), if any.
    dpkg: str | None = None


@dataclass(frozen=True)
class VenvFiles:
    """A venv's own files outside its site directory that no distribution owns
    (``pyvenv.cfg``, activation scripts, the interpreter's links, anything put there)."""

    prefix: str
    #: What made it, from ``pyvenv.cfg``: ``uv 0.13.9``, ``virtualenv 20.29.1`` or ``venv``.
    tool: str
    #: Path relative to ``prefix`` -> sha256, or ``symlink:<target>`` (``pyvenv.cfg`` apart).
    files: Mapping[str, str]
    #: ``pyvenv.cfg``'s ``key = value`` lines.
    cfg: Mapping[str, str] = field(default_factory=dict)
    truncated: bool = False

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> VenvFiles:
        return cls(prefix=str(d["prefix"]), tool=str(d["tool"]),
                   files={str(k): str(v) for k, v in d["files"].items()},
                   cfg={str(k): str(v) for k, v in (d.get("cfg") or {}).items()},
                   truncated=bool(d.get("truncated")))


@dataclass(frozen=True)
class Fingerprint:
    format: int
    python_version: str
    implementation: str
    executable: str
    glibc: str | None
    machine: str
    distributions: tuple[DistributionPrint, ...]
    native: tuple[NativeFile, ...]
    unowned: tuple[SiteFile, ...]
    #: Debian packages name -> version, None where dpkg is absent.
    dpkg: Mapping[str, str] | None
    site_dirs: tuple[str, ...] = ()
    workdir: str = "/workspace"
    errors: tuple[str, ...] = ()
    stats: Mapping[str, Any] = field(default_factory=dict)
    #: The working directory's files: relative path -> sha256 / "symlink:<target>"; None
    #: when the probe that made this fingerprint did not record it.
    workspace: Mapping[str, str] | None = None
    workspace_truncated: bool = False
    #: Environment variables the research code sees (volatile ones left out); None: unknown.
    environment: Mapping[str, str] | None = None
    #: The interpreter's venv, where it is one; None too from a probe that did not look.
    venv: VenvFiles | None = None
    #: Per-file digests of some distributions (canonical name -> path relative to its site
    #: dir -> digest), asked for after a comparison (:func:`name_content_files`); the
    #: comparison then names the files of a ``content`` change.
    dist_files: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    #: Why distributions asked for are absent from ``dist_files``; None: none were refused.
    dist_files_error: str | None = None
    #: (image, interpreter) the fingerprint was taken from, where it was an image.
    origin: tuple[str, str] | None = field(default=None, compare=False)
    #: The probe's JSON as printed, for reports and ``--json``.
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def effective(self) -> dict[str, DistributionPrint]:
        """Distributions that imports resolve to, by canonical name (shadowed ones apart)."""
        return {d.name: d for d in self.distributions if not d.shadowed}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Fingerprint:
        fmt = data.get("format")
        if not isinstance(fmt, int) or fmt > FINGERPRINT_FORMAT:
            raise VerifyError(
                f"Fingerprint format {fmt!r} is not one this synth reads "
                f"(up to {FINGERPRINT_FORMAT}).",
                hint="Use the same synth version for the probe and the comparison.",
            )
        try:
            py = data["python"]
            return cls(
                format=fmt,
                python_version=str(py["version"]),
                implementation=str(py["implementation"]),
                executable=str(py["executable"]),
                glibc=data.get("glibc"),
                machine=str((data.get("platform") or {}).get("machine", "")),
                distributions=tuple(map(DistributionPrint.from_json, data["distributions"])),
                native=tuple(
                    NativeFile(
                        path=n["path"], sha256=n.get("sha256"), size=n.get("size"),
                        owner=n.get("owner"), where=n.get("where", "site"),
                        symlink=n.get("symlink"), code_sha256=n.get("code_sha256"),
                        dpkg=n.get("dpkg"),
                    )
                    for n in data["native"]
                ),
                unowned=tuple(
                    SiteFile(site=u["site"], path=u["path"], sha256=u["sha256"],
                             dpkg=u.get("dpkg"))
                    for u in data.get("unowned", [])
                ),
                dpkg=dict(data["dpkg"]) if data.get("dpkg") is not None else None,
                site_dirs=tuple(data.get("site_dirs", ())),
                workdir=str((data.get("workdir") or {}).get("path", "/workspace")),
                errors=tuple(data.get("errors", ())),
                stats=dict(data.get("stats", {})),
                workspace=(dict(data["workspace"]["files"]) if isinstance(
                    data.get("workspace"), Mapping) else None),
                workspace_truncated=bool((data.get("workspace") or {}).get("truncated")),
                environment=(dict(data["environment"]) if isinstance(
                    data.get("environment"), Mapping) else None),
                venv=(VenvFiles.from_json(data["venv"]) if isinstance(
                    data.get("venv"), Mapping) else None),
                raw=dict(data),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise VerifyError(f"Malformed fingerprint: {exc!r}.") from exc

    def to_json(self) -> dict[str, Any]:
        return dict(self.raw)
