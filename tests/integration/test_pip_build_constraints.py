"""The build constraints reach pip's isolated build, whichever pip the artifact runs: the
variables the Dockerfile sets before an isolated local build constrain an old pip, which
reads ``PIP_CONSTRAINT`` into the build, and pip 26.2 and later, which reads only
``PIP_BUILD_CONSTRAINT`` there. Real pip, real package index: a project whose backend is
not pinned is built with the constraint file's older setuptools, as its wheel says."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from distill_runs import cmd, dist, make_run_dir, system_python, venv

from synth.distill.load import load_run
from synth.distill.plan import distill
from synth.export.lock import Lock, LockedPin
from synth.export.render import render_artifact

pytestmark = [pytest.mark.slow]

#: Older than any setuptools an unconstrained build would pick now.
PINNED = "75.1.0"


def _rendered_variables(tmp_path: Path) -> list[str]:
    """The names of the variables the Dockerfile sets before an isolated local build: a
    run whose venv pip built the project in /workspace, exported with build constraints."""
    local = dist("demo", "0.1", direct_url={"url": "file:///workspace", "dir_info": {}})
    run = make_run_dir(tmp_path, [cmd("python3 -m venv /opt/venv"),
                                  cmd("cd /workspace && /opt/venv/bin/pip install .")],
                       python=[system_python(), venv(dists=[dist("pip", "23.0.1"), local])])
    plan, report = distill(load_run(run))
    locks = [Lock(env=e, pins=tuple(LockedPin(n, v, ("a" * 64,)) for n, v in e.pins),
                  locker="uv", installer=LockedPin("uv", "0.13.9", ("b" * 64,)),
                  build=(LockedPin("setuptools", "80.9.0", ("c" * 64,)),))
             for e in plan.envs]
    docker = render_artifact(plan, report, locks)["Dockerfile"]
    assert isinstance(docker, str)
    [line] = [x for x in docker.splitlines() if x.endswith("install --no-deps /workspace")]
    return [w.split("=", 1)[0] for w in shlex.split(line.lstrip(" &"))
            if re.fullmatch(r"PIP_[A-Z_]+=/tmp/synth/pip-build-constraints\.txt", w)]


@pytest.mark.parametrize("pip", ["23.0.1", "26.3"])
def test_the_rendered_variables_pin_the_isolated_build_of_an_old_and_a_new_pip(
        tmp_path: Path, pip: str) -> None:
    names = _rendered_variables(tmp_path)
    assert sorted(names) == ["PIP_BUILD_CONSTRAINT", "PIP_CONSTRAINT"], names
    constraints = tmp_path / "pip-build-constraints.txt"
    constraints.write_text(f"setuptools=={PINNED}\n")
    project = tmp_path / "proj"
    (project / "demo").mkdir(parents=True)
    (project / "demo" / "__init__.py").write_text("")
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "demo"\nversion = "0.1"\n')
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_CACHE_DIR": "1"}
    if os.environ.get("SYNTH_CA_BUNDLE"):
        env["PIP_CERT"] = os.environ["SYNTH_CA_BUNDLE"]
    venv = tmp_path / "venv"
    python = str(venv / "bin" / "python")

    def run(*argv: str, extra: dict[str, str] | None = None) -> None:
        done = subprocess.run(argv, check=False, env={**env, **(extra or {})},
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr

    run(sys.executable, "-m", "venv", str(venv))
    run(python, "-m", "pip", "install", "-q", f"pip=={pip}")
    run(python, "-m", "pip", "install", "-q", "--no-deps", str(project),
        extra=dict.fromkeys(names, str(constraints)))
    [wheel] = venv.glob("lib/python*/site-packages/demo-0.1.dist-info/WHEEL")
    assert f"Generator: setuptools ({PINNED})" in wheel.read_text(), wheel.read_text()
