"""The project's own lock files against the final state (synth.distill.project_locks) and
how export reads them from source/ (never through a link out of it)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from msgspec.structs import replace

from synth.distill.project_locks import ANY, check_lock, disagreements, lock_pins
from synth.export.final_state import (
    check_project_locks,
    project_lock_notes,
    read_project_locks,
)
from synth.formats.plan import NativeStep, ProjectInstall, PythonEnvPlan

UV_LOCK = """\
version = 1
requires-python = ">=3.11"

[[package]]
name = "envtools"
version = "0.1.0"
source = { editable = "." }

[[package]]
name = "Six"
version = "1.17.0"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "attrs"
version = "25.3.0"
source = { registry = "https://pypi.org/simple" }
"""

POETRY_LOCK = """\
[[package]]
name = "six"
version = "1.16.0"
description = ""
optional = false
python-versions = "*"
files = []

[metadata]
lock-version = "2.0"
"""

PIPFILE_LOCK = json.dumps({"_meta": {}, "default": {"six": {"version": "==1.17.0"}},
                           "develop": {"pytest": {"version": "==8.0.0"},
                                       "odd": {"git": "https://x/y.git"}}})


def test_each_format_gives_its_pins_by_canonical_name() -> None:
    assert lock_pins("uv.lock", UV_LOCK) == {"envtools": ("0.1.0",), "six": ("1.17.0",),
                                             "attrs": ("25.3.0",)}
    assert lock_pins("poetry.lock", POETRY_LOCK) == {"six": ("1.16.0",)}
    assert lock_pins("pdm.lock", POETRY_LOCK) == {"six": ("1.16.0",)}
    # A package named by its place (a repository, a folder) builds to whatever version.
    assert lock_pins("Pipfile.lock", PIPFILE_LOCK) == {"six": ("1.17.0",),
                                                       "pytest": ("8.0.0",), "odd": (ANY,)}
    assert disagreements({"odd": (ANY,)}, [("odd", "0.3")]) == []
    for name, text in (("uv.lock", "[[package]\n"), ("uv.lock", "x = 1\n"),
                       ("Pipfile.lock", "{"), ("Pipfile.lock", "[]")):
        with pytest.raises(ValueError):
            lock_pins(name, text)


def test_a_lock_forked_by_python_version_pins_each_fork() -> None:
    forked = UV_LOCK + "".join(
        f'\n[[package]]\nname = "scipy"\nversion = "{v}"\nresolution-markers = '
        f'["python_full_version {m}"]\nsource = {{ registry = "https://pypi.org/simple" }}\n'
        for v, m in (("1.18.0", ">= '3.12'"), ("1.15.3", "< '3.11'"), ("1.17.1", "== '3.11.*'")))
    pins = lock_pins("uv.lock", forked)
    assert pins["scipy"] == ("1.15.3", "1.17.1", "1.18.0")
    assert disagreements(pins, [("scipy", "1.17.1")]) == []
    assert disagreements(pins, [("scipy", "1.16.0")]) == [
        "scipy 1.16.0 is installed where it pins 1.15.3 or 1.17.1 or 1.18.0"]


def test_only_what_the_environment_holds_can_disagree() -> None:
    pins = lock_pins("uv.lock", UV_LOCK)
    # attrs is locked but not installed (an extra not asked for): no disagreement.
    assert disagreements(pins, [("six", "1.17.0"), ("pip", "25.0")]) == []
    assert disagreements(pins, [("six", "1.16.0"), ("numpy", "2.3.5")]) == [
        "numpy 2.3.5 is not in it", "six 1.16.0 is installed where it pins 1.17.0"]
    check = check_lock("uv.lock", UV_LOCK, "/workspace/.venv", [("six", "1.16.0")])
    assert check.differs == ("six 1.16.0 is installed where it pins 1.17.0",)
    note = check.note()
    assert note is not None and "uv sync --frozen" in note and "/workspace/.venv" in note
    assert check_lock("uv.lock", UV_LOCK, "/w/.venv", [("six", "1.17.0")]).note() is None
    unread = check_lock("poetry.lock", "{", "/w", [])
    assert unread.differs == () and "could not be read" in str(unread.note())
    # pdm's command that installs its lock as it is (``pdm install`` may lock again).
    assert "`pdm sync` from source/" in str(check_lock("pdm.lock", POETRY_LOCK, "/w/.venv",
                                                       [("six", "1.17.0")]).note())
    many = check_lock("uv.lock", UV_LOCK, "/w", [(f"p{i}", "1") for i in range(10)])
    assert many.shown().endswith("p7 1 is not in it; and 2 more")


def _env(prefix: str, pins: tuple[tuple[str, str], ...]) -> PythonEnvPlan:
    return PythonEnvPlan(python=f"{prefix}/bin/python", kind="venv", version="3.11.2",
                         prefix=prefix, create=(), pip=(), lock_file="requirements.lock",
                         pins=pins, index_url="https://pypi.org/simple", extra_index_urls=(),
                         find_links=(), break_system_packages=False)


@dataclass
class Plan:
    """The parts of a BuildPlan the lock check reads."""

    envs: tuple[PythonEnvPlan, ...]
    native: tuple[NativeStep, ...] = ()


def test_export_compares_the_tools_environment_and_never_follows_a_link_out(
        tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    (source / "uv.lock").write_text(UV_LOCK)
    plan = Plan((_env("/opt/venv", (("six", "1.16.0"),)),
                 _env("/workspace/.venv", (("six", "1.17.0"), ("numpy", "2.3.5")))))
    found = read_project_locks(source)
    notes = project_lock_notes(found, check_project_locks(found, plan))  # type: ignore[arg-type]
    assert len(notes) == 1 and "numpy 2.3.5 is not in it" in notes[0]
    assert "six" not in notes[0]  # the .venv's six agrees; /opt/venv is not the tool's
    # A hostile lock that is a link to a host file is refused, not read.
    secret = tmp_path / "host-secret"
    secret.write_text("[[package]]\nname = 'x'\nversion = '1'\n")
    (source / "uv.lock").unlink()
    (source / "uv.lock").symlink_to(secret)
    found = read_project_locks(source)
    notes = project_lock_notes(found, check_project_locks(found, plan))  # type: ignore[arg-type]
    assert len(notes) == 1 and "was not read" in notes[0] and "leads out" in notes[0]


def test_poetry_lock_is_compared_with_the_environment_poetry_installed(tmp_path: Path) -> None:
    """A venv the agent made with pip inside the working folder is not poetry's (seen on
    nikdon/pyEntropy: poetry.lock was compared with /workspace/venv, a pip false start,
    and poetry's own environment in its cache folder was not compared)."""
    source = tmp_path / "source"
    source.mkdir()
    (source / "poetry.lock").write_text(POETRY_LOCK)
    cache = "/root/.cache/pypoetry/virtualenvs/p-xS3fZVNL-py3.11"
    poetrys = replace(_env(cache, (("six", "1.16.0"), ("tabulate", "0.9.0"))),
                      project_install=ProjectInstall("poetry", "/workspace", ("poetry", "install")))
    plan = Plan((poetrys, _env("/workspace/venv", (("six", "1.17.0"),))))
    found = read_project_locks(source)
    [check] = check_project_locks(found, plan)  # type: ignore[arg-type]
    assert check.prefix == cache and check.name == "poetry.lock"
    [note] = project_lock_notes(found, [check])
    assert cache in note and "tabulate 0.9.0 is not in it" in note and "six" not in note


def test_the_export_s_readme_names_what_the_project_s_lock_does_not_give(
        tmp_path: Path) -> None:
    """From the audit log to the README: ``pipenv sync``, then a ``pip install`` the
    project's Pipfile.lock does not name; the export warns and the README says so, naming
    the difference, instead of telling a pipenv user the lock makes the same environment."""
    from distill_runs import (
        NO_ENGINE,
        cmd,
        dist,
        make_run_dir,
        project_task,
        system_python,
        venv,
    )
    from test_uv_project import _uv_locker

    from synth.config import Settings
    from synth.export.artifact import ExportOptions, export_run

    task = project_task(tmp_path, {
        "analysis.py": "import six\n", "Pipfile": '[packages]\nsix = "*"\n',
        "Pipfile.lock": json.dumps({"default": {"six": {"version": "==1.17.0"}}})},
        "python analysis.py")
    site = "/workspace/.venv/lib/python3.11/site-packages"
    dists = [dist("six", "1.17.0", installer="pip", location=site),
             dist("tabulate", "0.9.0", installer="pip", location=site)]
    run = make_run_dir(tmp_path, [cmd("cd /workspace && PIPENV_VENV_IN_PROJECT=1 pipenv sync"),
                                  cmd("cd /workspace && pipenv run pip install tabulate")],
                       task="proj", python=[system_python(), venv("/workspace/.venv", dists)],
                       primary="/workspace/.venv/bin/python", task_file=task,
                       diff=[("A", "/workspace/.venv")])

    def export(out: str) -> Path:
        return export_run(ExportOptions(run, out_dir=tmp_path / out, locker=_uv_locker,
                                        ask_live=False), Settings.load(artifacts_dir=tmp_path),
                          NO_ENGINE).artifact_dir

    art = export("out")
    warnings = json.loads((art / "export-report.json").read_text())["warnings"]
    assert ("the project's Pipfile.lock (carried in source/) disagrees with the final state "
            "of /workspace/.venv: tabulate 0.9.0 is not in it") in " ".join(warnings), warnings
    readme = " ".join((art / "README.md").read_text().split())
    assert ("the project's own `Pipfile.lock` (in `source/`) does not give this environment "
            "(tabulate 0.9.0 is not in it)") in readme, readme
    assert (export("again") / "README.md").read_bytes() == (art / "README.md").read_bytes()


def test_a_local_package_the_lock_does_not_name_disagrees_but_the_project_itself_does_not(
        tmp_path: Path) -> None:
    """``pipenv run pip install ./pkg`` builds a package into pipenv's environment that
    Pipfile.lock does not name: a native step, not a pin, so the check reads the native
    steps too, by the environment each installs into. A package the lock names by its
    folder agrees (``pipenv install -e .`` names the project so). pipenv installs only
    what its lock names, so a project its lock does not name disagrees; poetry's lock never
    names the project, which poetry installs on sync."""
    from distill_runs import cmd, dist, make_run_dir, project_task, system_python, venv

    from synth.distill.load import load_run
    from synth.distill.plan import distill

    lock = {"default": {"six": {"version": "==1.17.0"}, "vendored": {"path": "./vendored"},
                        "proj": {"editable": True, "path": "."}}}
    setup = "from setuptools import setup\nsetup(name={!r}, version='0.1')\n"
    task = project_task(tmp_path, {
        "analysis.py": "import six\n", "Pipfile": '[packages]\nsix = "*"\n',
        "Pipfile.lock": json.dumps(lock), "setup.py": setup.format("proj"),
        "pkg/setup.py": setup.format("mypkg"), "vendored/setup.py": setup.format("vendored")},
        "python analysis.py")
    site = "/workspace/.venv/lib/python3.11/site-packages"

    def local(name: str, path: str) -> dict[str, object]:
        return dist(name, "0.1", location=site,
                    direct_url={"url": f"file://{path}", "dir_info": {}})

    dists = [dist("six", "1.17.0", location=site), local("proj", "/workspace"),
             local("mypkg", "/workspace/pkg"), local("vendored", "/workspace/vendored")]
    run = make_run_dir(tmp_path, [cmd("cd /workspace && PIPENV_VENV_IN_PROJECT=1 pipenv sync"),
                                  cmd("cd /workspace && pipenv install -e ."),
                                  cmd("cd /workspace && pipenv run pip install ./vendored"),
                                  cmd("cd /workspace && pipenv run pip install ./pkg")],
                       task="proj", python=[system_python(), venv("/workspace/.venv", dists)],
                       primary="/workspace/.venv/bin/python", task_file=task,
                       diff=[("A", "/workspace/.venv")])
    plan, _report = distill(load_run(run))
    built = sorted(s.distribution or "" for s in plan.native)
    assert built == ["mypkg==0.1", "proj==0.1", "vendored==0.1"], plan.native
    source = tmp_path / "source"
    source.mkdir()
    (source / "Pipfile.lock").write_text(json.dumps(lock))
    found = read_project_locks(source)
    [check] = check_project_locks(found, plan)
    assert check.differs == ("mypkg 0.1 is not in it",), check
    del lock["default"]["proj"]
    (source / "Pipfile.lock").write_text(json.dumps(lock))
    [check] = check_project_locks(read_project_locks(source), plan)
    assert check.differs == ("mypkg 0.1 is not in it", "proj 0.1 is not in it"), check
    (source / "Pipfile.lock").unlink()
    (source / "poetry.lock").write_text(POETRY_LOCK.replace("1.16.0", "1.17.0"))
    [check] = check_project_locks(read_project_locks(source), plan)
    assert check.differs == ("mypkg 0.1 is not in it", "vendored 0.1 is not in it"), check
