"""The export's last look at the final state (glue): what the live image says
(:mod:`synth.export.live_facts`) turned into the plan's carried files, its missing
distributions, dpkg-explained paths and warnings, and the artifact's ``source/`` with its
``source.patch`` (:mod:`synth.export.source_patch`).
"""

from __future__ import annotations

import bisect
import dataclasses
import shutil
import tarfile
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from msgspec.structs import replace

from synth.distill import carried as carried_mod
from synth.distill import project_locks
from synth.distill import warnings as warn
from synth.distill.load import LoadedRun
from synth.distill.native import installs_into
from synth.distill.plan import BuildPlan, Classified, classify_log
from synth.distill.project_locks import LockCheck
from synth.distill.provenance import code_loading_risks, merged_risks
from synth.distill.steps import PipInstall
from synth.errors import ExportError, InputFileError
from synth.export import live_facts
from synth.export.live_facts import LiveFacts, LiveImage
from synth.export.source_patch import (
    BUILD_OUTPUT,
    PATCH_NAME,
    SourceEdits,
    apply_workspace,
    source_patch,
    workspace_venvs,
)
from synth.formats import artifact_files
from synth.formats.fingerprint import Fingerprint
from synth.formats.plan import CarriedFile, CommandOutcome, DistillReport, PythonEnvPlan
from synth.formats.store import RunDir
from synth.record import tree
from synth.util import safe_io


def _named_by_pip(run: LoadedRun, classified: Sequence[Classified] | None) -> set[str]:
    """Distribution names that a successful audited pip/uv install named as requirements
    (``classified``: the log's classified commands, when the exporter has them)."""
    names: set[str] = set()
    for cmd, _x, step in classified if classified is not None else classify_log(run):
        if cmd.succeeded and isinstance(step, PipInstall):
            names |= {carried_mod.norm_name(warn.requirement_name(r))
                      for r in step.requirements}
    return names


def lock_legacy(run: LoadedRun, plan: BuildPlan, report: DistillReport,
                fp: Fingerprint, classified: Sequence[Classified] | None = None
                ) -> tuple[BuildPlan, DistillReport]:
    """Pin the egg-info distributions pip installed by name through the legacy ``setup.py
    install`` path (no INSTALLER, so the plan left them out) in the primary environment."""
    if not plan.envs:
        return plan, report
    env = plan.envs[0]
    pinned = {carried_mod.norm_name(n) for n, _ in env.pins}
    named = _named_by_pip(run, classified)
    legacy = sorted((d.name, d.version) for d in fp.distributions
                    if d.source == "setup.py install" and d.version and not d.shadowed
                    and carried_mod.norm_name(d.name) in named - pinned)
    if not legacy:
        return plan, report
    names = {carried_mod.norm_name(n) for n, _ in legacy}
    kept = [w for w in report.warnings
            if not (w.startswith("distribution ") and " was not installed from an index" in w
                    and carried_mod.norm_name(w.split()[1]) in names)]
    kept += [f"{n} {v} was installed by pip's legacy `setup.py install` (egg-info, no "
             "INSTALLER); it is locked by name like the others" for n, v in legacy]
    env = replace(env, pins=tuple(sorted([*env.pins, *legacy])))
    return (replace(plan, envs=(env, *plan.envs[1:])),
            replace(report, warnings=tuple(sorted(set(kept)))))


def _checks(plan: BuildPlan, facts: LiveFacts) -> tuple[
        list[str], tuple[CarriedFile, ...], list[str]]:
    """(warnings, carried, missing) from the live facts."""
    warnings = warn.plan_second_interpreters(plan.envs)
    warnings += warn.pip_check(facts.pip_check)
    pins = dict(plan.envs[0].pins) if plan.envs else {}
    warnings += warn.overlaps(facts.overlaps, pins)
    built = {s.distribution.split("==")[0] for s in plan.native if s.distribution}
    carried: tuple[CarriedFile, ...] = ()
    missing: list[str] = []
    fp = facts.fingerprint
    if fp is not None:
        carried = carried_mod.modified_files(fp, built)
        if plan.envs:
            missing += carried_mod.unreproduced(
                fp, pins, built, conda_prefixes=[c.prefix for c in plan.conda])
    else:
        warnings.append("the final state could not be checked file by file, so modified "
                        "files of installed distributions and unreproduced distributions "
                        "are not known: " + "; ".join(facts.errors or ("not asked",)))
    return warnings, carried, missing


def complete_plan(run: LoadedRun, plan: BuildPlan, report: DistillReport, facts: LiveFacts, *,
                  allow_missing: bool = False, classified: Sequence[Classified] | None = None
                  ) -> tuple[BuildPlan, DistillReport]:
    """The plan with what the live image adds; refuses a plan that leaves something of the
    final state unreproduced unless ``allow_missing``."""
    if facts.fingerprint is not None:
        plan, report = lock_legacy(run, plan, report, facts.fingerprint, classified)
    warnings, carried, missing = _checks(plan, facts)
    if missing and not allow_missing:
        raise ExportError(
            f"The artifact would not reproduce {len(missing)} thing(s) of the final state: "
            + "; ".join(missing[:10]) + (" …" if len(missing) > 10 else ""),
            hint="--allow-missing exports it anyway and says so at the top of the report; "
                 "--include PATH carries a file from the live image.")
    unexplained = carried_mod.dpkg_explained(report.unexplained, facts.dpkg_paths)
    risks = merged_risks(report.risks, code_loading_risks(
        facts.code_loading, [(c.path, c.distribution) for c in carried],
        {c.path for c in run.changes if c.kind in ("A", "C")}),
        probe_ran=facts.code_loading is not None)
    return (replace(plan, carried=carried, missing=tuple(missing)),
            replace(report, unexplained=unexplained, risks=risks,
                    warnings=tuple(sorted({*report.warnings, *warnings}))))


@dataclass(frozen=True)
class ProjectLocks:
    """The project's own lock files at the top of ``source/`` (uv.lock, poetry.lock, …),
    each read once: ``texts`` by name, ``unread`` the ones that could not be (why)."""

    texts: Mapping[str, str] = field(default_factory=dict)
    unread: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class StagedSource:
    """``source/`` (and ``source.patch``) made in a work folder, moved into the artifact."""

    source: Path | None
    patch: Path | None
    edits: SourceEdits
    project_locks: ProjectLocks = field(default_factory=ProjectLocks)
    #: Each project lock against the environment it describes.
    lock_checks: tuple[LockCheck, ...] = ()
    work: tempfile.TemporaryDirectory[str] | None = None

    def move_into(self, artifact: Path) -> None:
        if self.source is not None:
            shutil.move(str(self.source), artifact / "source")
        if self.patch is not None:
            shutil.move(str(self.patch), artifact / PATCH_NAME)
        self.cleanup()

    def cleanup(self) -> None:
        """Remove the work folder now (again is harmless): never left to the collector,
        whose finalizer would run at whatever moment it collects."""
        if self.work is not None:
            self.work.cleanup()


def stage_source(run: LoadedRun, plan: BuildPlan, report: DistillReport, facts: LiveFacts,
                 work: Path, fill_original: Callable[[Path], None],
                 ) -> tuple[BuildPlan, DistillReport, StagedSource]:
    """Make ``source/`` in ``work``: the original repository (``fill_original`` copies or
    clones it) with the agent's edits from the final ``/workspace`` applied."""
    if plan.source.kind == "none":
        return plan, report, StagedSource(None, None, SourceEdits())
    original, source = work / "original", work / "source"
    fill_original(original)
    shutil.copytree(original, source, symlinks=True)
    edits = SourceEdits()
    behind: dict[str, str] = {}
    if facts.workspace_tar is not None:
        venvs = workspace_venvs(i.prefix for i in run.interpreters)
        edits = apply_workspace(facts.workspace_tar, source, venvs)
        edits, behind = left_behind(run, report, edits)
    if facts.workspace_tar is not None and host_changed(run, original):
        report = replace(report, warnings=tuple(sorted({*report.warnings, (
            "the repository on the host changed since the run (its tree differs from "
            "run.json's source_tree.before): source/ is the run's final /workspace all the "
            "same, but a diff from the host copy also holds those changes")})))
    outward = artifact_files.outward_links(work, "source")
    if outward:
        report = replace(report, warnings=tuple(sorted({*report.warnings, (
            "links in the repository point outside it, and are carried as links, never "
            "followed (the rebuilt image has whatever those paths hold there): "
            + "; ".join(f"{rel} -> {target}" for rel, target in outward))})))
    found = read_project_locks(source)
    checks = check_project_locks(found, plan)
    notes = project_lock_notes(found, checks) if plan.envs else []
    if notes:
        report = replace(report, warnings=tuple(sorted({*report.warnings, *notes})))
    sp = source_patch(original, source,
                      edited=bool(edits.modified or edits.added or edits.deleted))
    if sp.note:
        report = replace(report, warnings=tuple(sorted({*report.warnings, sp.note})))
    patch = None
    if sp.patch:
        patch = work / PATCH_NAME
        patch.write_bytes(sp.patch)
    src = replace(
        plan.source, commit=plan.source.commit or sp.commit, dirty=sp.dirty,
        patch=PATCH_NAME if patch else None, changed=sp.files,
        not_carried=edits.not_carried, left_behind=behind,
        from_final=facts.workspace_tar is not None)
    plan = replace(plan, source=src)
    if facts.workspace_tar is not None:
        plan, report = drop_idle_builds(plan, report, run, edits)
    return plan, report, StagedSource(source, patch, edits, found, tuple(checks))


#: The most of a project lock file read (uv.lock of a large project: a few MB).
PROJECT_LOCK_MAX = 64 << 20


def read_project_locks(source: Path) -> ProjectLocks:
    """Read the project lock files present at the top of ``source/``, without following
    links out of it."""
    texts, unread = {}, {}
    for name in project_locks.LOCK_FILES:
        if not safe_io.lexists_beneath(source, name):
            continue
        try:
            texts[name] = project_lock_text(source, name)
        except InputFileError as exc:
            unread[name] = exc.message
    return ProjectLocks(texts, unread)


#: The tool whose environment each project lock file describes.
_LOCK_TOOL = {lock: tool for tool, lock in project_locks.TOOL_LOCKS.items()}


def check_project_locks(found: ProjectLocks, plan: BuildPlan, workdir: str = "/workspace"
                        ) -> list[LockCheck]:
    """Each project lock file read against the final state of the environment it
    describes: the one its tool installed the project into (``uv sync``'s, or the one
    poetry, pdm or pipenv installed, in the project's ``.venv`` or the tool's own folder),
    else the working folder's ``.venv``, else one inside the working folder, else the
    primary one. A venv the agent made with pip beside the tool's is not it."""
    if not plan.envs:
        return []
    checks = []
    for name, text in found.texts.items():
        tool = _LOCK_TOOL[name]
        env = _described_env(plan, tool, workdir)
        # uv, poetry and pdm install the project itself on sync, and their locks do not
        # name it (poetry's, pdm's); pipenv installs only what its lock names.
        project = workdir if tool != "pipenv" else None
        checks.append(project_locks.check_lock(name, text, env.prefix,
                                                  _holds(plan, env, project)))
    return checks


def _holds(plan: BuildPlan, env: PythonEnvPlan, project: str | None
           ) -> list[tuple[str, str]]:
    """What the artifact installs into ``env``: its locked pins and the distributions its
    native steps build there (``pipenv run pip install ./pkg``), but the one built from
    the ``project`` folder, which the tool's sync installs without its lock naming it."""
    held = list(env.pins)
    for step in plan.native:
        into = installs_into(step, plan.envs)
        built = step.argv[-1] if step.tool.endswith("-local") else step.cwd
        if (step.distribution and into is not None and into.prefix == env.prefix
                and (project is None or built.rstrip("/") != project.rstrip("/"))):
            name, _, version = step.distribution.partition("==")
            held.append((name, version))
    return held


def project_lock_notes(found: ProjectLocks, checks: Sequence[LockCheck]
                       ) -> list[str]:
    """The export's warnings: lock files not read, and those that disagree."""
    notes = [f"the project's {name} was not read: {why}" for name, why in found.unread.items()]
    return notes + [note for c in checks if (note := c.note())]


def _described_env(plan: BuildPlan, tool: str, workdir: str) -> PythonEnvPlan:
    envs = plan.envs
    by_tool = [e for e in envs if (e.uv_sync is not None if tool == "uv" else
                                   e.project_install is not None
                                   and e.project_install.tool == tool)]
    dot_venv = [e for e in envs if e.prefix == f"{workdir.rstrip('/')}/.venv"]
    inside = [e for e in envs if _under(e.prefix, workdir)]
    return (by_tool or dot_venv or inside or list(envs))[0]


def project_lock_text(source: Path, name: str) -> str:
    """The project lock file ``name`` at the top of ``source/``, read without following
    links out of it; InputFileError when it cannot be."""
    return safe_io.decode_utf8(safe_io.read_beneath(source, name, PROJECT_LOCK_MAX), name)


def host_changed(run: LoadedRun, original: Path) -> bool:
    """The host's copy of the repository is not the tree the session started from."""
    tree_hashes = RunDir(run.run_dir).run_record().source_tree
    before = tree_hashes.before if tree_hashes is not None else None
    if before is None or set(before) == {"0"}:
        return False
    with tempfile.TemporaryFile() as fh:
        with tarfile.open(fileobj=fh, mode="w") as tar:
            tar.add(original, arcname="workspace")
        fh.seek(0)
        return tree.tree_hash(tree.entries_from_tar(fh)) != before


#: Native steps that are builds (not clones, downloads or local installs).
_BUILD_TOOLS = frozenset({"setup.py", "python -m build", "configure", "cmake", "make", "ninja",
                          "nvcc", "gcc", "g++", "cc", "c++", "clang", "clang++", "meson",
                          "scons", "bazel"})


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def left_behind(run: LoadedRun, report: DistillReport, edits: SourceEdits,
                workdir: str = "/workspace") -> tuple[SourceEdits, dict[str, str]]:
    """The build output left out of source/ that no kept command wrote last: by the change
    times of its files and folders (state/provenance.json), the newest falls while only
    commands the export did not keep were running (an install a later one replaced, a
    failed build). The native build steps do not make it again, so its reason says so, and
    the returned map (path -> the command's ref) lets fidelity explain its absence. Where a
    kept command was running too, or none was, the reason stays as it is."""
    prov = run.provenance
    if prov is None or not any(n.endswith(": " + BUILD_OUTPUT) for n in edits.not_carried):
        return edits, {}
    windows = {r.seq: (r.start, r.end) for r in run.records
               if r.start is not None and r.end is not None}
    by_seq: dict[int, list[CommandOutcome]] = {}
    for o in report.outcomes:
        head = o.ref.partition(".")[0]
        if head.isdigit():
            by_seq.setdefault(int(head), []).append(o)
    times = sorted(prov.file_times.items())
    behind: dict[str, str] = {}
    lines: list[str] = []
    for line in edits.not_carried:
        rel, _, why = line.partition(": ")
        newest = _newest(times, f"{workdir}/{rel}")
        running = [o for seq, (start, end) in windows.items() if newest is not None
                   and start <= newest <= end for o in by_seq.get(seq, ())]
        dropped = [o for o in running if o.decision == "dropped"]
        if (why != BUILD_OUTPUT or not dropped
                or any(o.decision == "kept" for o in running)):
            lines.append(line)
            continue
        last = max(dropped, key=lambda o: (windows[int(o.ref.partition(".")[0])][0], o.ref))
        behind[rel] = last.ref
        lines.append(f"{rel}: build output written last by audit {last.ref}, which is not "
                     "replayed: not made again")
    return dataclasses.replace(edits, not_carried=tuple(lines)), behind


def _newest(times: Sequence[tuple[str, float]], path: str) -> float | None:
    """The newest change time of ``path`` and everything under it; ``times`` sorted by path
    (``build-x`` and ``build.log`` sort between ``build`` and ``build/…``)."""
    i = bisect.bisect_left(times, (path,))
    newest = times[i][1] if i < len(times) and times[i][0] == path else None
    i = bisect.bisect_left(times, (path + "/",))
    while i < len(times) and _under(times[i][0], path):
        newest = times[i][1] if newest is None else max(newest, times[i][1])
        i += 1
    return newest


def drop_idle_builds(plan: BuildPlan, report: DistillReport, run: LoadedRun,
                     edits: SourceEdits, workdir: str = "/workspace",
                     ) -> tuple[BuildPlan, DistillReport]:
    """A kept build step under whose working folder nothing changed in the final state
    (it built nothing) is dropped, with that reason; one that installs is always kept."""
    ws = [*edits.modified, *edits.added, *edits.deleted,
          *(n.split(": ", 1)[0] for n in edits.not_carried)]
    changed = {f"{workdir}/{p}" for p in ws}
    changed |= {c.path for c in run.changes if not _under(c.path, workdir)}
    idle = {s.ref: s.cwd for s in plan.native
            if s.tool in _BUILD_TOOLS and s.distribution is None and s.check_sha256 is None
            and not {"install", "develop"} & set(s.argv)
            and not any(_under(p, s.cwd) for p in changed)}
    if not idle:
        return plan, report
    outcomes = tuple(
        replace(o, decision="dropped",
                            reason=f"built nothing: no file under {idle[o.ref]} changed "
                                   "in the final state")
        if o.ref in idle and o.decision == "kept" else o
        for o in report.outcomes)
    return (replace(plan, native=tuple(s for s in plan.native if s.ref not in idle)),
            replace(report, outcomes=outcomes))


def prepare(run: LoadedRun, plan: BuildPlan, report: DistillReport, near: Path,
            fill_original: Callable[[Path], None], live: LiveImage | None, *,
            allow_missing: bool = False, classified: Sequence[Classified] | None = None,
            ) -> tuple[BuildPlan, DistillReport, StagedSource]:
    """Ask the live image (``live``; None: not asked), complete the plan and stage
    ``source/`` in a work folder beside the artifact (``near``);
    :meth:`StagedSource.move_into` removes it. ``classified``: the log's classified
    commands (:func:`~synth.distill.plan.classify_log`)."""
    near.mkdir(parents=True, exist_ok=True)
    work = tempfile.TemporaryDirectory(prefix=".synth-source.", dir=near)
    try:
        facts = (live_facts.gather(live, plan.python, Path(work.name)) if live is not None
                 else LiveFacts(errors=("the live image was not asked",)))
        plan, report = complete_plan(run, plan, report, facts, allow_missing=allow_missing,
                                     classified=classified)
        plan, report, staged = stage_source(run, plan, report, facts, Path(work.name),
                                            fill_original)
    except BaseException:
        work.cleanup()
        raise
    return plan, report, dataclasses.replace(staged, work=work)


def copy_carried(live: LiveImage, plan: BuildPlan, artifact: Path) -> None:
    """The carried files, from the live image into ``carried/``."""
    if not plan.carried or live.ref is None:
        return
    c = live.container()
    for f in plan.carried:
        data = c.read_file(f.path)
        if data is None:
            raise ExportError(f"{f.path} ({f.distribution}) is gone from the live image.",
                              path=f.path)
        out = artifact / f.artifact_path
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)


def source_manifest(plan: BuildPlan) -> dict[str, object]:
    """The manifest's source keys beyond kind, url and commit."""
    s = plan.source
    return {"dirty": s.dirty, "patch": s.patch, "changed": list(s.changed),
            "not_carried": list(s.not_carried), "from_final_workspace": s.from_final,
            **({"left_behind": dict(sorted(s.left_behind.items()))} if s.left_behind else {})}
