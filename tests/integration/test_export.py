"""Export each bundled task's sloppy run, rebuild it from scratch, compare with the live run.

One run, one export and one no-cache build per task for the whole test session, shared with
the verify and diff tests (conftest ``verified``); the rebuilt images are removed at the end.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from image_layers import layers_containing

from synth.config import Settings
from synth.engine.base import ContainerSpec, Engine
from synth.engine.docker import DockerEngine
from synth.export.artifact import ExportOptions, export_run
from synth.formats.task import discover_tasks, load_task

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TASKS_DIR = Path(__file__).resolve().parents[2] / "tasks"
SLOPPY_TASKS = [p.name for p in discover_tasks(TASKS_DIR) if (p / "agents/sloppy.sh").is_file()]


@pytest.fixture(scope="module")
def exported(verified: Callable[..., Any]) -> Callable[[str], tuple[Path, Path]]:
    """``exported(task) -> (run_dir, artifact_dir)`` for the task's sloppy.sh run, from the
    session's shared export + no-cache rebuild (conftest ``verified``)."""

    def get(task: str) -> tuple[Path, Path]:
        doc = verified(task, "sloppy.sh").document
        return Path(doc["target"]["path"]), Path(doc["target"]["artifact_dir"])

    return get


@pytest.fixture(scope="module")
def rebuilt(verified: Callable[..., Any]) -> Callable[[str], str]:
    """``rebuilt(task) -> image`` built from the artifact with no cache, the marked CA as
    the BuildKit secret (removed by ``verified`` at session end)."""

    def get(task: str) -> str:
        return str(verified(task, "sloppy.sh").document["build"]["image"])

    return get


def _live_image(run_dir: Path) -> str:
    data = json.loads((run_dir / "run.json").read_text())
    return str(data["live_image"]["ref"])


@pytest.mark.parametrize("task", SLOPPY_TASKS)
def test_rebuilt_image_matches_live_container(
    task: str, engine: object, exported: Callable[[str], tuple[Path, Path]],
    rebuilt: Callable[[str], str],
) -> None:
    from synth.compare.fingerprint import compare_fingerprints
    from synth.engine import ContainerSpec
    from synth.engine.fingerprint import ImageProbe

    run_dir, art = exported(task)
    tag = rebuilt(task)
    python = json.loads((art / "manifest.json").read_text())["python"]
    live = ImageProbe(engine).fingerprint(_live_image(run_dir), python)  # type: ignore[arg-type]
    new = ImageProbe(engine).fingerprint(tag, python)  # type: ignore[arg-type]
    cmp = compare_fingerprints(live, new)
    assert cmp.packages_equal, [c.to_json() for c in cmp.packages]
    assert not cmp.dpkg, [c.to_json() for c in cmp.dpkg]
    modules = load_task(TASKS_DIR / task).probes.native_modules
    if modules:
        spec = ContainerSpec(image=tag, network=False, labels={"synth.temporary": "1"})
        with engine.container(spec) as c:  # type: ignore[attr-defined]
            code = "; ".join(f"import {m}" for m in modules)
            res = c.exec([python, "-c", code], workdir="/tmp")
            assert res.exit_code == 0, res.stdout + res.stderr


@pytest.mark.parametrize("task", SLOPPY_TASKS)
def test_failed_read_only_and_undone_commands_are_reported_not_built(
    task: str, exported: Callable[[str], tuple[Path, Path]],
) -> None:
    _run_dir, art = exported(task)
    report = json.loads((art / "export-report.json").read_text())
    dockerfile = (art / "Dockerfile").read_text()
    dropped = [c for c in report["commands"] if c["decision"] == "dropped"]
    reasons = " | ".join(c["reason"] for c in dropped)
    assert "failed" in reasons and "read-only" in reasons
    # Undone work is reported: whole commands dropped, or the undone part of a kept one.
    every = " | ".join(c["reason"] for c in report["commands"])
    assert "undone" in every or "replaced" in every
    for c in dropped:
        if len(c["command"]) > 8 and "\n" not in c["command"]:
            assert c["command"] not in dockerfile, c
    md = (art / "export-report.md").read_text()
    assert "## Dropped" in md and "failed (exit" in md


@pytest.mark.parametrize("task", SLOPPY_TASKS[:1])
def test_export_twice_is_byte_identical(
    task: str, task_run: Callable[[str, str], Path], wheelhouse: Path | None,
    ca_bundle: Path | None, tmp_path: Path, engine: Engine,
) -> None:
    run_dir = task_run(task, "sloppy.sh")
    settings = Settings.load(artifacts_dir=tmp_path, ca_bundle=ca_bundle, wheelhouse=wheelhouse)
    a = export_run(ExportOptions(run_dir, out_dir=tmp_path / "a"), settings, engine).artifact_dir
    b = export_run(ExportOptions(run_dir, out_dir=tmp_path / "b"), settings, engine).artifact_dir
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    for rel in files:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel


@pytest.mark.parametrize("task", SLOPPY_TASKS[:1])
def test_an_export_starts_one_container_of_the_live_image(
    task: str, task_run: Callable[[str, str], Path], wheelhouse: Path | None,
    ca_bundle: Path | None, tmp_path: Path, engine: DockerEngine,
) -> None:
    """The live facts and an --include are read from one container (export/live_facts.py
    LiveImage), removed when the export ends."""
    run_dir = task_run(task, "sloppy.sh")
    settings = Settings.load(artifacts_dir=tmp_path, ca_bundle=ca_bundle, wheelhouse=wheelhouse)
    before = engine.containers_started
    art = export_run(ExportOptions(run_dir, out_dir=tmp_path / "a",
                                   include=("/etc/debian_version",)), settings, engine)
    assert engine.containers_started - before == 1
    assert (art.artifact_dir / "include" / "etc" / "debian_version").is_file()
    live = _live_image(run_dir)
    assert not [c for c in engine.managed_containers("synth.temporary=1")
                if c.attrs["Config"]["Image"] == live]  # removed at the end


@pytest.mark.parametrize("task", SLOPPY_TASKS[:1])
def test_ca_bundle_is_in_no_layer(
    task: str, engine: object, rebuilt: Callable[[str], str],
    marked_ca: tuple[Path | None, bytes], tmp_path: Path,
) -> None:
    if marked_ca[0] is None:
        pytest.skip("no CA bundle on this machine: nothing to leak")
    tag = rebuilt(task)
    hits = layers_containing(engine, tag, marked_ca[1], tmp_path)
    assert hits == []


def test_a_tools_own_environment_is_left_out_whole_and_the_rest_rebuilds(
    task_run: Callable[[str, str], Path], wheelhouse: Path | None, ca_bundle: Path | None,
    tmp_path: Path, engine: DockerEngine,
) -> None:
    """``--without prefix:/opt/poetry`` on poetry-project's run (shared with the tasks'
    tests): the venv good.sh pip-installed poetry into goes, with its lock and the warning
    about a second interpreter; the project's .venv alone rebuilds and passes. The plan and
    README say how a poetry user makes the .venv, with the groups good.sh chose."""
    from synth.distill.leave_out import Part
    from synth.verify.command import VerifyOptions, verify

    run_dir = task_run("poetry-project", "good.sh")
    settings = Settings.load(artifacts_dir=tmp_path, ca_bundle=ca_bundle, wheelhouse=wheelhouse)
    art = export_run(ExportOptions(run_dir, out_dir=tmp_path / "a",
                                   without=(Part.parse("prefix:/opt/poetry"),)),
                     settings, engine).artifact_dir
    docker = (art / "Dockerfile").read_text().splitlines()
    assert docker[1].endswith(" --without prefix:/opt/poetry"), docker[1]  # # Regenerate:
    assert not [line for line in docker[2:] if "/opt/poetry" in line]
    # How a poetry user makes the .venv: the groups good.sh chose (docs/export.md).
    envs = json.loads((art / "plan.json").read_text())["plan"]["envs"]
    [project] = [e["project_install"] for e in envs if e["prefix"] == "/workspace/.venv"]
    assert project["command"] == ["poetry", "install", "--with", "report", "--without", "dev"]
    assert "`poetry install --with report --without dev`" in (art / "README.md").read_text()
    assert not (art / "requirements-opt-poetry.lock").exists()
    warnings = json.loads((art / "export-report.json").read_text())["warnings"]
    assert not [w for w in warnings if "second interpreter" in w], warnings
    assert warnings[-1].endswith("left out on request (synth export --without / synth "
                                 "minimize): prefix:/opt/poetry")
    report = json.loads((art / "export-report.json").read_text())
    assert report["command"].endswith(" --without prefix:/opt/poetry"), report["command"]
    poetry = [c for c in report["commands"] if "/opt/poetry" in c["command"]]
    assert poetry and not [c for c in poetry if c["decision"] == "kept"], poetry
    outcome = verify(VerifyOptions(target=str(art), rebuild=True, out_dir=tmp_path / "verify"),
                     settings, engine, say=lambda _m: None)
    try:
        assert outcome.passed, outcome.document["reports"]
        assert outcome.build is not None
        with engine.container(ContainerSpec(image=outcome.build.image, network=False)) as c:
            listed = c.exec(["ls", "-A", "/opt"])
        assert listed.ok and listed.output.strip() == "", listed.output  # no poetry venv
    finally:
        if outcome.build is not None:
            engine.remove_image(outcome.build.image)
