"""The agent the command line asks for (``synth run --agent``), with its options checked."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from synth.errors import UsageError
from synth.record.agents import Agent, ExecAgent, ReplayAgent, ShellAgent, parse_mount
from synth.record.auto.agent import DEFAULT_BUDGET, AutoAgent

#: The kinds ``--agent`` takes.
AGENT_KINDS = ("replay", "exec", "shell", "auto")


def make_agent(
    kind: str,
    *,
    script: Path | None = None,
    stop_on_error: bool = False,
    command: Sequence[str] = (),
    mounts: Sequence[str] = (),
    env_names: Sequence[str] = (),
    quiet: bool = False,
    repair_budget: int = DEFAULT_BUDGET,
) -> Agent:
    """The agent the command line asks for, with its options checked."""
    if kind != "exec" and (command or mounts or env_names):
        raise UsageError("--agent-mount, --agent-env and a trailing command belong to "
                         "`--agent exec`.", option="--agent-mount")
    if kind == "replay":
        if script is None:
            raise UsageError("`--agent replay` needs --script FILE.")
        if not script.is_file():
            raise UsageError(f"Replay script {script} does not exist.")
        return ReplayAgent(script.resolve(), stop_on_error=stop_on_error)
    if kind != "auto" and repair_budget != DEFAULT_BUDGET:
        raise UsageError("--repair-budget belongs to `--agent auto`.", option="--repair-budget")
    if repair_budget < 0:
        raise UsageError("--repair-budget must be 0 or more.", option="--repair-budget")
    if script is not None or stop_on_error:
        raise UsageError("--script and --stop-on-error belong to `--agent replay`.",
                         option="--script")
    if kind == "exec":
        if not command:
            raise UsageError("`--agent exec` needs the command after `--`: "
                             "synth run TASK --agent exec -- CMD ARGS…")
        return ExecAgent(list(command), [parse_mount(m) for m in mounts], list(env_names),
                         echo=not quiet)
    if kind == "shell":
        return ShellAgent()
    if kind == "auto":
        return AutoAgent(budget=repair_budget)
    raise UsageError(f"Unknown agent {kind!r}: use replay, exec, shell or auto.")
