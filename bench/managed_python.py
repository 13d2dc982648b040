"""Unpacking a uv-managed Python the artifact's way, against uv's own install and the limit.

    .venv/bin/python bench/managed_python.py               # 5 rounds
    .venv/bin/python bench/managed_python.py --rounds 9

On the python-build-standalone-shaped archive of tests/python_build.py (Debian's python3.11
and its standard library, ~14 MB gzip; no real build is reachable here), served on
127.0.0.1, each round times, alternated:

- **limit**: download the archive and unpack it with ``tar -xzf`` (GNU tar, C): the least
  any installer must do;
- **artifact**: what the artifact's Dockerfile runs, ``install-managed-python.py LOCK``
  (fetch, check the sha256, refuse members and links that leave ``python/``, unpack with
  Python's ``tarfile``, make uv's minor-version link), with the lock ``synth export`` writes;
- **uv**: ``uv python install`` of the same build from a downloads list naming the archive
  (what the agent ran; uv fetches, checks and unpacks in Rust), synth's own uv.

Prints the medians and ranges, and each against the limit.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from uv import find_uv_bin

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from python_build import ARCHIVE, KEY, build_python, write_downloads  # noqa: E402

from synth.engine.file_server import serve_folder  # noqa: E402

SCRIPT = ROOT / "templates" / "install-managed-python.py"


def _limit(url: str, dest: Path) -> None:
    dest.mkdir(parents=True)
    subprocess.run(f"curl -sf {url} | tar -xzf - -C {dest}", shell=True, check=True)


def _artifact(lock: Path, dest: Path) -> None:
    subprocess.run([sys.executable, str(SCRIPT), str(lock)], check=True,
                   capture_output=True)


def _uv(listing: Path, dest: Path) -> None:
    subprocess.run([find_uv_bin(), "python", "install", "--no-config", "--no-bin",
                    "--python-downloads-json-url", str(listing), KEY],
                   env={"UV_PYTHON_INSTALL_DIR": str(dest), "PATH": "/usr/bin:/bin",
                        "UV_CACHE_DIR": str(dest.parent / "uv-cache")},
                   check=True, capture_output=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="synth-bench-python-") as tmp_s:
        tmp = Path(tmp_s)
        sha256 = build_python(tmp / "mirror")
        size = (tmp / "mirror" / ARCHIVE).stat().st_size
        with serve_folder(tmp / "mirror", "127.0.0.1") as base:
            url = f"{base}/{ARCHIVE.replace('+', '%2B')}"
            listing = write_downloads(tmp / "mirror", url, sha256)
            work = tmp / "work"
            lock = tmp / "managed-python.lock"
            prefix, link = work / "artifact" / KEY, work / "artifact" / "cpython-3.11-x"
            lock.write_text(f"{sha256} {url} {prefix} {link}\n")
            ways: dict[str, Callable[[Path], None]] = {
                "limit": lambda d: _limit(url, d / "limit"),
                "artifact": lambda d: _artifact(lock, d / "artifact"),
                "uv": lambda d: _uv(listing, d / "uv"),
            }
            times: dict[str, list[float]] = {k: [] for k in ways}
            for r in range(args.rounds):
                for name, way in ways.items():
                    shutil.rmtree(work, ignore_errors=True)
                    work.mkdir()
                    t = time.perf_counter()
                    way(work)
                    times[name].append(time.perf_counter() - t)
                print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s"
                                                     for k, v in times.items()), flush=True)
    limit = statistics.median(times["limit"])
    print(f"\narchive {size / 1e6:.1f} MB, {args.rounds} rounds, medians:")
    print("| way | median | range | vs limit |")
    print("|---|---:|---:|---:|")
    for name, v in times.items():
        med = statistics.median(v)
        print(f"| {name} | {med:.2f} s | {min(v):.2f}–{max(v):.2f} s | {med / limit:.2f}× |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
