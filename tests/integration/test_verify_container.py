"""The pyramid in a container from a small image: probes copied in only now, repo scanned
from the container, network off, GPU levels skipped with the engine's reason."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from synth.engine.base import ContainerSpec
from synth.formats.task import Task
from synth.pyramid.runner import PyramidSpec, run_pyramid
from synth.verify.command import pyramid_task

pytestmark = pytest.mark.docker


def small_task(tmp: Path, command: str) -> Task:
    return Task.model_validate({
        "name": "small", "base_image": "synth/python:bookworm", "repo": {"path": "repo"},
        "probes": {"workdir": "/workspace", "cpu": {"command": command, "timeout": 60},
                   "gpu": {"command": "python3 gpu.py", "timeout": 60}},
        "not_applicable": {"C4": "single process"},
        "task_dir": tmp, "task_file": tmp / "task.toml",
    })


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "workspace"
    (repo / "app").mkdir(parents=True)
    (repo / "app" / "__init__.py").write_text(textwrap.dedent("""\
        import json
        import yaml
        from app import util
        """))
    (repo / "app" / "util.py").write_text("import os\n")
    (repo / "run.py").write_text("import json\nprint('cpu run ok')\n")
    return repo


def test_container_pyramid(engine: Any, base_image: str, repo: Path, tmp_path: Path) -> None:
    task = small_task(tmp_path, "python3 run.py")
    claims = {"python_path": "/usr/bin/python3", "python_version": "3.11",
              "torch_version": None, "cuda_available": True, "gpu_count": 1,
              "ddp_expected_ok": None}
    spec = ContainerSpec(image=base_image, network=False, labels={"synth.kind": "test"})
    with engine.container(spec) as c:
        c.copy_in(repo, "/")
        report = run_pyramid(c, PyramidSpec(python="/usr/bin/python3", task=pyramid_task(task),
                                            claims=claims, gpu_access="none"))
        # The probes were removed after the pass.
        assert c.exec(["sh", "-c", "ls -d /tmp/synth-verify.* 2>/dev/null"]).stdout == ""
    got = {r.level: r for r in report.levels}
    c0 = got["C0"]
    assert c0.status == "fail"
    assert [m["module"] for m in c0.details["missing"]] == ["yaml"]
    assert c0.details["missing"][0]["distribution"] == "pyyaml"
    assert c0.details["missing"][0]["locations"] == ["app/__init__.py:2"]
    assert c0.metrics["import_statements"] == 4  # json, yaml, os, json (app is the repo's)
    assert got["C0i"].status == "fail"  # importing the package really fails
    assert got["C0i"].details["failed"][0]["module"] == "app"
    assert got["C0i"].details["failed"][0]["where"] == "/workspace/app/__init__.py:2"
    assert got["C1"].summary == "pass"  # levels are independent: run.py needs no yaml
    assert got["C2"].summary == "skipped: no GPU runtime on this engine"
    assert got["C3"].summary == "skipped: no GPU runtime on this engine"
    assert got["C4"].summary == "not_applicable: single process"
    c5 = got["C5"]
    assert c5.status == "fail"  # nothing installed can use CUDA: a capability hallucination
    assert c5.metrics["capability_hallucinations"] == 1
    assert c5.metrics["unverifiable"] == 1  # gpu_count: no GPU runtime to show it
    assert report.target["python_version"].startswith("3.11")


def test_container_cpu_entrypoint_runs_without_cuda(
    engine: Any, base_image: str, tmp_path: Path
) -> None:
    repo = tmp_path / "workspace"
    repo.mkdir()
    (repo / "run.py").write_text(
        "import os, sys\nprint('CVD=%r' % os.environ.get('CUDA_VISIBLE_DEVICES'))\n"
        "sys.exit(0)\n")
    task = small_task(tmp_path, "python3 run.py")
    with engine.container(ContainerSpec(image=base_image, network=False)) as c:
        c.copy_in(repo, "/")
        report = run_pyramid(c, PyramidSpec(python="/usr/bin/python3", task=pyramid_task(task),
                                            gpu_access="none"))
    c1 = report.get("C1")
    assert c1 is not None and c1.status == "pass", c1
    assert "CVD=''" in c1.details["entrypoint"]["stdout_tail"]
    assert report.highest == "C1"
