"""Export benchmarks: distillation time on synthetic audit logs, and locking/installing with
uv versus pip-tools/pip.

    .venv/bin/python bench/bench_export.py                 # everything
    .venv/bin/python bench/bench_export.py --only export   # 1k/10k/100k records, no network
    .venv/bin/python bench/bench_export.py --only lock     # needs the package index
    .venv/bin/python bench/bench_export.py --only export --sizes 100000 --repeat 5
    .venv/bin/python bench/bench_export.py --only export --sizes 100000 --repeat 3 \
        --against ../synth-before --rounds 3     # this checkout and another, side by side
    .venv/bin/python bench/bench_export.py --only export --sizes 100000 --repeat 3 \
        --against ../synth-before --built         # ... and this checkout's built wheel

The export figures time, on the same synthetic run, load + distill alone and then the
whole export (load + distill + lock + render + write; the lock is replaced by a fake so
that the network does not dominate), each in a fresh call: the export column is the figure
that counts. The export's CPU time is printed too, since the cores are often shared, and
``--repeat N`` runs each whole export N times and prints the median and the range.
``--against CHECKOUT`` compares this checkout with another (the code before a change) on the
same run, alternating: each of ``--rounds`` rounds exports it in a fresh process of each
checkout, a warm-up export (imports, template caches) and then ``--repeat`` measured ones, so
both see the same machine state; medians over every measured export of a checkout.
``--built`` adds this checkout as the wheel ``uv build`` makes of it, unpacked: the way
``pip install`` gives synth, with the distillation core compiled by mypyc (hatch_build.py),
where the checkout's source runs it as Python. The
lock figures time the real lockers on one pinned set, then a ``--require-hashes`` install
of that lock into a fresh venv with uv and with pip.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from distill_runs import cmd, dist, make_run_dir, system_python, venv  # noqa: E402

from synth.config import Settings  # noqa: E402
from synth.distill.load import load_run  # noqa: E402
from synth.distill.plan import PythonEnvPlan, distill  # noqa: E402
from synth.engine.base import NoEngine  # noqa: E402
from synth.errors import EngineUnavailableError  # noqa: E402
from synth.export.artifact import ExportOptions, export_run  # noqa: E402
from synth.export.lock import Lock, LockedPin, LockTarget, lock_env, render_lock  # noqa: E402

#: One pinned set for the locker comparison: a small research stack, all on PyPI.
LOCK_SET = (("numpy", "2.3.5"), ("pyyaml", "6.0.2"), ("tqdm", "4.67.1"),
            ("packaging", "25.0"), ("protobuf", "5.29.5"), ("tensorboardx", "2.6.2.2"),
            ("six", "1.17.0"), ("idna", "3.10"), ("certifi", "2025.8.3"),
            ("charset-normalizer", "3.4.3"), ("urllib3", "2.5.0"), ("requests", "2.32.5"))

_LINES = (
    "ls -la",
    "cd /workspace && /opt/venv/bin/pip install numpy=={n}.0",
    "apt-get update && apt-get install -y pkg{n}",
    "/opt/venv/bin/python -c 'import numpy; print(numpy.__version__)'",
    "export MAX_JOBS={n} && cd /workspace && /opt/venv/bin/pip install --no-build-isolation .",
    "/opt/venv/bin/pip uninstall -y cython",
    "echo 'export X{n}=1' >> ~/.bashrc",
    "wget -O /data/w{n}.ckpt https://example.org/w.ckpt",
    "nvidia-smi",
    "pip list | grep torch",
)


#: The export figures ask no live image (``ask_live=False``): no engine is needed.
NO_ENGINE = NoEngine(EngineUnavailableError("the export benchmark asks no engine"))

def _fake_locker(env: PythonEnvPlan, _target: LockTarget) -> Lock:
    return Lock(env=env, pins=tuple(
        LockedPin(n, v, (hashlib.sha256(f"{n}{v}".encode()).hexdigest(),))
        for n, v in env.pins), locker="fake")


def _audit(size: int, shape: str) -> list[dict[str, object]]:
    """``size`` audit records: ``bash-c`` lines as an exec agent's log has them, or
    (``replay``) a replayed session's: a ``synth`` record and a ``bash-c`` record per
    statement, and a hook record per simple command — ``size`` records in all."""
    if shape == "exec":
        return [cmd(_LINES[i % len(_LINES)].format(n=i), exit=1 if i % 13 == 0 else 0)
                for i in range(size)]
    out: list[dict[str, object]] = []
    count, i = 0, 0
    while count < size:
        line = _LINES[i % len(_LINES)].format(n=i)
        code = 1 if i % 13 == 0 else 0
        simple = [part.strip() for part in line.replace("&&", "|").split("|")]
        out.append(cmd(line, exit=code, replayed=True,
                       hooks=[(part, code) for part in simple]))
        count += 2 + len(simple)
        i += 1
    return out


def bench_export(sizes: list[int], shape: str = "exec", repeat: int = 1
                 ) -> list[tuple[int, float, list[float], list[float], int]]:
    """Per size: load + distill (s), the whole export's wall and CPU seconds of each of
    ``repeat`` runs (same run folder, a fresh artifact folder each), simple commands."""
    rows = []
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp_s:
            tmp = Path(tmp_s)
            audit = _audit(size, shape)
            py = [system_python(), venv(dists=[
                dist("numpy", "2.3.5"), dist("pip", "23.0.1"),
                dist("fastops", "0.1.0", direct_url={"url": "file:///workspace",
                                                     "dir_info": {}})])]
            run_dir = make_run_dir(tmp, audit, python=py,
                                   apt_added={f"pkg{i}": "1.0" for i in range(0, size, 10)})
            t0 = time.perf_counter()
            commands = len(distill(load_run(run_dir))[1].outcomes)  # the plan is not kept
            t_plan = time.perf_counter() - t0
            walls, cpus = [], []
            for i in range(repeat):
                t1, c1 = time.perf_counter(), time.process_time()
                export_run(ExportOptions(
                    run_dir, out_dir=tmp / f"out{i}", locker=_fake_locker, ask_live=False),
                    Settings.load(artifacts_dir=tmp), NO_ENGINE)
                walls.append(time.perf_counter() - t1)
                cpus.append(time.process_time() - c1)
                shutil.rmtree(tmp / f"out{i}")
            rows.append((size, t_plan, walls, cpus, commands))
    return rows


#: One checkout's exports of one run in a fresh process: a warm-up, then ``repeat`` timed
#: ones, printed as JSON ``[[wall, cpu], ...]`` (only what every checkout of synth has:
#: ``export_run`` with its options and engine, or with keywords as before them). ``code`` is
#: where synth is imported from: the checkout itself, or a wheel built from it and unpacked;
#: synth is imported before the checkout's test helpers, which would put its source first.
_EXPORTS = """
import json, shutil, sys, time
from pathlib import Path
root, code, run_dir, out = (Path(a) for a in sys.argv[1:5])
repeat = int(sys.argv[5])
sys.path[:0] = [str(code), str(root / "tests"), str(root / "bench")]
import synth
assert Path(synth.__file__).parent == code / "synth", synth.__file__
from bench_export import _fake_locker
from synth.config import Settings
try:
    from synth.export import artifact
except ImportError:  # the layout before the folders by data flow: one export module
    import synth.export as artifact
def export():  # a checkout with ExportOptions (and its engine), or one from before them
    if hasattr(artifact, "ExportOptions"):
        from synth.engine.base import NoEngine
        from synth.errors import EngineUnavailableError
        artifact.export_run(artifact.ExportOptions(
            run_dir, out_dir=out / "art", locker=_fake_locker, ask_live=False),
            Settings.load(artifacts_dir=out), NoEngine(EngineUnavailableError("none")))
    else:
        artifact.export_run(run_dir, Settings.load(artifacts_dir=out), out_dir=out / "art",
                            locker=_fake_locker, hash_downloads=False)
times = []
for i in range(repeat + 1):
    t, c = time.perf_counter(), time.process_time()
    export()
    if i:
        times.append([time.perf_counter() - t, time.process_time() - c])
    shutil.rmtree(out / "art")
print(json.dumps(times))
"""


class Code(NamedTuple):
    """One column of the side-by-side figures: a checkout, and where its synth comes from."""

    label: str
    checkout: Path
    code: Path


def built_wheel(checkout: Path, into: Path) -> Path:
    """The wheel ``uv build`` makes of ``checkout`` (as ``pip install`` would: a checkout
    whose build compiles modules gets them compiled), unpacked under ``into``."""
    from uv import find_uv_bin

    wheels = into / "wheel"
    subprocess.run([find_uv_bin(), "build", "--wheel", "--quiet", "--build-constraint",
                    str(checkout / "requirements-dev.lock"), "--out-dir", str(wheels),
                    str(checkout)], check=True)
    (wheel,) = wheels.glob("*.whl")
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(into / "code")
    return into / "code"


def bench_against(sizes: list[int], codes: list[Code], shape: str, repeat: int, rounds: int
                  ) -> list[tuple[int, dict[str, list[list[float]]]]]:
    """Per size: each column's [wall, cpu] of every measured export, the columns alternated."""
    rows = []
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp_s:
            tmp = Path(tmp_s)
            py = [system_python(), venv(dists=[
                dist("numpy", "2.3.5"), dist("pip", "23.0.1"),
                dist("fastops", "0.1.0", direct_url={"url": "file:///workspace",
                                                     "dir_info": {}})])]
            run_dir = make_run_dir(tmp / "run", _audit(size, shape), python=py,
                                   apt_added={f"pkg{i}": "1.0" for i in range(0, size, 10)})
            times: dict[str, list[list[float]]] = {c.label: [] for c in codes}
            for _ in range(rounds):
                for c in codes:
                    out = Path(tempfile.mkdtemp(dir=tmp))
                    proc = subprocess.run(
                        [sys.executable, "-c", _EXPORTS, str(c.checkout), str(c.code),
                         str(run_dir), str(out), str(repeat)],
                        capture_output=True, text=True, check=True,
                        env={**os.environ, "PYTHONPATH": str(c.code)})
                    times[c.label] += json.loads(proc.stdout.splitlines()[-1])
            rows.append((size, times))
    return rows


def print_against(codes: list[Code], rows: list[tuple[int, dict[str, list[list[float]]]]]
                  ) -> None:
    for c in codes:
        print(f"{c.label}: synth from {c.code}")
    base = codes[-1].label  # the code before the change: the ratios are against it
    head = " | ".join(c.label for c in codes)
    print(f"| audit records | whole export, wall: {head} | CPU: {head} | "
          + " | ".join(f"CPU, {c.label} / {base}" for c in codes[:-1]) + " |")
    print("|---:" * (1 + 3 * len(codes) - 1) + "|")
    for size, times in rows:
        walls = [_figure([t[0] for t in times[c.label]]) for c in codes]
        cpus = {c.label: [t[1] for t in times[c.label]] for c in codes}
        ratios = [statistics.median(cpus[c.label]) / statistics.median(cpus[base])
                  for c in codes[:-1]]
        print(f"| {size:,} | " + " | ".join(walls) + " | "
              + " | ".join(_figure(cpus[c.label]) for c in codes) + " | "
              + " | ".join(f"{r:.2f}" for r in ratios) + " |")


def _figure(values: list[float]) -> str:
    """One run's seconds, or the median of several with their range."""
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return (f"{statistics.median(values):.2f} "
            f"({min(values):.2f}–{max(values):.2f}, {len(values)} runs)")


def _env_plan() -> PythonEnvPlan:
    return PythonEnvPlan(
        python="/opt/venv/bin/python", kind="venv", version="3.11.2", prefix="/opt/venv",
        create=(), pip=(), lock_file="requirements.lock", pins=LOCK_SET,
        index_url="https://pypi.org/simple", extra_index_urls=(), find_links=(),
        break_system_packages=False)


def _time_install(tool: str, lockfile: Path) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        venv_dir = Path(tmp) / "v"
        subprocess.run([sys.executable, "-m", "venv", str(venv_dir)], check=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
        env["PIP_CONFIG_FILE"] = os.devnull
        cache = Path(tmp) / "cache"
        if tool == "uv":
            from uv import find_uv_bin

            argv = [find_uv_bin(), "pip", "install", "--no-config", "--require-hashes",
                    "--no-deps", "--cache-dir", str(cache), "--python",
                    str(venv_dir / "bin/python"), "-r", str(lockfile)]
        else:
            argv = [str(venv_dir / "bin/pip"), "install", "--require-hashes", "--no-deps",
                    "--cache-dir", str(cache), "-r", str(lockfile)]
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True, env=env)
        return time.perf_counter() - t0


def bench_lock() -> list[tuple[str, float, float]]:
    ca = os.environ.get("SYNTH_CA_BUNDLE") or "/etc/ssl/certs/ca-certificates.crt"
    target = LockTarget("3.11", "x86_64-manylinux_2_36", None,
                        Path(ca) if Path(ca).is_file() else None)
    rows = []
    for locker in ("uv", "pip-tools"):
        if locker == "pip-tools" and not (shutil.which("pip-compile")
                                          or (Path(sys.executable).parent / "pip-compile")
                                          .exists()):
            continue
        t0 = time.perf_counter()
        lock = lock_env(_env_plan(), target, locker=locker)
        t_lock = time.perf_counter() - t0
        with tempfile.TemporaryDirectory() as tmp:
            lockfile = Path(tmp) / "requirements.lock"
            lockfile.write_text(render_lock(lock, ["bench"]))
            t_install = _time_install("uv" if locker == "uv" else "pip", lockfile)
        rows.append((locker, t_lock, t_install))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=("export", "lock"))
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--shape", choices=("exec", "replay"), default="exec",
                    help="bash-c lines only (default), or a replayed session's records")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="run each whole export N times and print the median and range "
                    "(the cores are often shared: one run can be 20%% off)")
    ap.add_argument("--against", type=Path, metavar="CHECKOUT",
                    help="another checkout of synth (the code before a change): both export "
                    "the same run, alternating, each in fresh processes")
    ap.add_argument("--rounds", type=int, default=3, metavar="N",
                    help="with --against: how many times to alternate the checkouts")
    ap.add_argument("--built", action="store_true",
                    help="with --against: also this checkout as its built wheel "
                    "(uv build: the distillation core compiled with mypyc)")
    args = ap.parse_args()
    if args.repeat < 1 or args.rounds < 1:
        ap.error("--repeat and --rounds must be at least 1")
    if args.against is not None:
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, "
              f"{args.shape} log, Python {sys.version.split()[0]}")
        with tempfile.TemporaryDirectory() as tmp:
            codes = [Code("this (source)", ROOT, ROOT)]
            if args.built:
                codes.insert(0, Code("this (wheel)", ROOT, built_wheel(ROOT, Path(tmp))))
            against = args.against.resolve()
            codes.append(Code("against", against, against))
            print_against(codes, bench_against([int(s) for s in args.sizes.split(",")],
                                               codes, args.shape, args.repeat, args.rounds))
        return
    if args.only in (None, "export"):
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, "
              f"{args.shape} log, Python {sys.version.split()[0]} "
              f"({os.path.realpath(sys.executable)})")
        print("| audit records | load + distill alone (s) | whole export, fake lock (s) "
              "| whole export, CPU (s) | simple commands |")
        print("|---:|---:|---:|---:|---:|")
        for size, t_plan, walls, cpus, n in bench_export(
                [int(s) for s in args.sizes.split(",")], args.shape, args.repeat):
            print(f"| {size:,} | {t_plan:.2f} | {_figure(walls)} | {_figure(cpus)} | {n:,} |")
    if args.only in (None, "lock"):
        print()
        print(f"| locker ({len(LOCK_SET)} pins) | lock with hashes (s) | "
              "install --require-hashes (s) |")
        print("|---|---:|---:|")
        for locker, t_lock, t_install in bench_lock():
            installer = "uv pip install" if locker == "uv" else "pip install"
            print(f"| {locker} / {installer} | {t_lock:.2f} | {t_install:.2f} |")


if __name__ == "__main__":
    main()
