"""Where cells run. Each executor takes the cells to run and calls ``on_done(record)`` in
the driver as each one finishes (in any order).

* :func:`run_local` — ``--jobs N`` worker processes on this machine (spawned, each cell its
  own session container), N bounded by the cores and the memory;
* :func:`run_ray` — each cell a Ray task on a node with its own Docker engine (a node says
  so with the custom resource ``synth_docker``); the task folder travels with the task (a
  tar in the object store), records and reports come back to the driver.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import shutil
import tarfile
import tempfile
import traceback
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from synth.bench.cell import new_record, run_cell
from synth.bench.matrix import Cell
from synth.errors import UsageError
from synth.util import safe_tar

OnDone = Callable[[dict[str, Any]], None]
OnStart = Callable[[Cell], None]
#: What one cell needs at most in memory on the driver's machine (a session, a build).
CELL_MEMORY = 2 * 1024**3
RAY_RESOURCE = "synth_docker"


@dataclass(frozen=True)
class ExecOptions:
    results_dir: Path
    settings_kw: dict[str, str | None] = field(default_factory=dict)
    timeout: float = 3600
    keep_images: bool = False
    jobs: int = 1
    address: str | None = None


def _mem_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def bounded_jobs(jobs: int, cores: int | None = None, mem: int | None = None) -> int:
    """``--jobs`` limited by the cores and by the memory (one cell needs ``CELL_MEMORY``)."""
    if jobs < 1:
        raise UsageError("--jobs must be at least 1.", option="--jobs")
    cores = cores if cores is not None else (os.cpu_count() or 1)
    mem = mem if mem is not None else _mem_available()
    limit = max(1, min(cores, mem // CELL_MEMORY if mem else cores))
    return min(jobs, limit)


def crashed(cell: Cell, executor: str, error: str) -> dict[str, Any]:
    rec = new_record(cell, executor, 0)
    rec.update(status="crashed", error=error, ended=rec["started"], files={})
    return rec


def run_local(cells: list[Cell], opts: ExecOptions, on_start: OnStart,
              on_done: OnDone) -> None:
    jobs = bounded_jobs(opts.jobs)
    ctx = multiprocessing.get_context("spawn")
    pending = list(cells)
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        running: dict[Future[dict[str, Any]], Cell] = {}
        while pending or running:
            while pending and len(running) < jobs:
                cell = pending.pop(0)
                on_start(cell)
                work = opts.results_dir / "cells" / cell.id / "work"
                shutil.rmtree(work, ignore_errors=True)
                fut = pool.submit(run_cell, cell.to_json(), str(work), opts.settings_kw,
                                  "local", opts.timeout, opts.keep_images)
                running[fut] = cell
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in done:
                cell = running.pop(fut)
                try:
                    on_done(fut.result())
                except Exception as exc:  # the worker process died
                    on_done(crashed(cell, "local", f"worker process failed: "
                                    f"{type(exc).__name__}: {exc}"))


_TASK_SKIP = (".git", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache")


def pack_task(task_dir: Path) -> bytes:
    """The task folder (task file, repo, transcripts) as a tar, for nodes without it."""
    def skip(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        return None if set(Path(info.name).parts) & set(_TASK_SKIP) else info

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(task_dir, arcname="task", filter=skip)
    return buf.getvalue()


def ray_cell(cell_json: dict[str, Any], task_tar: bytes, settings_kw: dict[str, Any],
             timeout: float, keep_images: bool) -> dict[str, Any]:
    """A cell as a Ray task: the task folder unpacked and the cell run in a temporary
    folder of its node, removed after; the record carries the reports home. Shared
    downloads stay on the node (``settings_kw["download_cache"]`` names the bench)."""
    if settings_kw.get("download_cache"):
        settings_kw = {**settings_kw, "download_cache": str(
            Path(tempfile.gettempdir()) / "synth-bench-downloads"
            / Path(str(settings_kw["download_cache"])).parent.name)}
    work = Path(tempfile.mkdtemp(prefix="synth-bench-cell-"))
    try:
        with tarfile.open(fileobj=io.BytesIO(task_tar), mode="r:gz") as tar:
            safe_tar.extract_all(tar, work, policy="data")
        cell_json = {**cell_json, "task_dir": str(work / "task")}
        return run_cell(cell_json, str(work / "cell"), settings_kw, "ray", timeout,
                        keep_images)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def check_address(address: str | None, timeout: float = 5.0) -> None:
    """``--address``, checked before any local work: HOST:PORT, and something listening
    there (the Ray head's GCS port)."""
    import socket

    if not address:
        raise UsageError("--executor ray needs --address HOST:PORT of the cluster's head.",
                         option="--address")
    host, sep, port = address.rpartition(":")
    if (not sep or not host or "://" in address or not port.isdigit()
            or not 0 < int(port) < 65536):
        raise UsageError(f"--address {address!r}: expected HOST:PORT (e.g. 10.0.0.5:6379).",
                         hint="Ray Client addresses (ray://…) are not supported.",
                         option="--address")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except OSError as exc:
        raise UsageError(f"--address {address}: nothing answers there ({exc}).",
                         hint="Start the head first: `ray start --head --port PORT`; check "
                         "the host name and the port.", option="--address") from exc


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise UsageError("--executor ray needs ray, which is not installed.",
                         hint="pip install 'synth[bench]'", option="--executor") from exc
    return ray


def run_ray(cells: list[Cell], opts: ExecOptions, on_start: OnStart, on_done: OnDone) -> None:
    ray = _ray()
    check_address(opts.address)
    try:
        ray.init(address=opts.address, log_to_driver=False, logging_level="ERROR")
    except Exception as exc:
        raise UsageError(f"Cannot join the Ray cluster at {opts.address}: {exc}") from exc
    try:
        slots = ray.cluster_resources().get(RAY_RESOURCE, 0)
        if slots < 1:
            raise UsageError(
                f"No node of the Ray cluster at {opts.address} offers `{RAY_RESOURCE}`.",
                hint="Start each node that has a Docker engine with "
                f"`ray start … --resources '{{\"{RAY_RESOURCE}\": N}}'` (N cells at a time).")
        remote = ray.remote(num_cpus=0, resources={RAY_RESOURCE: 1},
                            max_retries=0)(ray_cell)
        tars: dict[str, Any] = {}  # one object per task folder, shared by its cells
        refs: dict[Any, Cell] = {}
        for cell in cells:
            if cell.task_dir not in tars:
                tars[cell.task_dir] = ray.put(pack_task(Path(cell.task_dir)))
            on_start(cell)
            refs[remote.remote(cell.to_json(), tars[cell.task_dir], opts.settings_kw,
                               opts.timeout, opts.keep_images)] = cell
        while refs:
            ready, _ = ray.wait(list(refs), num_returns=1)
            for ref in ready:
                cell = refs.pop(ref)
                try:
                    on_done(ray.get(ref))
                except Exception as exc:  # the task or its node died
                    on_done(crashed(cell, "ray", f"ray task failed: {type(exc).__name__}: "
                                    f"{exc}\n{traceback.format_exc()[-1500:]}"))
    finally:
        ray.shutdown()
