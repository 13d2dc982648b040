"""Level gating: levels are independent; a level not run says exactly why."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from synth.pyramid.levels import SKIP_NO_GPU, SKIP_NO_GPU_RUNTIME, SKIP_NOT_SELECTED, gate
from synth.pyramid.result import LEVELS, Level, LevelResult, Status


def run_all(
    outcomes: Mapping[Level, Status],
    *,
    not_applicable: Mapping[str, str] | None = None,
    selected: set[Level] | None = None,
    gpu_access: str = "probe",
    gpus_visible: int | None = 8,
) -> dict[Level, str]:
    """Walk the ladder as the runner does; a level that runs gets its outcome from the map."""
    done: dict[Level, LevelResult] = {}
    for level in LEVELS:
        g = gate(level, not_applicable=not_applicable or {},
                 selected=selected if selected is not None else set(LEVELS),
                 done=done, gpu_access=gpu_access, gpus_visible=gpus_visible)  # type: ignore[arg-type]
        if g.run:
            done[level] = LevelResult(level, outcomes.get(level, "pass"))
        else:
            assert g.result is not None
            assert g.result.status != "pass"
            done[level] = g.result
    return {lv: r.summary for lv, r in done.items()}


def test_all_pass_on_a_gpu_host() -> None:
    assert run_all({}) == dict.fromkeys(LEVELS, "pass")


def test_a_failure_does_not_stop_the_levels_above() -> None:
    got = run_all({"C1": "fail"})
    assert got["C1"] == "fail"
    assert got["C2"] == got["C3"] == got["C4"] == got["C5"] == "pass"  # each runs on its own


def test_no_gpu_runtime_skips_every_gpu_level_with_the_reason() -> None:
    got = run_all({}, gpu_access="none")
    assert got["C1"] == "pass"
    for level in ("C2", "C3", "C4"):
        assert got[level] == f"skipped: {SKIP_NO_GPU_RUNTIME}"


def test_no_gpu_visible() -> None:
    got = run_all({}, gpus_visible=0)
    for level in ("C2", "C3", "C4"):
        assert got[level] == f"skipped: {SKIP_NO_GPU}"


def test_one_gpu_runs_c3_and_skips_c4() -> None:
    got = run_all({}, gpus_visible=1)
    assert got["C3"] == "pass"
    assert got["C4"] == "skipped: 1 GPU visible, C4 needs 2"


def test_not_applicable_uses_the_task_reason_and_is_stepped_over() -> None:
    got = run_all({}, not_applicable={"C3": "no GPU code", "C4": "single process"})
    assert got["C3"] == "not_applicable: no GPU code"
    assert got["C4"] == "not_applicable: single process"
    got = run_all({}, not_applicable={"C1": "library without entrypoint"})
    assert got["C2"] == "pass"


def test_c0_failing_leaves_c0i_and_c1_to_run() -> None:
    got = run_all({"C0": "fail"}, not_applicable={"C4": "single process"})
    assert got["C0i"] == got["C1"] == "pass"
    assert got["C4"] == "not_applicable: single process"


def test_gpu_skip_wins_over_not_reached() -> None:
    got = run_all({"C1": "fail"}, gpu_access="none")
    assert got["C2"] == f"skipped: {SKIP_NO_GPU_RUNTIME}"


def test_unselected_levels_are_skipped_and_stepped_over() -> None:
    got = run_all({}, selected={"C2", "C3"})
    assert got["C0"] == got["C1"] == f"skipped: {SKIP_NOT_SELECTED}"
    assert got["C2"] == got["C3"] == "pass"
    assert got["C4"] == got["C5"] == f"skipped: {SKIP_NOT_SELECTED}"


@pytest.mark.parametrize("failing", ["C0", "C0i", "C2", "C3"])
def test_no_level_is_not_reached(failing: Level) -> None:
    got = run_all({failing: "fail"})
    assert not any(v.startswith("not_reached") for v in got.values())
    assert got[failing] == "fail"
