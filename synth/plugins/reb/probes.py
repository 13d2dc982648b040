"""REB's contract in synth's verification containers: what verify adds around the
container a REB task's probes run in (synth's own tasks get nothing from here).

* the agent's report, read-only, at REB's report path (REB's scripts pick their interpreter
  from it): :func:`synth.plugins.reb.session.report_mount`; REB's whole
  ``benchmark_scripts/`` folder, read-only at :data:`SCRIPTS_MOUNT`, copied beside the
  repository by :func:`before_probes` (every level script calls ``runner.py`` and its
  helpers), after the stage files the image may hold are removed (in the throwaway
  container only), so only what the probes write counts;
* after the pyramid, :func:`after_probes` runs the stages of REB's ``run_all.sh`` that have
  no synth level of their own, as ``run_all.sh`` runs them (``python``, else ``python3``,
  from ``PATH``, in the repository folder): ``check_cuda_available.py`` (cuda),
  ``measure_env_size.py`` (env_size) and ``validate_agent_report.py`` (hallucination,
  REB's own C5, after the stages it reads), then reads every ``build_output/<stage>/
  results.json`` REB's scripts left (prepare from the assets step, cpu/single_gpu/multi_gpu
  from the level probes) into the report (``target.reb_stages``), where REB's job folder
  takes them from (:mod:`synth.plugins.reb.results`);
* REB's verdict for the level probes: a C1/C3/C4 level reads what REB's ``run_all.sh``
  reads, the stage's ``results.json``, not the script's exit code: ``skipped`` is a skip
  (with REB's ``skip_reason``), ``failure`` or ``exit_code`` 1 a failure (with REB's
  ``failure_category``), a missing or invalid file a failure; only ``success`` passes.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

from synth.plugins.reb.results import CAPTURED
from synth.pyramid.result import LevelResult, Report

#: synth level -> the REB stage whose script its probe runs.
PROBE_STAGES = {"C1": "cpu", "C3": "single_gpu", "C4": "multi_gpu"}
#: REB stages run after the probes (stage -> script), in run_all.sh's order.
AFTER = {"cuda": "check_cuda_available.py", "env_size": "measure_env_size.py",
         "hallucination": "validate_agent_report.py"}
#: Every stage file read back.
READ = ("prepare", "cpu", "cuda", "single_gpu", "multi_gpu", "env_size", "hallucination")
SCRIPTS_MOUNT = "/synth/reb-scripts"
AFTER_TIMEOUT = 120
_MAX_BYTES = 1 << 20


class _Container(Protocol):
    def exec(self, argv: Sequence[str]) -> Any: ...
    def read_file(self, path: str, *, max_bytes: int | None = None) -> bytes | None: ...


def _results_path(workdir: str, stage: str) -> str:
    return f"{workdir.rstrip('/')}/build_output/{stage}/results.json"


def install_command(workdir: str) -> list[str]:
    """Stage files the image holds removed; REB's folder put beside the repository."""
    w = shlex.quote(workdir.rstrip("/") or "/")
    stages = " ".join(f"{w}/build_output/{s}" for s in (*READ, "pyright", "summary"))
    return ["sh", "-c", f"rm -rf {stages}; if [ -d {SCRIPTS_MOUNT} ]; then "
            f"mkdir -p {w}/benchmark_scripts && cp -a {SCRIPTS_MOUNT}/. {w}/benchmark_scripts/; "
            "fi"]


def before_probes(c: _Container, workdir: str) -> None:
    c.exec(install_command(workdir))


def after_command(workdir: str, stage: str, script: str) -> list[str]:
    """One REB stage as run_all.sh runs it (its PY_BIN: ``python``, else ``python3``)."""
    w = shlex.quote(workdir)
    return ["sh", "-c", f"cd {w} && [ -f benchmark_scripts/{script} ] || exit 0; "
            'PY=python; command -v python >/dev/null 2>&1 || PY=python3; '
            f"SCIMLOPSBENCH_REPORT=/opt/scimlopsbench/report.json timeout {AFTER_TIMEOUT} "
            f'"$PY" benchmark_scripts/{script}']


def parse_stage(raw: bytes | None) -> dict[str, Any] | None:
    """A stage's results.json as REB's readers take it: an object, or None (missing, too
    large, not JSON: REB counts that a failure)."""
    if raw is None or len(raw) > _MAX_BYTES:
        return None
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def skip_reason(raw: bytes | None) -> str | None:
    """REB's reason when a stage's results.json says ``skipped``; None otherwise."""
    data = parse_stage(raw)
    if data is None or data.get("status") != "skipped":
        return None
    why = data.get("skip_reason") or data.get("reason") or "no reason given"
    return str(why)[:500]


def reb_verdict(r: LevelResult, stage: str, data: Mapping[str, Any] | None,
                path: str) -> LevelResult:
    """A C1/C3/C4 level as REB reads its stage file (module docstring)."""
    if r.status not in ("pass", "fail"):
        return r  # not run, not applicable, not reached: nothing of REB's to read
    details = {**r.details, "reb_results": path}
    if data is None:
        return LevelResult(r.level, "fail", f"REB's {stage} stage wrote no valid results.json",
                           r.metrics, details, r.seconds)
    status = data.get("status")
    if status == "skipped":
        why = str(data.get("skip_reason") or data.get("reason") or "no reason given")[:500]
        return LevelResult(r.level, "skipped", f"REB's {stage} stage skipped: {why}",
                           r.metrics, details, r.seconds)
    if status == "success" and data.get("exit_code") != 1:
        return r if r.status == "pass" else LevelResult(
            r.level, "pass", None, r.metrics, details, r.seconds)
    category = data.get("failure_category") or "unknown"
    return LevelResult(r.level, "fail", f"REB's {stage} stage: {status} ({category})"
                       + (f"; {r.reason}" if r.reason else ""), r.metrics, details, r.seconds)


def stage_verdicts(report: Report, read: Callable[[str], bytes | None],
                   workdir: str) -> Report:
    """``report`` with every REB stage file read (``target.reb_stages``) and each C1/C3/C4
    level judged as REB judges its stage. ``read(path)`` reads a file of the container."""
    stages = {s: parse_stage(read(_results_path(workdir, s))) for s in READ}
    levels = []
    for r in report.levels:
        stage = PROBE_STAGES.get(r.level)
        levels.append(r if stage is None else reb_verdict(
            r, stage, stages[stage], _results_path(workdir, stage)))
    captured = {s: d for s, d in stages.items() if d is not None}
    return replace(report, levels=tuple(levels),
                   target={**report.target, CAPTURED: captured})


def after_probes(c: _Container, report: Report, workdir: str) -> Report:
    """REB's remaining stages run, then :func:`stage_verdicts` on the container."""
    for stage, script in AFTER.items():
        c.exec(after_command(workdir, stage, script))
    return stage_verdicts(report, lambda p: c.read_file(p, max_bytes=_MAX_BYTES), workdir)
