"""Environments made by tools other than pip, end to end on a real engine: ``uv sync``,
``uv add`` + ``uv run``, ``poetry install``, ``pipenv install -e .`` and ``pdm install`` (run
by ``uvx``) of a tiny pyproject package (its own .venv, the project itself installed
editable, INSTALLER ``uv`` / ``Poetry X`` / ``pip`` / ``pdm``),
``pip-compile`` + ``pip-sync``, and ``pip install -e ".[toml]"`` with pip's isolated build
(its backend pinned at the version that built it live), run → export → verify --rebuild
--live. The rebuilt image must hold the same distributions at the same versions, the
project installed (the CPU probe runs from ``/``, so the working folder cannot stand in for
an install), and verify must exit 0 with no fidelity failure."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from replayed import replay_and_verify

from synth.config import Settings
from synth.formats.task import load_task

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TASK = Path(__file__).resolve().parent.parent / "data" / "env-tools"


@pytest.fixture(scope="module")
def images(engine: Any) -> Iterator[list[str]]:
    made: list[str] = []
    yield made
    for ref in made:
        engine.remove_image(ref)


@pytest.mark.parametrize("script", ["uv-sync.sh", "uv-add.sh", "poetry.sh", "pipenv.sh",
                                    "pdm.sh", "pip-tools.sh", "pip-editable-extra.sh"])
def test_a_tool_made_environment_rebuilds_the_same(
        script: str, engine: Any, ca_bundle: Path | None, wheelhouse: Path | None,
        tmp_path: Path, images: list[str]) -> None:
    settings = Settings.load(artifacts_dir=tmp_path, ca_bundle=ca_bundle, wheelhouse=wheelhouse)
    task = load_task(TASK)
    result, outcome = replay_and_verify(task, task.agents_dir / script, settings, engine,
                                        tmp_path / "verify", images)
    if script == "uv-add.sh":  # uv add edits pyproject.toml: its own doing, no violation
        run = json.loads((result.run_dir / "run.json").read_text())
        assert run["violations"] == [], run["violations"]
        assert [(c["path"], c["command"]) for c in run["tool_changes"]] == [
            ("pyproject.toml", "uv add packaging==25.0")], run.get("tool_changes")
    doc = outcome.document
    rebuilt = {r["level"]: r for r in doc["reports"]["rebuilt"]["levels"]}
    live = {r["level"]: r for r in doc["reports"]["live"]["levels"]}
    assert live["C1"]["status"] == "pass", live["C1"]
    assert rebuilt["C1"]["status"] == "pass", rebuilt["C1"]
    assert doc["fidelity"]["reaches_live_level"] is True, "\n".join(doc["fidelity"]["failures"])
    assert not doc["fidelity"].get("failures"), doc["fidelity"]
    assert doc["fingerprint"]["status"] == "compared"
    assert doc["fingerprint"]["packages_equal"] is True, doc["fingerprint"]["summary"]
    assert outcome.exit_code == 0
    dockerfile = (Path(doc["target"]["artifact_dir"]) / "Dockerfile").read_text()
    if script in ("uv-sync.sh", "uv-add.sh"):
        # uv made the .venv (no pip): the sync makes it again, no venv step adds a pip, and
        # the rebuilt venv is uv's (the fingerprint's venv section finds nothing to explain).
        assert "venv /workspace/.venv" not in dockerfile and "--python python3" in dockerfile
        venv_diffs = [d for d in doc["fingerprint"]["differences"] if d["section"] == "venv"]
        assert all("made by uv" in (d["explained"] or "") for d in venv_diffs), venv_diffs
    # A uv project's .venv is installed as uv made it: from its own uv.lock, then checked
    # against synth's lock by the build itself.
    synced = "uv sync --frozen" in dockerfile
    assert synced == (script in ("uv-sync.sh", "uv-add.sh")), dockerfile
    # The project is installed again: by the audited pip command, or, where a tool installed
    # it with no pip command of its own, from the final state.
    audited = script in ("pip-editable-extra.sh", "pip-tools.sh")
    made_by = "audit " if audited else "final state"
    assert f"-> envtools==0.1.0 ({made_by}" in dockerfile
    # The tool's own lock (uv.lock, poetry.lock, Pipfile.lock) is carried in source/ and
    # agrees with what the tool installed.
    own = {"uv-sync.sh": "uv.lock", "uv-add.sh": "uv.lock", "poetry.sh": "poetry.lock",
           "pipenv.sh": "Pipfile.lock", "pdm.sh": "pdm.lock"}
    if script in own:
        assert (Path(doc["target"]["artifact_dir"]) / "source" / own[script]).is_file()
    report = json.loads((Path(doc["target"]["artifact_dir"]) / "export-report.json").read_text())
    assert not [w for w in report["warnings"] if "disagrees" in w], report["warnings"]
