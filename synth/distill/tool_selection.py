"""What a poetry, pdm or pipenv user runs in ``source/`` to install the environment the run
installed with that tool (pure): the tool's own install command with the extras and groups
the run chose (``poetry install --extras ffi --with docs``, ``pdm sync --group plot``,
``pipenv sync --dev``).

The artifact does not run it: it installs the final state from synth's hashed lock (no tool
needed). The command is recorded in ``plan.json`` (``project_install`` of the environment)
and printed in the artifact's README, for a reader who rebuilds it with the tool from the
project's own lock file (docs/export.md, *Environment tools*). A uv project's selection is
synth.distill.uv_project's.

The selection is that of the last ``install``/``sync`` of the tool in the project: poetry
removes the extras a later install does not name, and none of these tools' ``add``,
``remove``, ``update`` or ``run`` chooses another (where none ran, the tool's defaults).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from msgspec.structs import replace

from synth.formats.plan import ProjectInstall, PythonEnvPlan

#: Each tool's verbs that install a selection, and the command a reader runs.
_READER = {"poetry": ("poetry", "install"), "pdm": ("pdm", "sync"),
           "pipenv": ("pipenv", "sync")}
_INSTALLING = frozenset({"install", "sync"})
#: Options choosing what is installed, with a value: the name a reader's command uses.
_VALUED = {
    "poetry": {"--extras": "--extras", "-E": "--extras", "--with": "--with",
               "--without": "--without", "--only": "--only"},
    "pdm": {"--group": "--group", "-G": "--group", "--without": "--without"},
    "pipenv": {"--categories": "--categories"},
}
#: Options choosing what is installed, without a value: the name a reader's command uses.
_FLAGS = {
    "poetry": {"--all-extras": "--all-extras", "--only-root": "--only-root",
               "--no-root": "--no-root", "--all-groups": "--all-groups"},
    "pdm": {"--prod": "--prod", "--production": "--prod", "--dev": "--dev", "-d": "--dev",
            "--no-default": "--no-default", "--no-self": "--no-self"},
    "pipenv": {"--dev": "--dev", "-d": "--dev"},
}
#: Other options that take a value (skipped with it).
_OTHER_VALUED = {
    "poetry": frozenset({"-C", "--directory", "-P", "--project"}),
    "pdm": frozenset({"-p", "--project", "-L", "--lockfile", "--venv", "-k", "--skip"}),
    "pipenv": frozenset({"--python", "-i", "--index", "--extra-index-url", "-r",
                         "--requirements"}),
}


def selection(tool: str, args: Sequence[str]) -> tuple[str, ...] | None:
    """The options of ``args`` (the words after the tool's program) that choose what an
    ``install``/``sync`` of ``tool`` installs, as a reader's command writes them (long
    names, one value each, in order, without repeats; pipenv's categories in one option);
    None where ``args`` is no such command, or one that chooses nothing: ``pipenv install
    PKG`` adds a package, and an earlier install's selection stands."""
    valued, flags = _VALUED.get(tool), _FLAGS.get(tool)
    if (valued is None or flags is None or not args or args[0] not in _INSTALLING
            or "--dry-run" in args):
        return None
    items: list[tuple[str, ...]] = []
    positional = False
    i = 1
    while i < len(args):
        word = args[i]
        name, eq, value = word.partition("=")
        if not word.startswith("-"):
            positional = True
        elif word[:2] in valued and len(word) > 2 and not word.startswith("--"):
            items += [(valued[word[:2]], v) for v in _split(word[2:])]  # -Effi
        elif name in valued:
            if not eq:
                value = args[i + 1] if i + 1 < len(args) else ""
                i += 1
            items += [(valued[name], v) for v in _split(value)]
        elif word in flags:
            items.append((flags[word],))
        elif name in _OTHER_VALUED[tool] and not eq:
            i += 1
        i += 1
    if tool == "pipenv":
        if positional:
            return None
        categories = [v for _o, v in (t for t in items if len(t) == 2)]
        items = [t for t in items if len(t) == 1] + (
            [("--categories", " ".join(dict.fromkeys(categories)))] if categories else [])
    return tuple(w for item in dict.fromkeys(items) for w in item)


def _split(value: str) -> list[str]:
    """``"a b,c"`` (an option's value listing several) as ``["a", "b", "c"]``."""
    return value.replace(",", " ").split()


def _tool_args(tool: str, argv: Sequence[str]) -> list[str]:
    """The words after the tool's program in ``argv`` (``env X=1 poetry …``)."""
    for k, word in enumerate(argv):
        if word.rsplit("/", 1)[-1] == tool:
            return list(argv[k + 1:])
    return []


def reader_command(tool: str, commands: Iterable[Sequence[str]]) -> tuple[str, ...] | None:
    """The command that installs what ``commands`` (the argv of the run's ``tool``
    commands in the project, in order) installed: the reader's command with the last
    install's selection; None for a tool this module does not know."""
    reader = _READER.get(tool)
    if reader is None:
        return None
    chosen: tuple[str, ...] = ()
    for argv in commands:
        found = selection(tool, _tool_args(tool, argv))
        if found is not None:
            chosen = found
    return (*reader, *chosen)


def _inside(cwd: str, project: str) -> bool:
    root = project.rstrip("/")
    return cwd == root or cwd.startswith(root + "/")


def _env_of(tool: str, project: str, envs: Sequence[PythonEnvPlan]) -> int | None:
    """The index of the environment ``tool`` made for ``project``: the project's ``.venv``,
    else a venv in the tool's folder of environments, else the primary one."""
    folder = {"poetry": "/pypoetry/virtualenvs/", "pipenv": "/.local/share/virtualenvs/",
              "pdm": "/pdm/venvs/"}[tool]
    for k, env in enumerate(envs):
        if env.prefix == project.rstrip("/") + "/.venv":
            return k
    for k, env in enumerate(envs):
        if folder in env.prefix:
            return k
    return 0 if envs else None


def with_project_installs(envs: Sequence[PythonEnvPlan], project: str | None,
                          commands: Iterable[tuple[str, str, Sequence[str]]]
                          ) -> list[PythonEnvPlan]:
    """``envs`` with ``project_install`` set on the environment each of poetry, pdm and
    pipenv installed the project into (``commands``: ``(tool, cwd, argv)`` of the run's
    successful project-tool commands, in order; ``project``: the source's folder, None
    where the artifact carries no source)."""
    out = list(envs)
    if project is None:
        return out
    by_tool: dict[str, list[Sequence[str]]] = {}
    for tool, cwd, argv in commands:
        if tool in _READER and _inside(cwd, project):
            by_tool.setdefault(tool, []).append(argv)
    for tool in sorted(by_tool):
        command = reader_command(tool, by_tool[tool])
        k = _env_of(tool, project, out)
        if command is None or k is None or out[k].project_install is not None:
            continue
        out[k] = replace(out[k], project_install=ProjectInstall(
            tool=tool, project=project, command=command))
    return out
