"""``distill(run) -> (BuildPlan, DistillReport)``: a pure function from a loaded run to
what to build, and the account of how it was decided.

The final state is the truth for *what* is installed (apt packages and versions, every
Python distribution and where it came from); the audit log says *how* (indexes,
find-links, build flags and build-time environment) and *in which order* native things
were built. Every audited command ends up in the report as kept, folded (its effect lives
in another step: ``cd``, ``export``, ``apt-get update``) or dropped with the reason;
paths the container changed that no kept step explains are listed as unexplained.

The parts, one concern each: :mod:`~synth.distill.envs` (Python environments),
:mod:`~synth.distill.native` (replayed builds), :mod:`~synth.distill.final_env` (``ENV``),
:mod:`~synth.distill.source` (the research code), :mod:`~synth.distill.apt_plan`,
:mod:`~synth.distill.outcomes` (every command's fate) and :mod:`~synth.distill.report`.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator, Mapping, Sequence

from synth.config import CONTAINER_WHEELHOUSE
from synth.distill.apt_plan import apt_plan, snapshot_timestamp
from synth.distill.common import Classified, Notes, StepIndex, pkg_name
from synth.distill.conda_env import conda_plan
from synth.distill.envs import (
    DEFAULT_INDEX,
    AuditedEnvs,
    audited_envs,
    base_python,
    env_plan,
    reproduced_interpreters,
)
from synth.distill.extractors import classify_each
from synth.distill.final_env import DEFAULT_PATH, final_env
from synth.distill.leave_out import Part, Without
from synth.distill.load import Interpreter, LoadedRun
from synth.distill.managed_python import managed_base, managed_pythons
from synth.distill.native import native_plan
from synth.distill.outcomes import DecideContext, decide, reinstalled_later, resynced_later
from synth.distill.provenance import risks, unaudited_changes
from synth.distill.report import add_notes, unexplained
from synth.distill.shell import simple_commands
from synth.distill.source import source_plan
from synth.distill.steps import ENVIRONMENT_VERBS, Download, PipInstall, ProjectTool
from synth.distill.tool_selection import with_project_installs
from synth.distill.warnings import framework_replaced
from synth.formats.plan import (
    PLAN_FORMAT,
    AptPlan,
    BuildPlan,
    CommandOutcome,
    DistillReport,
    NativeStep,
    PythonEnvPlan,
    SourcePlan,
)

__all__ = [
    "DEFAULT_INDEX",
    "DEFAULT_PATH",
    "AptPlan",
    "BuildPlan",
    "Classified",
    "CommandOutcome",
    "DistillReport",
    "NativeStep",
    "PythonEnvPlan",
    "SourcePlan",
    "classify_log",
    "distill",
    "download_candidates",
    "snapshot_timestamp",
]


def classify_log(run: LoadedRun) -> tuple[Classified, ...]:
    """Every simple command of the run's audit log with its extractor and step: what
    :func:`distill` starts from (made once, when the exporter also asks
    :func:`download_candidates` before distilling)."""
    with gc_paused():
        return tuple(classify_each(simple_commands(run.records)))


def download_candidates(run: LoadedRun, classified: Sequence[Classified] | None = None
                        ) -> tuple[str, ...]:
    """Files that successful downloads wrote and the final state still has: their sha256
    (taken from the live image by the exporter) lets the artifact replay them pinned."""
    present = {c.path for c in run.changes if c.kind in ("A", "C")}
    out = set()
    for c, _x, s in classified if classified is not None else classify_log(run):
        match s:
            case Download(tool="wget" | "curl", dest=str(dest)) if (
                    dest and c.succeeded and dest in present):
                out.add(dest)
            case _:
                pass
    return tuple(sorted(out))


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off for a while (reference counting still frees); also
    a decorator (``@gc_paused()``), as export uses it around loading, distilling and
    rendering.

    Distilling makes a few small acyclic objects per audited command, hundreds of
    thousands on a long log; the collector's repeated passes over all of them cost more
    than the work itself (on 100,000 records, 6.2 s of CPU instead of 3.7 s)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def distill(run: LoadedRun, *, include: Sequence[str] = (),
            download_hashes: Mapping[str, str] | None = None,
            classified: Sequence[Classified] | None = None,
            link_targets: Mapping[str, str] | None = None,
            without: Sequence[Part] = ()) -> tuple[BuildPlan, DistillReport]:
    """What to build from ``run``, and the report of how: pure, deterministic, no I/O.

    ``download_hashes`` maps files that downloads wrote (:func:`download_candidates`) to
    their sha256 in the final state; those downloads are replayed and checked.
    ``classified``: :func:`classify_log` of ``run``, when the caller has it already.
    ``link_targets`` maps those of
    :func:`synth.distill.managed_python.link_candidates` that are links in the final
    state to their targets; uv's links to its interpreters are made again.
    ``without``: the parts ``synth export --without`` leaves out; the commands that made
    them are dropped, saying so (:func:`synth.distill.leave_out.leave_out` then takes the
    parts out of the plan).
    """
    with gc_paused():
        return _distill(run, include, dict(download_hashes or {}),
                        classified if classified is not None else classify_log(run),
                        link_targets or {}, without)


def _distill(run: LoadedRun, include: Sequence[str], hashes: Mapping[str, str],
             classified: Sequence[Classified], link_targets: Mapping[str, str],
             without: Sequence[Part]) -> tuple[BuildPlan, DistillReport]:
    notes = Notes()
    ok = StepIndex(t for t in classified if t[0].succeeded)
    audited = audited_envs(ok, run)
    envs_in = [i for i in reproduced_interpreters(run) if not _bare_download(i, run, audited)]
    base = base_python(run)
    conda = {c.prefix: c for i in envs_in if (c := conda_plan(i, notes)) is not None}
    pythons = managed_pythons(run, envs_in, (c for c, _x, _s in classified if c.succeeded),
                              notes, link_targets)
    env_plans = [env_plan(interp, idx, audited, notes, base, recreated=interp.prefix in conda,
                          managed=managed_base(interp))
                 for idx, interp in enumerate(envs_in)]
    native = native_plan(run, ok, envs_in, env_plans, audited, hashes, notes)
    env = final_env(run, env_plans, notes)
    final_apt = {pkg_name(k): v for k, v in run.apt.final.items()}
    w = Without.of(without, env_plans)
    ctx = DecideContext(
        run=run, kept_refs=frozenset(s.ref for s in native.steps), final_apt=final_apt,
        dists_of={i.path: {d.name: d for d in i.distributions} for i in run.interpreters},
        envs=env_plans, reinstalled=reinstalled_later(audited.installs), notes=notes,
        resynced=resynced_later(audited.installs,
                                ((c, p) for c, _x, p in ok.of(ProjectTool)), run.interpreters),
        conda_locks={p: c.lock_file for p, c in conda.items()}, pythons=pythons,
        left_out_prefixes=w.prefixes,
        left_out_refs=frozenset(s.ref for s in native.steps if w.drops_step(s, env_plans)))
    outcomes = tuple(decide(c, x, s, ctx) for c, x, s in classified)
    apt = apt_plan(run)
    add_notes(run, envs_in, native.explained, apt, notes)
    source = source_plan(run, notes)
    env_plans = with_project_installs(
        env_plans, source.dest if source.kind != "none" else None,
        ((p.tool, c.cwd, c.argv) for c, _x, p in ok.of(ProjectTool)
         if p.verb not in ENVIRONMENT_VERBS))
    notes.warnings += framework_replaced(
        ((c.ref, s) for c, _x, s in ok.of(PipInstall)), _primary_final(run))
    plan = BuildPlan(
        format=PLAN_FORMAT, task=run.info.task_name, run_id=run.info.run_id,
        base_ref=run.info.base_ref, base_id=run.info.base_id,
        base_digest=run.info.base_digest, apt=apt,
        envs=tuple(env_plans), source=source, native=native.steps, env=env,
        includes=tuple(sorted(set(include))),
        python=env_plans[0].python if env_plans else "python3",
        claims=run.claims_present, uses_wheelhouse=_uses_wheelhouse(run, env_plans),
        glibc=final_apt.get("libc6"), conda=tuple(conda.values()), pythons=pythons)
    report = DistillReport(
        format=PLAN_FORMAT, outcomes=outcomes,
        unexplained=unexplained(run, env_plans, native.steps, apt, include, pythons),
        not_reproducible=tuple(sorted(set(notes.not_reproducible))),
        warnings=tuple(sorted(set(notes.warnings))),
        unaudited=unaudited_changes(run), risks=risks(run))
    return plan, report


def _bare_download(interp: Interpreter, run: LoadedRun, audited: AuditedEnvs) -> bool:
    """A downloaded (or pyenv-built) interpreter nothing was installed into: its archive
    brings all it has (synth.distill.managed_python), so it is not an environment to lock."""
    return (interp.kind in ("uv", "pyenv") and managed_base(interp) is not None
            and interp.path != run.primary and not audited.installs.get(interp.path))


def _primary_final(run: LoadedRun) -> dict[str, str]:
    interp = next((i for i in run.interpreters if i.path == run.primary), None)
    return {d.name: d.version for d in interp.distributions} if interp else {}


def _uses_wheelhouse(run: LoadedRun, env_plans: Sequence[PythonEnvPlan]) -> bool:
    wheelhouse = run.info.wheelhouse
    return any(CONTAINER_WHEELHOUSE in fl or (wheelhouse and wheelhouse in fl)
               for e in env_plans for fl in e.find_links)
