"""``synth verify``: rebuild an artifact from scratch and prove it with the pyramid.

TARGET is a run (directory, id, ``latest``) or an artifact directory (holding
``manifest.json``); for ``--runtime host`` it may also be a task. What gets verified:

* an artifact, ``--rebuild``: the image rebuilt from it;
* a run: its live image (committed at the end of the session); with ``--rebuild`` the run is
  exported (or its identical earlier export reused), the artifact rebuilt, and both images
  verified side by side, with the fidelity (does the rebuilt image reach the live image's
  level) and the fingerprint comparison;
* ``--runtime host --python PATH``: that interpreter on this machine (GPU hosts without
  Docker), the repo from ``--repo DIR`` or the task's repo path.

The exit code is 0 only if the image that decides (the rebuilt one where there is one, else
the single target) has no failed or unreached level up to ``--require``; skipped and
not-applicable levels do not fail it. See docs/verify.md.

This module orchestrates and returns a typed :class:`~synth.verify.outcome.VerifyOutcome`;
:mod:`synth.ui.verify_view` presents it, :mod:`synth.verify.rebuild` holds the artifact
side.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from synth import profiles
from synth.compare.fingerprint import compare_fingerprints, differences, name_content_files
from synth.config import Settings
from synth.distill.final_env import carried_variables, conda_activation
from synth.distill.source import SOURCE_DEST
from synth.engine import disk_budget
from synth.engine.base import ContainerSpec, Engine
from synth.engine.base_images import prepare_base
from synth.engine.fingerprint import ImageProbe
from synth.engine.host import HostRuntime
from synth.errors import (
    BuildError,
    GpuRuntimeUnavailableError,
    InputFileError,
    NotFoundError,
    SynthError,
    TaskError,
    UsageError,
    VerifyError,
)
from synth.formats.claims import Claims
from synth.formats.limits import Limits
from synth.formats.manifest import Manifest
from synth.formats.run import RunRecord
from synth.formats.store import (
    ENV_STATE,
    MANIFEST,
    PYTHON_STATE,
    RUN_RECORD,
    VERIFY_DOCUMENT,
    VERIFY_FAILURE,
    ArtifactDir,
    RunDir,
    is_file,
)
from synth.formats.task import Task, load_task
from synth.pyramid.claims import BadClaims
from synth.pyramid.claims import Claims as PyramidClaims
from synth.pyramid.result import LEVELS, Level, Report, fidelity, parse_level
from synth.pyramid.runner import PyramidSpec, run_pyramid
from synth.pyramid.runtime import (
    C0Scope,
    Command,
    DdpCommand,
    PyramidTask,
    Runtime,
    RuntimeFailure,
)
from synth.record.rundir import find_run
from synth.ui import console
from synth.ui.verify_view import print_table, render_markdown
from synth.util import atomic
from synth.verify.archive import check_folder_against_archive, is_archive, unpack_checked
from synth.verify.outcome import (
    ArtifactCheck,
    BuildInfo,
    ExportUse,
    FidelityVerdict,
    FingerprintOutcome,
    ReportKey,
    RuntimeKind,
    TargetInfo,
    VerifyOptions,
    VerifyOutcome,
    failure_document,
)
from synth.verify.rebuild import (
    artifact_for_run,
    check_offline,
    checked_artifact,
    rebuild,
    rebuilt_tag,
)
from synth.verify.record import write_record

Say = Callable[[str], None]

#: Re-exported for callers of the command (cli.py's ``demo`` and ``verify``).
__all__ = ["Say", "VerifyOptions", "VerifyOutcome", "check_choices", "parse_levels",
           "parse_require", "parse_scoring", "print_table", "resolve_target", "verify"]


@dataclass(frozen=True)
class Target:
    """What TARGET named, resolved: a run, an artifact, or (host runtime) a task."""

    kind: Literal["run", "artifact", "task"]
    path: Path
    task: Task | None
    #: The agent's claims (None: it wrote none; :class:`BadClaims`: why they cannot be used).
    claims: Claims | BadClaims | None
    run: RunRecord | None = None
    manifest: Manifest | None = None

    @property
    def pyramid_claims(self) -> PyramidClaims:
        """The claims as C5 takes them: the document as the agent wrote it."""
        return dict(self.claims.raw) if isinstance(self.claims, Claims) else self.claims

    @property
    def claims_file(self) -> Path | None:
        """The agent's claims file (a run's or an artifact's), for REB's report path."""
        path = self.path / "claims.json"
        return path if self.kind != "task" and is_file(path) else None

    @property
    def name(self) -> str:
        if self.task is not None:
            return self.task.name
        if self.manifest is not None:
            return self.manifest.task
        return self.path.name

    @property
    def info(self) -> TargetInfo:
        return TargetInfo(self.kind, self.path, self.name)


# ------------------------------------------------------------------------ resolving
def load_task_copy(path: Path) -> Task:
    """A task from a ``task.toml`` whose repo folder may not sit beside it (an artifact's copy).
    The copy is the artifact's own file: a link there (to a host file) is refused, unread."""
    if path.is_symlink():
        raise TaskError(f"{path}: a symbolic link; an artifact's task.toml is its own file, "
                        "never followed")
    return load_task(path, require_repo=False)


def pyramid_task(task: Task) -> PyramidTask:
    """The parts of a synth task the pyramid reads (synth/pyramid/ defines them; it imports
    no other synth)."""
    probes, c0 = task.probes, task.verify.c0
    return PyramidTask(
        name=task.name, workdir=probes.workdir,
        cpu=Command(probes.cpu.command, probes.cpu.timeout) if probes.cpu else None,
        gpu=Command(probes.gpu.command, probes.gpu.timeout) if probes.gpu else None,
        ddp=(DdpCommand(probes.ddp.command, probes.ddp.timeout, probes.ddp.gpus)
             if probes.ddp else None),
        native_modules=tuple(probes.native_modules),
        not_applicable=dict(task.not_applicable),
        c0=C0Scope(include=tuple(c0.include) if c0.include is not None else None,
                   exclude=tuple(c0.exclude) if c0.exclude is not None else None,
                   max_missing_ratio=c0.max_missing_ratio),
    )


def _claims(folder: RunDir | ArtifactDir) -> Claims | BadClaims | None:
    """The folder's claims, None when there are none, or why they are bad."""
    try:
        return folder.claims()
    except InputFileError as exc:
        return BadClaims(exc.message)


def resolve_target(ref: str | None, settings: Settings, runtime: RuntimeKind) -> Target:
    path = Path(ref) if ref else None
    if path is not None and os.path.lexists(path / "manifest.json"):
        path = path.resolve()
        artifact = ArtifactDir(path)
        task = load_task_copy(path / "task.toml") if (path / "task.toml").is_file() else None
        return Target("artifact", path, task, _claims(artifact), manifest=artifact.manifest())
    if runtime == "host" and path is not None and (
        (path / "task.toml").is_file() or path.name == "task.toml"
    ):
        task = load_task(path)
        return Target("task", task.task_dir, task, None)
    try:
        run_dir = find_run(settings, ref)
    except NotFoundError:
        if runtime == "host" and ref:
            # A task by name, looked up as `synth run TASK` does (under ./tasks).
            try:
                task = load_task(ref, Path("tasks"))
                return Target("task", task.task_dir, task, None)
            except NotFoundError:
                pass
        raise
    run_files = RunDir(run_dir)
    run = run_files.run_record()
    task_file = run.task.task_file
    task = load_task_copy(Path(task_file)) if task_file and is_file(task_file) else None
    return Target("run", run_dir, task, _claims(run_files), run=run)


def _host_repo(target: Target) -> Path | None:
    """A host copy of the repository for C0's scan: the artifact's ``source/`` (what the image
    holds), else the task's repo path; None: copied out of the container."""
    if target.kind == "artifact" and (target.path / "source").is_dir():
        return target.path / "source"
    repo = target.task.repo_path if target.task is not None else None
    return repo if repo is not None and repo.is_dir() else None


def default_out_dir(target: Target, settings: Settings, runtime: RuntimeKind) -> Path:
    if runtime == "host":
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        return settings.artifacts_dir / "verify" / f"{target.name}-host-{stamp}"
    if target.kind == "run":
        return target.path / "verify"
    if target.path.name == "export":
        return target.path.parent / "verify"
    return target.path.with_name(target.path.name + "-verify")


def _run_python(run_dir: Path) -> str:
    primary = RunDir(run_dir).python_state().primary
    if not primary:
        raise VerifyError(f"{run_dir}/state/python.json names no primary interpreter.",
                          hint="Was the run's final state captured? `synth runs show RUN`.",
                          path=RunDir(run_dir).file(PYTHON_STATE))
    return str(primary)


def _other_pythons(run_dir: Path) -> tuple[str, ...]:
    """Every interpreter of the run's final state but the primary one (a conda prefix, the
    system python3 beside a venv, a second venv), one path per real interpreter: fidelity
    compares each of them, not only the primary environment."""
    state = RunDir(run_dir).python_state()
    seen = {state.primary}
    out = []
    for i in state.interpreters:
        real = i.realpath or i.path
        if i.path in seen or real in seen or i.error:
            continue
        seen |= {i.path, real}
        out.append(i.path)
    return tuple(sorted(out))


def _manifest_python(manifest: Manifest, artifact_dir: Path) -> str:
    if not manifest.python:
        raise VerifyError(f"{artifact_dir}/manifest.json names no `python` interpreter.",
                          path=ArtifactDir(artifact_dir).file(MANIFEST))
    return manifest.python


def _source_dest(manifest: Manifest) -> str:
    """Where the artifact puts the source tree (the fingerprint compares it there)."""
    source = manifest.raw.get("source")
    return str((source.get("dest") if isinstance(source, Mapping) else None) or "/workspace")


# ------------------------------------------------------------------------ pyramid
def _pyramid(runtime: Runtime, spec: PyramidSpec, say: Say) -> Report:
    """run_pyramid, a runtime that cannot host the probes turned into a VerifyError."""
    try:
        return run_pyramid(runtime, spec, say)
    except RuntimeFailure as exc:
        raise VerifyError(str(exc)) from exc


@dataclass(frozen=True)
class ProbeContext:
    """What a task's probe container needs besides the image, for its task profile
    (:mod:`synth.profiles`: for a task imported from REB, the assets step, the agent's report
    at REB's path and REB's ``skipped`` stages); synth's own tasks add nothing."""

    task_dir: Path | None = None
    claims: Path | None = None
    workdir: str = "/workspace"
    assets_cache: Path | None = None
    assets_offline: bool = False
    #: The probe containers' limits (the task's ``[limits]`` over the host's defaults).
    limits: Limits = field(default_factory=Limits.host_default)

    def site(self, image: str) -> profiles.ProbeSite:
        return profiles.ProbeSite(self.task_dir, image, self.workdir, self.claims,
                                  self.assets_cache, self.assets_offline)


def probe_context(opts: VerifyOptions, target: Target) -> ProbeContext:
    task = target.task
    limits = Limits.host_default()
    return ProbeContext(task.task_dir if task else None, target.claims_file,
                        task.probes.workdir if task else "/workspace",
                        opts.assets_cache, opts.assets_offline,
                        task.limits.limits().over(limits) if task else limits)


def _verify_image(engine: Engine, image: str, spec: PyramidSpec, say: Say,
                  ctx: ProbeContext = ProbeContext(),
                  env: Mapping[str, str] | None = None) -> Report:
    """The pyramid in a throwaway container of ``image`` (a GPU one where the engine has a
    GPU runtime), with what the task's profile adds around it."""
    profile, site = profiles.for_task(ctx.task_dir), ctx.site(image)
    with profile.assets(engine, site, say) as install:
        def pyramid(gpus: bool) -> Report:
            with engine.container(ContainerSpec(
                    image=image, network=False, gpus=gpus, mounts=profile.probe_mounts(site),
                    labels={"synth.kind": "verify"}, env=dict(env or {}),
                    limits=ctx.limits)) as c:
                profile.before_probes(c, site)
                if install:
                    install(c)
                report = _pyramid(c, replace(spec, gpu_access="probe" if gpus else "none"),
                                  say)
                return profile.after_probes(c, report, site)

        try:
            return pyramid(engine.has_gpu_runtime())
        except GpuRuntimeUnavailableError:
            return pyramid(False)


def _verify_host(opts: VerifyOptions, base: PyramidSpec, task: Task | None, say: Say) -> Report:
    assert opts.python is not None
    rt = HostRuntime(opts.python)
    repo = opts.repo or (task.repo_path if task else None)
    if repo is None or not repo.is_dir():
        raise UsageError("The host runtime needs the repository: pass --repo DIR.",
                         hint="Or name a task whose repo.path exists on this machine.")
    repo = repo.resolve()
    say(f"Verifying {rt.python} on this host (repo {repo})")
    spec = replace(base, python=str(rt.python), repo_dir=repo, workdir=str(repo),
                   gpu_access="probe", target={"kind": "host", "host_python": str(rt.python)})
    return _pyramid(rt, spec, say)


# ------------------------------------------------------------------------ fidelity
def compare_images(engine: Engine, live: str, rebuilt: str, python_live: str,
                   python_rebuilt: str, workdir: str,
                   live_env: Mapping[str, str] | None = None,
                   others: Sequence[str] = (),
                   left_behind: Mapping[str, str] | None = None) -> FingerprintOutcome:
    """The live and rebuilt images' fingerprints, compared; each distribution whose files
    differ at the same version has the differing files named. ``live_env``: the live
    image's persisted variables (:class:`LiveImage`); ``others``: the run's other
    interpreters, whose distributions must be the same in both (:func:`other_interpreters`);
    ``left_behind``: the artifact manifest's ``source.left_behind``.
    """
    probe = ImageProbe(engine)
    try:
        a, b = name_content_files(
            probe, probe.fingerprint(live, python_live, workdir, env=live_env),
            probe.fingerprint(rebuilt, python_rebuilt, workdir))
    except SynthError as exc:
        return FingerprintOutcome("error", exc.message)
    cmp = compare_fingerprints(a, b)
    diffs = differences(cmp, b.environment, left_behind)
    return FingerprintOutcome(
        "compared", comparison={**cmp.to_json(), "differences": [d.to_json() for d in diffs]},
        unexplained=tuple(d.line for d in diffs if d.explained is None)
        + other_interpreters(probe, live, rebuilt, others, live_env),
        explained=tuple(d.line for d in diffs if d.explained is not None),
        summary=tuple(cmp.summary()))


def other_interpreters(probe: ImageProbe, live: str, rebuilt: str, pythons: Sequence[str],
                       live_env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Each other interpreter of the run, in both images: one the rebuilt image lacks (a
    conda prefix the artifact does not reproduce), or whose distributions differ by name
    or version, is a line of difference."""
    out: list[str] = []
    for python in pythons:
        try:
            had = probe.fingerprint(live, python, env=live_env).effective
        except SynthError:
            continue  # gone from the live image too: nothing to keep
        try:
            has = probe.fingerprint(rebuilt, python).effective
        except SynthError as exc:
            out.append(f"interpreter {python}: in the live image ({len(had)} distributions), "
                       f"not usable in the rebuilt one: {exc.message.splitlines()[0][:200]}")
            continue
        for name in sorted(set(had) | set(has)):
            a = had[name].version if name in had else None
            b = has[name].version if name in has else None
            if a != b:
                out.append(f"interpreter {python}: {name} {a or 'absent'} live, "
                           f"{b or 'absent'} rebuilt")
    return tuple(out)


def judge_fidelity(rebuilt: Report, live: Report,
                   fp: FingerprintOutcome | None) -> FidelityVerdict:
    """The rebuilt image reaches the live one only with no level gap and a fingerprint that
    agrees with the live one up to explained differences."""
    levels = fidelity(rebuilt, live)
    gaps = tuple(levels["gaps"])
    if fp is None:
        failures = [f"gap {g['level']}" for g in gaps] + ["the fingerprints were not compared"]
        status = "not compared"
    else:
        failures = [f"gap {g['level']}" for g in gaps]
        if fp.status != "compared":
            failures.append(f"fingerprint {fp.status}: {fp.reason}")
        else:
            failures += [f"differs: {line}" for line in fp.unexplained]
        status = fp.status
    return FidelityVerdict(levels["live_highest"], levels["rebuilt_highest"], gaps, status,
                           tuple(failures))


# ------------------------------------------------------------------------ docker
@dataclass(frozen=True)
class LiveImage:
    """The run's live image (committed at the end of the session) and its interpreter."""

    ref: str
    python: str
    #: The variables the agent persisted in start-up files (``state/env.json``) that the
    #: artifact's ``ENV`` carries: its probes run with them, as the agent's shells had them
    #: (a ``docker exec`` reads no ``~/.bashrc``).
    env: Mapping[str, str] = field(default_factory=dict)
    #: The run's other interpreters (:func:`_other_pythons`), compared as well.
    others: tuple[str, ...] = ()


_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def persisted_env(run_dir: Path, image_env: Sequence[str]) -> dict[str, str]:
    """The run's carried persisted variables (synth.distill.final_env), each ``$VAR``
    expanded against the image's own environment as the Dockerfile's one ``ENV`` does (an
    unset one is empty), and what a primary conda prefix's activation scripts set."""
    rd = RunDir(run_dir)
    carried = carried_variables(rd.env_state().persisted)[0] if rd.has(ENV_STATE) else {}
    if rd.has(PYTHON_STATE):
        state = rd.python_state()
        primary = state.primary_interpreter()
        for k, v in conda_activation(state.interpreters, primary.prefix) if primary else ():
            carried.setdefault(k, v)
    config = {name: value for name, _, value in (e.partition("=") for e in image_env)}
    return {k: _VARIABLE.sub(lambda m: config.get(m.group(1) or m.group(2), ""), v)
            for k, v in carried.items()}


@dataclass(frozen=True)
class Rebuilt:
    """What the rebuild of an artifact produced."""

    export: ExportUse | None
    check: ArtifactCheck
    build: BuildInfo
    manifest: Manifest
    python: str
    report: Report


def _live_image(opts: VerifyOptions, settings: Settings, target: Target,
                engine: Engine) -> LiveImage | None:
    """The live image to verify (or compare with): a run's own, or, for an artifact with
    --live, the run it was exported from. None where there is none and none is needed."""
    needed = opts.live or not opts.rebuild
    run_dir: Path | None = target.path if target.kind == "run" else None
    run = target.run
    if target.kind == "artifact" and opts.live:
        run_dir = _artifact_run(target, settings)
        run = RunDir(run_dir).run_record()
    if run_dir is None or run is None:
        return None
    ref = run.live_image.ref if run.live_image is not None else None
    if not ref:
        if needed:
            raise VerifyError(f"Run {run_dir} has no live image (run.json live_image).",
                              hint="Verify its artifact instead: --rebuild.",
                              path=RunDir(run_dir).file(RUN_RECORD))
        return None
    if not engine.image_exists(ref):
        pruned = run.live_image.pruned if run.live_image is not None else None
        if needed:
            raise NotFoundError(
                f"The live image {ref} was pruned on {pruned} (synth gc --keep-runs)."
                if pruned else f"The live image {ref} is not on this engine.", ref=ref,
                what="image", hint="Verify the run's artifact instead: --rebuild without "
                "--live." if pruned else None)
        return None
    config = engine.image_inspect(ref).get("Config") or {}
    return LiveImage(ref, _run_python(run_dir),
                     persisted_env(run_dir, [str(e) for e in config.get("Env") or ()]),
                     _other_pythons(run_dir))


def _artifact_run(target: Target, settings: Settings) -> Path:
    """The run an artifact was exported from (its manifest's task and run_id)."""
    task = target.manifest.task if target.manifest else None
    run_id = target.manifest.run_id if target.manifest else None
    if not task or not run_id:
        raise VerifyError(f"{target.path}/manifest.json names no run; --live has no image "
                          "to compare with.", path=ArtifactDir(target.path).file(MANIFEST))
    try:
        return find_run(settings, f"{task}/{run_id}")
    except NotFoundError as exc:
        raise NotFoundError(
            f"The run {task}/{run_id} this artifact was exported from is not under "
            f"{settings.runs_dir}, so --live has no image to compare with.",
            hint="Point --artifacts at the folder holding its runs/, or drop --live.",
            ref=f"{task}/{run_id}", what="run",
        ) from exc


def _rebuild_and_verify(opts: VerifyOptions, settings: Settings, target: Target,
                        base: PyramidSpec, out_dir: Path, engine: Engine,
                        say: Say) -> Rebuilt:
    """Export the run (or reuse its identical export) or take the artifact; check it against
    its manifest, rebuild it from scratch, and run the pyramid on the new image."""
    with failure_recorded(out_dir, target.info):
        check_rebuild_space(settings, engine, target)
        export = (artifact_for_run(target.path, settings, engine, say, bundle=opts.offline)
                  if target.kind == "run" else None)
        artifact_dir = export.artifact_dir if export else target.path
        manifest = ArtifactDir(artifact_dir).manifest()
        if export is None:  # a published folder: its manifest must be its archive's
            check_folder_against_archive(artifact_dir, manifest.raw,
                                         ArtifactDir(artifact_dir).manifest_bytes(), say)
        if opts.offline:
            check_offline(artifact_dir, manifest.raw)
        python = _manifest_python(manifest, artifact_dir)
        check = checked_artifact(artifact_dir, opts.allow_modified, say)
        if isinstance(manifest.raw.get("base"), Mapping):
            say("Base image: " + prepare_base(engine, manifest.raw["base"], artifact_dir,
                                              allow_mismatch=opts.allow_base_mismatch, say=say))
        tag = rebuilt_tag(target.name, check.files, ArtifactDir(artifact_dir).manifest_bytes())
        build = rebuild(artifact_dir, tag, settings, out_dir, say, opts.progress, opts.offline,
                        cache=opts.build_cache)
    say(f"Verifying the rebuilt image {tag}")
    report = _verify_image(engine, tag, replace(base, python=python,
                                                target={"kind": "rebuilt", "image": tag}), say,
                           probe_context(opts, target))
    return Rebuilt(export, check, build, manifest, python, report)


@contextlib.contextmanager
def failure_recorded(out_dir: Path, target: TargetInfo) -> Iterator[None]:
    """Leave ``verify-failed.json`` in ``out_dir`` (atomically) when the rebuild stops with
    a SynthError before any level runs (not a usage error: the command line's, not the
    artifact's), then let the error go on: ``synth runs list`` then says the latest verify
    failed to build, not that none ran."""
    try:
        yield
    except UsageError:
        raise
    except SynthError as exc:
        log = "build.log" if (out_dir / "build.log").is_file() and isinstance(
            exc, BuildError) else None
        atomic.write_json(out_dir / VERIFY_FAILURE.rel,
                          failure_document(target, exc, log).to_json())
        raise


def check_rebuild_space(settings: Settings, engine: Engine, target: Target) -> None:
    """Refuse a rebuild the engine's data root has no room for (a run's live image tells
    how big the rebuilt one may get; else the floor)."""
    if not settings.disk_check:
        return
    live = target.run.live_image.ref if target.run and target.run.live_image else None
    disk_budget.check_space(
        disk_budget.rebuild_needs(disk_budget.engine_data_root(engine),
                                  disk_budget.image_size(engine, live)),
        f"rebuilding {target.name}")


def _check_docker_target(opts: VerifyOptions, target: Target) -> None:
    if target.kind == "artifact" and not opts.rebuild:
        raise UsageError(f"{target.path} is an artifact: verify it with --rebuild.",
                         hint="`synth verify ARTIFACT_DIR --rebuild` builds it from scratch "
                         "and runs the pyramid on the new image.")
    if target.kind == "task":
        raise UsageError("A task is verified through a run or an artifact (or --runtime host).")


def _verify_docker(opts: VerifyOptions, settings: Settings, target: Target,
                   base: PyramidSpec, out_dir: Path, engine: Engine, say: Say) -> VerifyOutcome:
    _check_docker_target(opts, target)
    live = _live_image(opts, settings, target, engine)
    rebuilt = (_rebuild_and_verify(opts, settings, target, base, out_dir, engine, say)
               if opts.rebuild else None)
    fp: FingerprintOutcome | None = None
    if rebuilt is not None and live is not None and opts.fingerprint:
        say("Comparing environment fingerprints (live vs rebuilt)")
        # The source tree lives where the artifact puts it, whatever folder the task's
        # probes run in (a task may run them from /tmp, away from an unbuilt checkout).
        fp = compare_images(engine, live.ref, rebuilt.build.image, live.python,
                            rebuilt.python, _source_dest(rebuilt.manifest), live.env,
                            live.others, rebuilt.manifest.source.left_behind)
    reports: dict[ReportKey, Report] = {}
    if rebuilt is not None:
        reports["rebuilt"] = rebuilt.report
    if live is not None:
        say(f"Verifying the live image {live.ref}")
        reports["live"] = _verify_image(
            engine, live.ref, replace(base, python=live.python,
                                      target={"kind": "live", "image": live.ref}), say,
            probe_context(opts, target), env=live.env)
    verdict = None
    if rebuilt is not None and live is not None:
        verdict = judge_fidelity(rebuilt.report, reports["live"], fp if opts.fingerprint
                                 else FingerprintOutcome("compared"))
    return VerifyOutcome(
        options=opts, target=target.info, out_dir=out_dir, reports=reports,
        decides="rebuilt" if rebuilt is not None else "live",
        export=rebuilt.export if rebuilt else None,
        artifact_check=rebuilt.check if rebuilt else None,
        build=rebuilt.build if rebuilt else None, fingerprint=fp, fidelity=verdict,
        risks=_artifact_risks(rebuilt.build.artifact_dir) if rebuilt else ())


def _artifact_risks(artifact_dir: Path) -> tuple[str, ...]:
    """The risks the artifact's export report names (none without a report)."""
    report = ArtifactDir(artifact_dir).export_report()
    return tuple(report.risks) if report is not None else ()


# --------------------------------------------------------------------------- verify
def _check_options(opts: VerifyOptions) -> None:
    if opts.runtime == "host" and opts.python is None:
        raise UsageError("--runtime host needs --python PATH (the environment's interpreter).",
                         option="--runtime")
    if opts.runtime == "docker" and opts.python is not None:
        raise UsageError("--python belongs to --runtime host; in a container the interpreter "
                         "comes from the artifact's manifest or the run's state.",
                         option="--python")
    if opts.offline and not opts.rebuild:
        raise UsageError("--offline is about the rebuild: add --rebuild.", option="--offline")
    if opts.runtime == "host" and (opts.assets_cache is not None or opts.assets_offline):
        raise UsageError("--assets-cache and --assets-offline belong to --runtime docker "
                         "(the assets step of a REB task runs in a container).",
                         option="--assets-cache")
    if opts.assets_cache is not None and not opts.assets_cache.is_dir():
        raise UsageError(f"--assets-cache {opts.assets_cache}: not a folder.",
                         option="--assets-cache")
    if opts.assets_offline and opts.assets_cache is None:
        raise UsageError("--assets-offline needs --assets-cache DIR.",
                         hint="Give the folder REB's benchmark_assets/cache was saved to.",
                         option="--assets-offline")
    known = profiles.scorings()
    for name in opts.scoring:
        if name not in known:
            raise UsageError(f"Unknown scoring {name!r}.",
                             hint=f"Known: {', '.join(sorted(known)) or 'none installed'}.",
                             option="--scoring")


def _score(outcome: VerifyOutcome, engine: Engine | None, say: Say) -> VerifyOutcome:
    """The outcome with a section per scoring asked for in ``options.scoring``: each
    plug-in's scoring (:mod:`synth.profiles`) gets the outcome, the engine (None on the
    host runtime) and the progress printer and returns the section verify.json carries as
    ``scores.<name>``."""
    known = profiles.scorings()
    scores: dict[str, Mapping[str, Any]] = {
        name: known[name].score(name, outcome, engine, say) for name in outcome.options.scoring}
    return replace(outcome, scores=scores) if scores else outcome


def verify(opts: VerifyOptions, settings: Settings, engine: Engine | None,
           say: Say = console.say) -> VerifyOutcome:
    """Resolve TARGET, verify it (host, or rebuilt/live images on ``engine``), score it and
    write verify.json, verify.md (and the artifact's verification.json after a rebuild).
    ``engine`` is None only for ``--runtime host``, which runs no container."""
    _check_options(opts)
    if opts.runtime == "docker" and engine is None:
        raise UsageError("--runtime docker verifies in containers, and was given no engine.",
                         option="--runtime")
    opts = _published(opts, say)
    target = resolve_target(opts.target, settings, opts.runtime)
    out_dir = (opts.out_dir or default_out_dir(target, settings, opts.runtime)).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    base = PyramidSpec(python="", task=pyramid_task(target.task) if target.task else None,
                       claims=target.pyramid_claims, levels=opts.levels, scanner=opts.scanner,
                       repo_dir=_host_repo(target), redact=secret_values(target),
                       repo_in_runtime=SOURCE_DEST if target.task is not None else None)
    if opts.runtime == "host":
        outcome = VerifyOutcome(opts, target.info, out_dir,
                                {"host": _verify_host(opts, base, target.task, say)}, "host")
    else:
        assert engine is not None
        outcome = _verify_docker(opts, settings, target, base, out_dir, engine, say)
    outcome = _score(outcome, engine, say)
    _write(outcome, say)
    return outcome


def _published(opts: VerifyOptions, say: Say) -> VerifyOptions:
    """A published ``.tar.gz`` as TARGET: checked against its ``.sha256`` and unpacked
    beside it (synth.verify.archive); the folder is then the target."""
    if not is_archive(opts.target):
        return opts
    if not opts.rebuild or opts.runtime != "docker":
        raise UsageError(f"{opts.target} is a published archive: verify it with --rebuild.",
                         option="--rebuild")
    return replace(opts, target=str(unpack_checked(Path(str(opts.target)).absolute(), say)))


def _write(outcome: VerifyOutcome, say: Say) -> None:
    doc = outcome.verify_document
    atomic.write_json(outcome.out_dir / VERIFY_DOCUMENT.rel, doc.to_json())
    # A verdict is the folder's latest outcome now: an earlier failed rebuild's record goes.
    (outcome.out_dir / VERIFY_FAILURE.rel).unlink(missing_ok=True)
    atomic.write_text(outcome.out_dir / "verify.md", render_markdown(doc))
    if outcome.build is not None:  # compared with the artifact's record, then replacing it
        write_record(doc, outcome.build.artifact_dir, say)


def check_choices(*, runtime: str, scanner: str, progress: str) -> None:
    """The verify command's options that take one of a few words."""
    if runtime not in ("docker", "host") or scanner not in ("ast", "libcst"):
        raise UsageError("--runtime is docker or host; --scanner is ast or libcst.",
                         option="--runtime")
    if progress not in ("steps", "plain", "quiet"):
        raise UsageError("--progress is steps, plain or quiet.", option="--progress")


def secret_values(target: Target) -> tuple[str, ...]:
    """The values of the run's ``--agent-env`` secrets where this environment has them:
    an entrypoint that prints one has it masked in the level's reason and details."""
    names = target.run.secret_env if target.run is not None else ()
    return tuple(sorted({os.environ[n] for n in names
                         if isinstance(n, str) and os.environ.get(n)}))


def parse_scoring(text: str) -> tuple[str, ...]:
    """``--scoring``: ``synth`` (synth's verdicts only) or a plug-in's scoring
    (:func:`synth.profiles.scorings`), whose section verify.json then carries beside them."""
    if text == "synth":
        return ()
    known = profiles.scorings()
    if text not in known:
        raise UsageError(f"--scoring {text!r}: expected one of "
                         f"{', '.join(('synth', *sorted(known)))}.", option="--scoring")
    return (text,)


def parse_levels(text: str | None) -> frozenset[Level]:
    if not text:
        return frozenset(LEVELS)
    try:
        return frozenset(parse_level(p) for p in text.split(",") if p.strip())
    except ValueError as exc:
        raise UsageError(str(exc), option="--levels") from exc


def parse_require(text: str) -> Level:
    try:
        return parse_level(text)
    except ValueError as exc:
        raise UsageError(str(exc), option="--require") from exc
