"""``synth verify --scoring reb``: C0 and C5 scored as ResearchEnvBench scores them, beside
synth's own verdicts, written as REB's per-stage ``results.json`` files.

C5 follows REB's ``validate_agent_report.py``, on the evidence synth's pyramid gathered
(the C5 checks' observed values, C2 and C4): versions must equal the observed strings
exactly (synth accepts ``3.11`` for ``3.11.2``); an empty ``python_path`` is a path
hallucination (synth calls it unknown); ``gpu_count`` must equal the GPUs REB's CUDA stage
would see, 0 where C2 did not pass (synth calls that unverifiable); ``ddp_expected_ok``
is judged only where the multi-GPU stage ran. A missing or invalid report fails C5 with
no counts, as REB's does.

Where REB's own validator ran in the probe container (the REB profile runs it after the
probes: :mod:`synth.plugins.reb.probes`), its ``hallucination`` stage is the one written and
scored; the rules above are the fallback, and what ``synth reb score --claims`` uses (it has
the stored evidence, not a container).

C0 is REB's pyright count. For a task with REB's scripts, the repository's own
``run_pyright_missing_imports.sh`` runs as REB runs it, in a container of the image under
test (:mod:`synth.plugins.reb.c0script`); otherwise synth runs pyright itself
(:mod:`synth.plugins.reb.pyright`): the distinct top-level packages of its
``reportMissingImports`` diagnostics over REB's fixed per-repo total when the task has one
(``reb/c0_total.json``), else the repository's own count. Both need the host's
``pyright[nodejs]``; without it the ``pyright`` stage keeps synth's own C0 scan's counts
(REB's rule: distinct top-level modules) and says so (``c0_note``), so a job never reads
"0 missing" for a C0 nobody measured.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synth.engine.base import Engine
from synth.errors import InputFileError, UsageError
from synth.formats.claims import Claims
from synth.formats.store import CLAIMS, ArtifactDir, RunDir, parse_text, read_claims, read_verify
from synth.formats.verify import VerifyDocument
from synth.plugins.reb import jobs
from synth.plugins.reb.c0script import run_reb_c0, script_of
from synth.plugins.reb.pyright import find_pyright, run_pyright
from synth.plugins.reb.results import CAPTURED, TASKS, TIMEOUTS, blank_assets
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
    probed = checks.get("python_path", {})
    exists = probed.get("observed") if probed.get("claimed") == path else None
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
                              own if isinstance(own, int) else None), "reb_total": total,
            "measured_by": "synth pyright"}


def _pyright(report: Report, task_dir: Path | None, claims: Claims | str | None,
             claims_file: Path | None, engine: Engine | None,
             ) -> tuple[dict[str, Any] | None, str]:
    """REB's C0 as REB runs it (the repository's own ``run_pyright_missing_imports.sh``,
    :mod:`synth.plugins.reb.c0script`) where the task has it, else synth's pyright run
    (:mod:`synth.plugins.reb.pyright`), in the image under test on ``engine``; or (None,
    why not)."""
    target = report.target
    install = find_pyright()
    if install is None:
        return None, ("pyright[nodejs] not found (pip install 'pyright[nodejs]', or "
                      "SYNTH_PYRIGHT=a folder it was installed into with --target)")
    if not target.get("image"):
        return None, f"the {target.get('kind')} target is not an image: REB's C0 runs in one"
    if engine is None:
        return None, "no container engine to run pyright in"
    image, workdir = str(target["image"]), str(target.get("workdir") or "/workspace")
    scripts = script_of(task_dir)
    if scripts is not None:
        return {"reb": run_reb_c0(engine, image, workdir, scripts,
                                  claims_file, install)}, ""
    python = str(target.get("python") or "python3")
    seen = _checks(report).get("python_path", {}).get("observed")
    if isinstance(claims, Claims) and claims.python_path is not None and seen:
        python = claims.python_path  # REB runs pyright with the report's python
    return run_pyright(engine, image, python, workdir, install), ""


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


def claims_of_text(text: str | None) -> Claims | str | None:
    """A bench cell's ``claims.json`` as the store reads it (None: none; a str: why not)."""
    if text is None:
        return None
    try:
        return parse_text(text, CLAIMS, "claims.json")
    except InputFileError as exc:
        return exc.message


def _claims_path(doc: VerifyDocument) -> Path | None:
    kind, path = doc.target.kind, Path(doc.target.path)
    found = path / "claims.json" if kind in ("run", "artifact") else None
    return found if found is not None and found.is_file() else None


def _common(stage: str, data: dict[str, Any]) -> dict[str, Any]:
    """REB's common fields around a scoring's stage (the scoring's own keys win)."""
    return {"skip_reason": "not_applicable", "task": TASKS[stage], "command": "",
            "timeout_sec": TIMEOUTS[stage], "framework": "unknown", "assets": blank_assets(),
            "failure_category": "", "error_excerpt": "", **data}


def reb_stages(doc: VerifyDocument, claims: Claims | str | None,
               engine: Engine | None = None, *, claims_file: Path | None = None,
               pyright: bool = True, new_claims: bool = False) -> dict[str, dict[str, Any]]:
    """REB's C0 and C5 stages for the deciding report (and REB's CUDA stage where C2 ran):
    C5 is REB's own validator where it ran in the probe container on these claims, else
    synth's rules (:func:`score_c5`) on the evidence; C0 REB's own script where the task
    has it, run on ``engine`` (``pyright`` False: not run). ``new_claims``: ``claims`` are
    not the ones the verification saw."""
    task_dir = jobs.task_dir_of(doc)
    total_doc = jobs.read_json(task_dir / "reb" / "c0_total.json") if task_dir else None
    total = (total_doc or {}).get("total")
    report = doc.deciding
    captured = report.target.get(CAPTURED) or {}
    stages = {}
    if new_claims or not isinstance(captured.get("hallucination"), dict):
        stages["hallucination"] = _common("hallucination", score_c5(claims, report))
    found, why = (_pyright(report, task_dir, claims, claims_file, engine) if pyright
                  else (None, "not asked"))
    if found is None:  # synth's C0 scan stays the measurement: never "0 missing" unsaid
        stages["pyright"] = {"c0_note": f"REB's pyright not run ({why}): the counts are "
                             "synth's C0 scan's (REB's rule: distinct top-level modules)"}
    elif "reb" in found:
        stages["pyright"] = found["reb"]
    else:
        stages["pyright"] = _common("pyright", score_c0(
            found, total if isinstance(total, int) else None, why))
    cuda = cuda_stage(report)
    if cuda is not None and not isinstance(captured.get("cuda"), dict):
        stages["cuda"] = {"status": cuda["status"], "exit_code": cuda["exit_code"]}
    return stages


def _summary(report: Report, job_dir: Path) -> dict[str, Any]:
    """scoring.json: REB's C0 and C5 (as written in the job folder) beside synth's own."""
    levels = {r.level: r.status for r in report.levels}
    out = job_dir / "benchmark" / "build_output"
    c0 = jobs.read_json(out / "pyright" / "results.json") or {}
    c5 = jobs.read_json(out / "hallucination" / "results.json") or {}
    counts = c5.get("hallucinations") or {}
    ratio = c0.get("missing_package_ratio") or (c0.get("metrics") or {}).get(
        "missing_package_ratio")
    return {"scoring": "reb", "job_dir": str(job_dir),
            "C0": {"reb": c0.get("status"), "synth": levels.get("C0"),
                   "reason": c0.get("c0_note") or c0.get("error_excerpt") or None,
                   "missing_package_ratio": ratio,
                   "by": c0.get("measured_by") or "synth"},
            "C5": {"reb": c5.get("status"), "synth": levels.get("C5"),
                   **{k: (counts.get(k) or {}).get("count", 0)
                      for k in ("path", "version", "capability")},
                   "failure_category": c5.get("failure_category") or "",
                   "by": "reb script" if c5.get("captured") else "synth"}}


def score(doc: VerifyDocument, out_dir: Path, engine: Engine | None, *, pyright: bool = True,
          stored_claims: bool = True, claims: Claims | str | None = None,
          claims_file: Path | None = None,
          scored_by: str = "synth verify --scoring reb") -> dict[str, Any]:
    """Score the deciding report as REB does; write ``out_dir/reb/`` (a REB job folder and
    ``scoring.json``); the summary, synth's own verdicts beside REB's. pyright runs on
    ``engine``; ``pyright`` False leaves REB's C0 to synth's scan; ``stored_claims`` False
    scores ``claims`` (its file ``claims_file``) instead of the verified target's (``synth
    reb score``)."""
    if stored_claims:
        claims_file, claims = _claims_path(doc), _claims(doc)
    given = claims
    stages = reb_stages(doc, given, engine, claims_file=claims_file, pyright=pyright,
                        new_claims=not stored_claims)
    task_dir = jobs.task_dir_of(doc)
    run = jobs.read_json(Path(doc.target.path) / "run.json") or {}
    agent = run.get("agent") or {}
    summary = {**jobs.job_summary(doc, task_dir, run_id=str(run.get("run_id") or out_dir.name),
                                  baseline=f"synth-{agent.get('kind') or doc.target.kind}"),
               "scored_by": scored_by}
    job_dir = out_dir / "reb"
    jobs.write_job(doc, summary, job_dir, overrides=stages, task_dir=task_dir,
                   claims=given.to_json() if isinstance(given, Claims) else None)
    result = _summary(doc.deciding, job_dir)
    atomic.write_json(job_dir / "scoring.json", result)
    return result


def score_verification(outcome: VerifyOutcome, engine: Engine | None,
                       say: Say) -> dict[str, Any]:
    """``synth verify --scoring reb`` (the ``reb`` profile's scoring):
    :func:`score` on the outcome's document (pyright on ``engine``), REB's files under
    ``<out>/reb/``, the two summary lines said; the summary is what verify.json carries as
    ``scores.reb``."""
    result = score(outcome.verify_document, outcome.out_dir, engine)
    say_scoring(result, say)
    return result


def say_scoring(result: dict[str, Any], say: Say) -> None:
    c0, c5 = result["C0"], result["C5"]
    say(f"REB scoring: C0 {c0['reb']} (synth {c0['synth']}, by {c0['by']})"
        + (f", missing {c0['missing_package_ratio']}" if c0["missing_package_ratio"] else "")
        + (f": {c0['reason']}" if c0["reason"] else ""))
    say(f"REB scoring: C5 {c5['reb']} (synth {c5['synth']}, by {c5['by']}): path "
        f"{c5['path']}, version {c5['version']}, capability {c5['capability']}; "
        f"REB files in {result['job_dir']}")


def rescore(verify: Path, claims_file: Path | None = None,
            out_dir: Path | None = None) -> dict[str, Any]:
    """``synth reb score``: REB's C5 of a stored verification scored again from the
    evidence its ``verify.json`` holds (no rebuild, no container), on ``claims_file``
    instead of the target's claims when given; a new REB job folder in ``out_dir/reb``
    (default: beside the ``verify.json``). C0 is not measured again: the pyright stage is
    synth's C0 scan's, as stored."""
    path = verify / "verify.json" if verify.is_dir() else verify
    if not path.is_file():
        raise UsageError(f"{verify}: no verify.json there.",
                         hint="Give a verify.json, or the folder synth verify wrote it to.")
    doc = read_verify(path)
    claims: Claims | str | None = None
    if claims_file is not None:
        if not claims_file.is_file():
            raise UsageError(f"--claims {claims_file}: no such file.")
        try:
            claims = read_claims(claims_file)
        except InputFileError as exc:
            claims = exc.message
    return score(doc, out_dir or path.parent, None, pyright=False,
                 stored_claims=claims_file is None, claims=claims,
                 claims_file=claims_file.resolve() if claims_file else None,
                 scored_by="synth reb score")
