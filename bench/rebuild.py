"""Rebuild benchmark: a real artifact's rebuild against the physical limit and the naive replay.

    .venv/bin/python bench/rebuild.py --task mixed-frameworks          # runs good.sh first
    .venv/bin/python bench/rebuild.py --run RUN_DIR [--json OUT.json]
    .venv/bin/python bench/rebuild.py --run RUN_DIR --only synth-uv,naive --steps

Needs Docker (BuildKit), the package index, and for wheelhouse tasks SYNTH_WHEELHOUSE; behind
a TLS proxy SYNTH_CA_BUNDLE. Every build is ``--no-cache`` from the same base image with the
same CA secret, one after the other, and removed afterwards:

- ``limit-cold``: the physical limit — a venv and one ``uv pip install --require-hashes
  --no-deps`` of the artifact's ``requirements.lock`` with a uv binary mounted from the host,
  no cache: downloading and unpacking the locked set once, nothing else.
- ``limit-bytecode``: the limit with ``--compile-bytecode``, as the artifact compiles: the
  limit of an image that imports without compiling on first use.
- ``limit-warm``: the same with uv's cache in a BuildKit cache mount filled by one earlier
  build: unpacking (and linking) only, no download.
- ``synth-uv``: the artifact as ``synth export`` writes it (apt, the hash-pinned uv unpacked
  from its wheel by ``install-uv.py`` installing the lock, source, native builds).
- ``synth-pip``: the same artifact with the lock installed by the environment's pip
  (``pip install --require-hashes --no-deps``), synth's install before uv.
- ``naive``: the raw transcript replayed, every audited ``bash -c`` command one ``RUN`` in
  order (``bench/bench_verify.py``'s replay).
- ``uv-sync`` (a uv project's run, where the artifact installs with ``uv sync --frozen``):
  the Dockerfile a uv user writes, the source copied and ``uv sync --frozen`` with the
  run's extras and groups (and ``--compile-bytecode``, as the artifact) by the host's uv
  binary mounted, no cache: the project's own tool, without synth's pinned installer or
  check.

For each build it prints the wall time, the time of the step that installs the Python lock
(from BuildKit's ``#N DONE 12.3s`` lines) and the image size; with ``--steps``, each of its
steps of a second or more too (where the time of a build goes: the floor a faster install
cannot go under, such as a native compile both the artifact and the replay do).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import platform
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_verify import naive_dockerfile  # noqa: E402

from synth.config import Settings  # noqa: E402

_STEP = re.compile(r"^#(\d+) \[[^\]]*\] (.*)$")
_DONE = re.compile(r"^#(\d+) DONE (\d+(?:\.\d+)?)s")


def step_times(log: str) -> list[tuple[str, float]]:
    """(step text, seconds) of each BuildKit step in a ``--progress=plain`` log."""
    titles: dict[str, str] = {}
    out: list[tuple[str, float]] = []
    for line in log.splitlines():
        m = _STEP.match(line)
        if m and m.group(1) not in titles:
            titles[m.group(1)] = m.group(2)
            continue
        d = _DONE.match(line)
        if d and d.group(1) in titles:
            out.append((titles[d.group(1)], float(d.group(2))))
    return out


def install_seconds(log: str) -> float | None:
    """Seconds of the step(s) that install a Python lock (pip or uv, ``-r …lock``; a uv
    project's ``uv sync --frozen``)."""
    times = [s for title, s in step_times(log)
             if re.search(r"(pip|uv) .*install .*-r /tmp/synth/requirements[^ ]*\.lock", title)
             or ("uv pip install" in title and "requirements" in title)
             or "uv sync --frozen" in title or "uv/bin/uv sync --frozen" in title]
    return round(sum(times), 1) if times else None


def make_run(task: str, transcript: str, settings: Settings) -> Path:
    """Replay ``tasks/<task>/agents/<transcript>`` once: the run to rebuild."""
    from synth.engine.docker import DockerEngine
    from synth.formats.task import load_task
    from synth.record.agents import ReplayAgent
    from synth.record.runner import RunOptions, run_session

    spec = load_task(ROOT / "tasks" / task)
    result = run_session(RunOptions(task=spec, agent=ReplayAgent(spec.agents_dir / transcript),
                                    timeout=3600),
                         settings, DockerEngine.connect(), say=lambda _m: None)
    return result.run_dir


def _pip_locker(env: Any, target: Any) -> Any:
    from synth.export.lock import lock_env

    return lock_env(env, target)  # no installer pin: the template installs with pip


def limit_context(artifact: Path, ctx: Path, settings: Settings, warm: bool,
                   bytecode: bool = False) -> None:
    """A build context that installs requirements.lock with the host's uv, nothing else
    (``bytecode``: and compiles it, ``--compile-bytecode``)."""
    from uv import find_uv_bin

    from synth.verify.build import assemble_context

    assemble_context(artifact, ctx, settings.wheelhouse)
    shutil.copy2(find_uv_bin(), ctx / "uv-bin")
    base = next(line.split()[1] for line in (artifact / "Dockerfile").read_text().splitlines()
                if line.startswith("FROM "))
    wheels = "--mount=type=bind,source=wheelhouse,target=/synth/wheelhouse " if (
        ctx / "wheelhouse").is_dir() else ""
    cache = ("--mount=type=cache,id=synth-bench-uv,target=/root/.cache/uv "
             if warm else "")
    (ctx / "Dockerfile").unlink()  # a hard link to the artifact's own: replace, not edit
    (ctx / "Dockerfile").write_text(
        f"FROM {base}\n"
        "RUN --mount=type=secret,id=cacert,required=false "
        "--mount=type=bind,source=uv-bin,target=/usr/local/bin/uv "
        f"--mount=type=bind,source=requirements.lock,target=/tmp/requirements.lock {wheels}"
        f"{cache}"
        "bash -c 'if [ -f /run/secrets/cacert ]; then export SSL_CERT_FILE=/run/secrets/cacert;"
        " fi; python3 -m venv --without-pip /opt/venv && uv pip install --no-config "
        f"{'' if warm else '--no-cache '}{'--compile-bytecode ' if bytecode else ''}"
        "--python /opt/venv/bin/python --require-hashes "
        "--no-deps -r /tmp/requirements.lock'\n")


def _uv_sync_context(artifact: Path, ctx: Path) -> bool:
    """A uv user's own Dockerfile for the artifact's uv project; False where it has none."""
    from uv import find_uv_bin

    from synth.formats.plan import read_plan_document

    plan, _report = read_plan_document(
        json.loads((artifact / "plan.json").read_text(encoding="utf-8")), "plan.json")
    env = next((e for e in plan.envs if e.uv_sync is not None), None)
    if env is None or env.uv_sync is None:
        return False
    ctx.mkdir()
    shutil.copytree(artifact / "source", ctx / "source", symlinks=True)
    shutil.copy2(find_uv_bin(), ctx / "uv-bin")
    base = next(line.split()[1] for line in (artifact / "Dockerfile").read_text().splitlines()
                if line.startswith("FROM "))
    sync = " ".join(["uv", "sync", "--frozen", "--no-cache", "--compile-bytecode",
                     "--python", "/usr/bin/python3", *env.uv_sync.options])
    (ctx / "Dockerfile").write_text(
        f"FROM {base}\nCOPY source/ {env.uv_sync.project}/\nWORKDIR {env.uv_sync.project}\n"
        "RUN --mount=type=secret,id=cacert,required=false "
        "--mount=type=bind,source=uv-bin,target=/usr/local/bin/uv "
        "bash -c 'if [ -f /run/secrets/cacert ]; then export SSL_CERT_FILE=/run/secrets/cacert;"
        f" fi; {sync}'\n")
    return True


def build_context(ctx: Path, tag: str, settings: Settings) -> tuple[float, str]:
    from synth.engine.build import BuildRequest, build_image, find_build_cli

    secrets = {"cacert": settings.ca_bundle} if settings.ca_bundle else {}
    log = ctx.parent / f"{ctx.name}.log"
    t = time.perf_counter()
    build_image(find_build_cli(settings.docker_cli),
                BuildRequest(context=ctx, tag=tag, secrets=secrets, no_cache=True),
                log_path=log)
    return time.perf_counter() - t, log.read_text(encoding="utf-8", errors="replace")


def _artifact_build(artifact: Path, tag: str, settings: Settings) -> tuple[float, str]:
    from synth.verify.build import build_artifact

    log = artifact.parent / f"{artifact.name}.log"
    t = time.perf_counter()
    build_artifact(artifact, tag, settings, no_cache=True, log_path=log)
    return time.perf_counter() - t, log.read_text(encoding="utf-8", errors="replace")


def naive_context(run_dir: Path, artifact: Path, ctx: Path, settings: Settings) -> int:
    """The transcript replay, with the run's wheelhouse mounted where the run had it."""
    from synth.config import CONTAINER_WHEELHOUSE

    dockerfile, n = naive_dockerfile(run_dir)
    ctx.mkdir(parents=True)
    if settings.wheelhouse is not None and settings.wheelhouse.is_dir():
        shutil.copytree(settings.wheelhouse, ctx / "wheelhouse", copy_function=os.link)
        dockerfile = dockerfile.replace(
            "RUN --mount=type=secret", "RUN --mount=type=bind,source=wheelhouse,target="
            f"{CONTAINER_WHEELHOUSE} --mount=type=secret")
    (ctx / "Dockerfile").write_text(dockerfile)
    shutil.copytree(artifact / "source", ctx / "source")
    return n


def bench(run_dir: Path, settings: Settings, only: Sequence[str] = (),
          steps: bool = False) -> dict[str, Any]:
    """Every build (or those named in ``only``), one after the other; the figures. With
    ``steps``, each build's row also lists its steps of a second or more, as BuildKit timed
    them (a stage beside another overlaps it: the steps need not add up to the build)."""
    from synth.engine.docker import DockerEngine
    from synth.export.artifact import ExportOptions, export_run

    engine = DockerEngine.connect()
    rows: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="synth-bench-rebuild-") as tmp_s:
        tmp = Path(tmp_s)
        arts = {"synth-uv": export_run(ExportOptions(
            run_dir, out_dir=tmp / "uv"), settings, engine).artifact_dir,
                "synth-pip": export_run(ExportOptions(
                    run_dir, out_dir=tmp / "pip", locker=_pip_locker),
                    settings, engine).artifact_dir}
        # A fresh engine has the base under its own name only: publish it as the
        # Dockerfile's FROM names it, as `synth verify --rebuild` does first.
        from synth.engine.base_images import prepare_base
        manifest = json.loads((arts["synth-uv"] / "manifest.json").read_text())
        print("Base image: " + prepare_base(engine, manifest["base"], arts["synth-uv"]))
        lock_pins = sum(1 for line in (arts["synth-uv"] / "requirements.lock").read_text()
                        .splitlines() if "==" in line)
        builds: list[tuple[str, Any]] = []
        for name, warm in (("limit-cold", False), ("limit-bytecode", False),
                           ("limit-fill", True), ("limit-warm", True)):
            ctx = tmp / name
            ctx.mkdir()
            limit_context(arts["synth-uv"], ctx, settings, warm, name == "limit-bytecode")
            builds.append((name, lambda c=ctx, n=name: build_context(
                c, f"synth-bench/{n}", settings)))
        for name in ("synth-uv", "synth-pip"):
            builds.append((name, lambda a=arts[name], n=name: _artifact_build(
                a, f"synth-bench/{n}", settings)))
        n_lines = naive_context(run_dir, arts["synth-uv"], tmp / "naive", settings)
        builds.append(("naive", lambda: build_context(
            tmp / "naive", "synth-bench/naive", settings)))
        if _uv_sync_context(arts["synth-uv"], tmp / "uv-sync"):
            builds.append(("uv-sync", lambda: build_context(
                tmp / "uv-sync", "synth-bench/uv-sync", settings)))
        for name, fn in builds:
            if only and name not in only and not (name == "limit-fill" and "limit-warm" in only):
                continue
            seconds, log = fn()
            tag = f"synth-bench/{name}"
            rows[name] = {"build_s": round(seconds, 1), "python_install_s": install_seconds(log),
                          "image_mb": round(engine.image_inspect(tag)["Size"] / 1e6)}
            if steps:
                rows[name]["steps"] = [[_short(title), s] for title, s in step_times(log)
                                       if s >= 1.0]
            engine.remove_image(tag)
            print(json.dumps({"build": name, **rows[name]}), flush=True)
    rows.pop("limit-fill", None)
    return {"run": str(run_dir), "date": datetime.now(UTC).strftime("%Y-%m-%d"),
            "machine": f"{platform.machine()}, {_cores()} cores", "lock_pins": lock_pins,
            "naive_run_lines": n_lines, "builds": rows, "ratios": ratios(rows)}


def ratios(rows: dict[str, dict[str, Any]]) -> dict[str, float]:
    """The artifact's Python install step, whole build and image against the physical
    limits (``limit-cold``, and ``limit-bytecode``, which compiles as the artifact does), and
    its whole build against the naive replay."""
    out: dict[str, float] = {}
    for limit in ("limit-cold", "limit-bytecode"):
        for name in ("synth-uv", "synth-pip", "naive", "uv-sync"):
            row, lim = rows.get(name, {}), rows.get(limit, {})
            for key, label in (("python_install_s", "install"), ("build_s", "build"),
                               ("image_mb", "image")):
                if row.get(key) and lim.get(key):
                    out[f"{name} {label} / {limit}"] = round(row[key] / lim[key], 2)
    if rows.get("synth-uv", {}).get("build_s") and rows.get("naive", {}).get("build_s"):
        out["synth-uv build / naive"] = round(rows["synth-uv"]["build_s"]
                                              / rows["naive"]["build_s"], 2)
    return out


_REPLAYED = re.compile(r"^RUN (?:\S+=\S+ )*bash -c \"\$\(echo (\S+) \| base64 -d\)\"$")


def _short(title: str) -> str:
    """A step's title in one line of at most 100 characters, its ``--mount`` flags left out
    (they name files, not what the step does); a replayed statement (``naive_dockerfile``
    carries it base64-encoded, behind the CA's variables) as the statement itself."""
    text = re.sub(r"--mount=\S+\s*", "", " ".join(title.split()))
    replayed = _REPLAYED.match(text)
    if replayed:
        statement = base64.b64decode(replayed.group(1)).decode("utf-8", "replace")
        text = "RUN " + " ".join(statement.split())
    return text if len(text) <= 100 else text[:99] + "…"


def _cores() -> int:
    return len(os.sched_getaffinity(0))


def emit(result: dict[str, Any], path: Path | None) -> None:
    """Print the figures as JSON, and write them to ``path`` too where one is given."""
    text = json.dumps(result, indent=2)
    print(text)
    if path is not None:
        path.write_text(text + "\n", encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", type=Path, help="a run directory to rebuild")
    ap.add_argument("--task", help="a bundled task to run first (instead of --run)")
    ap.add_argument("--transcript", default="good.sh")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--only", default="", help="comma-separated builds to run (default: all "
                    "of limit-cold, limit-bytecode, limit-warm, synth-uv, synth-pip, naive, and "
                    "uv-sync for "
                    "a uv project)")
    ap.add_argument("--steps", action="store_true",
                    help="also list each build's steps of a second or more with their seconds")
    args = ap.parse_args()
    settings = Settings.load()
    if args.run is None and args.task is None:
        ap.error("give --run RUN_DIR or --task TASK")
    run_dir = args.run or make_run(args.task, args.transcript, settings)
    emit(bench(run_dir, settings, [b for b in args.only.split(",") if b], args.steps),
         args.json)


if __name__ == "__main__":
    main()
