"""Recording: ``synth run`` and ``synth runs list|show``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from synth.cli.app import (
    ArtifactsOpt,
    CaBundleOpt,
    CpusOpt,
    DiskOpt,
    JsonOpt,
    MemoryOpt,
    NoDiskCheckOpt,
    PidsOpt,
    app,
    limits_of,
    open_engine,
    prune_older_runs,
    runs_app,
    settings_of,
)
from synth.config import Settings
from synth.errors import (
    EXIT_AGENT_FAILED,
    EXIT_AGENT_TIMEOUT,
    EXIT_INTERRUPTED,
    DiskFullError,
    RunError,
)
from synth.ui import console

if TYPE_CHECKING:  # the command imports the runner when it runs: `synth --help` stays fast
    from synth.record.runner import RunOptions, RunResult

#: Seconds the engine may take to say an image's size in `runs list|show` (sizes are extras).
SIZES_TIMEOUT = 5
#: ``--repair-budget``'s default (synth.record.auto.agent.DEFAULT_BUDGET, which a test
#: holds equal; the session machinery is not imported to draw the command line).
DEFAULT_REPAIR_BUDGET = 8


@app.command()
def run(
    task: Annotated[str, typer.Argument(
        metavar="TASK", help="A task directory or a task name under ./tasks.")],
    command: Annotated[Optional[list[str]], typer.Argument(  # noqa: UP045
        metavar="COMMAND", help="With --agent exec: the agent's command, after `--`.")] = None,
    agent: Annotated[str, typer.Option(
        help="replay, exec, shell, or auto (synth's own rule-based setup agent).")] = "replay",
    script: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        help="Replay: the setup script (one `bash -c` per top-level statement).")] = None,
    stop_on_error: Annotated[bool, typer.Option(
        "--stop-on-error", help="Replay: stop at the first failure.")] = False,
    agent_mount: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        help="Exec: HOST:CONTAINER mounted read-only (the agent's tooling).")] = None,
    agent_env: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        help="Exec: a variable passed from this environment; its value is masked as ***.")]
    = None,
    repair_budget: Annotated[int, typer.Option(
        help="Auto: repairs the agent may make after a failure.")] = DEFAULT_REPAIR_BUDGET,
    timeout: Annotated[float, typer.Option(help="Seconds before the agent is killed.")] = 3600,
    quiet: Annotated[bool, typer.Option(
        "--quiet", help="Exec: do not stream the agent's output to the terminal "
        "(logs/agent.log has it either way).")] = False,
    keep: Annotated[bool, typer.Option("--keep", help="Keep the session container.")] = False,
    trace_exec: Annotated[bool, typer.Option(
        "--trace-exec",
        help="Also record every exec with the host's strace (mounted, never installed).")]
    = False,
    wheelhouse: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        help="Wheel folder mounted read-only at /synth/wheelhouse (env SYNTH_WHEELHOUSE).")]
    = None,
    memory: MemoryOpt = None,
    pids: PidsOpt = None,
    cpus: CpusOpt = None,
    disk: DiskOpt = None,
    ca_bundle: CaBundleOpt = None,
    artifacts: ArtifactsOpt = None,
    no_disk_check: NoDiskCheckOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Run an agent in an audited session container and record what it did."""
    from synth.formats.task import load_task
    from synth.record.agent_choice import make_agent
    from synth.record.runner import RunOptions

    opts = RunOptions(
        task=load_task(task, tasks_root=Path("tasks")),
        agent=make_agent(agent, script=script, stop_on_error=stop_on_error,
                         command=command or (), mounts=agent_mount or (),
                         env_names=agent_env or (), quiet=quiet,
                         repair_budget=repair_budget),
        timeout=timeout, keep=keep, trace_exec=trace_exec,
        limits=limits_of(memory, pids, cpus, disk),
    )
    settings = settings_of(artifacts, ca_bundle, wheelhouse, no_disk_check)
    result = _run(opts, settings)
    if json_out:
        console.print_json(result.to_json())
    if not result.ok:
        raise typer.Exit(DiskFullError.exit_code if result.disk_full
                         else _RUN_EXIT.get(result.status, RunError.exit_code))


def _run(opts: RunOptions, settings: Settings) -> RunResult:
    """The session, then each task's images beyond its latest few pruned (SYNTH_KEEP_RUNS)."""
    from synth.record.agents import ReplayAgent
    from synth.record.runner import run_session
    from synth.record.task_channel import refuse_unserved

    if isinstance(opts.agent, ReplayAgent):
        refuse_unserved(opts.task, opts.agent.script)
    engine = open_engine()
    result = run_session(opts, settings, engine, say=console.say)
    if result.live_image:
        prune_older_runs(engine, settings)
    return result


#: `synth run`'s exit code per run status other than succeeded (errors/exit codes).
_RUN_EXIT = {"failed": EXIT_AGENT_FAILED, "timeout": EXIT_AGENT_TIMEOUT,
             "interrupted": EXIT_INTERRUPTED, "error": RunError.exit_code}


@runs_app.command("list")
def runs_list(
    task: Annotated[Optional[str], typer.Option(help="Only this task's runs.")] = None,  # noqa: UP045
    artifacts: ArtifactsOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """List recorded runs, oldest first: agent, claims after C5, verify verdicts, image sizes."""
    from synth.record import runs_view

    listing = runs_view.list_runs_view(Settings.load(artifacts_dir=artifacts), task,
                                       warn=console.warn,
                                       engine=open_engine(SIZES_TIMEOUT, required=False))
    if json_out:
        console.print_json(listing.to_json())
        return
    for r in listing.rows:
        console.show(runs_view.list_line(r), newlines=False)  # one run, one line


@runs_app.command("show")
def runs_show(
    run_ref: Annotated[Optional[str], typer.Argument(  # noqa: UP045
        metavar="RUN", help="Run dir, run id, <task>/<run-id> or `latest` (default).")] = None,
    artifacts: ArtifactsOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Show one run: outcome, violations, claims, and what it installed."""
    from synth.record import runs_view
    from synth.record.rundir import format_run

    shown = runs_view.show_run_view(Settings.load(artifacts_dir=artifacts), run_ref,
                                    engine=open_engine(SIZES_TIMEOUT, required=False))
    if json_out:
        console.print_json(shown.to_json())
    else:
        console.show("\n".join([format_run(shown.info), *runs_view.show_lines(shown.row)]))
