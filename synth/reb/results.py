"""REB-format stage results from a ``verify.json``, and a reader that aggregates them.

One ``build_output/<stage>/results.json`` per REB stage, each from the synth level it
matches. ``status`` is REB's ``success`` / ``failure`` / ``skipped``; synth's reason, the
level's metrics and the image verified travel along. :func:`read_results` reads a folder of
them back into one row per stage (our own aggregator, standing in for REB's
``m5/build_master_table.py``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from synth import atomic
from synth.errors import UsageError

#: REB stage -> synth level.
STAGES = {"pyright": "C0", "cpu": "C1", "cuda": "C2", "single_gpu": "C3",
          "multi_gpu": "C4", "hallucination": "C5"}
_STATUS = {"pass": "success", "fail": "failure", "not_reached": "failure",
           "skipped": "skipped", "not_applicable": "skipped"}


def stage_results(doc: Mapping[str, Any], repo_id: str) -> dict[str, dict[str, Any]]:
    key = str(doc["decides"])
    report = doc["reports"][key]
    levels = {r["level"]: r for r in report["levels"]}
    out = {}
    for stage, level in STAGES.items():
        r = levels.get(level) or {"status": "skipped", "reason": "not run", "metrics": {}}
        out[stage] = {
            "repo_id": repo_id, "stage": stage, "synth_level": level,
            "status": _STATUS.get(str(r["status"]), "failure"),
            "exit_code": 0 if r["status"] == "pass" else 1,
            "synth_status": r["status"], "reason": r.get("reason"),
            "metrics": r.get("metrics") or {}, "target": key,
            "image": (report.get("target") or {}).get("image"),
        }
    return out


def write_results(doc: Mapping[str, Any], repo_id: str, out_dir: Path) -> list[Path]:
    """``out_dir/build_output/<stage>/results.json`` for every REB stage."""
    paths = []
    for stage, data in stage_results(doc, repo_id).items():
        path = out_dir / "build_output" / stage / "results.json"
        atomic.write_json(path, data)
        paths.append(path)
    return paths


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
