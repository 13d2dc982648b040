"""When a uv project's environment is installed with ``uv sync --frozen`` from its own
uv.lock, and with which options (synth.distill.uv_project); what the Dockerfile then runs."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from distill_runs import NO_ENGINE, cmd, dist, make_run_dir, project_task, system_python, venv

from synth.config import Settings
from synth.distill.extractors import classify
from synth.distill.shell import SimpleCommand
from synth.distill.steps import ProjectTool
from synth.distill.uv_project import choose, foreign_sources, selection
from synth.export.artifact import ExportOptions, export_run
from synth.export.lock import Lock, LockedPin, LockTarget
from synth.formats.plan import PythonEnvPlan, UvSync

UV_LOCK = """\
version = 1
revision = 3
requires-python = ">=3.11"

[[package]]
name = "envtools"
version = "0.1.0"
source = { editable = "." }
dependencies = [
    { name = "attrs" },
    { name = "six" },
]

[[package]]
name = "Six"
version = "1.17.0"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "attrs"
version = "25.4.0"
source = { registry = "https://pypi.org/simple" }
"""

PINS = (("attrs", "25.4.0"), ("six", "1.17.0"))
SYNC = [("/workspace", ("uv", "lock")), ("/workspace", ("uv", "sync"))]


def _env(prefix: str = "/workspace/.venv",
         pins: tuple[tuple[str, str], ...] = PINS) -> PythonEnvPlan:
    return PythonEnvPlan(python=f"{prefix}/bin/python", kind="venv", version="3.11.2",
                         prefix=prefix, create=(), pip=(), lock_file="requirements.lock",
                         pins=pins, index_url="https://pypi.org/simple", extra_index_urls=(),
                         find_links=(), break_system_packages=False)


@pytest.mark.parametrize(("argv", "expected"), [
    (("uv", "sync"), ()),
    (("/usr/local/bin/uv", "sync", "--extra", "toml", "--no-dev", "--frozen"),
     ("--extra", "toml", "--no-dev")),
    (("uv", "sync", "--extra=toml", "--group", "docs", "-p", "3.11", "--all-extras"),
     ("--extra", "toml", "--group", "docs", "--all-extras")),
    (("uv", "--directory", "/w", "sync", "--only-group", "test"), ("--only-group", "test")),
    (("uv", "run", "--extra", "toml", "python", "-m", "x", "--extra", "no"),
     ("--extra", "toml")),
    (("uv", "run", "--with", "rich", "python", "x.py"), ()),
    (("uv", "add", "--group", "dev", "pytest"), ()),
    (("uv", "remove", "six"), ()),
    (("uv", "run", "--no-sync", "python"), None),
    (("uv", "run", "--no-project", "python", "x.py"), None),
    (("uv", "run", "--isolated", "--extra", "toml", "python"), None),
    (("uv", "run", "--script", "x.py"), None),
    (("uv", "run", "--extra", "toml", "python", "x.py", "--isolated"), ("--extra", "toml")),
    (("uv", "lock"), None),
    (("uv", "pip", "install", "six"), None),
    (("uv", "sync", "--dry-run"), None),
    (("pip", "sync"), None),
    ((), None),
])
def test_the_options_that_choose_what_a_sync_installs(
        argv: tuple[str, ...], expected: tuple[str, ...] | None) -> None:
    assert selection(argv) == expected


def test_a_uv_project_environment_is_synced_with_the_last_syncing_commands_options() -> None:
    commands = [*SYNC, ("/workspace/sub", ("uv", "run", "--extra", "toml", "python", "x"))]
    sync, note = choose(_env(), "/workspace", UV_LOCK, commands, sdists=(), bundle=False)
    assert sync == UvSync(project="/workspace", options=("--extra", "toml"))
    assert note is None


#: A project whose extra and default group add packages (uv sync's reading of its lock).
EXTRAS_LOCK = """\
version = 1
requires-python = ">=3.10"

[[package]]
name = "proj"
version = "0.1.0"
source = { editable = "." }
dependencies = [
    { name = "six" },
    { name = "colorama", marker = "sys_platform == 'win32'" },
    { name = "numpy", version = "2.4.2", marker = "python_full_version >= '3.11'" },
    { name = "numpy", version = "2.2.6", marker = "python_full_version < '3.11'" },
]

[package.optional-dependencies]
plot = [{ name = "attrs", extra = ["tests"] }]

[package.dev-dependencies]
dev = [{ name = "proj", extra = ["plot"] }, { name = "iniconfig" }]
docs = [{ name = "pygments" }]

[[package]]
name = "six"
version = "1.17.0"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "colorama"
version = "0.4.6"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "numpy"
version = "2.4.2"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "numpy"
version = "2.2.6"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "attrs"
version = "25.4.0"
source = { registry = "https://pypi.org/simple" }

[package.optional-dependencies]
tests = [{ name = "hypothesis" }]

[[package]]
name = "hypothesis"
version = "6.0.0"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "iniconfig"
version = "2.1.0"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "pygments"
version = "2.19.2"
source = { registry = "https://pypi.org/simple" }
"""
BASE = {"six", "numpy"}
PLOT = {"attrs", "hypothesis"}


@pytest.mark.parametrize(("options", "expected"), [
    ((), BASE | PLOT | {"iniconfig"}),  # dev, a default group, names the project's plot extra
    (("--no-dev",), BASE),
    (("--extra", "plot", "--no-default-groups"), BASE | PLOT),
    (("--all-groups", "--no-dev"), BASE | PLOT | {"iniconfig", "pygments"}),
    (("--no-dev", "--group", "docs"), BASE | {"pygments"}),
    (("--only-group", "docs"), None),  # not modelled: the build's own check decides
])
def test_what_uv_sync_installs_from_the_lock(options: tuple[str, ...],
                                              expected: set[str] | None) -> None:
    from synth.distill.uv_project import installed_by

    got = installed_by(EXTRAS_LOCK, options, "3.11.2")
    assert got == (frozenset(expected) if expected is not None else None)
    # Another Python takes the other numpy; a package at two versions with no marker
    # choosing one cannot be told.
    assert installed_by(EXTRAS_LOCK.replace(', version = "2.4.2"', ""), (), "3.11.2") is None


@pytest.mark.parametrize(("synced", "expected"), [
    ([("--extra", "plot", "--no-dev")], ("--extra", "plot", "--no-dev")),
    ([("--extra", "plot", "--no-dev"), ()], ("--extra", "plot")),
    ([("--no-dev",), ("--extra", "b", "--no-default-groups"), ("--extra", "a", "--no-dev")],
     ("--extra", "a", "--extra", "b", "--no-dev")),
    ([("--all-extras",), ("--group", "docs")], ("--all-extras", "--group", "docs")),
    ([("--no-dev",), ("--only-group", "docs")], None),
])
def test_inexact_syncs_add_to_the_selection(synced: list[tuple[str, ...]],
                                            expected: tuple[str, ...] | None) -> None:
    from synth.distill.uv_project import merged

    assert merged(synced) == expected


def test_uv_run_after_a_sync_with_an_extra_keeps_the_extra() -> None:
    """``uv sync --extra plot --no-dev``, then ``uv run`` (inexact, default groups): the
    environment holds plot's packages and the dev group's; the artifact syncs both."""
    pins = tuple((n, "1") for n in sorted(BASE | PLOT | {"iniconfig"}))
    lock = EXTRAS_LOCK
    for name, version in (("six", "1.17.0"), ("numpy", "2.4.2"), ("attrs", "25.4.0"),
                          ("hypothesis", "6.0.0"), ("iniconfig", "2.1.0")):
        pins = tuple((n, version if n == name else v) for n, v in pins)
    commands = [("/workspace", ("uv", "sync", "--extra", "plot", "--no-dev")),
                ("/workspace", ("uv", "run", "python", "x.py"))]
    sync, note = choose(_env(pins=pins), "/workspace", lock, commands, sdists=(), bundle=False)
    assert (sync, note) == (UvSync(project="/workspace", options=("--extra", "plot")), None)
    # An exact sync after them starts over.
    again = [*commands, ("/workspace", ("uv", "sync", "--extra", "plot"))]
    sync, _ = choose(_env(pins=pins), "/workspace", lock, again, sdists=(), bundle=False)
    assert sync == UvSync(project="/workspace", options=("--extra", "plot"))
    # A final state no selection of the run's gives: synth's lock, and the note says so.
    sync, note = choose(_env(pins=tuple(p for p in pins if p[0] != "iniconfig")),
                        "/workspace", lock, commands, sdists=(), bundle=False)
    assert sync is None and note is not None and "+iniconfig" in note, note


@pytest.mark.parametrize(("env", "lock", "commands"), [
    (_env("/opt/venv"), UV_LOCK, SYNC),  # not the project's .venv
    (_env(), None, SYNC),  # no uv.lock
    (_env(), UV_LOCK, [("/workspace", ("uv", "lock"))]),  # nothing synced it
    (_env(), UV_LOCK, [("/elsewhere", ("uv", "sync"))]),  # another project did
    (_env(pins=(*PINS, ("numpy", "2.3.5"))), UV_LOCK, SYNC),  # disagrees: the lock note says
    (_env(), "not toml [", SYNC),  # unreadable: the lock note says
])
def test_no_sync_and_no_extra_note_where_it_is_not_a_synced_uv_project(
        env: PythonEnvPlan, lock: str | None, commands: list[tuple[str, tuple[str, ...]]]
        ) -> None:
    assert choose(env, "/workspace", lock, commands, sdists=(), bundle=False) == (None, None)


@pytest.mark.parametrize(("env", "lock", "sdists", "bundle", "said"), [
    (_env(pins=(*PINS, ("pip", "25.2"))), UV_LOCK, (), False, "pip 25.2"),
    (_env(), UV_LOCK + '\n[[package]]\nname = "tool"\nversion = "1"\n'
     'source = { git = "https://example.org/tool.git" }\n', (), False, "tool (git "),
    (_env(), UV_LOCK, ("attrs",), False, "built from source"),
    (_env(), UV_LOCK, (), True, "--bundle"),
])
def test_a_synced_project_installed_from_synths_lock_says_why(
        env: PythonEnvPlan, lock: str, sdists: tuple[str, ...], bundle: bool, said: str
        ) -> None:
    sync, note = choose(env, "/workspace", lock, SYNC, sdists=sdists, bundle=bundle)
    assert sync is None
    assert note is not None and said in note and "uv sync" in note


def test_foreign_sources_are_anything_but_an_index_or_the_project() -> None:
    lock = UV_LOCK + ('\n[[package]]\nname = "member"\nversion = "1"\n'
                      'source = { editable = "packages/member" }\n')
    assert foreign_sources(UV_LOCK) == []
    assert foreign_sources(lock) == ["member (editable packages/member)"]
    with pytest.raises(ValueError, match="no \\[\\[package\\]\\]"):
        foreign_sources("version = 1\n")


def _uv_locker(env: PythonEnvPlan, _target: LockTarget) -> Lock:
    pins = tuple(LockedPin(name=n, version=v, hashes=(hashlib.sha256(n.encode()).hexdigest(),))
                 for n, v in env.pins)
    uv = LockedPin(name="uv", version="0.13.9", hashes=("0" * 64,))
    return Lock(env=env, pins=pins, locker="uv", installer=uv)


def _uv_project_run(tmp: Path, sync: str) -> Path:
    task = project_task(tmp, {
        "envtools/__init__.py": "", "uv.lock": UV_LOCK,
        "pyproject.toml": '[project]\nname = "envtools"\nversion = "0.1.0"\n'},
        "python -m envtools")
    site = "/workspace/.venv/lib/python3.11/site-packages"
    dists = [dist("attrs", "25.4.0", installer="uv", location=site),
             dist("six", "1.17.0", installer="uv", location=site),
             dist("envtools", "0.1.0", installer="uv", location=site, direct_url={
                 "url": "file:///workspace", "dir_info": {"editable": True}})]
    return make_run_dir(tmp, [cmd("cd /workspace && uv lock"), cmd(f"cd /workspace && {sync}")],
                        task="proj", python=[system_python(), venv("/workspace/.venv", dists)],
                        primary="/workspace/.venv/bin/python", task_file=task,
                        diff=[("A", "/workspace/.venv"), ("A", "/workspace/uv.lock")])


def test_the_dockerfile_syncs_the_project_from_its_lock_then_checks_it(tmp_path: Path) -> None:
    run = _uv_project_run(tmp_path, "uv sync --extra toml")
    art = export_run(ExportOptions(run, out_dir=tmp_path / "out", locker=_uv_locker,
                                   ask_live=False), Settings.load(artifacts_dir=tmp_path),
                     NO_ENGINE).artifact_dir
    docker = (art / "Dockerfile").read_text()
    # uv made the .venv in the run, so uv makes it here (its activation scripts, its
    # pyvenv.cfg), from the base's python3: no venv step before, uv taken by python3.
    assert ("UV_PROJECT_ENVIRONMENT=/workspace/.venv /tmp/synth/uv/bin/uv sync --frozen "
            "--no-config --no-cache --no-python-downloads --no-install-project "
            "--compile-bytecode --python python3 --extra toml") in docker
    assert "venv /workspace/.venv" not in docker
    assert "# Python environment /workspace/.venv (venv made by uv sync, Python " in docker
    assert "python3 /tmp/synth/install-uv.py" in docker
    assert "--mount=type=bind,source=source/uv.lock,target=/tmp/synth/project/uv.lock" in docker
    assert "diff /tmp/synth/locked /tmp/synth/synced" in docker
    assert "-r /tmp/synth/requirements.lock" not in docker  # not installed a second way
    # The project itself after the source, by its native step, editable as it was.
    assert docker.index("COPY source/ /workspace/") < docker.index("-e /workspace")
    legacy = (art / "Dockerfile.legacy").read_text()
    assert 'COPY ["source/uv.lock", "/tmp/synth/project/uv.lock"]' in legacy
    plan = json.loads((art / "plan.json").read_text())["plan"]
    env = next(e for e in plan["envs"] if e["prefix"] == "/workspace/.venv")
    assert env["uv_sync"] == {"project": "/workspace", "options": ["--extra", "toml"],
                              "python": "python3"}
    assert env["create"] == []
    again = export_run(ExportOptions(run, out_dir=tmp_path / "again", locker=_uv_locker,
                                     ask_live=False), Settings.load(artifacts_dir=tmp_path),
                       NO_ENGINE).artifact_dir
    assert (again / "Dockerfile").read_bytes() == docker.encode()
    # The audited uv sync made the .venv: no warning that nothing did.
    warnings = json.loads((art / "export-report.json").read_text())["warnings"]
    assert not [w for w in warnings if "no audited command created" in w], warnings


@pytest.mark.parametrize("made", ["python3 -m venv --without-pip /workspace/.venv",
                                  "uv venv --prompt mine /workspace/.venv"])
def test_a_venv_another_command_made_is_made_as_it_was_then_synced(
        tmp_path: Path, made: str) -> None:
    """uv sync fills a venv it finds: one that Python's venv, or uv venv with options
    the sync does not have, made is made by that command again, then synced."""
    run = _uv_project_run(tmp_path, f"{made} && uv sync --extra toml")
    art = export_run(ExportOptions(run, out_dir=tmp_path / "out", locker=_uv_locker,
                                   ask_live=False), Settings.load(artifacts_dir=tmp_path),
                     NO_ENGINE).artifact_dir
    docker = (art / "Dockerfile").read_text()
    assert "RUN python3 -m venv --without-pip" in docker, docker
    assert "/workspace/.venv (venv, Python " in docker
    assert "--python python3" not in docker
    assert "/workspace/.venv/bin/python /tmp/synth/install-uv.py" in docker
    env = json.loads((art / "plan.json").read_text())["plan"]["envs"][0]
    assert env["uv_sync"]["python"] is None and env["create"]


def test_a_project_venv_uv_did_not_sync_is_installed_from_synths_lock(tmp_path: Path) -> None:
    run = _uv_project_run(tmp_path, "uv pip install -e .")
    art = export_run(ExportOptions(run, out_dir=tmp_path / "out", locker=_uv_locker,
                                   ask_live=False), Settings.load(artifacts_dir=tmp_path),
                     NO_ENGINE).artifact_dir
    docker = (art / "Dockerfile").read_text()
    assert "uv sync" not in docker and "-r /tmp/synth/requirements.lock" in docker
    warnings = json.loads((art / "export-report.json").read_text())["warnings"]
    assert "no audited command created /workspace/.venv; it is made with `python3 -m venv " \
        "--without-pip /workspace/.venv`" in warnings


@pytest.mark.parametrize(("line", "extractor", "verb"), [
    ("uv sync --frozen --extra yaml", "project-tool", "sync"),
    ("/opt/uv/bin/uv --directory /w lock", "project-tool", "lock"),
    ("uv run --extra yaml python report.py", "project-tool", "run"),
    ("poetry install --with dev", "project-tool", "install"),
    ("pipenv install -e .", "project-tool", "install"),
    ("pdm lock", "project-tool", "lock"),
    ("uv pip install six", "pip", None),
    ("uv venv .venv", "python-env", None),
    ("uv --version", "read-only", None),
    ("uv self update", "unclassified", None),
])
def test_project_tools_are_classified_and_folded(line: str, extractor: str,
                                                 verb: str | None) -> None:
    argv = tuple(line.split())
    command = SimpleCommand(argv, (), (), line, "/workspace", (), None, 1, 0)
    name, step = classify(command)
    assert name == extractor
    if verb is not None:
        assert isinstance(step, ProjectTool) and (step.verb, step.project) == (verb,
                                                                               "/workspace")


def test_a_lock_forked_by_python_version_is_still_synced() -> None:
    forked = UV_LOCK.replace('    { name = "six" },\n', """\
    { name = "six" },
    { name = "numpy", version = "2.2.6", marker = "python_full_version < '3.11'" },
    { name = "numpy", version = "2.4.2", marker = "python_full_version >= '3.11'" },
""") + "".join(
        f'\n[[package]]\nname = "numpy"\nversion = "{v}"\nresolution-markers = ["{m}"]\n'
        'source = { registry = "https://pypi.org/simple" }\n'
        for v, m in (("2.2.6", "python_full_version < '3.11'"),
                     ("2.4.2", "python_full_version >= '3.11'")))
    sync, note = choose(_env(pins=(*PINS, ("numpy", "2.4.2"))), "/workspace", forked, SYNC,
                        sdists=(), bundle=False)
    assert sync == UvSync(project="/workspace", options=()) and note is None
