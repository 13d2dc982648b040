"""The command line: each command builds one options object and calls one function.

:mod:`synth.cli.app` is the frame (the app, shared options, :func:`main`); the commands are
registered by the modules beside it, imported here: ``run`` (run, runs), ``export``,
``verify`` (verify, demo), ``minimize``, ``compare`` (diff), ``bench``, ``tasks`` (task check,
task import-reb), ``reb`` (reb assets fetch, reb score) and ``machine`` (doctor, gc,
base bootstrap). ``--help`` lists them in the
order of the data flow (:data:`HELP_ORDER`).
"""

from synth.cli import bench, compare, export, machine, minimize, reb, run, tasks, verify
from synth.cli.app import app, main

#: The order ``synth --help`` lists commands and command groups in.
HELP_ORDER = ("run", "runs", "export", "verify", "minimize", "diff", "demo", "bench", "task",
              "reb", "base", "doctor", "gc", "version")


def _help_rank(name: str | None) -> int:
    return HELP_ORDER.index(name) if name in HELP_ORDER else len(HELP_ORDER)


app.registered_commands.sort(
    key=lambda c: _help_rank(c.name or (c.callback.__name__ if c.callback else None)))
app.registered_groups.sort(key=lambda g: _help_rank(g.name))

__all__ = ["app", "bench", "compare", "export", "machine", "main", "minimize", "reb", "run",
           "tasks", "verify"]
