"""REB job folders: one verification laid out as REB's ``m2`` leaves a job, the layout
REB's ``m5/build_master_table.py`` collects (``results/<run_id>/jobs/<job_id>/``):

    job_summary.json                       run_id, job_id, repo_url, commit_sha, baseline,
                                           hardware_bucket, script_id, timestamps, status
    agent/report.json                      the agent's report (its claims), when there is one
    docker/image_id.txt                    the image verified
    docker/nvidia_smi.txt                  GPU name, driver and CUDA as nvidia-smi prints
                                           them, where C2 saw a GPU
    benchmark/build_output/<stage>/...     every stage (:mod:`synth.plugins.reb.results`)

``job_id`` is REB's: the first 12 hex digits of ``sha1("owner/repo@commit::baseline")``,
stable across runs. ``run_id`` names one benchmark run (REB: one matrix x one baseline);
``m5`` groups its summary by (``run_id``, ``baseline``), so a ``synth bench`` gives every
cell of the bench the same ``run_id`` (the results folder's name) and each agent its own
``baseline``, never a run id per cell. ``timestamps.agent_start`` / ``agent_end`` are the
session's start and end (epoch seconds, as REB writes them), which m5 turns into the
agent's wall time.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import tomllib
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from synth.errors import SynthError
from synth.formats.verify import VerifyDocument
from synth.plugins.reb.results import write_results
from synth.util import atomic, safe_io


def job_id(full_name: str, commit: str, baseline: str) -> str:
    """REB's stable job id (m1's ``_stable_job_id``)."""
    return hashlib.sha1(f"{full_name}@{commit}::{baseline}".encode()).hexdigest()[:12]


def full_name_of(url: str) -> str:
    """``owner/repo`` of a repository URL (m5's rule), else the URL's last two parts."""
    m = re.search(r"github\.com[:/](?P<name>[^/]+/[^/]+?)(?:\.git)?/?$", url)
    if m:
        return m.group("name")
    parts = [p for p in url.rstrip("/").removesuffix(".git").split("/") if p]
    return "/".join(parts[-2:])


def read_text(path: Path) -> str | None:
    """A small file of a run, an artifact or a task folder: a regular file, never through a
    link or blocking on a FIFO, at most 16 MiB, UTF-8; None where there is none or it is
    not one."""
    try:
        return safe_io.decode_utf8(safe_io.read_regular(path, 16 * safe_io.MiB), path)
    except SynthError:
        return None


def read_json(path: Path) -> dict[str, Any] | None:
    text = read_text(path)
    try:
        data = json.loads(text) if text is not None else None
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def task_dir_of(doc: VerifyDocument) -> Path | None:
    """The task folder behind a verify target (a run's task file; a host task itself)."""
    path = Path(doc.target.path)
    if doc.target.kind == "task":
        return path
    if doc.target.kind == "run":
        run = read_json(path / "run.json") or {}
        task_file = (run.get("task") or {}).get("task_file")
        return Path(str(task_file)).parent if task_file else None
    return None  # an artifact carries its task file, not the task folder's reb/


def _task_repo(task_dir: Path) -> dict[str, Any]:
    try:
        repo = tomllib.loads(read_text(task_dir / "task.toml") or "").get("repo")
    except (ValueError, RecursionError):  # TOMLDecodeError is a ValueError
        return {}
    return repo if isinstance(repo, dict) else {}


def _epoch(stamp: Any) -> float | None:
    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _run_of(doc: VerifyDocument) -> dict[str, Any]:
    path = Path(doc.target.path)
    return read_json(path / "run.json") or {}


def job_summary(doc: VerifyDocument, task_dir: Path | None, *, run_id: str, baseline: str,
                run: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """REB's ``job_summary.json`` for this verification, in REB's keys (plus synth's)."""
    entry = (read_json(task_dir / "reb" / "manifest-entry.json") if task_dir else None) or {}
    repo = _task_repo(task_dir) if task_dir is not None else {}
    source = (read_json(Path(doc.target.path) / "manifest.json") or {}).get("source") or {}
    url = str(entry.get("repo_url") or repo.get("url") or source.get("url") or "")
    commit = str(entry.get("commit_sha") or repo.get("commit") or source.get("commit") or "")
    full = full_name_of(url) if url else str(doc.target.task or "")
    run = run if run is not None else _run_of(doc)
    claims = run.get("claims") or {}
    return {
        "run_id": run_id, "job_id": job_id(full, commit, baseline), "repo_url": url,
        "commit_sha": commit, "baseline": baseline, "baseline_input": baseline,
        "baseline_backend": baseline,
        "hardware_bucket": str(entry.get("hardware_bucket") or "auto"),
        "script_id": full.replace("/", "@", 1), "gpus": "all", "skip_agent": False,
        "timestamps": {"agent_start": _epoch(run.get("started")),
                       "agent_end": _epoch(run.get("ended")), "job_end": time.time()},
        "status": {"agent": run.get("status"), "report_ok": claims.get("status") == "valid",
                   "runall": "synth verify"},
        "container": {"image_id": _image(doc)},
        "repo_id": str(entry.get("repo_id") or doc.target.task or full),
        "synth": {"target": doc.target.to_json(), "decides": doc.decides,
                  "run_id": run.get("run_id")},
    }


def _image(doc: VerifyDocument) -> str | None:
    image = (doc.build.image_id if doc.build else None) or doc.deciding.target.get("image")
    return str(image) if image else None


def nvidia_smi_text(doc: VerifyDocument) -> str | None:
    """What m5 parses out of nvidia-smi (GPU 0's name, the driver, CUDA), from C2's
    evidence; None where no GPU was seen."""
    c2 = doc.deciding.get("C2")
    if c2 is None:
        return None
    driver = c2.details.get("driver") or {}
    torch = (c2.details.get("frameworks") or {}).get("torch") or {}
    devices = torch.get("devices") or []
    if not devices:
        return None
    lines = [f"GPU {d.get('index', i)}: {d.get('name')} (from synth's C2 probe)"
             for i, d in enumerate(devices)]
    return "\n".join([f"Driver Version: {driver.get('version')}    CUDA Version: "
                      f"{driver.get('cuda')}", *lines]) + "\n"


def write_job(doc: VerifyDocument, summary: Mapping[str, Any], job_dir: Path, *,
              claims: Mapping[str, Any] | None = None,
              overrides: Mapping[str, Mapping[str, Any]] | None = None,
              task_dir: Path | None = None, when: float | None = None) -> list[Path]:
    """One REB job folder (the module's layout); the files written."""
    applicability = (read_json(task_dir / "reb" / "applicability.json")
                     if task_dir is not None else None)
    atomic.write_json(job_dir / "job_summary.json", dict(summary))
    paths = [job_dir / "job_summary.json", *write_results(
        doc, str(summary.get("repo_id") or ""), job_dir / "benchmark", overrides,
        applicability=applicability, when=when, git_commit=str(summary.get("commit_sha")))]
    if claims is not None:
        atomic.write_json(job_dir / "agent" / "report.json", dict(claims))
        paths.append(job_dir / "agent" / "report.json")
    if image := _image(doc):
        atomic.write_text(job_dir / "docker" / "image_id.txt", f"{image}\n")
        paths.append(job_dir / "docker" / "image_id.txt")
    if smi := nvidia_smi_text(doc):
        atomic.write_text(job_dir / "docker" / "nvidia_smi.txt", smi)
        paths.append(job_dir / "docker" / "nvidia_smi.txt")
    return paths


def bench_job(doc: VerifyDocument, task_dir: Path, record: Mapping[str, Any],
              claims_text: str | None, job_dir: Path, run_id: str,
              overrides: Mapping[str, Mapping[str, Any]] | None = None) -> list[Path]:
    """``synth bench``: a cell as one REB job folder (``run_id`` the bench's, ``baseline``
    the agent's name), from the cell's ``verify.json`` with synth's verdicts, the files
    REB's scripts wrote in the probe container and ``overrides`` (REB's scoring)."""
    try:
        claims: Any = json.loads(claims_text) if claims_text is not None else None
    except json.JSONDecodeError:
        claims = None
    started, session = record.get("started"), (record.get("times") or {}).get("run")
    ended = started + session if isinstance(started, int | float) and isinstance(
        session, int | float) else record.get("ended")
    run = {"started": _iso(started), "ended": _iso(ended),
           "status": (record.get("run") or {}).get("status"),
           "run_id": (record.get("run") or {}).get("run_id"),
           "claims": {"status": (record.get("run") or {}).get("claims")}}
    summary = {**job_summary(doc, task_dir, run_id=run_id, baseline=str(record["agent"]),
                             run=run), "synth_cell": str(record["cell"])}
    return write_job(doc, summary, job_dir, claims=claims if isinstance(claims, dict) else None,
                     overrides=overrides, task_dir=task_dir, when=record.get("ended"))


def _iso(epoch: Any) -> str | None:
    if not isinstance(epoch, int | float):
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
