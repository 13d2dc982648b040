"""Which environments the artifact installs with ``uv sync --frozen`` from the project's
own ``uv.lock`` (glue): the lock as read from ``source/``, the audited uv commands from the
log, what synth's lock builds from source; the choice is synth.distill.uv_project's."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from msgspec.structs import replace

from synth.distill import uv_project
from synth.distill.plan import BuildPlan, Classified
from synth.export.lock import Lock
from synth.formats.plan import DistillReport


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
    notes, out = [], []
    for lock in locks:
        sync, note = uv_project.choose(lock.env, plan.source.dest, uv_lock, commands,
                                       sdists=lock.sdists, bundle=bundle)
        if note:
            notes.append(note)
        out.append(lock if sync is None else
                   dataclasses.replace(lock, env=replace(lock.env, uv_sync=sync)))
    chosen = {lk.env.prefix: lk.env for lk in out}
    plan = replace(plan, envs=tuple(chosen.get(e.prefix, e) for e in plan.envs))
    if notes:
        report = replace(report, warnings=tuple(sorted({*report.warnings, *notes})))
    return plan, report, out
