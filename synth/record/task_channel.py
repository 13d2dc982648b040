"""A task's own conda channel: made in its base image, served to the session and the rebuild.

No conda channel is reachable from the machines synth is made and tested on, so a task whose
agent installs conda packages carries the channel's recipe: ``[conda_channel] script =
"channel/make_channel.py"`` names a script of the task folder (standard library only) that
writes a channel into the folder its one argument names. :func:`served_transcript` runs
it under the task's base image's ``python3`` (no network), copies the channel out, serves
it at the engine's host address (where the session's container and the artifact's build
both reach it) while the block runs, and yields the transcript with ``@CONDA_CHANNEL@``
replaced by the channel's address, written beside the channel. The script must make the
same bytes on every run: the artifact's conda lock names each archive's sha256.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from synth.engine.base import ContainerSpec, Engine
from synth.engine.file_server import serve_folder
from synth.errors import RunError, TaskError, UsageError
from synth.formats.task import Task

#: What a transcript writes where the channel's address goes.
PLACEHOLDER = "@CONDA_CHANNEL@"
#: Where the script writes the channel in its container.
_CHANNEL_IN_CONTAINER = "/tmp/synth-conda-channel"


@contextmanager
def served_transcript(task: Task, script: Path, engine: Engine,
                      workdir: Path) -> Iterator[Path]:
    """``script`` as it runs for ``task``: itself, or, where the task has a conda channel,
    a copy in ``workdir`` naming the channel, served until the block ends."""
    if task.conda_channel is None:
        yield script
        return
    channel = make_channel(task, engine, workdir)
    with serve_folder(channel, engine.host_address()) as url:
        text = script.read_text(encoding="utf-8")
        named = workdir / script.name
        named.write_text(text.replace(PLACEHOLDER, url), encoding="utf-8")
        yield named


def refuse_unserved(task: Task, script: Path) -> None:
    """A transcript that names the task's channel, run where nothing serves it (``synth
    run``: the channel would be gone before a later rebuild): a UsageError saying where it
    runs."""
    try:
        text = script.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return  # the replay agent reports an unreadable script itself
    if task.conda_channel is not None and PLACEHOLDER in text:
        raise UsageError(
            f"{script} installs from task {task.name}'s own conda channel ({PLACEHOLDER}), "
            "which `synth demo` makes and serves for the run and the rebuild.",
            hint=f"synth demo --task {task.name} --script {script.name}", option="--script")


def make_channel(task: Task, engine: Engine, workdir: Path) -> Path:
    """Run the task's channel script in its base image; the channel, at
    ``workdir/synth-conda-channel``."""
    assert task.conda_channel is not None
    script = (task.task_dir / task.conda_channel.script).resolve()
    if not script.is_file() or not script.is_relative_to(task.task_dir.resolve()):
        raise TaskError(f"{task.task_file}: [conda_channel] script "
                        f"{task.conda_channel.script!r} is not a file of the task folder.",
                        path=task.task_file, field="conda_channel.script")
    spec = ContainerSpec(image=task.base_image, network=False,
                         labels={"synth.kind": "conda-channel"})
    with engine.container(spec) as box:
        box.copy_in(script, "/tmp/synth-channel-script")
        made = box.exec(["python3", f"/tmp/synth-channel-script/{script.name}",
                         _CHANNEL_IN_CONTAINER], timeout=900)
        if not made.ok:
            raise RunError(f"The conda channel script of task {task.name} "
                           f"({task.conda_channel.script}) exited {made.exit_code} in "
                           f"{task.base_image}:\n{made.output[-2000:]}")
        channel = workdir / Path(_CHANNEL_IN_CONTAINER).name
        shutil.rmtree(channel, ignore_errors=True)  # an earlier demo's
        workdir.mkdir(parents=True, exist_ok=True)
        box.copy_out(_CHANNEL_IN_CONTAINER, workdir)
    return channel
