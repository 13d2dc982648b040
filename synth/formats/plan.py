"""An artifact's ``plan.json`` (docs/formats.md): the frozen :class:`BuildPlan` (what to
build) and :class:`DistillReport` (how it was decided) the artifact was rendered from.

Made by distill, written by the export, read by ``synth diff`` and verify: later stages read
this data, never the rendered Dockerfile. Every object is closed (no other key is allowed).
"""

from __future__ import annotations

import shlex
from typing import Any, Final, Literal

import msgspec

from synth.formats.base import Digest, Part, check_format, convert
from synth.formats.state import DebRecord

#: plan.json: the frozen BuildPlan and DistillReport an artifact was rendered from (2: the
#: report without its per-command outcomes, which format 1 repeated; both are read).
PLAN_FORMAT: Final = 2
#: Its name in an artifact: diff and verify read it, never the rendered Dockerfile.
PLAN_FILE = "plan.json"
#: The artifact's lock of ``plan.pythons``: ``SHA256 URL PREFIX [LINK…]`` per interpreter.
MANAGED_PYTHON_LOCK = "managed-python.lock"
#: Where an artifact keeps the files it carries (``carried/<absolute path>``).
CARRIED_DIR = "carried"

PlanFormat = Literal[1, 2]
#: What distillation did with a command: ``kept`` (a step of the artifact), ``folded`` (its
#: effect lives in another step), ``dropped`` (not replayed; ``reason`` says why).
DecisionKind = Literal["kept", "folded", "dropped"]
#: A ``(name, value)`` pair: a pin, a variable.
Pair = tuple[str, str]


class PlanPart(Part, frozen=True, forbid_unknown_fields=True):
    """An object of plan.json: closed, every field written."""


class CommandOutcome(PlanPart, frozen=True, gc=False):
    """One simple command of the audit log and what distillation did with it."""

    #: ``<seq>.<index>``: the audit record and the simple command within it.
    ref: str
    command: str
    cwd: str
    extractor: str
    step: str
    decision: DecisionKind
    reason: str


class AptPlan(PlanPart, frozen=True):
    """The apt layer: (package, version) pins against the base."""

    #: ``(package, version)`` of every package added or changed against the base, sorted.
    pins: tuple[Pair, ...] = ()
    #: Installed as dependencies in the run: marked automatic after the install.
    auto: tuple[str, ...] = ()
    #: Base packages the run removed.
    remove: tuple[str, ...] = ()
    #: The pins apt's indexes described in the live container: fetched by URL and
    #: checked by sha256. The other pins (``unhashed``) go through ``apt-get install``.
    debs: tuple[DebRecord, ...] = ()
    unhashed: tuple[Pair, ...] = ()
    #: The run's end as a snapshot.debian.org timestamp (``20261129T101640Z``).
    timestamp: str | None = None


class UvSync(PlanPart, frozen=True):
    """A uv project's environment installed as uv made it: ``uv sync --frozen
    --no-install-project`` from the project's ``pyproject.toml`` and ``uv.lock`` (in
    ``source/``), checked against the environment's lock after; the project itself is then
    installed by its native step (synth.distill.uv_project)."""

    #: The project's folder in the image (the source's destination).
    project: str
    #: What the audited command that synced it chose (``--extra``, ``--group``, ``--no-dev``
    #: …), in order.
    options: tuple[str, ...]
    #: The interpreter ``uv sync`` makes the environment from (its ``--python``) where uv
    #: made it in the run (no other tool's command created it): the sync creates it, with
    #: uv's own activation scripts and ``pyvenv.cfg``; None where ``create`` makes it first.
    python: str | None = None


class ProjectInstall(PlanPart, frozen=True):
    """How a user of the project's own tool installs the environment the run installed
    with it, from ``source/`` and the project's lock file: not what the artifact runs (it
    installs the environment's lock), the reader's way without synth
    (synth.distill.tool_selection)."""

    #: ``poetry``, ``pdm`` or ``pipenv``.
    tool: str
    #: The project's folder in the image (the source's destination).
    project: str
    #: The command, run in the project's folder, with the extras and groups the run chose
    #: (``poetry install --extras ffi``).
    command: tuple[str, ...]


class PythonEnvPlan(PlanPart, frozen=True):
    """One Python environment to reproduce, and the pinned distributions it gets."""

    python: str
    kind: str
    version: str
    prefix: str
    #: argv creating it (``python3 -m venv /opt/venv``); empty for the system interpreter.
    create: tuple[str, ...]
    #: argv prefix that runs pip for this environment.
    pip: tuple[str, ...]
    lock_file: str
    pins: tuple[Pair, ...]
    index_url: str
    extra_index_urls: tuple[str, ...]
    #: find-links as the run saw them (URLs, or paths inside the container).
    find_links: tuple[str, ...]
    break_system_packages: bool
    #: Installed with ``uv sync --frozen`` from the project's uv.lock instead of
    #: ``lock_file`` (which the build then checks it against); None: from ``lock_file``.
    uv_sync: UvSync | None = None
    #: What a poetry, pdm or pipenv user runs in ``source/`` to install this environment
    #: with that tool; None where no such tool installed it.
    project_install: ProjectInstall | None = None


class CondaPin(PlanPart, frozen=True):
    """One conda package of a recreated prefix: where its archive is fetched from and the
    digest it is checked against (sha256; md5 where conda-meta had no sha256)."""

    name: str
    version: str
    build: str
    url: str
    channel: str
    subdir: str
    sha256: Digest | None
    md5: str | None


class CondaEnvPlan(PlanPart, frozen=True):
    """A conda prefix recreated at the same path from its lock's URLs, with no solve;
    the :class:`PythonEnvPlan` of its interpreter installs its pip layer after it."""

    prefix: str
    #: ``conda-<prefix>.lock``: conda's ``@EXPLICIT`` format, ``url#sha256`` lines.
    lock_file: str
    #: ``linux-64`` …: the subdir of its platform-specific packages.
    platform: str
    #: The channels its packages came from, sorted (no credentials).
    channels: tuple[str, ...]
    #: Sorted by name.
    packages: tuple[CondaPin, ...]
    #: What ``conda-meta/history`` says was asked for, in order.
    requested: tuple[str, ...] = ()


class ManagedPython(PlanPart, frozen=True):
    """An interpreter unpacked from a python-build-standalone archive at the run's path,
    checked against its sha256, before the environments made from it: the build uv
    downloaded (``tool`` ``uv``), or, for one pyenv compiled (``pyenv``), a reported
    substitution: python-build-standalone's build of the same version at pyenv's path."""

    tool: Literal["uv", "pyenv"]
    #: The build's name (uv's folder's): ``cpython-3.11.2-linux-x86_64-gnu``.
    key: str
    #: Where it lives: ``/root/.local/share/uv/python/<key>``, ``/root/.pyenv/versions/3.11.2``.
    prefix: str
    version: str
    #: Other paths that name it, made as links to ``prefix`` (uv's minor-version link
    #: ``cpython-3.11-linux-x86_64-gnu``).
    links: tuple[str, ...] = ()
    #: Links uv made to a file in it, ``(path, target as written)``: its bin folder's
    #: ``~/.local/bin/python3.11``.
    executables: tuple[Pair, ...] = ()
    #: Where the run's uv was told to look: its downloads list and its mirror, if any.
    downloads_json_url: str | None = None
    mirror: str | None = None
    #: Filled by the export (distill does no I/O): the archive's URL and sha256.
    url: str | None = None
    sha256: Digest | None = None


class NativeStep(PlanPart, frozen=True):
    """A build replayed in its original order, with the environment it ran with."""

    ref: str
    tool: str
    argv: tuple[str, ...]
    cwd: str
    env: tuple[Pair, ...]
    #: ``name==version`` this step installs, when it installs a distribution.
    distribution: str | None = None
    network: bool = False
    #: ``(sha256, path)`` the step's output is checked against (pinned downloads).
    check_sha256: tuple[str, str] | None = None
    #: How the run had ``distribution`` installed (``Distribution.source``: ``local
    #: build``, ``editable``, ``setup.py install``, ``vcs``, ``url`` or ``local file``),
    #: which the replay repeats; None when the step installs none (absent from format 1).
    source: str | None = None
    #: ``name==version`` of the build backend that built ``distribution`` live (its
    #: ``WHEEL`` file's generator), which an isolated rebuild is pinned to; None when the
    #: step builds nothing in isolation or the state does not say (absent from format 1).
    build_backend: str | None = None


class SourcePlan(PlanPart, frozen=True):
    """Where the research code comes from."""

    kind: Literal["path", "url", "none"]
    dest: str
    url: str | None = None
    commit: str | None = None
    #: Set by the export (synth.export.final_state): source/ differs from the commit (or
    #: the original copy); the diff's file name; "M\tpath" lines; added paths left out.
    dirty: bool | None = None
    patch: str | None = None
    changed: tuple[str, ...] = ()
    not_carried: tuple[str, ...] = ()
    #: Build output left out of source/ whose files a command the export did not keep
    #: wrote last (an install a later one replaced, a failed build): path -> that command's
    #: ref. The rebuild does not make it again; fidelity explains its absence by this.
    left_behind: dict[str, str] = msgspec.field(default_factory=dict)
    #: source/ is the final /workspace (read from the live image), not the host copy.
    from_final: bool = False


class CarriedFile(PlanPart, frozen=True):
    """A file of an installed distribution the agent modified, put back after the lock."""

    #: Absolute, in the image.
    path: str
    sha256: Digest
    distribution: str
    #: Of a distribution a native step builds: put back after the native steps.
    after_builds: bool = False

    @property
    def artifact_path(self) -> str:
        return f"{CARRIED_DIR}{self.path}"


class BuildPlan(PlanPart, frozen=True, kw_only=True):
    """What to build: everything the templates render, nothing about how it was decided."""

    format: PlanFormat
    task: str
    run_id: str
    base_ref: str
    base_id: str | None
    base_digest: str | None
    apt: AptPlan
    envs: tuple[PythonEnvPlan, ...]
    source: SourcePlan
    native: tuple[NativeStep, ...]
    #: Final ``ENV`` of the image: persisted variables and the primary venv on PATH.
    env: tuple[Pair, ...]
    #: Container paths the user asked to carry along (``--include``).
    includes: tuple[str, ...]
    #: The interpreter research code runs under, as a path inside the image.
    python: str
    claims: bool = False
    uses_wheelhouse: bool = False
    #: glibc of the final state (libc6), for the lock's platform tag.
    glibc: str | None = None
    #: Files of installed distributions the agent modified, put back after the lock, and
    #: what the artifact does not reproduce (``--allow-missing``): synth.export.final_state.
    carried: tuple[CarriedFile, ...] = ()
    missing: tuple[str, ...] = ()
    #: conda prefixes recreated from their conda lock before their pip layer.
    conda: tuple[CondaEnvPlan, ...] = ()
    #: Downloaded interpreters unpacked before the environments made from them.
    pythons: tuple[ManagedPython, ...] = ()
    #: The export's options that shape the artifact, as words of its command line
    #: (``--without prefix:/opt/poetry``, ``--bundle``); ``--include`` is ``includes``.
    export_options: tuple[str, ...] = ()

    @property
    def regenerate_command(self) -> str:
        """The command that makes this artifact again from its run."""
        words = [f"{self.task}/{self.run_id}"]
        for path in self.includes:
            words += ["--include", path]
        return " ".join(["synth", "export", *map(shlex.quote, (*words, *self.export_options))])


class DistillReport(PlanPart, frozen=True, kw_only=True):
    """How the plan was decided: every command's outcome, and what could not be explained.
    An artifact's plan.json (format 2) leaves out ``outcomes``, which its
    export-report.json lists; ``synth export --plan`` and format 1 have them."""

    format: PlanFormat
    outcomes: tuple[CommandOutcome, ...] = ()
    unexplained: tuple[str, ...] = ()
    not_reproducible: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    #: Why the run cannot be trusted (not succeeded, audit unverified…), when it was
    #: exported anyway with ``--allow-incomplete``; the report says so at the top.
    incomplete: tuple[str, ...] = ()
    #: Changes no audited command explains (see :mod:`synth.distill.provenance`).
    unaudited: tuple[str, ...] = ()
    #: Changes that alter which code runs: loader variables, startup files, setuid files.
    risks: tuple[str, ...] = ()

    def without_outcomes(self) -> dict[str, Any]:
        """The report as an artifact's ``plan.json`` holds it, to encode: without the
        per-command outcomes (its ``export-report.json`` lists them, once)."""
        return {name: getattr(self, name) for name in self.__struct_fields__
                if name != "outcomes"}


class PlanDocument(PlanPart, frozen=True, kw_only=True):
    """An artifact's ``plan.json``."""

    format: PlanFormat
    plan: BuildPlan
    report: DistillReport


def plan_file(plan: BuildPlan, report: DistillReport, *, outcomes: bool = False) -> Any:
    """``plan.json``, to encode: the plan and the report an artifact was rendered from; the
    report without its per-command outcomes unless ``outcomes`` (``synth export --plan``,
    which writes no ``export-report.json``). Kept out of the artifact's file, they would
    repeat its export report's 150,000 records on a long log (docs/formats.md)."""
    return {"format": PLAN_FORMAT, "plan": plan,
            "report": report if outcomes else report.without_outcomes()}


def plan_document(plan: BuildPlan, report: DistillReport, *,
                  outcomes: bool = False) -> dict[str, Any]:
    """:func:`plan_file` as the JSON document (what ``json.loads`` of the file gives)."""
    doc: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(
        plan_file(plan, report, outcomes=outcomes)))
    return doc


def read_plan_document(doc: Any, where: str) -> tuple[BuildPlan, DistillReport]:
    """A decoded plan.json document, checked: a newer format (at its top, its ``plan`` or its
    ``report``) is refused first, then anything not a plan.json, with its JSON path."""
    for part in ("", "plan", "report"):
        obj = doc if not part else doc.get(part) if isinstance(doc, dict) else None
        if isinstance(obj, dict):
            check_format(obj, PLAN_FORMAT, f"{where}: {part}" if part else where, PLAN_FILE)
    read = convert(doc, PlanDocument, where, PLAN_FILE)
    return read.plan, read.report
