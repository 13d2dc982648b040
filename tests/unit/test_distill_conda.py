"""conda, mamba and micromamba commands: their options, ``conda run`` and activation."""

from __future__ import annotations

from pathlib import Path

import pytest
from distill_runs import cmd, dist, make_run_dir, system_python

from synth.distill.common import StepIndex
from synth.distill.envs import audited_envs, interp_for
from synth.distill.extractors import classify_each
from synth.distill.load import AuditRecord, LoadedRun, load_run
from synth.distill.plan import distill
from synth.distill.shell import parse_line, simple_commands
from synth.distill.steps import CondaAction, PipInstall, ShellState, Step

ENV = "/opt/conda/envs/research"


def steps(text: str, cwd: str = "/workspace") -> list[Step]:
    rec = AuditRecord(seq=1, source="bash-c", command=text, cwd=cwd, exit=0)
    return [s for _c, _x, s in classify_each(parse_line(rec))]


def conda_env(prefix: str = ENV, dists: list[dict[str, object]] | None = None
              ) -> dict[str, object]:
    return {"path": f"{prefix}/bin/python", "kind": "conda", "version": "3.11.9",
            "prefix": prefix, "base_prefix": prefix, "created_by_agent": True,
            "distributions": dists or []}


def conda_run(tmp_path: Path, audit: list[dict[str, object]]) -> LoadedRun:
    site = f"{ENV}/lib/python3.11/site-packages"
    py = [system_python(), conda_env("/opt/conda"),
          conda_env(dists=[dist("attrs", "25.4.0", location=site)])]
    return load_run(make_run_dir(tmp_path, audit, python=py, primary="/usr/bin/python3"))


@pytest.mark.parametrize(("text", "expected"), [
    ("conda create -n research python=3.11",
     CondaAction(tool="conda", verb="create", packages=("python=3.11",), env_name="research")),
    ("conda create --name=research -y -c conda-forge --override-channels python=3.11 numpy",
     CondaAction(tool="conda", verb="create", packages=("python=3.11", "numpy"),
                 channels=("conda-forge",), env_name="research")),
    ("mamba install -p ./env --channel bioconda samtools",
     CondaAction(tool="mamba", verb="install", packages=("samtools",), channels=("bioconda",),
                 prefix="/workspace/env")),
    ("micromamba create -n env -f environment.yml",
     CondaAction(tool="micromamba", verb="create", packages=(), env_name="env",
                 files=("/workspace/environment.yml",))),
    ("conda install --file requirements.txt -n research",
     CondaAction(tool="conda", verb="install", packages=(), env_name="research",
                 files=("/workspace/requirements.txt",))),
    ("conda env create -f environment.yml -n research",
     CondaAction(tool="conda", verb="env create", packages=(), env_name="research",
                 files=("/workspace/environment.yml",))),
    ("micromamba env update --file=env.yml -p /opt/envs/x",
     CondaAction(tool="micromamba", verb="env update", packages=(), prefix="/opt/envs/x",
                 files=("/workspace/env.yml",))),
])
def test_conda_options_are_not_packages(text: str, expected: Step) -> None:
    assert steps(text) == [expected]


@pytest.mark.parametrize("text", [
    "conda run -n research pip install attrs",
    "mamba run --no-capture-output -n research python -m pip install attrs",
    "micromamba run -n research pip install attrs",
    "conda run --live-stream -p /opt/conda/envs/research pip install attrs",
])
def test_conda_run_is_the_inner_command_in_that_environment(tmp_path: Path, text: str) -> None:
    [s] = steps(text)
    assert isinstance(s, PipInstall) and s.requirements == ("attrs",)
    interp = interp_for(s.python, conda_run(tmp_path, []))
    assert interp is not None and interp.prefix == ENV


@pytest.mark.parametrize("text", [
    "conda activate research && pip install attrs",
    "micromamba activate research; python -m pip install attrs",
    "source activate research && pip install attrs",
    ". activate research && pip install attrs",
    "source /opt/conda/bin/activate research && pip install attrs",
    "conda activate /opt/conda/envs/research && pip install attrs",
])
def test_pip_after_conda_activate_goes_to_that_environment(tmp_path: Path, text: str) -> None:
    *before, s = steps(text)
    assert all(isinstance(b, ShellState) for b in before)
    assert isinstance(s, PipInstall)
    interp = interp_for(s.python, conda_run(tmp_path, []))
    assert interp is not None and interp.prefix == ENV


def test_conda_deactivate_ends_the_activation(tmp_path: Path) -> None:
    *_before, s = steps("conda activate research && conda deactivate && pip install attrs")
    assert isinstance(s, PipInstall) and s.python == "python3"


def test_activation_carries_over_in_an_interactive_shell() -> None:
    """Hook records of one interactive shell (no parent line) are its statements in order:
    an activation in one is in effect in the shell's later ones, not in another shell's."""
    def hook(seq: int, text: str, pid: int) -> AuditRecord:
        return AuditRecord(seq=seq, source="bash-hook", command=text, cwd="/workspace",
                           exit=0, pid=pid)
    records = [hook(1, "conda activate research", 7), hook(2, "pip install attrs", 7),
               hook(3, "pip install six", 8)]
    got = [s for _c, _x, s in classify_each(simple_commands(records))]
    assert isinstance(got[1], PipInstall) and got[1].python is not None
    assert got[1].python.endswith("/envs/research/bin/python")
    assert isinstance(got[2], PipInstall) and got[2].python == "python3"


def test_conda_env_pip_installs_are_credited_to_the_env(tmp_path: Path) -> None:
    run = conda_run(tmp_path, [cmd("conda create -n research -y python=3.11"),
                               cmd("conda run -n research pip install attrs"),
                               cmd("conda activate research && pip install attrs")])
    ok = StepIndex([c for c in classify_each(simple_commands(run.records)) if c[0].succeeded])
    assert [c.text for c, _s in audited_envs(ok, run).installs[f"{ENV}/bin/python"]] == [
        "conda run -n research pip install attrs", "pip install attrs"]
    outcomes = {o.command: o for o in distill(run)[1].outcomes}
    assert outcomes["conda run -n research pip install attrs"].step == "pip-install"
    assert outcomes["pip install attrs"].decision == "kept"
