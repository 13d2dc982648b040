"""How many containers one ``synth export`` starts on the run's live image, and how long
the export takes: a bundled task's run (``tasks/<task>/agents/<script>``) recorded once,
then exported plain, with ``--include`` and with ``--bundle``. Each container the engine
starts from the live image is counted from ``docker events`` (the image is the run's own,
so other users of the engine are not counted).

    .venv/bin/python bench/export_containers.py                      # this checkout
    .venv/bin/python bench/export_containers.py --code /tmp/older    # another synth's code
    .venv/bin/python bench/export_containers.py --run RUN_DIR        # reuse a recorded run

Needs a Docker engine with the task's base image; locking and ``--bundle`` reach the
package index (``SYNTH_CA_BUNDLE`` behind a proxy).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: A path the patched run changed in site-packages, carried with ``--include``.
INCLUDE = "/opt/venv/lib/python3.11/site-packages/attrs"


def synth(code: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # Run from the code's folder: `python -m` puts the working directory first on sys.path.
    env = {**os.environ, "PYTHONPATH": str(code)}
    return subprocess.run([sys.executable, "-m", "synth", *args], env=env, text=True,
                          capture_output=True, check=False, cwd=code)


def record_run(code: Path, task: str, script: str, artifacts: Path) -> Path:
    task_dir = ROOT / "tasks" / task
    path = Path(script) if "/" in script else task_dir / "agents" / script
    res = synth(code, "run", str(task_dir), "--script", str(path),
                "--artifacts", str(artifacts), "--json")
    if res.returncode != 0:
        sys.exit(f"synth run failed ({res.returncode}):\n{res.stderr[-2000:]}")
    return Path(json.loads(res.stdout)["result"]["run_dir"])


def export_counted(code: Path, run_dir: Path, live: str, out: Path,
                   extra: list[str]) -> tuple[int, float, int]:
    """(containers started from ``live``, seconds, exit code) of one export. The engine's
    events of that window are read back once the export is over (``--since``/``--until``:
    a stream read while it runs can lose lines it had not flushed)."""
    since = time.time()
    t0 = time.monotonic()
    res = synth(code, "export", str(run_dir), "-o", str(out), "--allow-missing", *extra)
    seconds = time.monotonic() - t0
    until = time.time() + 1
    time.sleep(1.5)
    events = subprocess.run(
        ["docker", "events", "--since", f"{since:.3f}", "--until", f"{until:.3f}",
         "--filter", "type=container", "--filter", "event=start",
         "--filter", f"image={live}", "--format", "{{.ID}}"],
        capture_output=True, text=True, check=True)
    started = [line for line in events.stdout.splitlines() if line.strip()]
    if res.returncode != 0:
        print(res.stderr[-2000:], file=sys.stderr)
    return len(started), seconds, res.returncode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--code", type=Path, default=ROOT, help="the synth checkout to run")
    ap.add_argument("--task", default="optional-extras")
    ap.add_argument("--script", default="patched.sh",
                    help="a transcript under the task's agents/, or a path")
    ap.add_argument("--run", type=Path, help="an already recorded run of the task")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="synth-export-containers-") as tmp:
        run_dir = args.run or record_run(args.code, args.task, args.script, Path(tmp))
        live = json.loads((run_dir / "run.json").read_text())["live_image"]["ref"]
        print(f"run {run_dir} (live image {live}), code {args.code}")
        for name, extra in (("plain", []), ("--include", ["--include", INCLUDE]),
                            ("--bundle", ["--bundle"]),
                            ("--include --bundle", ["--include", INCLUDE, "--bundle"])):
            n, seconds, code = export_counted(args.code, run_dir, live,
                                              Path(tmp) / name.replace(" ", ""), extra)
            print(f"  export {name:<20} containers started: {n}   {seconds:5.1f} s"
                  + (f"   (exit {code})" if code else ""))
        if args.run is None:
            subprocess.run(["docker", "rmi", "-f", live], capture_output=True, check=False)


if __name__ == "__main__":
    main()
