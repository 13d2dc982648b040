"""What ``synth verify`` found, as typed values: the orchestration (:mod:`synth.verify.command`)
returns a :class:`VerifyOutcome`, whose :attr:`~VerifyOutcome.document` is ``verify.json``
(:func:`to_document`); :mod:`synth.ui.verify_view` renders that document as ``verify.md``
and the terminal table. Pure: no I/O, no engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from synth import __version__
from synth.errors import BuildError, SynthError
from synth.formats.verify import (
    VERIFY_FAILED_FORMAT,
    VERIFY_FORMAT,
    FailureError,
    VerifyArtifactCheck,
    VerifyBuild,
    VerifyDocument,
    VerifyExport,
    VerifyFailure,
    VerifyFidelity,
    VerifyFingerprint,
    VerifyReport,
    VerifyTarget,
)
from synth.pyramid.c0_scan import DEFAULT_SCANNER, Scanner
from synth.pyramid.result import LEVELS, Level, Report

RuntimeKind = Literal["docker", "host"]
ReportKey = Literal["rebuilt", "live", "host"]


@dataclass(frozen=True)
class VerifyOptions:
    target: str | None
    rebuild: bool = False
    live: bool = False
    levels: frozenset[Level] = frozenset(LEVELS)
    require: Level = "C1"
    #: ``--levels`` was given: every level it names must not fail, unless ``--require``
    #: was given too (then it decides, as it does for the default selection).
    levels_explicit: bool = False
    require_explicit: bool = False
    runtime: RuntimeKind = "docker"
    python: Path | None = None
    repo: Path | None = None
    out_dir: Path | None = None
    scanner: Scanner = DEFAULT_SCANNER
    fingerprint: bool = True
    #: The rebuild's progress on the terminal: `steps` (each BuildKit step as it starts),
    #: `plain` (every line, as `docker build --progress plain`), or `quiet`.
    progress: str = "steps"
    #: Rebuild on a base whose rootfs differs from the one manifest.json records.
    allow_base_mismatch: bool = False
    #: Rebuild an artifact whose files differ from its manifest (the report says so).
    allow_modified: bool = False
    #: Rebuild with the network disabled (``docker build --network none``): the artifact
    #: must be bundled (``export --bundle``).
    offline: bool = False
    #: Build with the engine's build cache (``synth minimize``'s trials, which differ by a
    #: few lines); a verification of an artifact builds from scratch.
    build_cache: bool = False
    #: Scorings beside synth's own (plug-ins' names, :func:`synth.profiles.scorings`;
    #: ``--scoring``), each written into verify.json as ``scores.<name>``.
    scoring: tuple[str, ...] = ()
    #: A task imported from REB: the folder its assets step copies REB's
    #: ``benchmark_assets/cache`` from (read-only), and whether the step runs without network.
    assets_cache: Path | None = None
    assets_offline: bool = False


@dataclass(frozen=True)
class ArtifactCheck:
    """The artifact's files against its manifest.json, checked before a rebuild."""

    files: Mapping[str, str]
    problems: tuple[str, ...]
    allow_modified: bool

    def to_json(self) -> dict[str, Any]:
        return {"files": len(self.files), "problems": list(self.problems),
                "allow_modified": self.allow_modified}


@dataclass(frozen=True)
class ExportUse:
    """The artifact ``verify RUN --rebuild`` rebuilt: exported now, or an identical one reused."""

    artifact_dir: Path
    reused: bool
    #: Why it was (re-)exported, or why the existing one could be reused.
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"artifact_dir": str(self.artifact_dir), "reused": self.reused, "why": self.why}


@dataclass(frozen=True)
class BuildInfo:
    """One rebuild from scratch."""

    image: str
    image_id: str | None
    seconds: float
    artifact_dir: Path
    log: str = "build.log"
    no_cache: bool = True
    offline: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"image": self.image, "image_id": self.image_id, "seconds": self.seconds,
                "log": self.log, "no_cache": self.no_cache, "offline": self.offline,
                "artifact_dir": str(self.artifact_dir)}


@dataclass(frozen=True)
class FingerprintOutcome:
    """Live vs rebuilt fingerprints: compared (``comparison`` is the comparison's JSON), or
    not (``reason`` says why)."""

    status: Literal["compared", "error"]
    reason: str | None = None
    comparison: Mapping[str, Any] = field(default_factory=dict)
    unexplained: tuple[str, ...] = ()
    explained: tuple[str, ...] = ()
    summary: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        if self.status != "compared":
            return {"status": self.status, "reason": self.reason}
        return {"status": "compared", "a": "live", "b": "rebuilt", **self.comparison,
                "unexplained": list(self.unexplained), "explained": list(self.explained),
                "summary": list(self.summary)}


@dataclass(frozen=True)
class FidelityVerdict:
    """Does the rebuilt image do all the live one does (levels, imports, fingerprint)?"""

    live_highest: Level | None
    rebuilt_highest: Level | None
    gaps: tuple[Mapping[str, Any], ...]
    fingerprint: str
    failures: tuple[str, ...]

    @property
    def reaches_live_level(self) -> bool:
        return not self.failures

    def to_json(self) -> dict[str, Any]:
        return {"live_highest": self.live_highest, "rebuilt_highest": self.rebuilt_highest,
                "reaches_live_level": self.reaches_live_level,
                "gaps": [dict(g) for g in self.gaps], "fingerprint": self.fingerprint,
                "failures": list(self.failures)}


@dataclass(frozen=True)
class TargetInfo:
    """What TARGET named, as the report shows it."""

    kind: Literal["run", "artifact", "task"]
    path: Path
    name: str


@dataclass(frozen=True)
class VerifyOutcome:
    """Everything one ``synth verify`` found; ``document`` is its ``verify.json``."""

    options: VerifyOptions
    target: TargetInfo
    out_dir: Path
    reports: Mapping[ReportKey, Report]
    #: The report whose levels decide the exit code.
    decides: ReportKey
    export: ExportUse | None = None
    artifact_check: ArtifactCheck | None = None
    build: BuildInfo | None = None
    fingerprint: FingerprintOutcome | None = None
    fidelity: FidelityVerdict | None = None
    #: Sections added by other scorings (e.g. ``--scoring reb``), by name; verify.json
    #: carries them as ``scores.<name>``, beside synth's own verdict.
    scores: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: The code-loading risks the rebuilt artifact's export report names (``.pth`` files
    #: with code, sitecustomize, ``/etc/ld.so.preload``, modified installed modules…).
    risks: tuple[str, ...] = ()

    @property
    def levels_passed(self) -> bool:
        """No level up to ``--require`` failed; with ``--levels`` alone, no level it
        selected failed (a skipped or not-applicable one does not fail)."""
        report = self.reports[self.decides]
        if self.options.levels_explicit and not self.options.require_explicit:
            return all(r.status in ("pass", "skipped", "not_applicable")
                       for r in report.levels if r.level in self.options.levels)
        return report.passes_up_to(self.options.require)

    @property
    def passed(self) -> bool:
        """No failed level up to --require on the deciding report, and fidelity (when the
        rebuilt and live images were both verified) holds."""
        return self.levels_passed and (self.fidelity is None
                                       or self.fidelity.reaches_live_level)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    @cached_property
    def verify_document(self) -> VerifyDocument:
        """``verify.json``, typed (docs/verify.md)."""
        return to_document(self)

    @property
    def document(self) -> dict[str, Any]:
        """``verify.json``'s JSON, as written."""
        return self.verify_document.to_json()


def failure_document(target: TargetInfo, exc: SynthError, log: str | None) -> VerifyFailure:
    """``verify-failed.json`` for a rebuild of ``target`` that ``exc`` stopped (``log``: the
    build log's name in the same folder, where the build started)."""
    return VerifyFailure(
        format=VERIFY_FAILED_FORMAT, synth_version=__version__,
        target=VerifyTarget(target.kind, str(target.path), target.name),
        status="build-failed" if isinstance(exc, BuildError) else "error",
        error=FailureError(code=exc.exit_code, kind=type(exc).__name__, message=exc.message,
                           hint=exc.hint),
        log=log)


def to_document(outcome: VerifyOutcome) -> VerifyDocument:
    """``verify.json`` for ``outcome`` (docs/verify.md,
    synth/formats/schemas/verify.schema.json)."""
    art = outcome.build.artifact_dir if outcome.build is not None else None
    target = VerifyTarget(outcome.target.kind, str(outcome.target.path), outcome.target.name,
                          str(art) if art is not None else None)
    fid = outcome.fidelity
    return VerifyDocument(
        format=VERIFY_FORMAT, synth_version=__version__, target=target,
        require=outcome.options.require,
        levels_selected=tuple(sorted(outcome.options.levels)),
        build=_part(VerifyBuild, outcome.build), fidelity=_part(VerifyFidelity, fid),
        fingerprint=_part(VerifyFingerprint, outcome.fingerprint),
        report_documents={k: VerifyReport.from_json(r.to_json())
                          for k, r in outcome.reports.items()}, decides=outcome.decides,
        passed=outcome.passed,
        export=_part(VerifyExport, outcome.export),
        artifact_check=_part(VerifyArtifactCheck, outcome.artifact_check),
        fidelity_failed=("; ".join(fid.failures[:3]) if fid is not None
                         and not fid.reaches_live_level else None),
        scores={name: dict(section) for name, section in outcome.scores.items()},
        risks=outcome.risks)


def _part(cls: Any, value: Any) -> Any:
    """A section of the document, made through its model class from the outcome's JSON."""
    return cls.from_json(value.to_json()) if value is not None else None
