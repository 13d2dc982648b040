"""Level gating: whether a level runs, and if not, the exact reason it does not.

Levels are independent: each selected level runs whatever another level did (a failed C0
does not stop C1; as in ResearchEnvBench, every probe stands alone). A level is not run
only for a reason of its own, in this order of precedence:

1. the task says the level does not apply  -> ``not_applicable: <task's reason>``
2. the level was left out with ``--levels``  -> ``skipped: not selected (--levels)``
3. the GPU the level needs is not there      -> ``skipped: no GPU runtime on this engine`` /
   ``skipped: no GPU visible`` / ``skipped: 1 GPU visible, C4 needs 2``

A level that is not run never passes. ``not_reached`` is no longer produced (it stays a
readable status of older verify.json files).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Literal

from .result import Level, LevelResult

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


def gate(
    level: Level,
    *,
    not_applicable: Mapping[str, str],
    selected: Collection[Level],
    done: Mapping[Level, LevelResult] | None = None,
    gpu_access: GpuAccess,
    gpus_visible: int | None,
) -> Gate:
    """Whether ``level`` runs, given the task, the selection and the GPUs (``done``, the
    results so far, is accepted for callers' convenience and never consulted)."""
    del done
    if level in not_applicable:
        return _not(level, "not_applicable", not_applicable[level])
    if level not in selected:
        return _not(level, "skipped", SKIP_NOT_SELECTED)
    if level in GPU_LEVELS:
        if gpu_access == "none":
            return _not(level, "skipped", SKIP_NO_GPU_RUNTIME)
        if gpus_visible is not None and gpus_visible == 0:
            return _not(level, "skipped", SKIP_NO_GPU)
        if level == "C4" and gpus_visible is not None and gpus_visible < 2:
            # N = min(task GPUs, visible GPUs) must be >= 2; fewer is never a pass.
            plural = "GPU" if gpus_visible == 1 else "GPUs"
            return _not(level, "skipped", f"{gpus_visible} {plural} visible, C4 needs 2")
    return RUN
