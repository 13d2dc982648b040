"""An isolated local build is rebuilt with the build backend that built it live.

``pip install -e ".[dev]"`` with build isolation takes the newest setuptools from the
index; the venv's own setuptools (the lock's) is another version. The installed
distribution's ``WHEEL`` file says which backend built it (``Generator:``): the state
records it, the plan carries it as the step's ``build_backend``, and the build lock pins it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from distill_runs import cmd, dist, make_run_dir, system_python, venv
from msgspec import structs
from test_render_golden import fake_locker

from synth.distill.load import load_run
from synth.distill.native import build_backend_pin
from synth.distill.plan import distill
from synth.export import build_lock
from synth.export.lock import LockedPin, LockTarget
from synth.pyramid.probes import __file__ as probes_init

PROBE = Path(probes_init).parent / "python_env.py"
SITE = "/opt/venv/lib/python3.11/site-packages"


def test_the_probe_records_the_wheel_generator(tmp_path: Path) -> None:
    info = tmp_path / "demo-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.4\nName: demo\nVersion: 0.1.0\n")
    (info / "WHEEL").write_text("Wheel-Version: 1.0\nGenerator: setuptools (84.2.1)\n"
                                "Root-Is-Purelib: true\nTag: py3-none-any\n")
    old = tmp_path / "old-1.0.dist-info"
    old.mkdir()
    (old / "METADATA").write_text("Metadata-Version: 2.1\nName: old\nVersion: 1.0\n")
    out = subprocess.run([sys.executable, "-S", str(PROBE)], capture_output=True, text=True,
                         check=True, env={"PYTHONPATH": str(tmp_path)}).stdout
    dists = {d["name"]: d for d in json.loads(out)["distributions"]}
    assert dists["demo"]["wheel_generator"] == "setuptools (84.2.1)"
    assert dists["old"]["wheel_generator"] is None


@pytest.mark.parametrize(("generator", "pin"), [
    ("setuptools (84.2.1)", "setuptools==84.2.1"),
    ("bdist_wheel (0.45.1)", "wheel==0.45.1"),
    ("hatchling 1.27.0", "hatchling==1.27.0"),
    ("poetry-core 2.1.3", "poetry-core==2.1.3"),
    ("flit 3.12.0", "flit-core==3.12.0"),
    ("pdm-backend (2.4.5)", "pdm-backend==2.4.5"),
    ("maturin (1.9.4)", "maturin==1.9.4"),
    (None, None), ("", None), ("something odd", None), ("x (1.0; rm -rf /)", None),
])
def test_the_generator_names_the_backend_pin(generator: str | None, pin: str | None) -> None:
    assert build_backend_pin(generator) == pin


def _run(tmp_path: Path) -> Path:
    demo = dist("demo", "0.1.0", direct_url={"url": "file:///workspace",
                                             "dir_info": {"editable": True}})
    demo["wheel_generator"] = "setuptools (84.2.1)"
    py = [system_python(), venv(dists=[dist("setuptools", "66.1.1", location=SITE),
                                       dist("pip", "23.0.1"), demo])]
    audit = [cmd("python3 -m venv /opt/venv"),
             cmd('cd /workspace && /opt/venv/bin/pip install -e ".[dev]"')]
    return make_run_dir(tmp_path, audit, python=py)


def test_the_plan_carries_the_backend_that_built_the_local_project(tmp_path: Path) -> None:
    plan, _report = distill(load_run(_run(tmp_path)))
    [step] = plan.native
    assert step.tool == "pip-local" and step.network
    assert step.build_backend == "setuptools==84.2.1"


def test_the_build_lock_pins_the_live_backend_not_the_venvs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan, _report = distill(load_run(_run(tmp_path)))
    [env] = plan.envs
    src = tmp_path / "src"
    src.mkdir()
    (src / "pyproject.toml").write_text('[build-system]\nrequires = ["setuptools>=61"]\n')
    reqs = build_lock.local_build_requires(plan, env, src)
    assert "setuptools==84.2.1" in reqs
    # a backend the project does not build with is not pinned
    other = structs.replace(plan, native=tuple(structs.replace(s, build_backend="maturin==1.9.4")
                                               for s in plan.native))
    assert build_lock.local_build_requires(other, env, src) == ["setuptools>=61", "wheel"]

    asked: list[tuple[list[str], list[str]]] = []

    def fake(env: object, target: object, requirements: list[str], **kw: object
             ) -> subprocess.CompletedProcess[str]:
        asked.append((sorted(requirements), sorted(kw.get("constraints", ()))))  # type: ignore[call-overload]
        return subprocess.CompletedProcess([], 0, "setuptools==84.2.1 \\\n    --hash=sha256:"
                                           + "a" * 64 + "\nwheel==0.45.1 \\\n    --hash=sha256:"
                                           + "b" * 64 + "\n", "")

    monkeypatch.setattr(build_lock, "_compile", fake)
    lock = fake_locker(env, LockTarget("3.11", "x86_64-manylinux_2_36", None, None))
    pins = build_lock.lock_build(lock, LockTarget("3.11", "x86_64-manylinux_2_36", None, None),
                                 reqs)
    [(requirements, constraints)] = asked
    assert "setuptools==84.2.1" in requirements
    assert "setuptools==66.1.1" not in constraints and "pip==23.0.1" in constraints
    assert LockedPin("setuptools", "84.2.1", ("a" * 64,)) in pins


def _git_repo(root: Path) -> str:
    """A repository of one commit whose project asks for pybind11 to build; its commit."""
    root.mkdir()
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61", "pybind11>=2.10"]\n')
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    return subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.mark.parametrize("kind", ["url", "path"])
def test_the_export_reads_build_requirements_from_the_artifact_s_source(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """A task's repository given by URL is cloned into source/: its pyproject.toml names
    the build requirements as a folder's does (they were the defaults, unpinned, before)."""
    from synth.config import Settings
    from synth.engine.base import NoEngine
    from synth.errors import EngineUnavailableError
    from synth.export import artifact

    commit = _git_repo(tmp_path / "repo")
    where = (f'url = "file://{tmp_path}/repo"\ncommit = "{commit}"' if kind == "url"
             else 'path = "repo"')
    task = tmp_path / "task.toml"
    task.write_text(f'name = "demo"\nbase_image = "synth/python:bookworm"\n[repo]\n{where}\n'
                    '[probes.cpu]\ncommand = "true"\n[not_applicable]\nC2 = "no GPU"\n'
                    'C3 = "no GPU"\nC4 = "no GPU"\n')
    run_dir = _run(tmp_path)
    run = json.loads((run_dir / "run.json").read_text())
    run["task"]["task_file"] = str(task)
    (run_dir / "run.json").write_text(json.dumps(run))
    seen: list[list[str]] = []
    real = artifact.lock_plan

    def lock_plan(plan: object, wheelhouse: object, ca: object, _locker: object,
                  source_dir: Path | None = None, backends: object = None) -> object:
        seen.append(build_lock.local_build_requires(plan, plan.envs[0], source_dir))  # type: ignore[attr-defined, arg-type]
        return real(plan, wheelhouse, ca, fake_locker, source_dir, backends)  # type: ignore[arg-type]

    monkeypatch.setattr(artifact, "lock_plan", lock_plan)
    artifact.export_run(artifact.ExportOptions(run_dir, out_dir=tmp_path / "art",
                                               ask_live=False),
                        Settings.load(artifacts_dir=tmp_path),
                        NoEngine(EngineUnavailableError("no engine in this test")))
    assert seen == [["setuptools>=61", "pybind11>=2.10", "wheel", "setuptools==84.2.1"]]
