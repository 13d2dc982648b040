"""What a poetry, pdm or pipenv user runs in ``source/`` to install the environment the run
installed with that tool (pure): the tool's own install command with the extras and groups
the run chose (``poetry install --extras ffi --with docs``, ``pdm sync --group plot``,
``pipenv sync --dev``), and pdm's ``--no-isolation`` where the run built that way.

The artifact does not run it: it installs the final state from synth's hashed lock (no tool
needed). The command is recorded in ``plan.json`` (``project_install`` of the environment)
and printed in the artifact's README, for a reader who rebuilds it with the tool from the
project's own lock file (docs/export.md, *Environment tools*). A uv project's selection is
synth.distill.uv_project's.

Several installs combine as the tools do: what an earlier install put in the environment
stays there (poetry keeps every locked package unless ``--sync``; pdm unless
``--clean-unselected``; pipenv never removes), so the groups are the union of theirs, a
group left out only where every install left it out; poetry's extras are the last
install's (it removes the extras an install does not name). poetry's ``add``, ``remove``
and ``update`` run its installer too, with every non-optional group (``update``: the groups
its ``--with``/``--without``/``--only`` choose) and the project's extras and root left as
they were: a group an earlier install left out is installed then. pdm's and pipenv's
``add``/``remove``/``update`` and every tool's ``run`` choose nothing (where no install ran,
the tool's defaults).
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
            "--no-default": "--no-default", "--no-self": "--no-self",
            # How it builds, not what: the project's build backend must then be installed
            # already, as the run had it.
            "--no-isolation": "--no-isolation"},
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


#: Options after which an install removes what it did not select: the installs before it
#: no longer count.
_RESETS = {"poetry": frozenset({"--sync"}),
           "pdm": frozenset({"--clean-unselected", "--only-keep"}), "pipenv": frozenset()}


def reader_command(tool: str, commands: Iterable[Sequence[str]]) -> tuple[str, ...] | None:
    """The command that installs what ``commands`` (the argv of the run's ``tool``
    commands in the project, in order) installed: the reader's command with the
    selections of the installs combined (the module's docstring); None for a tool this
    module does not know."""
    reader = _READER.get(tool)
    if reader is None:
        return None
    chosen: list[tuple[str, ...]] = []
    for argv in commands:
        args = _tool_args(tool, argv)
        found = selection(tool, args)
        if found is None and tool == "poetry":
            found = _poetry_installer_run(args, chosen[-1] if chosen else ())
        if found is None:
            continue
        if _RESETS[tool].intersection(args) or (tool == "poetry" and args[0] == "sync"):
            chosen = []
        chosen.append(found)
    return (*reader, *combined(tool, chosen))


#: poetry's verbs that run its installer after changing the lock (unless ``--lock``).
_POETRY_INSTALLER_RUNS = frozenset({"add", "remove", "update"})
#: Choices a poetry ``add``/``remove``/``update`` leaves as the last install made them.
_KEPT = ("--extras", "--all-extras", "--no-root", "--only-root")


def _poetry_installer_run(args: Sequence[str], last: tuple[str, ...]) -> tuple[str, ...] | None:
    """The selection of a poetry ``add``, ``remove`` or ``update`` that installs (no
    ``--lock``, no ``--dry-run``): its groups (``add`` and ``remove``: every non-optional
    one, whatever ``--group`` names, which says where the package goes; ``update``: as its
    options choose) with the extras and root of the install before it (``last``)."""
    if not args or args[0] not in _POETRY_INSTALLER_RUNS or {"--lock", "--dry-run"} & set(args):
        return None
    groups: tuple[str, ...] = ()
    if args[0] == "update":
        chosen = selection("poetry", ("install", *args[1:])) or ()
        groups = tuple(w for item in _items("poetry", chosen)
                       if item[0] in ("--with", "--without", "--only") for w in item)
    return groups + tuple(w for item in _items("poetry", last) if item[0] in _KEPT
                          for w in item)


def combined(tool: str, selections: Sequence[tuple[str, ...]]) -> tuple[str, ...]:
    """One selection that installs what ``selections`` (each :func:`selection`'s, in the
    order the installs ran) left in the environment together."""
    if len(selections) < 2:
        return selections[0] if selections else ()
    runs = [_items(tool, s) for s in selections]
    items = {"poetry": _poetry, "pdm": _pdm, "pipenv": _pipenv}[tool](runs)
    return tuple(w for item in dict.fromkeys(items) for w in item)


_Items = list[tuple[str, ...]]


def _items(tool: str, chosen: tuple[str, ...]) -> _Items:
    """``("--with", "a", "--no-root")`` as ``[("--with", "a"), ("--no-root",)]``."""
    valued = set(_VALUED[tool].values())
    out, i = [], 0
    while i < len(chosen):
        width = 2 if chosen[i] in valued else 1
        out.append(chosen[i:i + width])
        i += width
    return out


def _values(items: _Items, option: str) -> list[str]:
    return [t[1] for t in items if t[0] == option and len(t) == 2]


def _union(lists: Iterable[Iterable[str]]) -> list[str]:
    return list(dict.fromkeys(v for values in lists for v in values))


def _in_every(runs: Sequence[_Items], option: str) -> list[str]:
    """The values of ``option`` that every run names (in the first run's order)."""
    return [v for v in _values(runs[0], option) if all(v in _values(r, option) for r in runs)]


def _poetry(runs: Sequence[_Items]) -> _Items:
    """Groups: the union (an ``--only`` run's groups are groups it added), left out only
    where every run left them out; extras: the last run's; ``--no-root``/``--only-root``
    only where every run had it (the project, once installed, stays)."""
    out: _Items
    if all(_values(r, "--only") for r in runs):
        out = [("--only", g) for g in _union(_values(r, "--only") for r in runs)]
    else:
        withs = _union(_values(r, "--with") + _values(r, "--only") for r in runs)
        others = [r for r in runs if not _values(r, "--only")]
        out = [("--with", g) for g in withs]
        out += [("--without", g) for g in _in_every(others, "--without") if g not in withs]
    out += [t for t in runs[-1] if t[0] in ("--extras", "--all-extras")]
    out += [(f,) for f in ("--no-root", "--only-root") if all((f,) in r for r in runs)]
    return out + [("--all-groups",)] * any(("--all-groups",) in r for r in runs)


def _pdm(runs: Sequence[_Items]) -> _Items:
    """A run that selects nothing selected every locked group, so the union is all; else
    the union of ``--group``, dev unless every run had ``--prod``, ``--no-default`` and
    ``--no-self`` only where every run had them, ``--without`` where every run had it."""
    every = [(f,) for f in ("--prod", "--no-default", "--no-self")
             if all((f,) in r for r in runs)]
    if any(not {t[0] for t in r} & {"--group", "--dev", "--prod", "--no-default"}
           for r in runs):
        return [t for t in every if t == ("--no-self",)]
    dev: _Items = [("--dev",)] * (("--prod",) not in every
                                  and any(("--dev",) in r for r in runs))
    groups: _Items = [("--group", g) for g in _union(_values(r, "--group") for r in runs)]
    return groups + dev + every + [("--without", g) for g in _in_every(runs, "--without")]


def _pipenv(runs: Sequence[_Items]) -> _Items:
    """pipenv never removes what an install installed: the union of both."""
    categories = _union(v.split() for r in runs for v in _values(r, "--categories"))
    dev: _Items = [("--dev",)] * any(("--dev",) in r for r in runs)
    return dev + ([("--categories", " ".join(categories))] if categories else [])


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
