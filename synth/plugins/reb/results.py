"""REB's stage results, complete: ``build_output/<stage>/results.json`` for every stage REB's
``run_all.sh`` runs, in its order (``pyright, prepare, cpu, cuda, single_gpu, multi_gpu,
env_size, hallucination, summary``), with every field REB's producers write.

A stage file is REB's own where REB's script wrote one in the probe container (the REB
profile carries them in the report, ``target.reb_stages``: :mod:`synth.plugins.reb.probes`);
otherwise synth makes it from the matching level of the report that decides (``pyright`` C0,
``cpu`` C1, ``cuda`` C2, ``single_gpu`` C3, ``multi_gpu`` C4, ``hallucination`` C5;
``prepare`` and ``env_size`` without REB's script are ``skipped``). Either way it carries
REB's common fields: ``status`` (``success``/``failure``/``skipped``), ``exit_code`` (1 iff
failure), ``stage``, ``task``, ``command``, ``timeout_sec``, ``framework``, ``assets``,
``meta`` (``timestamp_utc`` as REB writes it, ``YYYY-MM-DDTHH:MM:SSZ``; ``git_commit``,
``python``, ``env_vars``, ``decision_reason``), ``failure_category``, ``error_excerpt`` and
``skip_reason`` (``not_applicable`` meaning "no skip", as REB writes it), plus synth's own
(``synth_level``, ``synth_status``, ``reason``, ``metrics``) that REB's readers ignore.
``overrides`` (``--scoring reb``'s stages) win over both.

Then REB's post-run rules, as its ``m2`` applies them: a stage the categories file marks
unsupported (``reb/applicability.json``) is rewritten ``skipped`` (``exit_code`` 0,
``failure_category`` ``not_applicable``, REB's ``skip_reason``, ``meta.decision_reason``
``categories skip override (post-run)``) whatever it said, and ``summary`` is computed last
from the others (``stages``, ``failed_stages``, ``skipped_stages``, ``overall_status``).
:func:`read_results` reads a folder of them back (our own aggregator).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from synth.errors import UsageError
from synth.formats.verify import VerifyDocument
from synth.plugins.reb.categories import stage_skips
from synth.plugins.reb.stages import cuda_stage
from synth.pyramid.result import Level, LevelResult, Report
from synth.util import atomic, safe_io

#: REB's stages, in run_all.sh's order.
ORDER = ("pyright", "prepare", "cpu", "cuda", "single_gpu", "multi_gpu", "env_size",
         "hallucination", "summary")
#: REB stage -> synth level.
STAGES: dict[str, Level] = {"pyright": "C0", "cpu": "C1", "cuda": "C2", "single_gpu": "C3",
                            "multi_gpu": "C4", "hallucination": "C5"}
#: REB stage -> its ``task`` (m2's ``_stage_task``).
TASKS = {"pyright": "lint", "prepare": "prepare", "cpu": "train", "cuda": "check",
         "single_gpu": "train", "multi_gpu": "train", "env_size": "measure",
         "hallucination": "validate", "summary": "summarize"}
#: runner.py's default timeouts (s).
TIMEOUTS = {"pyright": 600, "prepare": 1200, "cpu": 600, "cuda": 120, "single_gpu": 600,
            "multi_gpu": 1200, "env_size": 120, "hallucination": 120, "summary": 120}
_STATUS = {"pass": "success", "fail": "failure", "not_reached": "failure",
           "skipped": "skipped", "not_applicable": "skipped"}
OVERRIDE_REASON = "categories skip override (post-run)"
#: The key of ``Report.target`` where the REB profile puts the files REB's scripts wrote.
CAPTURED = "reb_stages"


def utc_stamp(when: float) -> str:
    """REB's ``timestamp_utc``: ``datetime.utcnow().replace(microsecond=0).isoformat()+'Z'``."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))


def blank_assets() -> dict[str, dict[str, str]]:
    return {k: {"path": "", "source": "", "version": "", "sha256": ""}
            for k in ("dataset", "model")}


def _command_of(r: LevelResult) -> tuple[str, int | None]:
    """The command a level ran and its timeout, from its details (``""``: synth's probe)."""
    for key in ("entrypoint", "exec"):
        info = r.details.get(key)
        if isinstance(info, Mapping):
            cmd = info.get("command") or " ".join(map(str, info.get("argv") or ()))
            return str(cmd), info.get("timeout") if isinstance(info.get("timeout"), int) else None
    return "", None


def _excerpt(r: LevelResult) -> str:
    tails = [str(info.get(k) or "") for key in ("entrypoint", "exec")
             if isinstance(info := r.details.get(key), Mapping)
             for k in ("stdout_tail", "stderr_tail")]
    lines = "\n".join([r.reason or "", *tails]).strip().splitlines()
    return "\n".join(lines[-220:])


def _failure_category(r: LevelResult) -> str:
    if r.status == "pass":
        return ""
    if r.status in ("skipped", "not_applicable"):
        return "not_applicable"
    text = (r.reason or "").lower()
    if "timed out" in text:
        return "timeout"
    if r.status == "not_reached" or any(w in text for w in ("import", "unresolved", "module")):
        return "deps"
    return "runtime"


def _skip_reason(r: LevelResult) -> str:
    if r.status == "skipped" and any(w in (r.reason or "").lower() for w in ("gpu", "runtime")):
        return "insufficient_hardware"
    return "not_applicable" if r.status != "skipped" else "unknown"


def _framework(report: Report) -> str:
    c2 = report.get("C2")
    frameworks = (c2.metrics.get("frameworks") if c2 else None) or ()
    return "pytorch" if "torch" in frameworks else "unknown"


def synth_stage(stage: str, r: LevelResult, report: Report, meta: Mapping[str, Any],
                repo_id: str, target: str) -> dict[str, Any]:
    """One stage file made from synth's verdict ``r``."""
    status = _STATUS.get(r.status, "failure")
    command, timeout = _command_of(r)
    return {
        "status": status, "skip_reason": _skip_reason(r),
        "exit_code": 1 if status == "failure" else 0, "stage": stage, "task": TASKS[stage],
        "command": command, "timeout_sec": timeout or TIMEOUTS[stage],
        "framework": _framework(report), "assets": blank_assets(),
        "meta": {**meta, "decision_reason": f"synth level {r.level}: {r.summary}"},
        "failure_category": _failure_category(r),
        "error_excerpt": "" if status != "failure" else _excerpt(r),
        "repo_id": repo_id, "synth_level": r.level, "synth_status": r.status,
        "reason": r.reason, "metrics": dict(r.metrics), "target": target,
        "image": report.target.get("image"),
    }


def _unmeasured(stage: str, meta: Mapping[str, Any], why: str) -> dict[str, Any]:
    return {"status": "skipped", "skip_reason": "not_applicable", "exit_code": 0,
            "stage": stage, "task": TASKS[stage], "command": "", "timeout_sec": 0,
            "framework": "unknown", "assets": blank_assets(),
            "meta": {**meta, "decision_reason": why}, "failure_category": "not_applicable",
            "error_excerpt": ""}


def _pyright_counts(out: dict[str, Any], r: LevelResult) -> None:
    """REB's C0 counts at the top level (where m5 reads them first) from synth's C0."""
    total = r.metrics.get("researchenvbench_top_modules")
    missing = r.metrics.get("researchenvbench_missing_top_modules")
    if isinstance(total, int) and isinstance(missing, int):
        out.update(missing_packages_count=missing, total_imported_packages_count=total,
                   missing_package_ratio=f"{missing}/{total}", measured_by="synth C0 scan")
    out["missing_packages"] = sorted({str(m.get("module", "")).split(".")[0]
                                      for m in r.details.get("missing") or []
                                      if isinstance(m, Mapping)} - {""})


def _no_c0_unsaid(data: dict[str, Any]) -> None:
    """REB's m5 reads a pyright stage without counts as "0 missing": a stage that measured
    nothing says so as a failure (``missing_stage_results``), never as a perfect C0."""
    if "captured" in data or "missing_packages_count" in data or data["status"] == "failure":
        return
    data.update(status="failure", exit_code=1, failure_category="missing_stage_results",
                error_excerpt=f"no C0 measurement: {data.get('reason') or 'C0 not run'}")


def stage_results(doc: VerifyDocument, repo_id: str,
                  overrides: Mapping[str, Mapping[str, Any]] | None = None, *,
                  applicability: Mapping[str, Any] | None = None,
                  when: float | None = None, git_commit: str = "",
                  ) -> dict[str, dict[str, Any]]:
    """REB stage -> its results.json, in REB's order, ``summary`` last."""
    report = doc.deciding
    meta = {"timestamp_utc": utc_stamp(time.time() if when is None else when),
            "git_commit": git_commit, "python": str(report.target.get("python") or ""),
            "env_vars": {}}
    captured = report.target.get(CAPTURED) or {}
    out: dict[str, dict[str, Any]] = {}
    for stage in ORDER[:-1]:
        level = STAGES.get(stage)
        if isinstance(captured.get(stage), Mapping):
            out[stage] = {**captured[stage], "synth_level": level, "captured": "reb script"}
        elif level is None:
            out[stage] = _unmeasured(stage, meta, f"synth ran no REB {stage} stage for this "
                                     "target (no REB script)")
        else:
            r = report.get(level) or LevelResult(level, "skipped", "not run")
            out[stage] = synth_stage(stage, r, report, meta, repo_id, doc.decides)
            if stage == "pyright":
                _pyright_counts(out[stage], r)
    _no_c0_unsaid(out["pyright"])
    cuda = cuda_stage(report)
    if cuda is not None and "captured" not in out["cuda"]:
        out["cuda"]["observed"] = cuda["observed"]
    for stage, fields in (overrides or {}).items():
        # a whole stage replaces what REB's script wrote (it judged something else)
        base = {} if "status" in fields and "captured" in out[stage] else out[stage]
        out[stage] = {**base, **fields}
    apply_skip_overrides(out, applicability or {})
    out["summary"] = summarize(out, meta)
    return out


def apply_skip_overrides(stages: dict[str, dict[str, Any]],
                         applicability: Mapping[str, Any]) -> list[str]:
    """REB m2's ``_apply_categories_skip_overrides``: each stage the categories file marks
    unsupported is ``skipped`` with REB's reason unless it already says so; the stages
    rewritten."""
    applied = []
    for stage, reason in stage_skips(applicability).items():
        data = stages.get(stage) or {}
        if data.get("status") == "skipped":
            continue
        meta = data["meta"] if isinstance(data.get("meta"), Mapping) else {}
        stages[stage] = {**data, "status": "skipped", "exit_code": 0, "skip_reason": reason,
                         "failure_category": "not_applicable", "error_excerpt": "",
                         "meta": {**meta, "decision_reason": OVERRIDE_REASON}}
        applied.append(stage)
    return applied


def _failed(data: Mapping[str, Any]) -> bool:
    """run_all.sh's rule: a stage failed when its status is failure or its exit code 1."""
    return data.get("status") != "skipped" and (
        data.get("status") not in ("success", "skipped") or data.get("exit_code") == 1)


def summarize(stages: Mapping[str, Mapping[str, Any]],
              meta: Mapping[str, Any]) -> dict[str, Any]:
    """The ``summary`` stage, as REB's summarize_results.py / m2 recompute it."""
    failed = [s for s in ORDER[:-1] if _failed(stages.get(s) or {})]
    skipped = [s for s in ORDER[:-1] if (stages.get(s) or {}).get("status") == "skipped"]
    table = {s: {"status": (stages.get(s) or {}).get("status", "failure"),
                 "exit_code": (stages.get(s) or {}).get("exit_code", 1),
                 "failure_category": (stages.get(s) or {}).get("failure_category", ""),
                 "command": (stages.get(s) or {}).get("command", ""),
                 "results_path": f"build_output/{s}/results.json",
                 "log_path": f"build_output/{s}/log.txt"} for s in ORDER[:-1]}
    status = "failure" if failed else "success"
    return {"status": status, "skip_reason": "not_applicable",
            "exit_code": 1 if failed else 0, "stage": "summary", "task": TASKS["summary"],
            "command": "", "timeout_sec": TIMEOUTS["summary"], "framework": "unknown",
            "assets": blank_assets(), "meta": {**meta, "decision_reason": "summary of the "
                                               "stage files (after REB's post-run override)"},
            "failure_category": "overall_failure" if failed else "",
            "error_excerpt": "", "stages": table, "failed_stages": failed,
            "skipped_stages": skipped, "overall_status": status,
            "metrics": {"stages": len(table), "failed": len(failed), "skipped": len(skipped)}}


def write_results(doc: VerifyDocument, repo_id: str, out_dir: Path,
                  overrides: Mapping[str, Mapping[str, Any]] | None = None,
                  **kw: Any) -> list[Path]:
    """``out_dir/build_output/<stage>/results.json`` for every REB stage."""
    paths = []
    for stage, data in stage_results(doc, repo_id, overrides, **kw).items():
        path = out_dir / "build_output" / stage / "results.json"
        atomic.write_json(path, data)
        paths.append(path)
    return paths


def read_results(out_dir: Path) -> dict[str, dict[str, Any]]:
    """stage -> {status, exit_code, reason, repo_id, failure_category, skip_reason} from
    ``out_dir/build_output``."""
    root = out_dir / "build_output"
    if not root.is_dir():
        raise UsageError(f"{out_dir} has no build_output/ folder of REB results.")
    table: dict[str, dict[str, Any]] = {}
    for path in sorted(root.glob("*/results.json")):
        # A regular file, never through a link, never a FIFO, at most 16 MiB.
        text = safe_io.decode_utf8(safe_io.read_regular(path, 16 * safe_io.MiB), path)
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise UsageError(f"{path}: not valid JSON: {exc}") from None
        if not isinstance(data, dict) or "status" not in data:
            raise UsageError(f"{path}: no `status` field.")
        table[path.parent.name] = {k: data.get(k) for k in
                                   ("repo_id", "status", "exit_code", "reason",
                                    "failure_category", "skip_reason")}
    return table
