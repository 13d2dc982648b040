"""REB's tables from synth's output: a bench's cells written as REB job folders by synth's
writers, then aggregated by code of our own that reads only the documented layout and
schema, the way REB's ``m5/build_master_table.py`` does (jobs found by their
``job_summary.json``, grouped by run id and baseline, each level's denominator from the
categories file, C0 as Σmissing/Σtotal over REB's fixed totals, C5 as sums of counts).
Nothing here imports the writer's helpers: a drift between writer and schema fails it."""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from synth.formats.verify import VerifyDocument
from synth.plugins.reb import categories
from synth.plugins.reb.jobs import bench_job
from tests.verify_outcomes import full_verify

LEVEL_STAGES = {"C1": ("cpu", "supports_cpu"), "C3": ("single_gpu", "supports_single_gpu"),
                "C4": ("multi_gpu", "supports_multi_gpu")}


# ----------------------------------------------------------- the aggregator (ours)
def _json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _supported(row: dict[str, str] | None, column: str) -> bool:
    return row is None or row.get(column, "").strip().lower() not in ("no", "n", "false", "0")


def _status(stage: dict[str, Any] | None) -> str:
    if stage is None:
        return "missing"
    word = str(stage.get("status", "")).lower()
    return {"success": "success", "failure": "failed", "skipped": "skipped"}.get(word, word)


def _job_row(job: Path, rows: dict[str, dict[str, str]],
             totals: dict[str, int]) -> dict[str, Any]:
    summary = _json(job / "job_summary.json") or {}
    out = job / "benchmark" / "build_output"
    stages = {s: _json(out / s / "results.json") for s in
              ("pyright", "cpu", "cuda", "single_gpu", "multi_gpu", "hallucination",
               "env_size")}
    row = rows.get(str(summary.get("script_id")))
    pyright = stages["pyright"] or {}
    total = totals.get(str(summary.get("script_id", "")).replace("@", "/").lower(),
                       pyright.get("total_imported_packages_count") or 0)
    missing = min(int(pyright.get("missing_packages_count") or 0), total)
    cuda = stages["cuda"] or {}
    hall = (stages["hallucination"] or {}).get("hallucinations") or {}
    return {
        "key": (summary["run_id"], summary["baseline"]), "job_id": summary["job_id"],
        "c0": (missing, total),
        "levels": {lv: (_supported(row, col), _status(stages[stage]))
                   for lv, (stage, col) in LEVEL_STAGES.items()},
        "c2": cuda.get("status") == "success"
        and (cuda.get("observed") or {}).get("cuda_available", True) is not False,
        "c5": sum(int((hall.get(k) or {}).get("count") or 0)
                  for k in ("path", "version", "capability")),
        "env_mb": ((stages["env_size"] or {}).get("observed") or {}).get("env_prefix_size_MB"),
    }


def aggregate(root: Path, categories: Path, totals: dict[str, int]) -> dict[Any, Any]:
    with categories.open(encoding="utf-8") as fh:
        rows = {r["repo_slug"]: r for r in csv.DictReader(fh)}
    table: dict[Any, dict[str, Any]] = defaultdict(lambda: {
        "jobs": 0, "c0": [0, 0], "c2": 0, "c5": 0,
        **{lv: {"denom": 0, "success": 0} for lv in LEVEL_STAGES}})
    for summary in sorted(root.rglob("job_summary.json")):
        job = _job_row(summary.parent, rows, totals)
        agg = table[job["key"]]
        agg["jobs"] += 1
        agg["c0"] = [agg["c0"][0] + job["c0"][0], agg["c0"][1] + job["c0"][1]]
        agg["c2"] += job["c2"]
        agg["c5"] += job["c5"]
        for lv, (supported, status) in job["levels"].items():
            if supported:  # a skipped or missing supported level stays in the denominator
                agg[lv]["denom"] += 1
                agg[lv]["success"] += status == "success"
    return dict(table)


# ----------------------------------------------------------- synth's output
def _task(root: Path, slug: str, commit: str) -> Path:
    task = root / slug.replace("@", "__")
    (task / "reb").mkdir(parents=True)
    full = slug.replace("@", "/")
    (task / "reb" / "manifest-entry.json").write_text(json.dumps(
        {"repo_id": slug.replace("@", "__"), "repo_url": f"https://github.com/{full}",
         "commit_sha": commit, "hardware_bucket": "auto"}))
    (task / "task.toml").write_text("")
    return task


def _doc(c1: str, c2: str, c5_version: int) -> VerifyDocument:
    """A verify.json; C5's counts as REB's own validator left them in the probe container
    (the REB profile carries its stage files in ``target.reb_stages``)."""
    c5 = {"level": "C5", "status": "fail" if c5_version else "pass", "metrics": {}}
    hall = {"stage": "hallucination", "status": "failure" if c5_version else "success",
            "exit_code": 1 if c5_version else 0,
            "hallucinations": {"path": {"count": 0, "items": []},
                               "version": {"count": c5_version, "items": []},
                               "capability": {"count": 0, "items": []}}}
    target = {"kind": "rebuilt", "image": "i", "reb_stages": {"hallucination": hall}}
    return VerifyDocument.from_json(full_verify({
        "decides": "rebuilt", "build": {"image": "i", "image_id": "sha256:1"},
        "reports": {"rebuilt": {"target": target, "levels": [
            {"level": "C0", "status": "fail", "metrics": {
                "researchenvbench_top_modules": 10,
                "researchenvbench_missing_top_modules": 2}},
            {"level": "C1", "status": c1, "metrics": {}},
            {"level": "C2", "status": c2, "metrics": {}},
            {"level": "C3", "status": "skipped", "metrics": {}, "reason": "no GPU runtime"},
            {"level": "C4", "status": "skipped", "metrics": {}, "reason": "no GPU runtime"},
            c5]}}}))


CATEGORIES = ("repo_slug,repo,git_link,commit,supports_cpu,supports_single_gpu,"
              "supports_multi_gpu,cpu_skip_reason,single_gpu_skip_reason,"
              "multi_gpu_skip_reason,category\n"
              "acme@alpha,acme/alpha,https://github.com/acme/alpha,a1,yes,yes,no,,,,2_x\n"
              "acme@beta,acme/beta,https://github.com/acme/beta,b1,no,yes,yes,,,,3_x\n")


def test_rebs_tables_from_a_synth_bench(tmp_path: Path) -> None:
    """Two repositories x two agents, one bench: one row per agent (not per cell), REB's
    denominators (beta's CPU level is not scored, alpha's DDP level is not), beta's
    failing CPU stage overridden to skipped, skipped GPU levels counted as non-success."""
    (tmp_path / "scripts_repos_test_categories.csv").write_text(CATEGORIES)
    tasks = tmp_path / "tasks"
    alpha, beta = _task(tasks, "acme@alpha", "a1"), _task(tasks, "acme@beta", "b1")
    for task, slug in ((alpha, "acme@alpha"), (beta, "acme@beta")):
        rows = categories.read_rows(tmp_path / "scripts_repos_test_categories.csv")
        support = categories.supports(categories.find_row(rows, slug, ""))
        (task / "reb" / "applicability.json").write_text(json.dumps(
            {"levels": {lv: s.to_json() for lv, s in support.items()}}))
    bench = tmp_path / "bench-1"
    cells = [(alpha, "good", _doc("pass", "fail", 0)), (beta, "good", _doc("fail", "fail", 0)),
             (alpha, "liar", _doc("fail", "fail", 2)), (beta, "liar", _doc("fail", "fail", 1))]
    for task, agent, doc in cells:
        cell = bench / "cells" / f"{task.name}--{agent}--r1"
        bench_job(doc, task, {"cell": cell.name, "agent": agent, "started": 1.0,
                              "times": {"run": 2.0}}, None, cell / "reb", bench.name)
    got = aggregate(bench, tmp_path / "scripts_repos_test_categories.csv",
                    {"acme/alpha": 12, "acme/beta": 20})
    assert sorted(got) == [("bench-1", "good"), ("bench-1", "liar")]
    good, liar = got[("bench-1", "good")], got[("bench-1", "liar")]
    assert good["jobs"] == liar["jobs"] == 2
    assert {lv: good[lv] for lv in LEVEL_STAGES} == {
        "C1": {"denom": 1, "success": 1}, "C3": {"denom": 2, "success": 0},
        "C4": {"denom": 1, "success": 0}}
    assert liar["C1"] == {"denom": 1, "success": 0}
    assert good["c0"] == [4, 32] and good["c2"] == 0  # REB's fixed totals, not the scan's
    assert liar["c5"] == 3
    beta_cpu = json.loads((bench / "cells" / "acme__beta--good--r1" / "reb" / "benchmark" /
                           "build_output" / "cpu" / "results.json").read_text())
    assert (beta_cpu["status"], beta_cpu["meta"]["decision_reason"]) == \
        ("skipped", "categories skip override (post-run)")
