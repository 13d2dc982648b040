"""Recreating a conda prefix from its lock, against its physical limit and a solve.

    .venv/bin/python bench/conda_rebuild.py               # 5 rounds
    .venv/bin/python bench/conda_rebuild.py --rounds 9

On the bundled conda-env task's channel (tasks/conda-env/channel/make_channel.py:
Debian's python3.11 as a conda Python, pip, a small library; served on 127.0.0.1), each
round times, alternated:

- **limit**: download every archive of the locked set and extract it into the prefix
  folder, a thread per core, with py-rattler's own extractor (Rust; Python's ``tarfile``
  takes longer): the least any installer must do;
- **artifact**: what the artifact's Dockerfile runs, ``conda-install.py LOCK PREFIX CACHE``
  (fetch each archive, check its sha256, extract, link with py-rattler; no solve), with the
  lock ``synth export`` writes for such a prefix;
- **solve**: ``conda create`` as an agent runs it, py-rattler solving ``python=3.11 tinylib
  pip`` against the channel's repodata, then fetching and linking (a solve from
  ``environment.yml`` does the same).

py-rattler is pip-installed into a temporary folder first (the index must be reachable),
pinned as the artifact pins it. Prints the medians and ranges, and each against the limit.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from conda_channel import SUBDIR, build_channel  # noqa: E402

from synth.engine.file_server import serve_folder  # noqa: E402

RATTLER = "py-rattler==0.28.0"
SPECS = ("python=3.11", "tinylib", "pip")
SOLVE = """
import asyncio, os, sys
from rattler import install, solve
async def main(channel, prefix, cache, *specs):
    records = await solve(sources=[channel], specs=list(specs), platforms=["linux-64", "noarch"])
    await install(records, target_prefix=prefix, cache_dir=cache, show_progress=False)
asyncio.run(main(*sys.argv[1:]))
os._exit(0)  # py-rattler 0.28 can crash at interpreter exit after the work is done
"""


def explicit_lock(channel: Path, url: str) -> str:
    """The ``@EXPLICIT`` lock of every package of the channel, as export writes one."""
    repodata = json.loads((channel / SUBDIR / "repodata.json").read_text())
    lines = [f"{url}/{SUBDIR}/{fn}#{info['sha256']}"
             for fn, info in sorted(repodata["packages"].items())]
    return "@EXPLICIT\n" + "\n".join(lines) + "\n"


LIMIT = """
import os, shutil, sys, urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from rattler.package_streaming import extract
work = Path(sys.argv[1])
def one(url):
    archive = work / url.rsplit("/", 1)[1]
    with urllib.request.urlopen(url) as r, archive.open("wb") as f:
        shutil.copyfileobj(r, f, 1 << 20)
    extract(str(archive), str(work / "prefix"))
with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
    list(pool.map(one, sys.argv[2:]))
os._exit(0)
"""


def limit(lock: str, work: Path, rattler: Path) -> None:
    urls = [line.split("#")[0] for line in lock.splitlines()[1:]]
    subprocess.run([sys.executable, "-c", LIMIT, str(work), *urls],
                   env={**os.environ, "PYTHONPATH": str(rattler)}, check=True)


def artifact(lock: str, work: Path, rattler: Path) -> None:
    (work / "lock").write_text(lock)
    subprocess.run([sys.executable, str(ROOT / "templates" / "conda-install.py"),
                    str(work / "lock"), str(work / "prefix"), str(work / "cache")],
                   env={**os.environ, "PYTHONPATH": str(rattler)}, check=True,
                   stdout=subprocess.DEVNULL)


def solved(url: str, work: Path, rattler: Path) -> None:
    subprocess.run([sys.executable, "-c", SOLVE, url, str(work / "prefix"),
                    str(work / "cache"), *SPECS],
                   env={**os.environ, "PYTHONPATH": str(rattler)}, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="synth-conda-bench-") as tmp_s:
        tmp = Path(tmp_s)
        rattler = tmp / "rattler"
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--target",
                        str(rattler), RATTLER], check=True)
        channel = build_channel(tmp / "channel")
        size = sum(p.stat().st_size for p in (channel / SUBDIR).glob("*.tar.bz2"))
        times: dict[str, list[float]] = {"limit": [], "artifact": [], "solve": []}
        with serve_folder(channel, "127.0.0.1") as url:
            lock = explicit_lock(channel, url)
            for _ in range(args.rounds):
                for name, spent in times.items():
                    work = Path(tempfile.mkdtemp(dir=tmp))
                    t = time.perf_counter()
                    if name == "limit":
                        limit(lock, work, rattler)
                    elif name == "artifact":
                        artifact(lock, work, rattler)
                    else:
                        solved(url, work, rattler)
                    spent.append(time.perf_counter() - t)
                    shutil.rmtree(work)
    base = statistics.median(times["limit"])
    print(f"{len(lock.splitlines()) - 1} packages, {size / 1e6:.1f} MB of archives, "
          f"{args.rounds} rounds, load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| | median | range | / limit |")
    print("|---|---:|---:|---:|")
    for name, values in times.items():
        med = statistics.median(values)
        print(f"| {name} | {med:.2f} s | {min(values):.2f}–{max(values):.2f} s | "
              f"{med / base:.2f}× |")


if __name__ == "__main__":
    main()
