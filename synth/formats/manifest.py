"""An artifact's ``manifest.json`` (docs/export.md): its identity, the sha256 of every file
and of the run files it was distilled from, and what its build needs. Written by the export
(:mod:`synth.export.artifact`), read by verify and diff.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

from msgspec import Meta, field

from synth.formats.base import Count, Digest, Document, Part, RunId

#: The newest manifest.json format this synth reads and writes.
MANIFEST_FORMAT: Final = 1


class ManifestBaseImage(Part, frozen=True):
    ref: str
    id: str | None
    digest: str | None


class ManifestSource(Part, frozen=True):
    """Where ``source/`` came from and how it differs from the task's commit."""

    kind: str
    dir: str
    dest: str | None
    url: str | None
    commit: str | None
    dirty: bool | None = None
    patch: str | None = None
    changed: tuple[str, ...] | None = None
    not_carried: tuple[str, ...] | None = None
    #: Build output a command the export did not keep wrote last: path -> its ref
    #: (SourcePlan.left_behind); the rebuild does not make it again.
    left_behind: dict[str, str] | None = None
    #: source/ is the final /workspace (read from the live image).
    from_final_workspace: bool | None = None


class LockSummary(Part, frozen=True):
    """One environment's lock."""

    locker: Literal["uv", "pip-tools"]
    pins: Count
    python: str
    installer: str | None = None
    build_constraints: str | None = None
    sdists: tuple[str, ...] | None = None


class AptSummary(Part, frozen=True):
    """How the .debs are pinned (apt.lock) and where the build fetches them (docs/export.md,
    Durability)."""

    packages: int
    hashed: int
    unhashed: tuple[str, ...]
    timestamp: str | None
    snapshot_template: str
    snapshot_url: str | None
    sources: tuple[Literal["mirror", "snapshot"], ...]
    bytes: int


class ArchiveSummary(Part, frozen=True):
    """With ``--archive``: the deterministic archive written beside the artifact."""

    name: str
    source_date_epoch: int
    ro_crate: str
    sbom: str
    sha256_file: str
    #: ``.zenodo.json``, the deposit metadata (absent from older artifacts).
    zenodo: str | None = None


class BaseRecipe(Part, frozen=True):
    """How ``synth base bootstrap`` makes the base image."""

    tool: Literal["debootstrap", "mmdebstrap"]
    suite: str
    include: tuple[str, ...]
    mirror: str
    variant: str | None = None
    describe: str | None = None
    packages_sha256: str | None = None
    source_date_epoch: int | None = None
    tool_version: str | None = None


class PublishedBase(Part, frozen=True):
    """A synth base as the artifact publishes it: under localhost/synth/..., with a config
    made only of its layers and recipe, so its digest is known and a base remade bit for
    bit from the recipe has it too (docs/export.md, The base)."""

    ref: str
    #: The image ID once loaded (Docker's classic store, Podman).
    config_digest: Annotated[str, Meta(pattern="^sha256:[0-9a-f]{64}$")]
    rootfs: tuple[str, ...]
    architecture: str
    #: The config's date: the recipe's SOURCE_DATE_EPOCH, else 0.
    created: int
    #: The recipe, as the base's history line.
    created_by: str
    #: The artifact's base/<name>.tar (docker load / podman load), or null.
    archive: str | None
    #: The carried archive's OCI manifest digest (Docker's containerd store shows it as the
    #: ID); null when not carried.
    manifest_digest: str | None


class BaseSummary(Part, frozen=True):
    """The base image the artifact was made on and how to remake it (docs/export.md,
    Durability)."""

    ref: str
    id: str | None
    digest: str | None
    rootfs: tuple[str, ...]
    repo_digests: tuple[str, ...]
    recipe: BaseRecipe | None
    #: A synth base's published form (absent from older artifacts and other bases).
    published: PublishedBase | None = None


class BundleKind(Part, frozen=True):
    """The vendored files of one kind (deb, wheel, sdist, download…)."""

    files: int
    bytes: int


class BundleSummary(Part, frozen=True):
    """With ``--bundle``: ``vendor/``, every file the build needs (synth.export.bundle)."""

    dir: str
    files: int
    bytes: int
    by_kind: dict[str, BundleKind]
    offline: bool
    #: ``ref: tool`` of each kept step that still reaches the network.
    needs_network: tuple[str, ...]


class Manifest(Document, frozen=True, kw_only=True):
    """An artifact's ``manifest.json``. ``raw`` is the document as read (what verify checks
    the artifact's files against)."""

    format: Literal[1]
    #: Absent from an artifact exported by an older synth (as ``base``, ``carried``,
    #: ``missing`` and ``incomplete``).
    apt: AptSummary | None = None
    #: With ``--archive``: the archive written beside the artifact.
    archive: ArchiveSummary | None = None
    base: BaseSummary | None = None
    base_image: ManifestBaseImage
    #: With ``--bundle``: the vendored files.
    bundle: BundleSummary | None = None
    #: Files of installed distributions the agent modified, carried (``carried/``).
    carried: tuple[str, ...] | None = None
    #: The agent's claims.json, carried as ``claims.json``; None without one.
    claims: str | None
    #: The command that regenerates the artifact.
    command: str
    export_format: Literal["Dockerfile"]
    #: Why the run cannot be trusted, when it was exported with ``--allow-incomplete``.
    incomplete: tuple[str, ...] | None = None
    #: sha256 of every file of the artifact, by its path.
    files: dict[str, Digest]
    #: sha256 of the run files it was distilled from, by their path in the run.
    inputs: dict[str, Digest] = field(default_factory=dict)
    locks: dict[str, LockSummary]
    #: What the artifact does not reproduce (``--allow-missing``).
    missing: tuple[str, ...] | None = None
    probes: str | None
    python: str | None
    run_id: RunId
    source: ManifestSource
    synth_version: str
    task: str
    warnings: tuple[str, ...]
    wheel_files: tuple[str, ...]
    wheelhouse_required: bool

    @property
    def base_ref(self) -> str:
        return self.base_image.ref
