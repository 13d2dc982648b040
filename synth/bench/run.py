"""``synth bench``: plan the matrix, skip what is finished, run the rest, summarize.

Resuming: a cell whose latest record is ``done`` is skipped; a crashed cell runs again
(its crashed line stays); a cell that was dispatched but never recorded (the bench was
killed) is first recorded as crashed with that reason, then runs again. A damaged results
folder is read as :mod:`synth.bench.results` says: bad lines skipped with a warning, a
link or folder where a file belongs an error naming it, never a traceback.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from synth import profiles
from synth.bench.executors import ExecOptions, check_address, crashed, run_local, run_ray
from synth.bench.matrix import AgentSpec, Cell, plan_cells
from synth.bench.report import render_html
from synth.bench.results import ResultsFolder
from synth.bench.summary import render_markdown, summarize
from synth.config import Settings
from synth.engine import build_cache
from synth.engine.build import find_build_cli
from synth.errors import SynthError, UsageError
from synth.formats.store import parse_verify
from synth.util import atomic

Say = Callable[[str], None]


@dataclass(frozen=True)
class BenchOptions:
    """One ``synth bench``: the matrix and how its cells run. (No engine: each cell's
    worker process opens its own, :func:`synth.bench.cell.run_cell`.)"""

    tasks: tuple[Path, ...]
    agents: tuple[AgentSpec, ...]
    out_dir: Path
    repeats: int = 1
    executor: str = "local"
    jobs: int = 1
    address: str | None = None
    timeout: float = 3600
    keep_images: bool = False
    #: One pip/uv download cache per agent, shared by its cells (``downloads/<agent>/``).
    share_downloads: bool = True


@dataclass(frozen=True)
class BenchOutcome:
    results_dir: Path
    ran: int
    skipped: int
    summary: dict[str, Any]


def _verdict(rec: dict[str, Any]) -> str:
    if rec.get("status") != "done":
        return f"CRASHED: {str(rec.get('error'))[:160]}"
    v = rec.get("verify") or {}
    if not v.get("levels"):
        why = rec.get("error") or v.get("error") or (rec.get("export") or {}).get("error")
        return f"no verdict: {str(why)[:160]}"
    high = v.get("highest") or {}
    c5 = (v.get("levels", {}).get("rebuilt") or {}).get("C5", "-")
    return (f"{'passed' if v.get('passed') else 'FAILED'} (rebuilt {high.get('rebuilt') or '-'}"
            f", live {high.get('live') or '-'}, C5 {c5})")


def write_reports(folder: ResultsFolder) -> dict[str, Any]:
    """``summary.json``, ``summary.md`` and ``report.html`` from the cells so far."""

    summary = summarize(folder.latest())
    atomic.write_json(folder.root / "summary.json", summary)
    atomic.write_text(folder.root / "summary.md", render_markdown(summary))
    if summary["cells"]:
        atomic.write_text(folder.root / "report.html", render_html(summary))
    return summary


def _recover(folder: ResultsFolder, cells: list[Cell], say: Say) -> None:
    """Record cells cut off by a killed bench as crashed before they run again."""
    latest = folder.latest()
    for cell in cells:
        started = folder.started(cell.id)
        rec = latest.get(cell.id)
        if started is None or (rec is not None and rec.get("ended", 0) >= started["started"]):
            continue
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(started["started"]))
        error = (f"interrupted: the bench stopped while this cell ran (dispatched {stamp} UTC "
                 f"on {started.get('host')}, executor {started.get('executor')})")
        rec = crashed(cell, str(started.get("executor")), error)
        rec["started"] = rec["ended"] = started["started"]
        rec.pop("files", None)
        folder.append(rec)
        say(f"{cell.id}: {error}")


def _prune_build_cache(folder: ResultsFolder, cells: list[Cell], say: Say) -> None:
    """Once every cell is done, the BuildKit records the cells' builds left that were still
    in use when each cell pruned its own (an image's records are released after it)."""
    try:
        cli = find_build_cli().path
    except SynthError:
        return
    dirs = [folder.cell_dir(c.id) / "work" / "artifacts" for c in cells]
    pruned = build_cache.prune(cli, [d for d in dirs if d.is_dir()])
    if pruned.ids:
        say(f"bench: pruned {len(pruned.ids)} build cache record(s), "
            f"{pruned.size / 1e6:.0f} MB")


def run_bench(opts: BenchOptions, settings: Settings, say: Say) -> BenchOutcome:
    if opts.executor not in ("local", "ray"):
        raise UsageError(f"--executor {opts.executor!r}: use local or ray.", option="--executor")
    if opts.executor == "ray":  # a bad address stops the bench before any local work
        check_address(opts.address)
    cells = plan_cells(opts.tasks, opts.agents, opts.repeats)
    folder = ResultsFolder(opts.out_dir, warn=lambda m: say(f"warning: {m}"))
    _recover(folder, cells, say)
    latest = folder.latest()
    todo = [c for c in cells if (latest.get(c.id) or {}).get("status") != "done"]
    skipped = len(cells) - len(todo)
    say(f"bench: {len(cells)} cells ({len(todo)} to run, {skipped} finished and skipped) "
        f"-> {folder.root}")
    count = {"n": 0}
    by_id = {c.id: c for c in cells}

    def on_start(cell: Cell) -> None:
        folder.mark_started(cell.id, opts.executor)
        # local: a worker takes the cell now; Ray: the cell waits for a node's free slot
        say(f"  {'queued' if opts.executor == 'ray' else 'start'} {cell.id}")

    def on_done(rec: dict[str, Any]) -> None:
        files = rec.pop("files", None) or {}
        folder.write_files(rec["cell"], files)
        if "verify.json" in files:  # each plug-in's files beside synth's own (REB's results)
            cell_dir = folder.cell_dir(rec["cell"])
            doc = parse_verify(files["verify.json"], str(cell_dir / "verify.json"))
            for profile in profiles.plugins():
                profile.bench_cell(doc, Path(by_id[rec["cell"]].task_dir), rec, files, cell_dir)
        folder.append(rec)
        count["n"] += 1
        say(f"[{count['n']}/{len(todo)}] {rec['cell']}: {_verdict(rec)} in "
            f"{rec['times'].get('total', 0):.0f}s")

    exec_opts = ExecOptions(
        results_dir=folder.root, timeout=opts.timeout, keep_images=opts.keep_images,
        jobs=opts.jobs, address=opts.address,
        settings_kw={"ca_bundle": str(settings.ca_bundle) if settings.ca_bundle else None,
                     "wheelhouse": str(settings.wheelhouse) if settings.wheelhouse else None,
                     "download_cache": str(folder.root / "downloads")
                     if opts.share_downloads else None})
    if todo:
        (run_ray if opts.executor == "ray" else run_local)(todo, exec_opts, on_start, on_done)
        if opts.executor == "local" and not opts.keep_images:
            _prune_build_cache(folder, todo, say)
    summary = write_reports(folder)
    say(f"bench: summary {folder.root / 'summary.md'}, report {folder.root / 'report.html'}")
    return BenchOutcome(folder.root, len(todo), skipped, summary)
