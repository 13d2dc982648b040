"""Bench throughput: cells per hour with ``--jobs 1``, ``--jobs 2`` and a Ray cluster of two
local nodes, the largest process's memory, and the disk a cell leaves.

    .venv/bin/python bench/scale.py [--task tasks/numpy-ext] [--cells 4] [--only jobs1,jobs2,ray]

Each way runs ``synth bench TASK --agent good --repeats CELLS`` into a fresh results folder
(run, export, no-cache rebuild, verify per cell; each cell's images removed after it) and
reports its wall time, cells per hour, the peak resident memory of the largest process it
started (``getrusage(RUSAGE_CHILDREN)``; the containers' own memory is the engine's and not
in it), and the results folder's size per cell (what 100 cells need on disk, the images
being removed). The Ray cluster is a head that runs no cells and two worker nodes on this
machine, each offering one ``synth_docker`` slot, sharing its Docker engine: the same two
cells at a time as ``--jobs 2``, plus Ray's own cost. Needs Docker, the index, Ray (the
``bench`` extra), ``SYNTH_CA_BUNDLE`` behind a TLS proxy.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from ray_local import RayClusterError, local_ray_cluster  # noqa: E402


def one_way(task: str, cells: int, out: Path, extra: list[str]) -> dict[str, Any]:
    argv = [sys.executable, "-m", "synth", "bench", task, "--agent", "good", "--repeats",
            str(cells), "-o", str(out), "--json", *extra]
    t = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=ROOT)
    wall = time.perf_counter() - t
    if proc.returncode not in (0, 1):  # 1: a cell's verdict failed; the timing still holds
        sys.exit(f"synth bench {' '.join(extra)} failed ({proc.returncode}):\n"
                 f"{proc.stderr[-3000:]}")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file() and not p.is_symlink())
    return {"wall_s": round(wall, 1), "cells": cells, "exit": proc.returncode,
            "cells_per_hour": round(cells * 3600 / wall, 1),
            "results_mb_per_cell": round(size / 1e6 / cells, 2),
            "results_gb_per_100_cells": round(size / 1e9 / cells * 100, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--task", default="tasks/numpy-ext")
    ap.add_argument("--cells", type=int, default=4)
    ap.add_argument("--only", default="jobs1,jobs2,ray")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    ways = {w for w in args.only.split(",") if w}
    rows: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="synth-bench-scale-") as tmp_s:
        tmp = Path(tmp_s)
        for name, extra in (("jobs1", ["--jobs", "1"]), ("jobs2", ["--jobs", "2"])):
            if name in ways:
                rows[name] = one_way(args.task, args.cells, tmp / name, extra)
                print(json.dumps({"way": name, **rows[name]}), flush=True)
        if "ray" in ways:
            try:
                with local_ray_cluster(tmp, workers=2) as address:
                    rows["ray"] = one_way(args.task, args.cells, tmp / "ray",
                                          ["--executor", "ray", "--address", address])
            except RayClusterError as e:
                sys.exit(str(e))
            print(json.dumps({"way": "ray", **rows["ray"]}), flush=True)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    result = {"task": args.task, "date": datetime.now(UTC).strftime("%Y-%m-%d"),
              "machine": f"{platform.machine()}, {len(os.sched_getaffinity(0))} cores",
              "ways": rows, "largest_process_peak_rss_mb": round(peak / 1024)}
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
