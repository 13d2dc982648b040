"""A task's conda channel: a transcript without one runs as it is; a missing script is a
located TaskError before any container starts (the channel made and served for real:
tests/integration/test_conda_rebuild.py, through the shared task runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from synth.errors import TaskError, UsageError
from synth.formats.task import load_task
from synth.record.task_channel import PLACEHOLDER, served_transcript

TASKS = Path(__file__).resolve().parents[2] / "tasks"


class _NoContainers:
    """An engine that must not be asked for anything."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the engine was asked for {name}")


def test_a_task_without_a_channel_runs_its_transcript_as_it_is(tmp_path: Path) -> None:
    task = load_task(TASKS / "numpy-ext")
    script = task.agents_dir / "good.sh"
    with served_transcript(task, script, _NoContainers(), tmp_path) as ran:  # type: ignore[arg-type]
        assert ran == script
    assert list(tmp_path.iterdir()) == []


def test_the_bundled_conda_task_names_its_channel_in_every_transcript() -> None:
    task = load_task(TASKS / "conda-env")
    assert task.conda_channel is not None
    assert (task.task_dir / task.conda_channel.script).is_file()
    for name in ("good.sh", "sloppy.sh", "liar.sh"):
        assert PLACEHOLDER in (task.agents_dir / name).read_text(), name


def test_a_missing_channel_script_is_a_located_task_error(tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    (tmp_path / "task.toml").write_text(
        'name = "t"\nbase_image = "synth/python:bookworm"\n[repo]\npath = "repo"\n'
        '[not_applicable]\nC1 = "-"\nC3 = "-"\nC4 = "-"\n'
        '[conda_channel]\nscript = "channel/none.py"\n')
    task = load_task(tmp_path)
    with pytest.raises(TaskError, match=r"channel/none\.py") as err, served_transcript(
            task, tmp_path / "good.sh", _NoContainers(), tmp_path / "w"):  # type: ignore[arg-type]
        pass
    assert err.value.field == "conda_channel.script"


def test_synth_run_refuses_a_transcript_naming_an_unserved_channel(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = TASKS / "conda-env" / "agents" / "good.sh"
    proc = subprocess.run([sys.executable, "-m", "synth", "run", str(TASKS / "conda-env"),
                           "--script", str(script), "--artifacts", str(tmp_path)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == UsageError.exit_code, proc.stderr
    assert "synth demo --task conda-env --script good.sh" in proc.stderr
    assert not (tmp_path / "runs").exists()
