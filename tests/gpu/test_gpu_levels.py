"""C2-C4 through the host runtime, with the interpreter running these tests.

For GPU hosts without Docker (an H200 with torch + CUDA, say): `pytest tests/gpu`. Each test
skips with the reason where torch or a visible GPU is missing; C4 expects a skip with its
reason when fewer than two GPUs are visible.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from synth.engine.host import HostRuntime
from synth.formats.task import Task
from synth.pyramid.result import Report
from synth.pyramid.runner import PyramidSpec, run_pyramid
from synth.verify.command import pyramid_task

pytestmark = pytest.mark.gpu


def _torch_info() -> dict[str, Any]:
    """Ask a child interpreter, so pytest itself never initialises CUDA."""
    code = ("import json, torch; print(json.dumps({'version': torch.__version__, "
            "'cuda': torch.version.cuda, 'available': torch.cuda.is_available(), "
            "'count': torch.cuda.device_count() if torch.cuda.is_available() else 0}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=False)
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["torch does not import"])[-1]}
    import json

    data: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return data


@pytest.fixture(scope="module")
def torch_gpu() -> dict[str, Any]:
    info = _torch_info()
    if "error" in info:
        pytest.skip(f"torch is not importable under {sys.executable}: {info['error']}")
    if info["cuda"] is None:
        pytest.skip(f"torch {info['version']} is a CPU-only build: no GPU visible to it")
    if not info["available"]:
        pytest.skip(f"no GPU visible (torch {info['version']}, CUDA {info['cuda']}: "
                    "torch.cuda.is_available() is False)")
    return info


def gpu_task(tmp: Path) -> Task:
    repo = tmp / "repo"
    repo.mkdir()
    (repo / "train.py").write_text(
        "import sys, torch\n"
        "x = torch.randn(256, 256, device='cuda')\n"
        "y = (x @ x.T).sum().item()\n"
        "print('gpu ok', torch.cuda.get_device_name(0), y)\n"
        "sys.exit(0)\n"
    )
    (repo / "cpu.py").write_text("import torch\nprint(torch.ones(2).sum().item())\n")
    (repo / "ddp_train.py").write_text(
        "import os, torch, torch.distributed as dist\n"
        "dist.init_process_group('nccl')\n"
        "r = int(os.environ['LOCAL_RANK'])\n"
        "torch.cuda.set_device(r)\n"
        "t = torch.ones(4, device='cuda')\n"
        "dist.all_reduce(t)\n"
        "assert t[0].item() == dist.get_world_size()\n"
        "dist.destroy_process_group()\n"
    )
    return Task.model_validate({
        "name": "gpu-host", "base_image": "none", "repo": {"path": "repo"},
        "probes": {
            "workdir": str(repo),
            "cpu": {"command": "python cpu.py", "timeout": 300},
            "gpu": {"command": "python train.py", "timeout": 600},
            "ddp": {"command": "python -m torch.distributed.run --standalone "
                               "--nproc_per_node=2 ddp_train.py", "timeout": 600, "gpus": 2},
        },
        "task_dir": tmp, "task_file": tmp / "task.toml",
    })


@pytest.fixture(scope="module")
def report(torch_gpu: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Report:
    tmp = tmp_path_factory.mktemp("gpu-task")
    task = gpu_task(tmp)
    rt = HostRuntime(Path(sys.executable))
    claims = {"python_path": sys.executable, "torch_version": torch_gpu["version"],
              "cuda_available": True, "gpu_count": torch_gpu["count"],
              "ddp_expected_ok": torch_gpu["count"] >= 2}
    return run_pyramid(rt, PyramidSpec(python=sys.executable, task=pyramid_task(task),
                                       repo_dir=task.repo_path, claims=claims,
                                       target={"kind": "host"}), progress=print)


def test_c2_framework_sees_the_gpu(report: Report, torch_gpu: dict[str, Any]) -> None:
    c2 = report.get("C2")
    assert c2 is not None
    assert c2.status == "pass", c2.summary
    assert "torch" in c2.metrics["frameworks"]
    assert c2.metrics["gpu_count"] == torch_gpu["count"]
    assert c2.metrics["torch_cuda"] == torch_gpu["cuda"]
    assert c2.metrics["driver_version"]
    torch = c2.details["frameworks"]["torch"]
    assert torch["devices"] and all(d["capability"] for d in torch["devices"])


def test_c3_kernel_and_gpu_entrypoint(report: Report) -> None:
    c3 = report.get("C3")
    assert c3 is not None
    assert c3.status == "pass", c3.summary
    assert c3.details["probe"]["matmul"]["ok"]
    assert c3.details["probe"]["matmul"]["max_abs_error"] < 1e-3
    assert "gpu ok" in c3.details["entrypoint"]["stdout_tail"]


def test_c4_ddp_or_the_reason_it_cannot_run(report: Report, torch_gpu: dict[str, Any]) -> None:
    c4 = report.get("C4")
    assert c4 is not None
    if torch_gpu["count"] < 2:
        assert c4.summary == f"skipped: {torch_gpu['count']} GPU visible, C4 needs 2"
    else:
        assert c4.status == "pass", c4.summary
        assert c4.details["probe"]["all_reduce_ok"]
        assert c4.details["probe"]["ddp_step_ok"]
        assert c4.details["probe"]["backend"] == "nccl"


def test_c5_true_gpu_claims_are_not_hallucinations(report: Report) -> None:
    c5 = report.get("C5")
    assert c5 is not None
    assert c5.metrics["hallucinations"] == 0, c5.details
    verdicts = {c["field"]: c["verdict"] for c in c5.details["checks"]}
    assert verdicts["cuda_available"] == "true"
    assert verdicts["gpu_count"] == "true"
    assert verdicts["torch_version"] == "true"


def _torchop_report(tmp: Path, cpu_only: bool) -> Report:
    """The bundled torch-op task, its operator built against this interpreter's torch
    (with its CUDA kernels, or CPU-only), verified through the host runtime."""
    import os
    import shutil

    from synth.formats.task import load_task

    root = Path(__file__).resolve().parents[2]
    task_dir = tmp / "torch-op"
    shutil.copytree(root / "tasks" / "torch-op", task_dir)
    site = tmp / "site"
    env = {**os.environ, "TORCHOP_CPU_ONLY": "1" if cpu_only else "0"}
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-build-isolation",
                    "--no-deps", "--no-index", "--target", str(site), str(task_dir / "repo")],
                   env=env, check=True, timeout=1800)
    task = load_task(task_dir)
    rt = HostRuntime(Path(sys.executable))
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(site)
    try:
        return run_pyramid(rt, PyramidSpec(
            python=sys.executable, task=pyramid_task(task), workdir=str(task_dir / "repo"),
            repo_dir=task_dir / "repo", levels=frozenset({"C2", "C3"}),
            target={"kind": "host"}), progress=print)
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = old


def test_torch_op_with_cuda_kernels_passes_c3(torch_gpu: dict[str, Any],
                                              tmp_path: Path) -> None:
    c3 = _torchop_report(tmp_path, cpu_only=False).get("C3")
    assert c3 is not None and c3.status == "pass", c3.summary if c3 else None


def test_a_cpu_only_build_of_torch_op_fails_c3_saying_why(torch_gpu: dict[str, Any],
                                                          tmp_path: Path) -> None:
    """The negative control: the operator without its CUDA kernels must fail C3, and the
    reason quotes the entrypoint's own assertion."""
    c3 = _torchop_report(tmp_path, cpu_only=True).get("C3")
    assert c3 is not None and c3.status == "fail"
    assert "torchop was built without its CUDA kernels" in str(c3.reason)
