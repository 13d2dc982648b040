"""One bench cell: run the agent, export the run, rebuild the artifact from scratch and
verify the rebuilt image beside the live one. Plain JSON in, plain JSON out, so that a
cell runs the same in a local worker process and as a Ray task on another node.

A stage that synth refuses (an export of a run that is not trustworthy is made anyway with
``allow_incomplete`` and noted; a rebuild that fails) is recorded in the cell's record; a
cell is ``crashed`` only when something other than synth's own errors broke it.
"""

from __future__ import annotations

import re
import socket
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from synth.bench.matrix import Cell
from synth.bench.presets import preset_agent
from synth.bench.results import RECORD_FORMAT
from synth.config import Settings
from synth.engine import disk_budget
from synth.engine.base import Engine
from synth.engine.docker import DockerEngine
from synth.errors import SynthError
from synth.export.artifact import ExportOptions, export_run
from synth.formats.task import Task, load_task
from synth.formats.verify import VerifyDocument
from synth.record.agents import Agent, ExecAgent, ReplayAgent
from synth.record.auto.agent import AutoAgent
from synth.record.rundir import read_run, trust_problems
from synth.record.runner import RunOptions, run_session
from synth.verify.command import VerifyOptions, verify

#: The cell's reports copied into the results folder (name -> path under the work folder).
REPORT_FILES = ("run.json", "claims.json", "verify.json", "verify.md", "export-report.md")
LEVELS = ("C0", "C1", "C2", "C3", "C4", "C5")


def _agent(cell: Cell, task: Task, timeout: float) -> Agent:
    if cell.agent.kind == "replay":
        assert cell.script is not None
        return ReplayAgent(cell.script)
    if cell.agent.kind == "auto":
        return AutoAgent()
    if cell.agent.kind == "preset":
        return preset_agent(cell.agent.argv[0], cell.agent.argv[1], task, timeout)
    return ExecAgent(list(cell.agent.argv))


def _image_size(engine: Engine, ref: str | None) -> int | None:
    if not ref:
        return None
    try:
        return int(engine.image_inspect(ref).get("Size") or 0)
    except SynthError:
        return None


def check_cell_space(settings: Settings, engine: Any, task: str) -> None:
    """Refuse a cell whose run and rebuild together would not fit on the engine's data
    root (or whose records would not fit in the artifacts folder)."""
    if not settings.disk_check:
        return
    root = disk_budget.engine_data_root(engine)
    disk_budget.check_space(
        [*disk_budget.run_needs(root, settings.artifacts_dir, []),
         *disk_budget.rebuild_needs(root, None)], f"a bench cell of {task}")


def verify_summary(doc: VerifyDocument) -> dict[str, Any]:
    """What a bench keeps of a ``verify.json``: statuses per level, highest levels,
    fidelity and whether the fingerprints are equal."""
    fid, fp = doc.fidelity, doc.fingerprint
    return {
        "passed": doc.passed, "decides": doc.decides, "require": doc.require,
        "levels": {k: {r.level: r.status for r in rep.levels} for k, rep in doc.reports.items()},
        "highest": {k: rep.highest for k, rep in doc.reports.items()},
        "reaches_live_level": fid.reaches_live_level if fid else None,
        "gaps": [g.level for g in fid.gaps] if fid else [],
        "fingerprint_equal": fp.equal if fp else None,
        "error": None,
    }


def _stages(cell: Cell, settings: Settings, rec: dict[str, Any], engine: Engine,
            say: Callable[[str], None], downloads: Path | None = None) -> None:
    times = rec["times"]
    t0 = time.monotonic()
    task = load_task(cell.task_dir)
    check_cell_space(settings, engine, task.name)
    result = run_session(RunOptions(task=task, agent=_agent(cell, task, rec["timeout"]),
                                    timeout=rec["timeout"], download_cache=downloads),
                         settings, engine, say=say)
    times["run"] = round(time.monotonic() - t0, 2)
    if result.status == "interrupted":  # Ctrl-C reached the worker: not a measurement
        raise KeyboardInterrupt(f"the run {result.run_dir} was interrupted")
    info = read_run(result.run_dir)
    rec["run"] = {"run_id": result.run_id, "run_dir": str(result.run_dir),
                  "status": result.status, "agent_exit_code": result.agent_exit_code,
                  "audit_verified": (info.get("audit") or {}).get("verified"),
                  "claims": (info.get("claims") or {}).get("status"),
                  "violations": len(result.violations),
                  "failed_statements": len(info.get("failed_statements") or [])}
    rec["images"]["live"] = {"ref": result.live_image,
                             "size": _image_size(engine, result.live_image)}
    problems = trust_problems(info, result.run_dir)
    t0 = time.monotonic()
    try:
        exported = export_run(ExportOptions(result.run_dir, allow_incomplete=True), settings,
                              engine)
    except SynthError as exc:
        rec["export"] = {"ok": False, "error": exc.message, "incomplete": problems}
        return
    finally:
        times["export"] = round(time.monotonic() - t0, 2)
    rec["export"] = {"ok": True, "error": None, "incomplete": problems,
                     "allowed_incomplete": bool(problems),
                     "artifact_dir": str(exported.artifact_dir)}
    live = bool(result.live_image) and engine.image_exists(str(result.live_image))
    t0 = time.monotonic()
    try:
        outcome = verify(VerifyOptions(target=str(exported.artifact_dir), rebuild=True,
                                       live=live, out_dir=result.run_dir / "verify"),
                         settings, engine, say=say)
    except SynthError as exc:
        rec["verify"] = {"passed": False, "error": exc.message, "levels": {}, "highest": {}}
        return
    finally:
        times["verify_total"] = round(time.monotonic() - t0, 2)
    doc = outcome.verify_document
    rec["verify"] = verify_summary(doc)
    seconds, image = (doc.build.seconds, doc.build.image) if doc.build else (None, None)
    times["build"] = seconds
    times["verify"] = round(times["verify_total"] - (seconds or 0.0), 2)
    rec["images"]["rebuilt"] = {"ref": image, "size": _image_size(engine, image)}


def new_record(cell: Cell, executor: str, timeout: float) -> dict[str, Any]:
    return {
        "format": RECORD_FORMAT, "cell": cell.id, "task": cell.task, "agent": cell.agent.name,
        "agent_kind": cell.agent.kind, "repeat": cell.repeat, "executor": executor,
        "host": socket.gethostname(), "status": "done", "error": None, "timeout": timeout,
        "started": time.time(), "ended": None, "run": None, "export": None, "verify": None,
        "times": {}, "images": {"live": None, "rebuilt": None},
    }


def run_cell(cell_json: dict[str, Any], work_dir: str, settings_kw: dict[str, Any],
             executor: str = "local", timeout: float = 3600,
             keep_images: bool = False) -> dict[str, Any]:
    """Run one cell under ``work_dir`` (its artifacts folder); never raises.

    Returns the record, with ``files``: the cell's reports (name -> text) for the driver.
    A cell runs in a worker process of its own (a local one, or a Ray task on another node):
    it opens that process's one engine handle here and passes it to every stage."""
    cell = Cell.from_json(cell_json)
    rec = new_record(cell, executor, timeout)
    log = Path(work_dir) / "cell.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with log.open("a", encoding="utf-8") as fh:
        def say(msg: str) -> None:
            fh.write(msg + "\n")
            fh.flush()

        engine: Engine | None = None
        try:
            ca, wh = settings_kw.get("ca_bundle"), settings_kw.get("wheelhouse")
            settings = Settings.load(artifacts_dir=Path(work_dir) / "artifacts",
                                     ca_bundle=Path(ca) if ca else None,
                                     wheelhouse=Path(wh) if wh else None)
            engine = DockerEngine.connect()
            _stages(cell, settings, rec, engine, say, _downloads(settings_kw, cell))
        except SynthError as exc:
            rec["error"] = exc.message
        except BaseException as exc:  # a cell never takes the bench down with it
            rec["status"] = "crashed"
            rec["error"] = f"{type(exc).__name__}: {exc}"
            rec["traceback"] = traceback.format_exc()[-4000:]
            say(rec["traceback"])
        finally:
            if engine is not None and not keep_images:
                _remove_images(engine, rec, Path(work_dir) / "artifacts")
    rec["times"]["total"] = round(time.monotonic() - start, 2)
    rec["ended"] = time.time()
    rec["files"] = _gather(rec, log)
    return rec


def _downloads(settings_kw: dict[str, Any], cell: Cell) -> Path | None:
    """The agent's shared pip/uv download cache (``settings_kw["download_cache"]``, one
    folder per agent: an agent's cache never serves another agent's cells), or None."""
    root = settings_kw.get("download_cache")
    if not root:
        return None
    folder = Path(root) / re.sub(r"[^A-Za-z0-9._-]", "_", cell.agent.name)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _remove_images(engine: Engine, rec: dict[str, Any], artifacts: Path) -> None:
    """The cell's images and everything else its builds left on the engine (temporary
    images, BuildKit cache records: ``synth gc`` scoped to the cell's artifacts folder)."""
    for which in ("rebuilt", "live"):
        ref = (rec["images"].get(which) or {}).get("ref")
        if ref:
            try:
                engine.remove_image(ref)
            except SynthError:
                pass
    try:
        rec["pruned"] = engine.gc(images=True, scope=str(artifacts.resolve()))
    except SynthError as exc:
        rec["pruned"] = [f"gc failed: {exc.message}"]


def _gather(rec: dict[str, Any], log: Path) -> dict[str, str]:
    files: dict[str, str] = {}
    run_dir = Path((rec.get("run") or {}).get("run_dir") or "/nonexistent")
    paths = {"run.json": run_dir / "run.json", "claims.json": run_dir / "claims.json",
             "verify.json": run_dir / "verify" / "verify.json",
             "verify.md": run_dir / "verify" / "verify.md",
             "export-report.md": run_dir / "export" / "export-report.md",
             "cell.log": log}
    for name, path in paths.items():
        try:
            files[name] = path.read_text("utf-8", errors="replace")[-200_000:]
        except OSError:
            continue
    return files
