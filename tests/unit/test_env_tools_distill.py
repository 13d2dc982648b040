"""What tools other than pip leave behind is reproduced the same way (issue: environment
tools): poetry, pdm, pipenv and uv write their own INSTALLER, make venvs no audited command
made, install the project itself editable, and may use an interpreter the base lacks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from distill_runs import cmd, dist, make_run_dir, system_python, venv

from synth.distill.load import load_run
from synth.distill.plan import BuildPlan, DistillReport, distill

PROJECT = {"url": "file:///workspace", "dir_info": {"editable": True}}


def plan_of(tmp_path: Path, audit: list[dict[str, Any]], **kw: Any
            ) -> tuple[BuildPlan, DistillReport]:
    return distill(load_run(make_run_dir(tmp_path, audit, **kw)))


@pytest.mark.parametrize("installer", ["Poetry 2.5.1", "pdm", "uv", "pipenv", "pip"])
def test_an_index_install_is_locked_whatever_tool_wrote_it(
        tmp_path: Path, installer: str) -> None:
    """poetry writes INSTALLER ``Poetry 2.5.1``, pdm ``pdm``: their index installs were
    neither locked nor built by a step (export refused)."""
    py = [system_python(), venv("/workspace/.venv", [
        dist("attrs", "25.4.0", installer=installer), dist("six", "1.17.0", installer=installer),
        dist("tiny", "0.1.0", installer=installer, direct_url=PROJECT)], created=True)]
    plan, report = plan_of(tmp_path, [cmd("poetry install")], python=py,
                           primary="/workspace/.venv/bin/python")
    [env] = plan.envs
    assert env.pins == (("attrs", "25.4.0"), ("six", "1.17.0"))
    assert not [u for u in report.unexplained if "attrs" in u or "six" in u], report.unexplained


def test_a_conda_installed_distribution_is_not_locked_from_an_index(tmp_path: Path) -> None:
    py = [system_python(), venv(dists=[dist("numpy", "2.3.5"),
                                       dist("scipy", "1.16.3", installer="conda")])]
    plan, _report = plan_of(tmp_path, [cmd("/opt/venv/bin/pip install numpy")], python=py)
    assert plan.envs[0].pins == (("numpy", "2.3.5"),)


def test_the_project_a_tool_installed_editable_is_installed_again(tmp_path: Path) -> None:
    """``uv sync``/``poetry install`` install the project itself editable; no audited pip
    command explains it, and the rebuild left it out (C1 passed from the working folder)."""
    py = [system_python(), venv("/workspace/.venv", [
        dist("six", "1.17.0", installer="uv"),
        dist("tiny", "0.1.0", installer="uv", direct_url=PROJECT)])]
    plan, report = plan_of(tmp_path, [cmd("uv sync")], python=py,
                           primary="/workspace/.venv/bin/python")
    [step] = [s for s in plan.native if s.distribution == "tiny==0.1.0"]
    assert step.argv[-2:] == ("-e", "/workspace") and "--no-deps" in step.argv
    assert not [u for u in report.unexplained if "tiny" in u], report.unexplained


def test_a_project_outside_the_source_is_not_installed_from_nowhere(tmp_path: Path) -> None:
    py = [system_python(), venv(dists=[dist("tiny", "0.1.0", installer="uv", direct_url={
        "url": "file:///tmp/elsewhere", "dir_info": {"editable": True}})])]
    plan, _report = plan_of(tmp_path, [cmd("uv sync")], python=py)
    # /tmp/elsewhere is not in the artifact: export names it "neither locked nor built by a
    # step" (synth.distill.carried.unreproduced) instead of installing it from nowhere.
    assert not [s for s in plan.native if s.distribution == "tiny==0.1.0"]


def test_poetry_s_venv_in_its_cache_is_one_it_made(tmp_path: Path) -> None:
    """``poetry install`` without in-project venvs: the venv in poetry's cache folder is
    its own, not one "no audited command created"; one elsewhere still is."""
    cache = "/root/.cache/pypoetry/virtualenvs/proj-AbC123-py3.11"
    for prefix, warned in ((cache, False), ("/opt/other", True)):
        py = [system_python(), venv(prefix, [dist("six", "1.17.0", installer="Poetry 2.1")])]
        _plan, report = plan_of(tmp_path / prefix.replace("/", "_"), [
            cmd("cd /workspace && poetry install")], python=py, primary=f"{prefix}/bin/python")
        said = [w for w in report.warnings if "no audited command created" in w]
        assert bool(said) == warned, report.warnings


def test_a_venv_without_pip_is_made_without_pip(tmp_path: Path) -> None:
    """A venv no audited command made (uv sync, poetry, pdm) and without pip is rebuilt
    without pip: ``python3 -m venv`` added pip and setuptools the live env never had."""
    py = [system_python(), venv("/workspace/.venv", [dist("six", "1.17.0", installer="uv")])]
    plan, _report = plan_of(tmp_path, [cmd("uv sync")], python=py,
                            primary="/workspace/.venv/bin/python")
    [env] = plan.envs
    assert env.create == ("python3", "-m", "venv", "--without-pip", "/workspace/.venv")
    assert env.pip[:3] == ("python3", "-m", "pip") and env.pip[-2:] == (
        "--python", "/workspace/.venv/bin/python")


def test_a_venv_made_without_pip_is_served_by_the_base_s_pip(tmp_path: Path) -> None:
    """``python3 -m venv --without-pip`` and ``pip --python`` from outside: the rebuilt venv
    has no pip either, so its builds run the base's pip for it; a venv venv seeded keeps
    its own."""
    py = [system_python(), venv("/opt/venv", [dist("six", "1.17.0")])]
    plan, _report = plan_of(tmp_path / "without", [
        cmd("python3 -m venv --without-pip /opt/venv"),
        cmd("python3 -m pip --python /opt/venv/bin/python install six==1.17.0")], python=py)
    [env] = plan.envs
    assert env.create == ("python3", "-m", "venv", "--without-pip", "/opt/venv")
    assert env.pip == ("python3", "-m", "pip", "--python", "/opt/venv/bin/python")
    assert env.pins == (("six", "1.17.0"),)
    py = [system_python(), venv("/opt/venv", [dist("pip", "23.0.1"), dist("six", "1.17.0")])]
    plan, _report = plan_of(tmp_path / "seeded", [cmd("python3 -m venv /opt/venv")], python=py)
    assert plan.envs[0].pip == ("/opt/venv/bin/python", "-m", "pip")


def test_a_venv_with_pip_gets_its_own_pip_from_the_lock(tmp_path: Path) -> None:
    """virtualenv (poetry's venvs) seeds pip but not setuptools: `venv` would add Debian's
    ensurepip pip and setuptools; the lock installs the pip it had."""
    py = [system_python(), venv("/workspace/.venv", [
        dist("pip", "25.3"), dist("six", "1.17.0", installer="Poetry 2.5.1")])]
    plan, _report = plan_of(tmp_path, [cmd("poetry install")], python=py,
                            primary="/workspace/.venv/bin/python")
    [env] = plan.envs
    assert env.create == ("python3", "-m", "venv", "--without-pip", "/workspace/.venv")
    assert ("pip", "25.3") in env.pins
    assert env.pip == ("python3", "-m", "pip", "--python", "/workspace/.venv/bin/python")


def test_a_venv_of_an_interpreter_the_base_lacks_is_not_reproduced_silently(
        tmp_path: Path) -> None:
    """A venv on a Python built by hand into /opt: the rebuild made it from the base's 3.11
    while its lock was compiled for 3.12, with no word (a uv-managed or pyenv one is unpacked
    from a python-build-standalone archive: tests/unit/test_managed_python_logic.py)."""
    managed = "/opt/python-3.12.12"
    env = {**venv("/workspace/.venv", [dist("six", "1.17.0", installer="uv")]),
           "version": "3.12.12", "base_prefix": managed}
    _plan, report = plan_of(tmp_path, [cmd("uv venv -p 3.12"), cmd("uv pip install six")],
                            python=[system_python(), env],
                            primary="/workspace/.venv/bin/python")
    said = [n for n in report.not_reproducible if "/workspace/.venv" in n]
    assert said and "3.12" in said[0] and managed in said[0], report.not_reproducible


def test_an_interpreter_the_base_brought_is_not_the_agents(tmp_path: Path) -> None:
    """A base's own tools venv (/opt/synth-tools in synth/research) holds pip-installed
    distributions the session never touched: it is the base's, not a second environment
    to rebuild (it was, with a "packages went into a second interpreter" warning)."""
    tools = venv("/opt/synth-tools", [dist("poetry", "2.2.1",
                                          location="/opt/synth-tools/lib/python3.11/site-packages")],
                 created=False)
    touched = venv("/opt/other", [dist("six", "1.17.0",
                                       location="/opt/other/lib/python3.11/site-packages")],
                   created=False)
    py = [system_python(), venv(dists=[dist("attrs", "25.4.0")]), tools, touched]
    plan, _report = plan_of(tmp_path, [cmd("/opt/venv/bin/pip install attrs")], python=py,
                            diff=[("A", "/opt/other/lib/python3.11/site-packages/six.py")])
    assert [e.prefix for e in plan.envs] == ["/opt/venv", "/opt/other"]
