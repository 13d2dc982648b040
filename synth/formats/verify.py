"""``verify.json`` (docs/verify.md): what one ``synth verify`` found.

The writer (:func:`synth.verify.outcome.to_document`) makes a :class:`VerifyDocument` from
the typed outcome and writes its ``to_json()``; readers get the same class from
:func:`synth.formats.store.read_verify`. Its ``reports`` are verify's own
:class:`~synth.pyramid.result.Report` by key (rebuilt, live, host), made from the
document's ``reports`` section.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Annotated, Any, ClassVar, Final, Literal

import msgspec
from msgspec import Meta, field

from synth.formats.base import Count, Part, located
from synth.pyramid.result import Level, LevelResult, Report, Status

#: verify.json: :class:`VerifyDocument` writes it, the store refuses a newer one.
VERIFY_FORMAT: Final = 1
#: verify-failed.json: :class:`VerifyFailure` writes it, the store refuses a newer one.
VERIFY_FAILED_FORMAT: Final = 1
#: How many differing files of one difference verify.json and the summary lines name.
FILES_NAMED = 20

ReportKey = Literal["rebuilt", "live", "host"]


class Difference(Part, frozen=True):
    """One thing that differs between two sides (``synth diff``, fingerprints): ``kind`` is
    added, removed or changed (or a fingerprint's category); ``a``/``b`` the two sides'
    values, None where absent there."""

    kind: str
    key: str
    a: str | None
    b: str | None
    detail: str = ""
    #: A difference made of files (a distribution's content at the same version): each file
    #: that differs, by path; the JSON carries the first :data:`FILES_NAMED` and the count.
    files: tuple[Difference, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "key": self.key, "a": self.a, "b": self.b,
                               "detail": self.detail}
        if self.files:
            out["files"] = [f.to_json() for f in self.files[:FILES_NAMED]]
            out["files_differing"] = len(self.files)
        return out


class VerifyTarget(Part, frozen=True, omit_defaults=True):
    """What ``synth verify`` was given: a run, an artifact or a task, and where it is."""

    kind: Literal["run", "artifact", "task"]
    path: str
    task: str | None = None
    #: The artifact rebuilt (``verify RUN --rebuild`` exports one).
    artifact_dir: str | None = None


class VerifyBuild(Part, frozen=True, omit_defaults=True):
    """The rebuild from scratch (``build``); None fields are absent from the file."""

    image: str
    image_id: str | None
    seconds: float | None = None
    log: str | None = None
    no_cache: bool | None = None
    #: Built with ``--network none`` (``verify --offline``).
    offline: bool | None = None
    artifact_dir: str | None = None


class VerifyGap(Part, frozen=True, omit_defaults=True):
    """A level where the rebuilt image does worse than the live one."""

    level: Level
    live: str | None = None
    rebuilt: str | None = None


class VerifyFidelity(Part, frozen=True, omit_defaults=True):
    """Does the rebuilt image do all the live one does (``fidelity``)?"""

    live_highest: Level | None
    rebuilt_highest: Level | None
    reaches_live_level: bool
    gaps: tuple[VerifyGap, ...]
    #: The fingerprint comparison as fidelity judged it: compared, error, not compared.
    fingerprint: str | None = None
    failures: tuple[str, ...] | None = None


#: One difference of a fingerprint comparison's section (:meth:`Difference.to_json`).
FreeForm = tuple[dict[str, Any], ...]


class VerifyFingerprint(Part, frozen=True, omit_defaults=True):
    """Live vs rebuilt fingerprints (``fingerprint``): compared, or not (``reason`` says
    why). The comparison's sections (docs/verify.md) are kept as written; ``raw`` is the
    whole section."""

    SCHEMA_EXTRA: ClassVar[dict[str, Any] | None] = {"allOf": [{
        "if": {"properties": {"status": {"const": "compared"}}},
        "then": {"required": ["equal"], "properties": {"equal": {"type": "boolean"}}},
        "else": {"required": ["reason"], "properties": {"reason": {"type": "string"}}}}]}

    status: Literal["compared", "error", "unavailable"]
    reason: str | None = None
    a: str | None = None
    b: str | None = None
    #: Whether the two fingerprints are equal (a compared one only).
    equal: bool | None = None
    packages_equal: bool | None = None
    content_equal: bool | None = None
    native_equal: bool | None = None
    native_code_equal: bool | None = None
    interpreter: FreeForm | None = None
    packages: FreeForm | None = None
    patched: FreeForm | None = None
    content: FreeForm | None = None
    sources: FreeForm | None = None
    native: FreeForm | None = None
    unowned: FreeForm | None = None
    venv: FreeForm | None = None
    dpkg: FreeForm | None = None
    workspace: FreeForm | None = None
    environment: FreeForm | None = None
    #: Every difference with its explanation (None: unexplained).
    differences: FreeForm | None = None
    #: The differences no explanation covers, and those one does (a compared one only).
    unexplained: tuple[str, ...] | None = None
    explained: tuple[str, ...] | None = None
    summary: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.status == "compared" and self.equal is None:
            raise ValueError("`equal` is required when `status` is `compared`")
        if self.status != "compared" and self.reason is None:
            raise ValueError("`reason` is required when `status` is not `compared`")

    @property
    def raw(self) -> Mapping[str, Any]:
        """The whole section as written."""
        return self.to_json()


class VerifyExport(Part, frozen=True):
    """verify RUN --rebuild: the artifact rebuilt, exported now or an identical earlier
    export reused, and why."""

    artifact_dir: str
    reused: bool
    why: str


class VerifyArtifactCheck(Part, frozen=True, omit_defaults=True):
    """The artifact's files against its manifest, before the rebuild (``artifact_check``)."""

    problems: tuple[str, ...]
    allow_modified: bool
    #: How many files the manifest lists.
    files: int | None = None


class VerifyLevel(Part, frozen=True):
    """One level's result (synth.pyramid.result.LevelResult as written)."""

    SCHEMA_EXTRA: ClassVar[dict[str, Any] | None] = {"allOf": [{
        "if": {"properties": {"status": {"not": {"const": "pass"}}}},
        "then": {"properties": {"reason": {"type": "string"}}}}]}

    level: Level
    status: Status
    #: Why it is not a pass (a string whenever ``status`` is not ``pass``).
    reason: str | None
    metrics: dict[str, Any]
    details: dict[str, Any]
    seconds: float

    def __post_init__(self) -> None:
        if self.status != "pass" and self.reason is None:
            raise ValueError("`reason` must be a string when `status` is not `pass`")

    def result(self) -> LevelResult:
        return LevelResult(level=self.level, status=self.status, reason=self.reason,
                           metrics=self.metrics, details=self.details, seconds=self.seconds)


_REPORT_TARGET = {"properties": {"kind": {"enum": ["rebuilt", "live", "host"]}},
                  "required": ["kind"]}


class VerifyReport(Part, frozen=True):
    """The pyramid as verified on one target (synth.pyramid.result.Report as written)."""

    #: kind (rebuilt, live, host), image or host, python, runtime description.
    target: Annotated[dict[str, Any], Meta(extra_json_schema=_REPORT_TARGET)]
    levels: tuple[VerifyLevel, ...]
    highest: Level | None
    passed_levels: tuple[Level, ...] | None = None

    def __post_init__(self) -> None:
        if self.target.get("kind") not in ("rebuilt", "live", "host"):
            raise ValueError("`target.kind` must be one of rebuilt, live, host")

    def report(self) -> Report:
        return Report(target=self.target, levels=tuple(lv.result() for lv in self.levels))


class RebC0(Part, frozen=True):
    reb: Literal["success", "failure", "skipped"]
    synth: str | None
    reason: str | None
    missing_package_ratio: str | None
    #: Who measured it: reb script, synth pyright, synth C0 scan, synth.
    by: str | None = None


class RebC5(Part, frozen=True):
    reb: Literal["success", "failure"]
    synth: str | None
    path: Count
    version: Count
    capability: Count
    failure_category: str
    #: Who measured it: reb script, synth pyright, synth C0 scan, synth.
    by: str | None = None


class RebScores(Part, frozen=True):
    """``--scoring reb`` (synth.plugins.reb.scoring.score_verification): C0 and C5 of the
    deciding report as ResearchEnvBench scores them, beside synth's status of each; REB's
    job folder is ``job_dir`` (docs/bench.md)."""

    scoring: Literal["reb"]
    job_dir: str
    C0: RebC0
    C5: RebC5


#: Sections of scorings whose shape synth knows (checked when verify.json is read).
KNOWN_SCORES: Mapping[str, type[Part]] = {"reb": RebScores}
_SCORES = {"properties": {name: {"$ref": f"#/$defs/{cls.__name__}"}
                          for name, cls in KNOWN_SCORES.items()}}


class VerifyDocument(Part, frozen=True, kw_only=True, omit_defaults=True, dict=True):
    """``verify.json``. ``reports`` are verify's own Reports, made from the document's."""

    format: Literal[1]
    synth_version: str
    target: VerifyTarget
    require: Level
    levels_selected: tuple[Level, ...]
    build: VerifyBuild | None
    fidelity: VerifyFidelity | None
    fingerprint: VerifyFingerprint | None
    #: The reports by key, as written (:attr:`reports` reads them).
    report_documents: Annotated[dict[ReportKey, VerifyReport], Meta(min_length=1)] = field(
        name="reports")
    #: The report whose levels decide the verdict.
    decides: ReportKey
    passed: bool
    export: VerifyExport | None = None
    artifact_check: VerifyArtifactCheck | None = None
    #: Why fidelity failed the verdict: its first failures, joined by ``; `` (absent when
    #: it did not).
    fidelity_failed: str | None = None
    #: The code-loading risks the rebuilt artifact's export report names (docs/security.md):
    #: the artifact carries them, so verify says so beside its verdict.
    risks: tuple[str, ...] = ()
    #: With ``--scoring NAME``: that scoring's section, by name (a plug-in's scoring,
    #: synth.profiles), beside synth's own verdict.
    scores: Annotated[dict[str, dict[str, Any]], Meta(extra_json_schema=_SCORES)] = field(
        default_factory=dict)

    def __post_init__(self) -> None:
        for name, cls in KNOWN_SCORES.items():
            if name in self.scores:
                try:
                    cls.from_json(self.scores[name])
                except msgspec.ValidationError as exc:
                    raise ValueError(f"scores.{name}: {located(exc)}") from None

    @cached_property
    def reports(self) -> Mapping[str, Report]:
        """verify's own :class:`~synth.pyramid.result.Report` of each key."""
        return {k: r.report() for k, r in self.report_documents.items()}

    @property
    def deciding(self) -> Report:
        """The report that decided the verdict."""
        return self.reports[self.decides]


class FailureError(Part, frozen=True):
    """The error that stopped verify, as the ``--json`` error envelope gives it."""

    #: The exit code (15: BuildError).
    code: int
    #: The error's kind (``BuildError``, ``ExportError``, ``DiskFullError`` …).
    kind: str
    message: str
    hint: str | None


class VerifyFailure(Part, frozen=True, kw_only=True, omit_defaults=True):
    """``verify-failed.json``: a ``synth verify --rebuild`` that stopped before any level ran
    because the artifact could not be rebuilt (docs/verify.md). Written beside where
    ``verify.json`` goes; a later verify that reaches a verdict removes it, so where it is
    present it is the latest outcome of that folder (an older ``verify.json`` is kept)."""

    format: Literal[1]
    synth_version: str
    target: VerifyTarget
    #: ``build-failed``: the artifact's build failed; ``error``: the rebuild stopped
    #: before building (the export of the run, the artifact's check, the base image, the
    #: disk space).
    status: Literal["build-failed", "error"]
    error: FailureError
    #: The build's log in the same folder (``build.log``), where the build started.
    log: str | None = None
