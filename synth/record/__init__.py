"""Audited agent sessions: ``synth run``.

A session container from the task's base image gets the repository at ``/workspace``; an
agent works in it while a bash hook records every command; synth then captures the final
state and commits the container as ``synth-live/<task>:<run-id>``. The run directory
format is documented in ``docs/formats.md``.

The session is :func:`synth.record.runner.run_session` (its agents in
:mod:`synth.record.agents`); the run directory's lookup and description is
:mod:`synth.record.rundir`. This package re-exports nothing, so a reader of run
directories (``synth diff``, export) does not load the session machinery.
"""
