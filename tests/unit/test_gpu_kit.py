"""bench/gpu_check.py's verdict on the two builds it verifies on a GPU host: the CUDA build
passes C0-C3 (C4 passes on two GPUs, is skipped with one), the CPU-only control fails C3
with the entrypoint's own words."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "bench" / "gpu_check.py")
assert _spec is not None and _spec.loader is not None
gpu_check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpu_check)


def _lv(**status: str) -> dict[str, dict[str, Any]]:
    return {k: {"status": v, "reason": None} for k, v in status.items()}


GOOD = _lv(C0="pass", C0i="pass", C1="pass", C2="pass", C3="pass", C4="skipped")
CONTROL = {**_lv(C0="pass", C1="pass", C2="pass", C4="skipped"),
           "C3": {"status": "fail", "reason": "GPU entrypoint failed (exit 1): AssertionError: "
                  "torchop was built without its CUDA kernels (no nvcc at build time?)"}}


def test_the_expected_verdicts_are_accepted() -> None:
    assert gpu_check.judge(GOOD, CONTROL, gpus=1) == []
    assert gpu_check.judge({**GOOD, "C4": {"status": "pass"}}, CONTROL, gpus=2) == []


def test_a_wrong_verdict_is_named() -> None:
    bad = {**GOOD, "C3": {"status": "fail", "reason": "x"}}
    assert gpu_check.judge(bad, CONTROL, gpus=1) == ["CUDA build: C3 is fail (x)"]
    assert gpu_check.judge(GOOD, GOOD, gpus=1)[0].startswith("CPU-only control: C3 is pass")
    # A one-GPU host must skip C4; a two-GPU one must pass it.
    assert gpu_check.judge(GOOD, CONTROL, gpus=2) == [
        "CUDA build: C4 is skipped on 2 GPUs"]
    vague = {**CONTROL, "C3": {"status": "fail", "reason": "GPU entrypoint failed (exit 1)"}}
    assert "expected a failure saying" in gpu_check.judge(GOOD, vague, gpus=1)[0]
