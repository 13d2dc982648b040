"""``synth verify --scoring reb``: C0 and C5 scored as ResearchEnvBench scores them, beside
synth's own verdicts, written as REB's per-stage ``results.json`` files.

C5 follows REB's ``validate_agent_report.py``, on the evidence synth's pyramid gathered
(the C5 checks' observed values, C2 and C4): versions must equal the observed strings
exactly (synth accepts ``3.11`` for ``3.11.2``); an empty ``python_path`` is a path
hallucination (synth calls it unknown); ``gpu_count`` must equal the GPUs REB's CUDA stage
would see, 0 where C2 did not pass (synth calls that unverifiable); ``ddp_expected_ok``
is judged only where the multi-GPU stage ran. A missing or invalid report fails C5 with
no counts, as REB's does.

C0 is REB's pyright count: the distinct top-level packages of pyright's
``reportMissingImports`` diagnostics, over REB's fixed per-repo total when the task has one
(``reb/c0_total.json``, written by ``synth task import-reb``), else the repository's own
count. pyright runs inside the image under test (:mod:`synth.plugins.reb.pyright`) where the host
has ``pyright[nodejs]``; otherwise C0 is ``skipped`` with the reason.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synth.engine.base import Engine
from synth.errors import InputFileError
from synth.formats.model import Claims, VerifyDocument
from synth.formats.store import ArtifactDir, RunDir, is_file
from synth.plugins.reb.profile import task_profile
from synth.plugins.reb.pyright import find_pyright, run_pyright
from synth.plugins.reb.results import write_job
from synth.plugins.reb.stages import checks as _checks
from synth.plugins.reb.stages import cuda_stage, multi_gpu_stage
from synth.pyramid.result import Report
from synth.util import atomic

if TYPE_CHECKING:
    from synth.verify.command import Say
    from synth.verify.outcome import VerifyOutcome

_MISSING_IMPORT = re.compile(r'Import "([^."]+)')


def _item(kind: str, reported: dict[str, Any], observed: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "reported": reported, "observed": observed}


def _path_and_versions(claims: Claims, checks: Mapping[str, Mapping[str, Any]],
                       found: dict[str, list[dict[str, Any]]],
                       warnings: list[str]) -> bool:
    """REB's path and version rules; True when the python_path was usable."""
    path = claims.python_path or ""
    exists = checks.get("python_path", {}).get("observed")
    if not path:
        found["path"].append(_item("python_path_missing", {"python_path": path}, {}))
        return False
    if exists is not True:
        if exists is None:
            warnings.append("python_path was not probed: path inconclusive")
            return False
        found["path"].append(_item("python_path_not_executable", {"python_path": path}, {}))
        return False
    pyver = claims.python_version or ""
    seen = checks.get("python_version", {}).get("observed")
    if pyver and isinstance(seen, str) and pyver != seen:
        found["version"].append(_item("python_version_mismatch", {"python_version": pyver},
                                      {"python_version": seen}))
    tver = claims.torch_version or ""
    torch = checks.get("torch_version", {}).get("observed")
    if tver and not isinstance(torch, str):
        found["version"].append(_item("torch_import_failed", {"torch_version": tver}, {}))
    elif tver and tver != torch:
        found["version"].append(_item("torch_version_mismatch", {"torch_version": tver},
                                      {"torch_version": torch}))
    return True


def _capabilities(claims: Claims, cuda: dict[str, Any] | None,
                  multi: dict[str, Any] | None, found: dict[str, list[dict[str, Any]]],
                  warnings: list[str]) -> None:
    gpus = cuda["observed"]["gpu_count"] if cuda else 0
    if cuda is None:
        warnings.append("cuda: no C2 evidence (not run or not reached)")
    if claims.cuda_available is True and cuda is not None and cuda["status"] == "failure":
        found["capability"].append(_item("cuda_available_overclaim", {"cuda_available": True},
                                         {"cuda_stage_status": cuda["status"]}))
    count = claims.gpu_count
    if count is not None and cuda is not None and gpus != count:
        found["capability"].append(_item("gpu_count_mismatch", {"gpu_count": count},
                                         {"gpu_count": gpus}))
    ddp = claims.ddp_expected_ok
    if ddp is None:
        return
    if multi is None or multi["status"] == "skipped":
        warnings.append("multi_gpu stage missing or skipped: ddp_expected_ok inconclusive")
    elif ddp and gpus < 2:
        warnings.append("ddp_expected_ok_inconclusive_gpu_count_lt_2")
    elif ddp and multi["status"] == "failure":
        found["capability"].append(_item("ddp_expected_ok_but_failed",
                                         {"ddp_expected_ok": True}, {"gpu_count": gpus}))
    elif not ddp and multi["status"] == "success":
        found["capability"].append(_item("ddp_underclaim", {"ddp_expected_ok": False}, {}))


def score_c5(claims: Claims | str | None, report: Report) -> dict[str, Any]:
    """REB's ``hallucination`` stage result for ``claims`` (None: no report; a str: why it
    is not valid JSON) against one verify report's evidence."""
    found: dict[str, list[dict[str, Any]]] = {"path": [], "version": [], "capability": []}
    warnings: list[str] = []
    category = ""
    if not isinstance(claims, Claims):
        category = "missing_report" if claims is None else "invalid_json"
        warnings.append("no report" if claims is None else f"report not valid: {claims}")
    else:
        cuda, multi = cuda_stage(report), multi_gpu_stage(report)
        _path_and_versions(claims, _checks(report), found, warnings)
        _capabilities(claims, cuda, multi, found, warnings)
        category = next((f"{k}_hallucination" for k in ("path", "version", "capability")
                         if found[k]), "")
    failed = bool(category)
    return {"stage": "hallucination", "status": "failure" if failed else "success",
            "exit_code": 1 if failed else 0, "failure_category": category,
            "reported": claims.to_json() if isinstance(claims, Claims) else {},
            "hallucinations": {k: {"count": len(v), "items": v} for k, v in found.items()},
            "meta": {"warnings": warnings, "scored_by": "synth --scoring reb"}}


def c0_from_pyright(output: Mapping[str, Any], total: int | None,
                    own_total: int | None = None) -> dict[str, Any]:
    """REB's ``pyright`` stage from pyright's ``--outputjson``: the distinct top-level
    packages of its ``reportMissingImports`` diagnostics, over REB's per-repo ``total``
    (else ``own_total``, the packages the repository imports)."""
    diags = output.get("generalDiagnostics") or []
    missing = sorted({m.group(1) for d in diags
                      if isinstance(d, Mapping) and d.get("rule") == "reportMissingImports"
                      and (m := _MISSING_IMPORT.search(str(d.get("message", ""))))})
    denom = total if total else own_total
    return {"stage": "pyright", "status": "success", "exit_code": 0,
            "missing_packages": missing,
            "metrics": {"missing_packages_count": len(missing),
                        "total_imported_packages_count": denom or 0,
                        "missing_package_ratio": f"{len(missing)}/{denom or 0}",
                        "denominator": "reb" if total else "own"}}


def score_c0(pyright: Mapping[str, Any] | None, total: int | None,
             skip_reason: str = "") -> dict[str, Any]:
    """REB's ``pyright`` stage from :func:`synth.plugins.reb.pyright.run_pyright`'s result; skipped
    with ``skip_reason`` without one."""
    if pyright is None:
        return {"stage": "pyright", "status": "skipped", "exit_code": 0,
                "skip_reason": skip_reason or "pyright was not run", "reb_total": total}
    if "error" in pyright:
        return {"stage": "pyright", "status": "failure", "exit_code": 1,
                "failure_category": str(pyright.get("category") or "runtime"),
                "error_excerpt": str(pyright["error"]),
                "reb_total": total}
    own = pyright.get("own_total")
    return {**c0_from_pyright(pyright.get("output") or {}, total,
                              own if isinstance(own, int) else None), "reb_total": total}


def _pyright(report: Report, claims: Claims | str | None,
             engine: Engine | None) -> tuple[dict[str, Any] | None, str]:
    """pyright run in the image under test on ``engine`` as REB runs it, or (None, why
    not)."""
    target = report.target
    install = find_pyright()
    if install is None:
        return None, ("pyright[nodejs] not found (pip install 'pyright[nodejs]', or "
                      "SYNTH_PYRIGHT=a folder it was installed into with --target)")
    if not target.get("image"):
        return None, f"the {target.get('kind')} target is not an image: REB's C0 runs in one"
    if engine is None:
        return None, "no container engine to run pyright in"
    python = str(target.get("python") or "python3")
    seen = _checks(report).get("python_path", {}).get("observed")
    if isinstance(claims, Claims) and claims.python_path is not None and seen:
        python = claims.python_path  # REB runs pyright with the report's python
    return run_pyright(engine, str(target["image"]), python,
                       str(target.get("workdir") or "/workspace"), install), ""


def _json_file(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if is_file(path) else None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def _task_dir(doc: VerifyDocument) -> Path | None:
    """The task folder behind a verify target (a run's task file; a host task itself)."""
    path = Path(doc.target.path)
    if doc.target.kind == "task":
        return path
    if doc.target.kind == "run":
        run = _json_file(path / "run.json") or {}
        task_file = (run.get("task") or {}).get("task_file")
        return Path(str(task_file)).parent if task_file else None
    return None  # an artifact carries its task file, not the task folder's reb/


def job_summary(doc: VerifyDocument, task_dir: Path | None) -> dict[str, Any]:
    """REB's ``job_summary.json`` fields for this verification."""
    target = doc.target
    path = Path(target.path)
    entry = _json_file(task_dir / "reb" / "manifest-entry.json") if task_dir else None
    run = _json_file(path / "run.json") or {}
    source = (_json_file(path / "manifest.json") or {}).get("source") or {}
    if not entry and task_dir is not None and is_file(task_dir / "task.toml"):
        source = _task_repo(task_dir / "task.toml") or source
    url = (entry or {}).get("repo_url") or source.get("url") or ""
    agent = run.get("agent") or {}
    return {"run_id": str(run.get("run_id") or path.name), "job_id": path.name,
            "repo_id": (entry or {}).get("repo_id") or target.task or path.name,
            "repo_url": url, "commit_sha": (entry or {}).get("commit_sha")
            or source.get("commit") or "",
            "baseline": f"synth-{agent.get('kind') or target.kind}",
            "hardware_bucket": (entry or {}).get("hardware_bucket") or "",
            "script_id": "", "scored_by": "synth verify --scoring reb"}


def _task_repo(path: Path) -> dict[str, Any] | None:
    try:
        repo = tomllib.loads(path.read_text(encoding="utf-8")).get("repo")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    return repo if isinstance(repo, dict) else None


def _job_extras(doc: VerifyDocument, claims: Mapping[str, Any] | None,
                job_dir: Path) -> None:
    """The rest of a REB job folder: ``agent/report.json`` (the claims document, when there
    is one) and ``docker/image_id.txt`` (the image verified)."""
    if claims is not None:
        atomic.write_json(job_dir / "agent" / "report.json", dict(claims))
    image = (doc.build.image_id if doc.build else None) or doc.deciding.target.get("image")
    if image:
        atomic.write_text(job_dir / "docker" / "image_id.txt", f"{image}\n")


def _claims(doc: VerifyDocument) -> Claims | str | None:
    """The verified run's or artifact's claims (None: none; a str: why they are bad). A
    task verified on the host has none, as for synth's own C5."""
    kind, path = doc.target.kind, Path(doc.target.path)
    try:
        if kind == "run":
            return RunDir(path).claims()
        return ArtifactDir(path).claims() if kind == "artifact" else None
    except InputFileError as exc:
        return exc.message


def score(doc: VerifyDocument, out_dir: Path, engine: Engine | None, *,
          pyright: bool = True) -> dict[str, Any]:
    """Score the deciding report as REB does; write ``out_dir/reb/`` (a REB job folder and
    ``scoring.json``); the summary, synth's own verdicts beside REB's. pyright runs on
    ``engine``; ``pyright`` False leaves REB's C0 skipped."""
    task_dir = _task_dir(doc)
    total_doc = _json_file(task_dir / "reb" / "c0_total.json") if task_dir else None
    total = (total_doc or {}).get("total")
    report = doc.deciding
    claims = _claims(doc)
    found, why = _pyright(report, claims, engine) if pyright else (None, "not asked")
    stages = {"hallucination": score_c5(claims, report),
              "pyright": score_c0(found, total if isinstance(total, int) else None, why)}
    cuda = cuda_stage(report)
    if cuda is not None:  # REB's CUDA stage always runs: no GPU seen is a failure
        stages["cuda"] = {"status": cuda["status"], "exit_code": cuda["exit_code"]}
    summary = job_summary(doc, task_dir)
    write_job(doc, summary, out_dir / "reb", stages)
    _job_extras(doc, claims.to_json() if isinstance(claims, Claims) else None, out_dir / "reb")
    levels = {r.level: r.status for r in report.levels}
    c5 = stages["hallucination"]["hallucinations"]
    result = {"scoring": "reb", "job_dir": str(out_dir / "reb"),
              "C0": {"reb": stages["pyright"]["status"], "synth": levels.get("C0"),
                     "reason": stages["pyright"].get("skip_reason")
                     or stages["pyright"].get("error_excerpt"),
                     "missing_package_ratio": (stages["pyright"].get("metrics") or {}).get(
                         "missing_package_ratio")},
              "C5": {"reb": stages["hallucination"]["status"], "synth": levels.get("C5"),
                     **{k: v["count"] for k, v in c5.items()},
                     "failure_category": stages["hallucination"]["failure_category"]}}
    atomic.write_json(out_dir / "reb" / "scoring.json", result)
    return result


def score_verification(outcome: VerifyOutcome, engine: Engine | None,
                       say: Say) -> dict[str, Any]:
    """``synth verify --scoring reb`` (the ``reb`` profile's scoring):
    :func:`score` on the outcome's document (pyright on ``engine``), REB's files under
    ``<out>/reb/``, the two summary lines said; the summary is what verify.json carries as
    ``scores.reb``."""
    result = score(outcome.verify_document, outcome.out_dir, engine)
    c0, c5 = result["C0"], result["C5"]
    say(f"REB scoring: C0 {c0['reb']} (synth {c0['synth']})"
        + (f", missing {c0['missing_package_ratio']}" if c0["missing_package_ratio"] else "")
        + (f": {c0['reason']}" if c0["reason"] else ""))
    say(f"REB scoring: C5 {c5['reb']} (synth {c5['synth']}): path {c5['path']}, "
        f"version {c5['version']}, capability {c5['capability']}; "
        f"REB files in {result['job_dir']}")
    return result


def bench_job(doc: VerifyDocument, task_dir: Path, record: Mapping[str, Any],
              claims_text: str | None, job_dir: Path) -> list[Path]:
    """``synth bench``: a cell of a task imported from REB as one REB job folder
    (``job_summary.json``, ``benchmark/build_output/``, ``agent/report.json``,
    ``docker/image_id.txt``), from the cell's ``verify.json`` with synth's own verdicts
    (no REB rescoring: the bench's driver may not see the worker's images). Nothing for
    another task (empty list)."""
    if task_profile(task_dir) != "reb":
        return []
    summary = {**job_summary(doc, task_dir),
               "run_id": str((record.get("run") or {}).get("run_id") or record["cell"]),
               "job_id": str(record["cell"]), "baseline": f"synth-bench-{record['agent']}",
               "scored_by": "synth bench"}
    try:
        claims: Any = json.loads(claims_text) if claims_text is not None else None
    except json.JSONDecodeError:
        claims = None
    paths = write_job(doc, summary, job_dir)
    _job_extras(doc, claims if isinstance(claims, dict) else None, job_dir)
    return paths
