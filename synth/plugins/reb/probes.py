"""REB's contract in synth's verification containers: what verify adds around the
container a REB task's probes run in (synth's own tasks get nothing from here).

* the agent's report, read-only, at REB's report path (some of REB's scripts pick their
  interpreter from it): :func:`synth.plugins.reb.session.report_mount`.
* :func:`clear_stage_results` before the pyramid, :func:`stage_skips` after it: REB's stage
  scripts may write ``build_output/<stage>/results.json`` with ``status: skipped`` (and a
  ``skip_reason``) and exit 0, e.g. a multi-GPU stage on a machine with one GPU. synth's probe
  reads the exit code, so such a level would read ``pass``; :func:`stage_skips` reports it
  ``skipped`` with REB's reason instead. Results left in the image (by an agent that ran
  REB-like scripts in its session) are removed first, in the throwaway container, so only
  what the probe itself wrote counts.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Protocol

from synth.pyramid.result import LevelResult, Report

#: synth level -> the REB stage whose script its probe runs.
PROBE_STAGES = {"C1": "cpu", "C3": "single_gpu", "C4": "multi_gpu"}
_MAX_BYTES = 1 << 20


class _Container(Protocol):
    def exec(self, argv: Sequence[str]) -> Any: ...
    def read_file(self, path: str, *, max_bytes: int | None = None) -> bytes | None: ...


def _results_path(workdir: str, stage: str) -> str:
    return f"{workdir.rstrip('/')}/build_output/{stage}/results.json"


def clear_stage_results(c: _Container, workdir: str) -> None:
    """Remove the probe stages' results.json files the image may hold (container only)."""
    paths = [shlex.quote(_results_path(workdir, s)) for s in PROBE_STAGES.values()]
    c.exec(["sh", "-c", "rm -f " + " ".join(paths)])


def skip_reason(raw: bytes | None) -> str | None:
    """REB's reason when a stage's results.json says ``skipped``; None otherwise (no file,
    not JSON, another status)."""
    if raw is None or len(raw) > _MAX_BYTES:
        return None
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(data, dict) or data.get("status") != "skipped":
        return None
    why = data.get("skip_reason") or data.get("reason") or "no reason given"
    return str(why)[:500]


def stage_skips(report: Report, read: Callable[[str], bytes | None], workdir: str) -> Report:
    """``report`` with each passing probe level whose REB stage wrote ``skipped`` reported
    ``skipped``, REB's reason given. ``read(path)`` reads a file of the probe container."""
    levels = []
    for r in report.levels:
        stage = PROBE_STAGES.get(r.level)
        why = (skip_reason(read(_results_path(workdir, stage)))
               if stage is not None and r.status == "pass" else None)
        levels.append(r if why is None else LevelResult(
            r.level, "skipped", f"REB's {stage} stage skipped: {why}", r.metrics,
            {**r.details, "reb_results": _results_path(workdir, str(stage))}, r.seconds))
    return replace(report, levels=tuple(levels))


def read_stage_skips(c: _Container, report: Report, workdir: str) -> Report:
    """:func:`stage_skips` on a probe container."""
    return stage_skips(report, lambda p: c.read_file(p, max_bytes=_MAX_BYTES), workdir)
