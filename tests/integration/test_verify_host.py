"""The host runtime verifies a local venv made by the test (no Docker needed)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from synth.engine.host import HostRuntime
from synth.formats.task import Task
from synth.pyramid.runner import PyramidSpec, run_pyramid
from synth.verify.command import pyramid_task

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")],
                   check=True)
    site = next((root / "venv").glob("lib/python*/site-packages"))
    # A "distribution" installed by hand: the repo needs it.
    (site / "tinydep.py").write_text("VALUE = 42\n")
    return root / "venv"


def make_task(tmp: Path, extra_import: str = "") -> Task:
    repo = tmp / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "__init__.py").write_text(textwrap.dedent(f"""\
        import json
        import tinydep
        {extra_import}
        from . import core
        try:
            import optional_thing
        except ImportError:
            optional_thing = None
        """))
    (repo / "pkg" / "core.py").write_text("def answer():\n    return 42\n")
    (repo / "main.py").write_text(
        "import sys\n"
        "import pkg, tinydep\n"
        "assert tinydep.VALUE == 42\n"
        "print('python', sys.executable)\n"
    )
    return Task.model_validate({
        "name": "hosttask", "base_image": "none", "repo": {"path": "repo"},
        "probes": {"workdir": str(repo), "cpu": {"command": "python main.py", "timeout": 60}},
        "not_applicable": {"C3": "CPU-only code", "C4": "CPU-only code"},
        "task_dir": tmp, "task_file": tmp / "task.toml",
    })


def test_host_venv_passes_c0_c1_and_checks_claims(venv: Path, tmp_path: Path) -> None:
    task = make_task(tmp_path)
    rt = HostRuntime(venv / "bin" / "python")
    claims = {"python_path": str(venv / "bin" / "python"),
              "python_version": f"{sys.version_info[0]}.{sys.version_info[1]}",
              "torch_version": "2.4.0", "cuda_available": True, "gpu_count": None}
    report = run_pyramid(rt, PyramidSpec(python=str(rt.python), task=pyramid_task(task),
                                         repo_dir=task.repo_path, claims=claims))
    got = {r.level: r for r in report.levels}
    assert got["C0"].status == "pass", got["C0"].summary
    assert got["C0"].metrics["optional_missing_statements"] == 1
    assert got["C0i"].status == "pass", got["C0i"].summary
    assert got["C0i"].metrics["modules"] == 2  # pkg, pkg.core; main.py has no __main__ guard
    assert got["C1"].status == "pass", got["C1"].details
    assert str(venv / "bin" / "python") in got["C1"].details["entrypoint"]["stdout_tail"]
    assert got["C2"].status == "skipped"
    assert got["C3"].summary == "not_applicable: CPU-only code"
    assert got["C5"].status == "fail"
    assert got["C5"].metrics["version_hallucinations"] == 1  # torch is not installed
    # cuda_available: C2 is skipped (no GPU), but nothing installed could use CUDA anyway
    assert got["C5"].metrics["capability_hallucinations"] == 1
    checks = {c["field"]: c for c in got["C5"].details["checks"]}
    assert "no CUDA-capable framework" in checks["cuda_available"]["note"]
    assert report.highest == "C1"


def test_host_venv_missing_module_fails_c0(venv: Path, tmp_path: Path) -> None:
    task = make_task(tmp_path, extra_import="import cv2")
    rt = HostRuntime(venv / "bin" / "python")
    report = run_pyramid(rt, PyramidSpec(python=str(rt.python), task=pyramid_task(task),
                                         repo_dir=task.repo_path))
    c0 = report.get("C0")
    assert c0 is not None and c0.status == "fail"
    assert c0.metrics["missing_statements"] == 1
    assert c0.details["missing"][0]["module"] == "cv2"
    assert c0.details["missing"][0]["distribution"] == "opencv-python"
    assert c0.details["missing"][0]["locations"] == ["pkg/__init__.py:3"]
    # Levels are independent: C0i and C1 ran, and say where it breaks.
    c0i = report.get("C0i")
    assert c0i is not None and c0i.status == "fail"
    assert c0i.reason is not None and c0i.reason.startswith(
        "pkg raises ModuleNotFoundError: No module named 'cv2' at ")
    assert c0i.reason.endswith("pkg/__init__.py:3 (and 1 more)")  # pkg.core imports pkg
    c1 = report.get("C1")
    assert c1 is not None and c1.status == "fail"
    c5 = report.get("C5")
    assert c5 is not None and c5.status == "not_applicable"
