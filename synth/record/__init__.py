"""Audited agent sessions: ``synth run``.

A session container from the task's base image gets the repository at ``/workspace``; an
agent works in it while a bash hook records every command; synth then captures the final
state and commits the container as ``synth-live/<task>:<run-id>``. The run directory
format is documented in ``docs/formats.md``.
"""

from synth.record.agents import ExecAgent, ReplayAgent, ShellAgent
from synth.record.runner import RunOptions, RunResult, run_session

__all__ = ["ExecAgent", "ReplayAgent", "RunOptions", "RunResult", "ShellAgent", "run_session"]
