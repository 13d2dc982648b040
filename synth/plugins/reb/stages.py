"""What REB's CUDA and multi-GPU stages would record, read off a pyramid report (C2, C4 and
C5's checks): shared by the stage results (:mod:`synth.plugins.reb.results`) and REB's
scoring (:mod:`synth.plugins.reb.scoring`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from synth.pyramid.result import Level, Report


def checks(report: Report) -> dict[str, Mapping[str, Any]]:
    c5 = report.get("C5")
    details = c5.details if c5 is not None else {}
    return {str(c["field"]): c for c in details.get("checks") or []}


def level_status(report: Report, level: Level) -> str | None:
    r = report.get(level)
    return r.status if r is not None else None


def cuda_stage(report: Report) -> dict[str, Any] | None:
    """What REB's CUDA stage would record: success only where C2 passed; None (no
    evidence) where C2 was not run or not reached."""
    status = level_status(report, "C2")
    if status is None or status == "not_reached":
        return None
    observed = checks(report).get("gpu_count", {}).get("observed")
    gpus = observed if isinstance(observed, int) and not isinstance(observed, bool) else 0
    ok = status == "pass"
    return {"status": "success" if ok else "failure", "exit_code": 0 if ok else 1,
            "observed": {"cuda_available": ok, "gpu_count": gpus if ok else 0}}


def multi_gpu_stage(report: Report) -> dict[str, Any] | None:
    status = level_status(report, "C4")
    if status is None:
        return None
    word = {"pass": "success", "skipped": "skipped", "not_applicable": "skipped"}.get(
        status, "failure")
    return {"status": word, "exit_code": 0 if word != "failure" else 1}
