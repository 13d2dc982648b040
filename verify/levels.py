"""Level gating: whether a level runs, and if not, the exact reason it does not.

Pure functions over what is known so far; the runner asks before running each level. The
order of the checks is the order of the reasons' precedence:

1. the task says the level does not apply  -> ``not_applicable: <task's reason>``
2. the level was left out with ``--levels``  -> ``skipped: not selected (--levels)``
3. the level below did not pass              -> ``not_reached: C1 failed``
4. the GPU the level needs is not there      -> ``skipped: no GPU runtime on this engine`` /
   ``skipped: no GPU visible`` / ``skipped: 1 GPU visible, C4 needs 2``

A level that is not run never passes.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Literal

from verify.result import LADDER, Level, LevelResult

GPU_LEVELS: tuple[Level, ...] = ("C2", "C3", "C4")

#: What the runtime can offer a GPU-level: "none" — a container engine without an NVIDIA
#: runtime; "probe" — ask the environment how many GPUs it sees.
GpuAccess = Literal["none", "probe"]

SKIP_NOT_SELECTED = "not selected (--levels)"
SKIP_NO_GPU_RUNTIME = "no GPU runtime on this engine"
SKIP_NO_GPU = "no GPU visible"


@dataclass(frozen=True)
class Gate:
    """The verdict for a level before running it: run, or a result that says why not."""

    run: bool
    result: LevelResult | None = None


RUN = Gate(run=True)


def _not(level: Level, status: str, reason: str) -> Gate:
    return Gate(False, LevelResult(level=level, status=status, reason=reason))  # type: ignore[arg-type]


def below(level: Level) -> Level | None:
    """The capability level directly under ``level`` (C5 stands apart: None)."""
    if level not in LADDER:
        return None
    i = LADDER.index(level)
    return LADDER[i - 1] if i else None


def blocking_reason(level: Level, done: Mapping[Level, LevelResult]) -> str | None:
    """Why the levels under ``level`` keep it from running, or None if they do not.

    Not-applicable and unselected levels are stepped over: the nearest level below that was
    meant to run decides. A skipped level below (no GPU) blocks with its own reason.
    """
    lower = below(level)
    while lower is not None:
        r = done.get(lower)
        if r is None:
            return f"{lower} not run"
        if r.status == "pass":
            return None
        if r.status == "not_applicable" or r.reason == SKIP_NOT_SELECTED:
            lower = below(lower)
            continue
        if r.status == "fail":
            return f"{lower} failed"
        if r.status == "not_reached":
            return r.reason
        return r.reason  # skipped for an environment reason: same reason up the ladder
    return None


def gate(
    level: Level,
    *,
    not_applicable: Mapping[str, str],
    selected: Collection[Level],
    done: Mapping[Level, LevelResult],
    gpu_access: GpuAccess,
    gpus_visible: int | None,
) -> Gate:
    """Whether ``level`` runs now, given the task, the selection and the results so far."""
    if level in not_applicable:
        return _not(level, "not_applicable", not_applicable[level])
    if level not in selected:
        return _not(level, "skipped", SKIP_NOT_SELECTED)
    if level == "C5":
        return RUN
    if level in GPU_LEVELS:
        lower = done.get(below(level) or level)
        # A GPU reason found below (no runtime, no GPU) is repeated, not turned into
        # not_reached: the level was not attempted for the same cause.
        if gpu_access == "none":
            return _not(level, "skipped", SKIP_NO_GPU_RUNTIME)
        if gpus_visible is not None and gpus_visible == 0:
            return _not(level, "skipped", SKIP_NO_GPU)
        if lower is not None and lower.status == "skipped" and lower.reason != SKIP_NOT_SELECTED:
            return _not(level, "skipped", lower.reason or "")
    blocked = blocking_reason(level, done)
    if blocked is not None:
        lower = done.get(below(level) or level)
        if lower is not None and lower.status == "skipped" and blocked == lower.reason:
            return _not(level, "skipped", blocked)
        return _not(level, "not_reached", blocked)
    if level == "C4" and gpus_visible is not None and gpus_visible < 2:
        # N = min(task GPUs, visible GPUs) must be >= 2; fewer is never a pass.
        plural = "GPU" if gpus_visible == 1 else "GPUs"
        return _not(level, "skipped", f"{gpus_visible} {plural} visible, C4 needs 2")
    return RUN
