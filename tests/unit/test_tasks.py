"""The bundled tasks under tasks/: valid task files, a README naming the trap, transcripts."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from synth.formats.task import discover_tasks, load_task
from synth.record.transcript import split_statements

TASKS_DIR = Path(__file__).resolve().parents[2] / "tasks"
TASK_DIRS = discover_tasks(TASKS_DIR)
TRANSCRIPTS = ("good.sh", "sloppy.sh", "liar.sh")
#: (task, transcript): the three every task has, and the ones some add (a failure of their
#: own: optional-extras/patched.sh, mixed-frameworks/replaced.sh, …).
ALL_TRANSCRIPTS = sorted({(d, n) for d in TASK_DIRS for n in TRANSCRIPTS}
                         | {(d, p.name) for d in TASK_DIRS for p in (d / "agents").glob("*.sh")})
#: The failure causes every corpus must carry (issue: bundled research tasks).
REQUIRED = {"numpy-ext", "torch-op", "undeclared-dep", "mixed-frameworks", "conda-only"}
CLAIM_FIELDS = {"python_path", "python_version", "torch_version", "cuda_available",
                "gpu_count", "ddp_expected_ok", "env_tool", "env_name", "notes"}
_CLAIMS_WRITE = re.compile(r"^cat\s+>\s*/synth/claims\.json\s+<<-?\s*['\"]?(\w+)['\"]?\s*\n")


def written_claims(script: Path) -> dict[str, Any] | None:
    """The JSON a transcript writes to /synth/claims.json with a here-document (last one)."""
    found = None
    for statement in split_statements(script.read_text(encoding="utf-8")):
        match = _CLAIMS_WRITE.match(statement)
        if match:
            body = statement[match.end():].rsplit("\n", 1)[0]
            found = json.loads(body)
    return found


def test_the_corpus_holds_every_failure_cause() -> None:
    assert {d.name for d in TASK_DIRS} >= REQUIRED


@pytest.mark.parametrize("task_dir", TASK_DIRS, ids=lambda d: d.name)
def test_task_file_is_valid_and_self_contained(task_dir: Path) -> None:
    task = load_task(task_dir)
    assert task.name == task_dir.name
    assert task.repo_path is not None and task.repo_path.is_relative_to(task_dir)
    assert task.probes.cpu is not None, "every bundled task runs on CPU"
    assert task.base_image == "synth/python:bookworm"
    for level in ("C3", "C4"):
        probe = task.probes.gpu if level == "C3" else task.probes.ddp
        assert (probe is None) == (level in task.not_applicable)


@pytest.mark.parametrize("task_dir", TASK_DIRS, ids=lambda d: d.name)
def test_readme_names_the_trap(task_dir: Path) -> None:
    readme = (task_dir / "README.md").read_text(encoding="utf-8")
    assert re.search(r"\bthe trap\b", readme, re.IGNORECASE), "README must name its trap"
    assert "build outputs" in readme.lower() or "builds nothing" in readme.lower()


@pytest.mark.parametrize(("task_dir", "name"), ALL_TRANSCRIPTS,
                         ids=[f"{d.name}/{n}" for d, n in ALL_TRANSCRIPTS])
def test_transcript_is_valid_bash(task_dir: Path, name: str) -> None:
    script = task_dir / "agents" / name
    assert script.is_file()
    bash = shutil.which("bash")
    assert bash is not None
    result = subprocess.run([bash, "-n", str(script)], capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0, result.stderr
    statements = split_statements(script.read_text(encoding="utf-8"))
    assert statements
    # agents/ never enters the container: a transcript cannot read from it
    assert not any("agents/" in s for s in statements)


@pytest.mark.parametrize(("task_dir", "name"), ALL_TRANSCRIPTS,
                         ids=[f"{d.name}/{n}" for d, n in ALL_TRANSCRIPTS])
def test_claims_files_match_what_the_transcript_writes(task_dir: Path, name: str) -> None:
    script = task_dir / "agents" / name
    claims = written_claims(script)
    if name == "liar.sh":
        assert claims is not None, "liar.sh must write /synth/claims.json"
    if claims is None:
        return
    assert set(claims) >= CLAIM_FIELDS
    # The tasks' convention (tasks/README.md); a uv or poetry project's environment is its
    # own .venv, a conda task's its prefix.
    env = {"uv-project": "/workspace/.venv", "poetry-project": "/workspace/.venv",
           "conda-env": "/opt/conda/envs/research"}.get(task_dir.name, "/opt/venv")
    assert claims["python_path"] == f"{env}/bin/python" or name == "liar.sh"
    stored = task_dir / "agents" / name.replace(".sh", ".claims.json")
    if name == "liar.sh" or stored.exists():
        assert json.loads(stored.read_text(encoding="utf-8")) == claims


@pytest.mark.parametrize("task_dir", TASK_DIRS, ids=lambda d: d.name)
def test_liar_claims_more_than_it_made(task_dir: Path) -> None:
    claims = written_claims(task_dir / "agents" / "liar.sh")
    assert claims is not None
    # every bundled task runs on CPU only here: a liar claims a GPU it never had
    assert claims["cuda_available"] is True and claims["gpu_count"] >= 1


@pytest.mark.parametrize("task_dir", TASK_DIRS, ids=lambda d: d.name)
def test_probe_scripts_exist_in_the_repo(task_dir: Path) -> None:
    task = load_task(task_dir)
    assert task.repo_path is not None
    for probe in (task.probes.cpu, task.probes.gpu, task.probes.ddp):
        if probe is None:
            continue
        for word in probe.command.split():
            if word.endswith(".py"):  # relative to the workdir, or /workspace's own
                rel = word.removeprefix("/workspace/")
                assert (task.repo_path / rel).is_file(), f"{probe.command}: no {word}"
