"""Which environments the artifact installs with ``uv sync --frozen`` from the project's
own ``uv.lock`` (glue): the lock read from ``source/``, the audited uv commands from the
log, what synth's lock builds from source; the choice is synth.distill.uv_project's."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from msgspec.structs import replace

from synth.distill import uv_project
from synth.distill.plan import BuildPlan, Classified
from synth.errors import InputFileError
from synth.export.final_state import project_lock_text
from synth.export.lock import Lock
from synth.formats.plan import DistillReport
from synth.util import safe_io


def with_uv_sync(plan: BuildPlan, report: DistillReport, locks: Sequence[Lock],
                 source: Path | None, classified: Sequence[Classified], *, bundle: bool
                 ) -> tuple[BuildPlan, DistillReport, list[Lock]]:
    """The plan and locks with ``uv_sync`` set on the environments it installs, and the
    report with a note where a uv project's environment is not (and why)."""
    text = _uv_lock(source)
    if text is None or plan.source.kind == "none":
        return plan, report, list(locks)
    commands = [(cmd.cwd, cmd.argv) for cmd, _x, _s in classified if cmd.succeeded]
    notes, out = [], []
    for lock in locks:
        sync, note = uv_project.choose(lock.env, plan.source.dest, text, commands,
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


def _uv_lock(source: Path | None) -> str | None:
    if source is None or not safe_io.lexists_beneath(source, "uv.lock"):
        return None
    try:
        return project_lock_text(source, "uv.lock")
    except InputFileError:
        return None  # the project-lock note says it was not read
