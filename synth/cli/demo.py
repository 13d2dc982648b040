"""``synth demo``: the whole pipeline on a bundled task, on a fresh machine.

Prepares what it needs (the task's base image, made with debootstrap when missing; the CA
bundle comes from ``--ca-bundle`` / ``SYNTH_CA_BUNDLE``; a task's ``[conda_channel]``, made
and served: :mod:`synth.record.task_channel`), runs the task's transcript with the replay
agent, then ``synth verify RUN --rebuild``: export, rebuild from scratch, the pyramid on the
rebuilt and the live image side by side.
"""

from __future__ import annotations

from dataclasses import dataclass

from synth.config import Settings
from synth.engine.base import Engine
from synth.engine.base_images import ensure_base_image
from synth.errors import RunError, UsageError
from synth.formats.task import load_task
from synth.record.agent_choice import make_agent
from synth.record.runner import RunOptions, run_session
from synth.record.task_channel import served_transcript
from synth.ui import console
from synth.util.bundled import bundled_dir
from synth.verify.command import Say, VerifyOptions, VerifyOutcome, verify

#: The bundled tasks: ``synth/tasks`` in an installed wheel, else the checkout's ``tasks/``.
TASKS_DIR = bundled_dir("tasks")


@dataclass(frozen=True)
class DemoOptions:
    task: str = "numpy-ext"
    script: str = "good.sh"
    timeout: float = 1800


def run_demo(opts: DemoOptions, settings: Settings, engine: Engine,
             say: Say = console.say) -> VerifyOutcome:
    """The demo on ``engine``: base image, audited run, then ``verify --rebuild``."""
    task = load_task(opts.task, TASKS_DIR)
    script = task.agents_dir / opts.script
    if not script.is_file():
        raise UsageError(f"Task {task.name} has no transcript {opts.script} in "
                         f"{task.agents_dir}.")
    say(f"[1/3] base image {task.base_image}")
    ensure_base_image(engine, task.base_image, say=say)
    if settings.ca_bundle is None:
        say("No CA bundle given (SYNTH_CA_BUNDLE); fine without an intercepting proxy.")
    if task.conda_channel is not None:
        say(f"    making and serving the task's conda channel ({task.conda_channel.script})")
    workdir = settings.artifacts_dir / "demo" / task.name
    with served_transcript(task, script, engine, workdir) as transcript:
        say(f"[2/3] audited run: {task.name} with {opts.script} (replay agent)")
        agent = make_agent("replay", script=transcript)
        result = run_session(RunOptions(task=task, agent=agent, timeout=opts.timeout),
                             settings, engine, say=say)
        if not result.ok:
            raise RunError(f"The demo run ended {result.status} (agent exit "
                           f"{result.agent_exit_code}); see {result.run_dir}/logs/agent.log.",
                           run_dir=result.run_dir)
        say(f"[3/3] export, rebuild from scratch, verify: {result.run_dir}")
        return verify(VerifyOptions(target=str(result.run_dir), rebuild=True), settings,
                      engine, say)
