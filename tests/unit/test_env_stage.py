"""The Python environments made in a stage of their own beside the apt layer, and only where
neither side reads what the other writes (synth.export.env_stage)."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from pathlib import Path

import pytest
from distill_runs import cmd, deb, dist, make_run_dir, system_python, venv
from msgspec.structs import replace

from synth.distill.load import load_run
from synth.distill.plan import distill
from synth.export.env_stage import (
    STAGE,
    apt_touches_python,
    one_stage_reason,
    separate_env_stage,
)
from synth.export.lock import Lock, LockedPin
from synth.export.render import render_artifact
from synth.formats.plan import AptPlan, BuildPlan, DistillReport


def _plan(tmp_path: Path, apt: dict[str, str] | None = None, venv_cmd: str = "python3 -m venv",
          second: bool = False) -> tuple[BuildPlan, DistillReport]:
    apt = {"gcc": "4:12.2.0-3"} if apt is None else apt
    audit = [cmd("apt-get install -y " + " ".join(apt), hooks=[("apt-get install -y x", 0)]),
             cmd(f"{venv_cmd} /opt/venv"), cmd("/opt/venv/bin/pip install numpy")]
    envs = [system_python(), venv(dists=[dist("numpy", "2.3.5")])]
    if second:
        audit += [cmd("python3 -m venv /opt/tools"), cmd("/opt/tools/bin/pip install ruff")]
        envs.append(venv("/opt/tools", dists=[dist("ruff", "0.9.0")]))
    return distill(load_run(make_run_dir(
        tmp_path, audit, python=envs, apt_added=apt, apt_manual=sorted(apt),
        apt_debs={n: deb(n, v) for n, v in apt.items()})))


def _locks(plan: BuildPlan, **kw: object) -> list[Lock]:
    def pin(name: str, version: str) -> LockedPin:
        return LockedPin(name=name, version=version,
                         hashes=(hashlib.sha256(f"{name}{version}".encode()).hexdigest(),))
    uv = pin("uv", "0.13.9")
    return [Lock(env=env, pins=tuple(pin(n, v) for n, v in env.pins), locker="uv",
                 installer=uv, **kw) for env in plan.envs]  # type: ignore[arg-type]


def _dockerfiles(plan: BuildPlan, report: DistillReport, locks: list[Lock]) -> tuple[str, str]:
    files = render_artifact(plan, report, locks)
    return str(files["Dockerfile"]), str(files["Dockerfile.legacy"])


def test_a_venv_of_wheels_beside_a_compiler_gets_its_own_stage(tmp_path: Path) -> None:
    plan, report = _plan(tmp_path)
    locks = _locks(plan)
    assert separate_env_stage(plan, locks)
    dockerfile, legacy = _dockerfiles(plan, report, locks)
    froms = re.findall(r"^FROM .*$", dockerfile, re.M)
    assert froms == [f"FROM synth/python:bookworm AS {STAGE}", "FROM synth/python:bookworm"]
    # The stage makes the venv and installs its lock; the image copies the folder after apt.
    stage, image = dockerfile.split("\nFROM synth/python:bookworm\n")
    assert "RUN python3 -m venv /opt/venv" in stage and "uv pip install" in stage
    assert "apt-get install" not in stage
    assert image.index("apt-get install") < image.index(
        f'COPY --from={STAGE} ["/opt/venv", "/opt/venv"]')
    assert "python3 -m venv" not in image and "uv pip install" not in image
    assert image.count('SHELL ["/bin/bash", "-o", "pipefail", "-c"]') == 1
    # A builder without BuildKit runs stages one after the other: one stage, as before.
    assert re.findall(r"^FROM .*$", legacy, re.M) == ["FROM synth/python:bookworm"]
    assert "--from=" not in legacy
    assert legacy.index("apt-get install") < legacy.index("RUN python3 -m venv /opt/venv")


def test_every_environment_is_copied_from_the_stage(tmp_path: Path) -> None:
    plan, report = _plan(tmp_path, second=True)
    locks = _locks(plan)
    dockerfile, _ = _dockerfiles(plan, report, locks)
    assert re.findall(rf"^COPY --from={STAGE} (.*)$", dockerfile, re.M) == [
        '["/opt/venv", "/opt/venv"]', '["/opt/tools", "/opt/tools"]']
    assert "# Python environments /opt/venv, /opt/tools, made in the stage" in dockerfile


@pytest.mark.parametrize("package", ["python3.11", "python3-venv", "python3-pip-whl",
                                     "libpython3.11-stdlib", "python3-numpy", "python3"])
def test_apt_changing_the_interpreter_keeps_one_stage(tmp_path: Path, package: str) -> None:
    plan, report = _plan(tmp_path, apt={"gcc": "4:12.2.0-3", package: "3.11.2-6+deb12u8"})
    locks = _locks(plan)
    assert apt_touches_python(plan) == [package]
    assert not separate_env_stage(plan, locks)
    dockerfile, legacy = _dockerfiles(plan, report, locks)
    assert len(re.findall(r"^FROM ", dockerfile, re.M)) == 1
    assert "--from=" not in dockerfile
    # The Dockerfile says why.
    assert ("# The environments are made after the apt layer, not beside it in a stage of "
            f"their own:\n# apt installs {package}, which a venv of the base's python3 can "
            "read.\n\n# Python environment /opt/venv") in dockerfile
    assert "not beside it" not in legacy


@pytest.mark.parametrize("package", ["python3-dev", "python3.11-dev", "libpython3.11-dev",
                                     "libpython3-dev", "libpython3.11"])
def test_headers_and_the_shared_library_do_not_count(tmp_path: Path, package: str) -> None:
    plan, _ = _plan(tmp_path, apt={"gcc": "4:12.2.0-3", package: "3.11.2-6+deb12u8"})
    assert apt_touches_python(plan) == []
    assert separate_env_stage(plan, _locks(plan))


def test_what_keeps_one_stage(tmp_path: Path) -> None:
    plan, _ = _plan(tmp_path)
    locks = _locks(plan)
    assert one_stage_reason(plan, locks) is None
    # A lock that builds from source wants apt's compilers.
    assert not separate_env_stage(plan, _locks(plan, sdists=("numpy",)))
    assert one_stage_reason(plan, _locks(plan, sdists=("numpy",))) == (
        "requirements.lock builds numpy from source, with apt's compilers")
    assert not separate_env_stage(plan, _locks(plan, build=(locks[0].pins[0],)))
    # No apt layer to build beside (nothing to say); or apt removes a base package.
    assert not separate_env_stage(replace(plan, apt=AptPlan()), locks)
    assert one_stage_reason(replace(plan, apt=AptPlan()), locks) is None
    removes = replace(plan, apt=replace(plan.apt, remove=("vim",)))
    assert not separate_env_stage(removes, locks)
    assert one_stage_reason(removes, locks) == "apt removes vim from the base"
    # An environment the Dockerfile does not make from the base's python3.
    other = replace(plan.envs[0], create=("/opt/other/bin/python", "-m", "venv", "/opt/venv"))
    assert not separate_env_stage(plan, [dataclasses.replace(locks[0], env=other)])
    assert one_stage_reason(plan, [dataclasses.replace(locks[0], env=other)]) == (
        "/opt/venv is not a venv the base's python3 -m venv makes")
    system = replace(plan.envs[0], create=())
    assert not separate_env_stage(plan, [dataclasses.replace(locks[0], env=system)])


def test_a_venv_made_by_path_from_the_base_interpreter(tmp_path: Path) -> None:
    plan, _ = _plan(tmp_path, venv_cmd="/usr/bin/python3.11 -m venv")
    assert plan.envs[0].create[0] == "/usr/bin/python3.11"
    assert separate_env_stage(plan, _locks(plan))
