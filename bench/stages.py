"""Stage budget: what each stage of run → export → verify costs, beside its floor.

    .venv/bin/python bench/stages.py --task numpy-ext [--script good.sh] [--json OUT]
    .venv/bin/python bench/stages.py --task PATH/TO/task.toml --agent auto

Runs the chain as a user does (``synth run`` in this process as the command line calls it,
each final-state capture step timed; ``synth export`` and ``synth verify --rebuild --levels
C0,C1,C5`` as subprocesses timed from outside) and measures, for each stage, the floor: the
same work done without synth, on the same machine, right after.

- **session start** (``synth run`` started → the agent's first statement): a container of the
  base started and stopped (``docker run --rm BASE true``).
- **each agent statement, audited** (its shell's start → end, from the run's events) vs the
  **same statement unaudited**: every statement run again in order, each with ``bash -c``
  in its working folder, in a plain container of the base holding a copy of the repository
  (and the wheelhouse and CA bundle where the run had them).
- **session end** (the last statement → ``synth run`` done: state capture, snapshot,
  commit; each capture step's seconds in ``session_end_steps_s``): ``docker commit`` of
  that plain container.
- **export** vs **the lock alone**: ``uv pip compile --generate-hashes`` of the exported
  lock's pins, for the image's Python and platform.
- **build** (``verify.json``'s) vs the naive replay of the transcript (one ``RUN`` per
  statement: the same work without synth's distilling), and its **Python install step**
  vs the limit: the lock installed by uv with ``--compile-bytecode`` into a venv of the
  base, nothing else (``bench/rebuild.py``'s ``limit-bytecode``).
- **each level** (its ``seconds``) — C1 vs the task's CPU command run directly in the
  rebuilt image; **verify's rest** (wall minus build and levels: the fingerprints and their
  comparison, the reports).
- **disk**: the run folder, the live image, the artifact, the rebuilt image vs the
  limit's and the naive replay's.

Needs Docker, the index, ``SYNTH_CA_BUNDLE`` behind a TLS proxy, ``SYNTH_WHEELHOUSE`` for
wheelhouse tasks. Prints one JSON document (and writes it with ``--json``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from rebuild import (  # noqa: E402
    build_context,
    emit,
    install_seconds,
    limit_context,
    naive_context,
)

from synth.config import CONTAINER_WHEELHOUSE, Settings  # noqa: E402

SYNTH = [sys.executable, "-m", "synth"]


def timed(argv: list[str], **kw: Any) -> tuple[float, subprocess.CompletedProcess[str]]:
    t = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, **kw)
    return time.perf_counter() - t, proc


def must(seconds_proc: tuple[float, subprocess.CompletedProcess[str]], what: str
         ) -> tuple[float, subprocess.CompletedProcess[str]]:
    seconds, proc = seconds_proc
    if proc.returncode != 0:
        sys.exit(f"{what} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return seconds, proc


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def image_mb(ref: str) -> float:
    out = subprocess.run(["docker", "image", "inspect", "-f", "{{.Size}}", ref],
                         capture_output=True, text=True, check=True).stdout
    return round(int(out) / 1e6)


def statements(run_dir: Path) -> list[dict[str, Any]]:
    """The agent's top-level statements: command, working folder, start, end."""
    out: dict[str, dict[str, Any]] = {}
    for line in (run_dir / "logs" / "events.jsonl").read_text().splitlines():
        ev = json.loads(line)
        if ev.get("ev") == "shell" and not ev.get("parent"):
            out[ev["shell"]] = {"cmd": ev["cmd"], "cwd": ev.get("cwd") or "/", "start": ev["t"]}
        elif ev.get("ev") == "shell-end" and ev["shell"] in out:
            out[ev["shell"]]["end"] = ev["t"]
    return [s for s in sorted(out.values(), key=lambda s: s["start"]) if "end" in s]


def floor_session(base: str, repo: Path, stmts: list[dict[str, Any]], settings: Settings,
                  wheelhouse: bool) -> dict[str, Any]:
    """The statements again in a plain container; its start and its commit, timed."""
    start_s, _ = must(timed(["docker", "run", "--rm", base, "true"]), "docker run")
    mounts: list[str] = []
    env: list[str] = []
    if wheelhouse and settings.wheelhouse:
        mounts += ["-v", f"{settings.wheelhouse}:{CONTAINER_WHEELHOUSE}:ro"]
    if settings.ca_bundle:
        mounts += ["-v", f"{settings.ca_bundle}:/run/ca.pem:ro"]
        env += [f"--env={k}=/run/ca.pem" for k in
                ("SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE", "GIT_SSL_CAINFO")]
    script = ["mkdir -p /synth"]
    for i, s in enumerate(stmts):
        script.append(f"cd {shlex.quote(s['cwd'])} 2>/dev/null || cd /; t=$(date +%s%N); "
                      f"bash -c {shlex.quote(s['cmd'])} >/dev/null 2>&1; "
                      f"echo \"FLOOR {i} $(( ($(date +%s%N) - t) / 1000000 ))\"")
    name = f"synth-bench-floor-{os.getpid()}"
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "floor.sh").write_text("\n".join(script) + "\n")
        subprocess.run(["docker", "create", "--name", name, *mounts, *env, "-v",
                        f"{tmp}/floor.sh:/floor.sh:ro", "-w", "/workspace", base, "bash",
                        "/floor.sh"], check=True, capture_output=True)
        try:
            subprocess.run(["docker", "cp", f"{repo}/.", f"{name}:/workspace"], check=True,
                           capture_output=True)
            _, proc = must(timed(["docker", "start", "-a", name]), "the unaudited statements")
            commit_s, _ = must(timed(["docker", "commit", name, "synth-bench/floor"]),
                               "docker commit")
            subprocess.run(["docker", "rmi", "synth-bench/floor"], capture_output=True, check=False)
        finally:
            subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False)
    ms = {int(w[1]): int(w[2]) / 1000 for w in
          (line.split() for line in proc.stdout.splitlines()) if w[:1] == ["FLOOR"]}
    return {"start_s": start_s, "statements_s": [ms.get(i) for i in range(len(stmts))],
            "commit_s": commit_s}


def lock_floor(artifact: Path, settings: Settings) -> float:
    """``uv pip compile --generate-hashes`` of the lock's pins, alone."""
    from uv import find_uv_bin

    env = json.loads((artifact / "plan.json").read_text())["plan"]["envs"][0]
    pins = [line.split(" ")[0] for line in (artifact / env["lock_file"]).read_text().splitlines()
            if "==" in line and not line.startswith("#")]
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "in.txt").write_text("\n".join(pins) + "\n")
        argv = [find_uv_bin(), "pip", "compile", "--no-config", "--generate-hashes", "--no-deps",
                "--python-version", ".".join(env["version"].split(".")[:2]),
                "--python-platform", f"{platform.machine()}-manylinux_2_28", "-o",
                f"{tmp}/out.txt", f"{tmp}/in.txt", "--index-strategy", "unsafe-best-match"]
        if settings.wheelhouse:
            argv += ["--find-links", str(settings.wheelhouse)]
        cert = {"SSL_CERT_FILE": str(settings.ca_bundle)} if settings.ca_bundle else {}
        seconds, _ = must(timed(argv, env={**os.environ, **cert}), "the lock floor")
    return seconds


def run_task(args: argparse.Namespace, settings: Settings
             ) -> tuple[Path, float, float, list[tuple[str, float]]]:
    """``synth run`` in this process (as the command line calls it): the run folder, its
    wall time, when it started (epoch), and the seconds of each final-state capture step."""
    from synth.engine.docker import DockerEngine
    from synth.formats.task import load_task
    from synth.record import runner
    from synth.record.agent_choice import make_agent

    task = load_task(args.task, tasks_root=ROOT / "tasks")
    agent = make_agent("auto") if args.agent == "auto" else make_agent(
        "replay", script=task.agents_dir / args.script)
    steps: list[tuple[str, float]] = []
    guarded = runner._Session.guarded

    def timed_step(self: Any, what: str, fn: Any) -> Any:
        t = time.perf_counter()
        try:
            return guarded(self, what, fn)
        finally:
            steps.append((what, time.perf_counter() - t))

    runner._Session.guarded = timed_step  # type: ignore[method-assign]
    began, t = time.time(), time.perf_counter()
    try:
        result = runner.run_session(runner.RunOptions(task=task, agent=agent, timeout=1800),
                                    settings, DockerEngine.connect(), say=lambda _m: None)
    finally:
        runner._Session.guarded = guarded  # type: ignore[method-assign]
    if result.status != "succeeded":
        sys.exit(f"synth run: {result.status} ({result.run_dir})")
    return result.run_dir, time.perf_counter() - t, began, steps


def bench(args: argparse.Namespace, settings: Settings) -> dict[str, Any]:
    run_dir, run_s, began, capture = run_task(args, settings)
    run_json = json.loads((run_dir / "run.json").read_text())
    stmts = statements(run_dir)
    task_file = Path(run_json["task"]["task_file"])
    from synth.formats.task import load_task

    task = load_task(task_file)
    if task.repo_path is None:
        sys.exit("the task names no local repository folder (repo.path) to replay in")
    floors = floor_session(run_json["base_image"]["ref"], task.repo_path, stmts, settings,
                           bool(run_json.get("wheelhouse")))
    ended = began + run_s
    out_dir = Path(tempfile.mkdtemp(prefix="synth-bench-stages-"))
    try:
        export_s, _ = must(timed([*SYNTH, "export", str(run_dir), "--out",
                                  str(out_dir / "artifact"), "--json"]), "synth export")
        artifact = out_dir / "artifact"
        verify_s, _ = timed([*SYNTH, "verify", str(artifact), "--rebuild", "--levels",
                             "C0,C1,C5", "--progress", "quiet", "--out", str(out_dir / "verify"),
                             "--json"])
        report = json.loads((out_dir / "verify" / "verify.json").read_text())
        rebuilt = report["build"]["image"]
        levels = {lv["level"]: lv for lv in report["reports"]["rebuilt"]["levels"]
                  if lv["level"] in ("C0", "C0i", "C1", "C5")}
        c1_floor = None
        if task.probes.cpu is not None:
            c1_floor, _ = timed(["docker", "run", "--rm", "--network", "none", rebuilt, "bash",
                                 "-c", f"cd {shlex.quote(report_workdir(artifact))} && "
                                 f"{task.probes.cpu.command}"])
        limit_ctx = out_dir / "limit"
        limit_ctx.mkdir()
        limit_context(artifact, limit_ctx, settings, warm=False, bytecode=True)
        _limit_s, limit_log = build_context(limit_ctx, "synth-bench/limit", settings)
        limit_mb = image_mb("synth-bench/limit")
        subprocess.run(["docker", "rmi", "synth-bench/limit"], capture_output=True, check=False)
        naive_context(run_dir, artifact, out_dir / "naive", settings)
        naive_s, _log = build_context(out_dir / "naive", "synth-bench/naive", settings)
        naive_mb = image_mb("synth-bench/naive")
        subprocess.run(["docker", "rmi", "synth-bench/naive"], capture_output=True, check=False)
        build_log = (out_dir / "verify" / "build.log").read_text(errors="replace")
        lock_s = lock_floor(artifact, settings)
        rows = [
            ("session start", stmts[0]["start"] - began if stmts else None, floors["start_s"],
             "docker run --rm BASE true"),
            *[(f"statement {i + 1}: {s['cmd'].splitlines()[0][:60]}", s["end"] - s["start"],
               floors["statements_s"][i], "the same statement, unaudited") for i, s in
              enumerate(stmts)],
            ("session end (state, snapshot, commit)", ended - stmts[-1]["end"] if stmts else None,
             floors["commit_s"], "docker commit of the unaudited container"),
            ("export", export_s, lock_s, "uv pip compile --generate-hashes of the pins"),
            ("build", report["build"]["seconds"], naive_s,
             "the transcript replayed, one RUN per statement (the naive rebuild)"),
            ("build: the Python install step", install_seconds(build_log),
             install_seconds(limit_log), "uv pip install --compile-bytecode of the lock into "
             "a venv, nothing else"),
            *[(f"level {name}", lv.get("seconds"), c1_floor if name == "C1" else None,
               "the CPU command run directly in the image" if name == "C1" else "")
              for name, lv in levels.items()],
            ("verify's rest (fingerprints, comparison, reports)",
             verify_s - report["build"]["seconds"] - sum(lv.get("seconds") or 0
                                                          for lv in levels.values()),
             None, ""),
        ]
        disk = {"run_dir_mb": round(du(run_dir) / 1e6, 1),
                "live_image_mb": image_mb(run_json["live_image"]["ref"]),
                "artifact_mb": round(du(artifact) / 1e6, 1),
                "rebuilt_image_mb": image_mb(rebuilt), "limit_image_mb": limit_mb,
                "naive_image_mb": naive_mb}
        subprocess.run(["docker", "rmi", rebuilt], capture_output=True, check=False)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    table: list[dict[str, Any]] = [
        {"stage": s, "seconds": _r(a), "floor_s": _r(f), "floor": what,
         "gap_s": _r(a - f) if a is not None and f is not None else None}
        for s, a, f, what in rows]
    return {"task": args.task, "run": str(run_dir), "synth_run_s": _r(run_s),
            "synth_export_s": _r(export_s), "synth_verify_s": _r(verify_s),
            "date": datetime.now(UTC).strftime("%Y-%m-%d"),
            "machine": f"{platform.machine()}, {len(os.sched_getaffinity(0))} cores",
            "stages": table, "disk": disk,
            "session_end_steps_s": {what: _r(sec) for what, sec in capture},
            "largest_gaps": [r["stage"] for r in sorted(
                (r for r in table if r["gap_s"] is not None), key=lambda r: -r["gap_s"])[:3]]}


def report_workdir(artifact: Path) -> str:
    for line in reversed((artifact / "Dockerfile").read_text().splitlines()):
        if line.startswith("WORKDIR "):
            return line.split(None, 1)[1]
    return "/"


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--task", required=True, help="a bundled task's name or a task folder")
    ap.add_argument("--script", default="good.sh", help="the transcript the run replays")
    ap.add_argument("--agent", choices=("replay", "auto"), default="replay")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    emit(bench(args, Settings.load()), args.json)


if __name__ == "__main__":
    main()
