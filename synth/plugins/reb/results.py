"""REB-format stage results from a ``verify.json``, and a reader that aggregates them.

One ``build_output/<stage>/results.json`` per REB stage, each from the synth level it
matches. ``status`` is REB's ``success`` / ``failure`` / ``skipped``; synth's reason, the
level's metrics and the image verified travel along; the CUDA stage carries REB's
``observed.cuda_available`` / ``gpu_count``. ``--scoring reb`` replaces the ``pyright`` and
``hallucination`` stages by REB's own scoring (:mod:`synth.plugins.reb.scoring`), and
:func:`write_job` lays them out as one REB job folder (``job_summary.json`` beside
``benchmark/build_output/``), the layout REB's ``m5/build_master_table.py`` collects.
:func:`read_results` reads a folder of them back into one row per stage (our own
aggregator).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from synth.errors import UsageError
from synth.formats.verify import VerifyDocument
from synth.plugins.reb.stages import cuda_stage
from synth.pyramid.result import Level, LevelResult
from synth.util import atomic

#: REB stage -> synth level.
STAGES: dict[str, Level] = {"pyright": "C0", "cpu": "C1", "cuda": "C2", "single_gpu": "C3",
          "multi_gpu": "C4", "hallucination": "C5"}
_STATUS = {"pass": "success", "fail": "failure", "not_reached": "failure",
           "skipped": "skipped", "not_applicable": "skipped"}


def stage_results(doc: VerifyDocument, repo_id: str,
                  overrides: Mapping[str, Mapping[str, Any]] | None = None,
                  ) -> dict[str, dict[str, Any]]:
    """REB stage -> its results.json; ``overrides`` (stage -> fields) win over synth's."""
    key, report = doc.decides, doc.deciding
    out = {}
    for stage, level in STAGES.items():
        r = report.get(level) or LevelResult(level, "skipped", "not run")
        out[stage] = {
            "repo_id": repo_id, "stage": stage, "synth_level": level,
            "status": _STATUS.get(r.status, "failure"),
            "exit_code": 1 if _STATUS.get(r.status) in (None, "failure") else 0,
            "synth_status": r.status, "reason": r.reason, "metrics": dict(r.metrics),
            "target": key, "image": report.target.get("image"),
        }
    cuda = cuda_stage(report)
    if cuda is not None:
        out["cuda"]["observed"] = cuda["observed"]
    for stage, fields in (overrides or {}).items():
        synth_metrics = out[stage]["metrics"]
        out[stage] = {**out[stage], **fields}
        if "metrics" in fields:  # REB's metrics in REB's place; synth's kept beside them
            out[stage]["synth_metrics"] = synth_metrics
    return out


def write_results(doc: VerifyDocument, repo_id: str, out_dir: Path,
                  overrides: Mapping[str, Mapping[str, Any]] | None = None) -> list[Path]:
    """``out_dir/build_output/<stage>/results.json`` for every REB stage."""
    paths = []
    for stage, data in stage_results(doc, repo_id, overrides).items():
        path = out_dir / "build_output" / stage / "results.json"
        atomic.write_json(path, data)
        paths.append(path)
    return paths


def write_job(doc: VerifyDocument, summary: Mapping[str, Any], job_dir: Path,
              overrides: Mapping[str, Mapping[str, Any]] | None = None) -> list[Path]:
    """One REB job folder: ``job_dir/job_summary.json`` (``repo_url``, ``commit_sha``,
    ``run_id``, ``job_id``, ``baseline``, ``hardware_bucket``, ``script_id``) and the stage
    files under ``job_dir/benchmark/build_output/``."""
    atomic.write_json(job_dir / "job_summary.json", dict(summary))
    return [job_dir / "job_summary.json",
            *write_results(doc, str(summary.get("repo_id") or ""), job_dir / "benchmark",
                           overrides)]


def read_results(out_dir: Path) -> dict[str, dict[str, Any]]:
    """stage -> {status, exit_code, reason, repo_id} from ``out_dir/build_output``."""
    root = out_dir / "build_output"
    if not root.is_dir():
        raise UsageError(f"{out_dir} has no build_output/ folder of REB results.")
    table: dict[str, dict[str, Any]] = {}
    for path in sorted(root.glob("*/results.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise UsageError(f"{path}: not valid JSON: {exc}") from exc
        if not isinstance(data, dict) or "status" not in data:
            raise UsageError(f"{path}: no `status` field.")
        table[path.parent.name] = {k: data.get(k) for k in
                                   ("repo_id", "status", "exit_code", "reason")}
    return table
