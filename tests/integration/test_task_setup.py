"""Every bundled task's good.sh sets up a working environment in a real container.

Each top-level statement of the transcript runs as its own ``bash -c`` in ``/workspace``,
as the replay agent runs it; then the task's CPU entrypoint must pass under the interpreter
the transcript's claims name. Until ``synth run`` replays tasks, this is the proof that the
transcripts work.
"""

from __future__ import annotations

import json
import posixpath
from pathlib import Path

import pytest

from synth.engine import ContainerSpec, DockerEngine, Mount
from synth.task import discover_tasks, load_task
from synth.transcript import split_statements

TASKS_DIR = Path(__file__).resolve().parents[2] / "tasks"
CA_IN_CONTAINER = "/synth/ca/ca-bundle.crt"
WHEELHOUSE_IN_CONTAINER = "/synth/wheelhouse"
#: What each task's CPU entrypoint prints when its work succeeded.
EXPECTED_OUTPUT = {
    "numpy-ext": "fastops selftest OK",
    "undeclared-dep": "training OK",
    "torch-op": "torchop CPU check OK",
    "conda-only": "oscfit OK",
    "mixed-frameworks": "parity OK",
}
STATEMENT_TIMEOUT = 900

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.mark.parametrize("task_dir", discover_tasks(TASKS_DIR), ids=lambda d: d.name)
def test_good_transcript_then_cpu_entrypoint(
    task_dir: Path,
    engine: DockerEngine,
    base_image: str,
    ca_bundle: Path | None,
    wheelhouse: Path | None,
) -> None:
    task = load_task(task_dir)
    if task.python.wheelhouse and wheelhouse is None:
        pytest.skip("the task takes torch from a wheelhouse and none is configured")
    assert task.repo_path is not None and task.probes.cpu is not None
    mounts: list[Mount] = []
    env: dict[str, str] = {}
    if ca_bundle is not None:
        mounts.append(Mount(ca_bundle, CA_IN_CONTAINER))
        env = dict.fromkeys(("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"), CA_IN_CONTAINER)
    if wheelhouse is not None:
        mounts.append(Mount(wheelhouse, WHEELHOUSE_IN_CONTAINER))
    spec = ContainerSpec(
        image=base_image,
        labels={"synth.test": "task-setup", "synth.task": task.name},
        mounts=mounts,
        env=env,
        workdir="/workspace",
    )
    with engine.container(spec) as box:
        box.copy_in(task.repo_path, "/tmp")
        staged = posixpath.join("/tmp", task.repo_path.name)
        assert box.sh(f"mkdir -p /workspace /synth && cp -a {staged}/. /workspace/").ok

        script = (task.agents_dir / "good.sh").read_text(encoding="utf-8")
        for statement in split_statements(script):
            result = box.exec(["bash", "-c", statement], workdir="/workspace",
                              timeout=STATEMENT_TIMEOUT)
            assert result.ok, f"{statement!r} exited {result.exit_code}:\n{result.output[-3000:]}"

        raw_claims = box.read_file("/synth/claims.json")
        assert raw_claims is not None, "good.sh writes /synth/claims.json"
        claims = json.loads(raw_claims)
        stored = task.agents_dir / "good.claims.json"
        if stored.exists():
            assert claims == json.loads(stored.read_text(encoding="utf-8"))

        bindir = posixpath.dirname(claims["python_path"])
        probe = task.probes.cpu
        result = box.exec(
            ["bash", "-c", f'export PATH="{bindir}:$PATH" && {probe.command}'],
            env={"CUDA_VISIBLE_DEVICES": ""},
            workdir=task.probes.workdir,
            timeout=probe.timeout,
        )
        assert result.ok, f"CPU entrypoint exited {result.exit_code}:\n{result.output[-3000:]}"
        assert EXPECTED_OUTPUT[task.name] in result.stdout

        for module in task.probes.native_modules:
            found = box.exec([claims["python_path"], "-c", f"import {module}"],
                             workdir=task.probes.workdir)
            assert found.ok, f"native module {module} does not import:\n{found.output}"
