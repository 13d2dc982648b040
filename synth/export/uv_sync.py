"""Which environments the artifact installs with ``uv sync --frozen`` from the project's
own ``uv.lock`` (glue): the lock as read from ``source/``, the audited uv commands from the
log, what synth's lock builds from source; the choice is synth.distill.uv_project's."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from msgspec.structs import replace

from synth.distill import uv_project
from synth.distill.plan import BuildPlan, Classified
from synth.distill.steps import VenvCreate
from synth.export.lock import Lock
from synth.formats.plan import DistillReport, PythonEnvPlan


def with_uv_sync(plan: BuildPlan, report: DistillReport, locks: Sequence[Lock],
                 uv_lock: str | None, classified: Sequence[Classified], *, bundle: bool
                 ) -> tuple[BuildPlan, DistillReport, list[Lock]]:
    """The plan and locks with ``uv_sync`` set on the environments it installs, and the
    report with a note where a uv project's environment is not (and why). ``uv_lock``: the
    text of ``source/uv.lock`` (None where there is none, or it could not be read: the
    project-lock note says so)."""
    if uv_lock is None or plan.source.kind == "none":
        return plan, report, list(locks)
    commands = [(cmd.cwd, cmd.argv) for cmd, _x, _s in classified if cmd.succeeded]
    creates = {s.path: s for cmd, _x, s in classified
               if cmd.succeeded and isinstance(s, VenvCreate)}
    notes, out = [], []
    for lock in locks:
        sync, note = uv_project.choose(lock.env, plan.source.dest, uv_lock, commands,
                                       sdists=lock.sdists, bundle=bundle)
        if note:
            notes.append(note)
        if sync is None:
            out.append(lock)
            continue
        env = lock.env
        python = _made_by_uv(env, creates.get(env.prefix))
        if python is not None:
            sync, env = replace(sync, python=python), replace(env, create=())
        out.append(dataclasses.replace(lock, env=replace(env, uv_sync=sync)))
    chosen = {lk.env.prefix: lk.env for lk in out}
    plan = replace(plan, envs=tuple(chosen.get(e.prefix, e) for e in plan.envs))
    if notes:
        report = replace(report, warnings=tuple(sorted({*report.warnings, *notes})))
    return plan, report, out


def _made_by_uv(env: PythonEnvPlan, create: VenvCreate | None) -> str | None:
    """The interpreter to give ``uv sync`` where uv made the environment in the run (a
    sync or ``uv venv`` without options, no other tool's command) and the plan would make
    it with ``venv --without-pip`` from that interpreter: uv makes it then, as it did."""
    made = env.create
    if made[1:] != ("-m", "venv", "--without-pip", env.prefix) or (
            create is not None and (create.tool != "uv" or create.options)):
        return None
    return made[0]
