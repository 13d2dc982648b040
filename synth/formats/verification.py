"""``verification.json``: what one ``synth verify --rebuild`` of an artifact found.

verify writes it into the artifact folder it rebuilt (:mod:`synth.verify.record`); it
travels with the artifact (the archive and the bundle carry it, a re-export keeps it), and
a later verify compares its own result with it (docs/verify.md).
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from msgspec import Meta, field

from synth.formats.base import Document, Part

#: ``verification.json``'s newest format.
VERIFICATION_FORMAT: Final = 1

_Sha256 = Annotated[str, Meta(pattern="^[0-9a-f]{64}$")]


class PreviousVerification(Part, frozen=True):
    """The record this one replaced, in short."""

    date: str
    synth_version: str
    passed: bool
    levels: dict[str, str]
    artifact_sha256: _Sha256 | None = None
    image_id: str | None = None


class VerificationRecord(Document, frozen=True, kw_only=True):
    """What synth verify --rebuild leaves in the artifact folder it rebuilt; it travels with
    the artifact (docs/verify.md, docs/export.md)."""

    format: Literal[1]
    #: When, UTC, YYYY-MM-DDTHH:MM:SSZ.
    date: str
    synth_version: str
    passed: bool
    #: Each level's status in the rebuilt image.
    levels: dict[str, str]
    highest: str | None = None
    fidelity: bool | None = None
    #: sha256 of the artifact's manifest.json, which lists every file's digest.
    artifact_sha256: _Sha256 | None = None
    #: The rebuilt image's ID.
    image_id: str | None = None
    image: str | None = None
    #: The digest of the base the rebuild started from (the published base's config
    #: digest, or the registry digest).
    base_digest: str | None = None
    docker_version: str | None = None
    architecture: str | None = None
    gpu_driver: str | None = None
    require: str | None = None
    verdict: str | None = None
    fingerprint: dict[str, Any] | None = None
    allow_modified: bool = False
    #: What changed since the previous record, one line each.
    changes: tuple[str, ...] = field(default_factory=tuple)
    previous: PreviousVerification | None = None
