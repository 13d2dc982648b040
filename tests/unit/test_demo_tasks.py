"""`./dev demo` (`synth demo`) finds its bundled task wherever the CLI module lives: in a
checkout, or in an installed wheel (the unit tests run on one too: ./dev test)."""

from __future__ import annotations

from synth.cli.demo import TASKS_DIR, DemoOptions
from synth.formats.task import load_task


def test_the_demo_task_is_found_and_has_its_transcript() -> None:
    opts = DemoOptions()
    task = load_task(opts.task, TASKS_DIR)
    assert task.name == opts.task
    assert (task.agents_dir / opts.script).is_file()
