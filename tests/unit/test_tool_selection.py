"""The extras and groups a poetry, pdm or pipenv install chose are recorded in the plan and
told to a reader without synth (synth.distill.tool_selection; docs/export.md, *Environment
tools*)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import msgspec
import pytest
from distill_runs import cmd, dist, make_run_dir, system_python, venv

from synth.distill.load import load_run
from synth.distill.plan import BuildPlan, DistillReport, distill
from synth.distill.project_locks import check_lock
from synth.distill.tool_selection import reader_command, selection
from synth.distill.warnings import plan_second_interpreters
from synth.export.lock import Lock, LockedPin
from synth.export.render import render_artifact
from synth.formats.plan import ProjectInstall

PROJECT = {"url": "file:///workspace", "dir_info": {"editable": True}}


@pytest.mark.parametrize(("tool", "args", "expected"), [
    ("poetry", ("install",), ()),
    ("poetry", ("install", "--no-interaction", "--extras", "ffi"), ("--extras", "ffi")),
    ("poetry", ("install", "-E", "a b,c", "-Ed", "--extras=a"),
     ("--extras", "a", "--extras", "b", "--extras", "c", "--extras", "d")),
    ("poetry", ("install", "--all-extras", "--with", "docs,test", "--without=dev"),
     ("--all-extras", "--with", "docs", "--with", "test", "--without", "dev")),
    ("poetry", ("install", "--only", "main", "--no-root", "-C", "x", "--sync"),
     ("--only", "main", "--no-root")),
    ("poetry", ("sync", "--only-root"), ("--only-root",)),
    ("poetry", ("install", "--dry-run", "-E", "ffi"), None),
    ("poetry", ("add", "emcee"), None),
    ("poetry", ("run", "python", "x.py", "-E", "y"), None),
    ("pdm", ("install", "-G", "plot", "--group=docs,lint", "--prod"),
     ("--group", "plot", "--group", "docs", "--group", "lint", "--prod")),
    ("pdm", ("sync", "-d", "--no-default", "-Gtest", "--no-self"),
     ("--dev", "--no-default", "--group", "test", "--no-self")),
    ("pdm", ("install", "-p", "--dev"), ()),  # -p takes a value: the word after it
    # seen on AllenCell/aics-cytoparam: the build backend is in the venv, not isolated
    ("pdm", ("sync", "--no-isolation", "-G", "all"), ("--no-isolation", "--group", "all")),
    ("pipenv", ("install", "--dev"), ("--dev",)),
    ("pipenv", ("sync", "--categories", "docs tests", "--categories=docs"),
     ("--categories", "docs tests")),
    ("pipenv", ("install", "requests", "--dev"), None),  # adds a package: chooses nothing
    ("pipenv", ("lock",), None),
    ("uv", ("sync", "--extra", "x"), None),  # uv's: synth.distill.uv_project
])
def test_the_options_that_choose_what_an_install_installs(
        tool: str, args: tuple[str, ...], expected: tuple[str, ...] | None) -> None:
    assert selection(tool, args) == expected


def test_the_last_install_chooses_and_add_or_run_keep_it() -> None:
    """poetry removes the extras a later install does not name; add keeps them, run
    chooses nothing."""
    assert reader_command("poetry", [
        ("poetry", "install", "--extras", "ffi"), ("poetry", "add", "emcee"),
        ("/opt/poetry/bin/poetry", "run", "python", "-c", "1")]) == (
            "poetry", "install", "--extras", "ffi")
    assert reader_command("poetry", [("poetry", "install", "-E", "ffi"),
                                     ("poetry", "install")]) == ("poetry", "install")
    assert reader_command("poetry", [("poetry", "add", "emcee")]) == ("poetry", "install")
    assert reader_command("pdm", [("env", "X=1", "pdm", "install", "-G", "plot")]) == (
        "pdm", "sync", "--group", "plot")
    assert reader_command("pipenv", [("pipenv", "install", "--dev")]) == (
        "pipenv", "sync", "--dev")
    # Adding a package afterwards keeps the selection the install made.
    assert reader_command("pipenv", [("pipenv", "install", "--dev"),
                                     ("pipenv", "install", "requests")]) == (
        "pipenv", "sync", "--dev")


@pytest.mark.parametrize(("tool", "installs", "expected"), [
    # poetry keeps what an earlier install put there: groups add up, extras are the last's.
    ("poetry", [("install", "--with", "docs", "-E", "ffi"), ("install", "--with", "test")],
     ("--with", "docs", "--with", "test")),
    ("poetry", [("install", "--without", "dev,docs"), ("install", "--without", "docs")],
     ("--without", "docs")),
    ("poetry", [("install",), ("install", "--only", "docs")], ("--with", "docs")),
    ("poetry", [("install", "--only", "main"), ("install", "--only", "docs")],
     ("--only", "main", "--only", "docs")),
    ("poetry", [("install", "--no-root"), ("install", "--extras", "ffi")],
     ("--extras", "ffi")),
    ("poetry", [("install", "--with", "docs"), ("install", "--sync", "--with", "test")],
     ("--with", "test")),  # --sync removed docs
    ("poetry", [("install", "--with", "docs"), ("sync",)], ()),
    # add/remove/update run poetry's installer with every non-optional group (seen on
    # nikdon/pyEntropy: `poetry add --group dev X` after `install --without dev` installed
    # the dev group's 37 packages); the extras and root stay the last install's.
    ("poetry", [("install", "--without", "dev"), ("add", "--group", "dev", "tabulate<0.10"),
                ("remove", "--group", "dev", "tabulate")], ()),
    ("poetry", [("install", "--without", "dev", "-E", "ffi", "--no-root"), ("add", "emcee")],
     ("--extras", "ffi", "--no-root")),
    ("poetry", [("install", "--without", "dev"), ("add", "--lock", "emcee"),
                ("remove", "--dry-run", "x")], ("--without", "dev")),
    ("poetry", [("install", "--without", "dev,docs", "-E", "x"),
                ("update", "--without", "docs", "numpy")], ("--without", "docs", "--extras", "x")),
    ("poetry", [("install", "--with", "docs"), ("update", "--sync")], ()),
    # pdm: a plain install selected every locked group; --prod holds only where all had it.
    ("pdm", [("install", "-G", "plot"), ("install",)], ()),
    ("pdm", [("install", "-G", "plot", "--prod"), ("install", "-G", "docs")],
     ("--group", "plot", "--group", "docs")),
    ("pdm", [("install", "-G", "plot", "--prod"), ("sync", "-G", "docs", "--prod")],
     ("--group", "plot", "--group", "docs", "--prod")),
    ("pdm", [("install", "-G", "plot"), ("sync", "-G", "docs", "--clean-unselected")],
     ("--group", "docs")),
    ("pipenv", [("install", "--categories", "docs"), ("install", "--dev")],
     ("--dev", "--categories", "docs")),
])
def test_several_installs_combine_as_the_tool_keeps_them(
        tool: str, installs: list[tuple[str, ...]], expected: tuple[str, ...]) -> None:
    reader = {"poetry": ("poetry", "install"), "pdm": ("pdm", "sync"),
              "pipenv": ("pipenv", "sync")}[tool]
    assert reader_command(tool, [(tool, *args) for args in installs]) == (*reader, *expected)


def _task(tmp: Path) -> Path:
    """A task whose repository the artifact carries in source/."""
    (tmp / "task" / "repo").mkdir(parents=True)
    (tmp / "task" / "repo" / "pyproject.toml").write_text('[project]\nname = "lamatrix"\n')
    (tmp / "task" / "task.toml").write_text(
        'name = "demo"\nbase_image = "synth/python:bookworm"\n[repo]\npath = "repo"\n'
        '[probes.cpu]\ncommand = "python -c \'import lamatrix\'"\n'
        '[not_applicable]\nC3 = "cpu"\nC4 = "cpu"\n')
    return tmp / "task" / "task.toml"


def _plan(tmp_path: Path, lines: list[str], prefix: str = "/workspace/.venv",
          cwd: str = "/workspace", exits: tuple[int, ...] = ()
          ) -> tuple[BuildPlan, DistillReport]:
    py = [system_python(), venv(prefix, [
        dist("astropy", "7.1.0", installer="Poetry 2.2.1"),
        dist("lamatrix", "0.1.0", installer="Poetry 2.2.1", direct_url=PROJECT)])]
    return distill(load_run(make_run_dir(
        tmp_path, [cmd(line, cwd=cwd, exit=exits[k] if exits else 0)
                   for k, line in enumerate(lines)], python=py,
        primary=f"{prefix}/bin/python", task_file=_task(tmp_path))))


def _distill(tmp_path: Path, lines: list[str], prefix: str = "/workspace/.venv",
             cwd: str = "/workspace", exits: tuple[int, ...] = ()
             ) -> tuple[ProjectInstall | None, ...]:
    plan, _report = _plan(tmp_path, lines, prefix, cwd, exits)
    return tuple(e.project_install for e in plan.envs)


def test_a_poetry_install_s_extras_are_in_the_plan(tmp_path: Path) -> None:
    found = _distill(tmp_path, ["poetry config virtualenvs.in-project true",
                                "poetry install --no-interaction --extras ffi",
                                "poetry add emcee"])
    assert found == (ProjectInstall(tool="poetry", project="/workspace",
                                    command=("poetry", "install", "--extras", "ffi")),)


def test_poetry_s_cache_venv_gets_it_and_another_folder_s_install_does_not(
        tmp_path: Path) -> None:
    cache = "/root/.cache/pypoetry/virtualenvs/lamatrix-xS3fZVNL-py3.11"
    [found] = _distill(tmp_path / "a", ["poetry install -E ffi --with docs"], prefix=cache)
    assert found is not None and found.command == (
        "poetry", "install", "--extras", "ffi", "--with", "docs")
    # A poetry project elsewhere is not the source/ a reader has.
    assert _distill(tmp_path / "b", ["poetry install -E ffi"], cwd="/opt/other") == (None,)
    # A failed install chose nothing.
    assert _distill(tmp_path / "c", ["poetry install", "poetry install -E nope"],
                    exits=(0, 1))[0] == ProjectInstall(
        tool="poetry", project="/workspace", command=("poetry", "install"))


def test_the_readme_tells_a_reader_the_tool_s_command(tmp_path: Path) -> None:
    plan, report = _plan(tmp_path, ["poetry install --extras 'ffi plot'"])
    uv = LockedPin(name="uv", version="0.13.9", hashes=(hashlib.sha256(b"uv").hexdigest(),))
    locks = [Lock(env=e, pins=tuple(LockedPin(name=n, version=v, hashes=("ab" * 32,))
                                    for n, v in e.pins), locker="uv", installer=uv)
             for e in plan.envs]
    readme = " ".join(render_artifact(plan, report, locks)["README.md"].split())
    assert ("A poetry user makes it the same way in `source/` (from the project's own "
            "`poetry.lock` where it has one), with the extras and groups the run chose: "
            "`poetry install --extras ffi --extras plot`") in readme, readme
    assert ("The artifact installs `requirements.lock` instead: installing it needs no "
            "poetry") in readme
    # The run's `poetry config virtualenvs.in-project true` is not in the artifact: the
    # reader is told how poetry makes the project's .venv (seen on nikdon/pyEntropy).
    assert ("poetry makes it in the project's `.venv`, where the code runs here, only when "
            "told: set `POETRY_VIRTUALENVS_IN_PROJECT=true` for that command") in readme
    cache = "/root/.cache/pypoetry/virtualenvs/lamatrix-xS3fZVNL-py3.11"
    plan, report = _plan(tmp_path / "cache", ["poetry install"], prefix=cache)
    locks = [Lock(env=e, pins=tuple(LockedPin(name=n, version=v, hashes=("ab" * 32,))
                                    for n, v in e.pins), locker="uv", installer=uv)
             for e in plan.envs]
    readme = " ".join(render_artifact(plan, report, locks)["README.md"].split())
    assert "`poetry install`" in readme and "POETRY_VIRTUALENVS_IN_PROJECT" not in readme


def test_the_readme_says_when_the_project_s_lock_does_not_give_the_environment(
        tmp_path: Path) -> None:
    """Seen on a real pipenv project: the README said `pipenv sync` made the environment
    the same way while the export warned that it did not (a later `pip install`)."""
    plan, report = _plan(tmp_path, ["pipenv sync", "pipenv run pip install tabulate"])
    check = check_lock("Pipfile.lock", '{"default": {"astropy": {"version": "==7.1.0"}}}',
                       "/workspace/.venv", [("astropy", "7.1.0"), ("tabulate", "0.9.0")])
    locks = [Lock(env=e, pins=tuple(LockedPin(name=n, version=v, hashes=("ab" * 32,))
                                    for n, v in e.pins), locker="uv") for e in plan.envs]
    readme = " ".join(render_artifact(plan, report, locks, lock_checks=[check])["README.md"]
                      .split())
    assert ("The run installed `/workspace/.venv` with pipenv and then changed it: the "
            "project's own `Pipfile.lock` (in `source/`) does not give this environment "
            "(tabulate 0.9.0 is not in it), so `pipenv sync` in `source/` makes a different "
            "one.") in readme, readme
    assert "makes it the same way" not in readme
    # A lock that agrees, or one for another environment, changes nothing.
    for checks in ([check._replace(differs=())], [check._replace(prefix="/opt/other")]):
        readme = " ".join(render_artifact(plan, report, locks, lock_checks=checks)["README.md"]
                          .split())
        assert "A pipenv user makes it the same way in `source/`" in readme


def test_the_tool_s_own_environment_is_named_as_the_tool_s(tmp_path: Path) -> None:
    plan, _report = _plan(tmp_path, ["pipenv sync"])
    primary = plan.envs[0]
    tool_env = msgspec.structs.replace(primary, python="/opt/pipenv/bin/python",
                                       prefix="/opt/pipenv", project_install=None,
                                       pins=(("certifi", "2024.8.30"), ("pipenv", "2024.4.0")))
    other = msgspec.structs.replace(tool_env, python="/opt/tools/bin/python",
                                    prefix="/opt/tools", pins=(("black", "24.10.0"),))
    found = plan_second_interpreters([primary, tool_env, other])
    assert found[0].startswith("/opt/pipenv/bin/python (2 pinned) is the environment of "
                               "pipenv, which installed the primary /workspace/.venv/bin/")
    assert found[1].startswith("packages went into a second interpreter: /opt/tools/bin/")
