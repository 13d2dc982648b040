"""Every bundled task's good.sh, replayed by ``synth run``, sets up a working environment.

The run comes from the shared ``task_run`` fixture (the replay agent: each top-level
statement its own ``bash -c`` in ``/workspace``); then the task's CPU entrypoint must do its
work inside the committed live image, under the interpreter the run recorded as primary.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable
from pathlib import Path

import pytest

from synth.engine import ContainerSpec, DockerEngine
from synth.formats.task import discover_tasks, load_task

TASKS_DIR = Path(__file__).resolve().parents[2] / "tasks"
#: What each task's CPU entrypoint prints when its work succeeded.
EXPECTED_OUTPUT = {
    "numpy-ext": "fastops selftest OK",
    "undeclared-dep": "training OK",
    "torch-op": "torchop CPU check OK",
    "conda-only": "oscfit OK",
    "mixed-frameworks": "parity OK",
    "optional-extras": "tinystats ok",
    "extras-only": "cfgreport OK",
    "uv-project": "uvreport OK",
    "poetry-project": "seedstats OK",
    "conda-env": "fit ok: 1.1",
}

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.mark.parametrize("task_dir", discover_tasks(TASKS_DIR), ids=lambda d: d.name)
def test_good_transcript_then_cpu_entrypoint(
    task_dir: Path,
    engine: DockerEngine,
    task_run: Callable[[str, str], Path],
    wheelhouse: Path | None,
) -> None:
    task = load_task(task_dir)
    if task.python.wheelhouse and wheelhouse is None:
        pytest.skip("the task takes torch from a wheelhouse and none is configured")
    assert task.probes.cpu is not None
    run_dir = task_run(task.name, "good.sh")
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "succeeded", run.get("error")
    assert run["violations"] == []
    assert run["claims"]["status"] == "valid"
    claims = json.loads((run_dir / "claims.json").read_text())
    assert claims == json.loads((task.agents_dir / "good.claims.json").read_text())

    python = json.loads((run_dir / "state" / "python.json").read_text())["primary"]
    assert python == claims["python_path"]
    spec = ContainerSpec(image=run["live_image"]["ref"], network=False,
                         labels={"synth.test": "task-setup"})
    with engine.container(spec) as box:
        probe = task.probes.cpu
        bindir = posixpath.dirname(python)
        result = box.exec(
            ["bash", "-c", f'export PATH="{bindir}:$PATH" && {probe.command}'],
            env={"CUDA_VISIBLE_DEVICES": ""}, workdir=task.probes.workdir,
            timeout=probe.timeout,
        )
        assert result.ok, f"CPU entrypoint exited {result.exit_code}:\n{result.output[-3000:]}"
        assert EXPECTED_OUTPUT[task.name] in result.stdout
        for module in task.probes.native_modules:
            found = box.exec([python, "-c", f"import {module}"], workdir=task.probes.workdir)
            assert found.ok, f"native module {module} does not import:\n{found.output}"
