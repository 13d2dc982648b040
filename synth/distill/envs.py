"""Which Python environments the artifact reproduces, and how each is made and locked.

The final state says what each environment holds; the audited installs say which indexes
and find-links it was filled from, and the audited ``venv`` command how it was made.
"""

from __future__ import annotations

import bisect
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from synth.distill.common import Notes, StepIndex
from synth.distill.conda import conda_env
from synth.distill.load import Distribution, Interpreter, LoadedRun
from synth.distill.managed_python import python3_in
from synth.distill.shell import SimpleCommand
from synth.distill.steps import PipInstall, ProjectTool, VenvCreate
from synth.formats.plan import PythonEnvPlan
from synth.formats.state import DEBIAN_SITE

DEFAULT_INDEX = "https://pypi.org/simple"

Installs = list[tuple[SimpleCommand, PipInstall]]


@dataclass(frozen=True)
class AuditedEnvs:
    """The successful pip installs of each interpreter, and the venvs commands made."""

    installs: Mapping[str, Installs]
    creates: Mapping[str, tuple[SimpleCommand, VenvCreate]]
    #: The in-project ``.venv`` folders a project tool (``uv sync``, ``poetry install``…)
    #: made or synced.
    synced: frozenset[str] = frozenset()
    #: The project tools that made or synced an environment (``poetry``, ``pipenv``…).
    tools: frozenset[str] = frozenset()

    def of(self, interp: Interpreter) -> Installs:
        return list(self.installs.get(interp.path, []))

    def made_by_tool(self, prefix: str) -> bool:
        """Whether an audited project tool made ``prefix``: the project's ``.venv``, or a
        venv in the folder the tool keeps its environments in (poetry's cache, pipenv's)."""
        return prefix in self.synced or any(
            part in prefix for tool, part in _TOOL_VENVS.items() if tool in self.tools)


#: Where project tools make their environments by default, outside the project.
_TOOL_VENVS = {"poetry": "/pypoetry/virtualenvs/", "pipenv": "/.local/share/virtualenvs/",
               "pdm": "/pdm/venvs/"}


def interp_for(hint: str | None, run: LoadedRun) -> Interpreter | None:
    """The interpreter a command's ``python``/``pip`` resolved to."""
    interps = run.interpreters
    if hint is None:
        return next((i for i in interps if i.path == run.primary), None)
    if "/" in hint:
        prefix = posixpath.dirname(posixpath.dirname(hint))
        for i in interps:
            if i.path == hint or (i.kind != "system" and i.prefix == prefix):
                return i
        for i in interps:
            if i.prefix == prefix:
                return i
        return conda_env(prefix, interps)
    system = [i for i in interps if i.kind == "system"]
    system.sort(key=lambda i: (i.prefix != "/usr", i.path))
    return system[0] if system else None


#: INSTALLER values (lower-cased prefixes) of tools that take distributions from a conda
#: channel, not from a Python package index.
CONDA_INSTALLERS = ("conda", "mamba", "micromamba", "rattler", "pixi")


def index_tool(d: Distribution) -> bool:
    """Installed by a tool that installs from a Python package index: pip and uv, and just
    as well poetry (``Poetry 2.5.1``), pdm, pipenv, hatch…; a conda channel's packages are
    not (their INSTALLER is conda's), nor what left no INSTALLER (``setup.py install``)."""
    return d.installer is not None and not d.installer.lower().startswith(CONDA_INSTALLERS)


def lockable(d: Distribution) -> bool:
    """Installed from an index, outside Debian's site: the lock pins it."""
    return d.direct_url is None and index_tool(d) and not d.location.startswith(DEBIAN_SITE)


def _changed_under(changed: Sequence[str], root: str) -> bool:
    """Some path of ``changed`` (sorted) lies under ``root``."""
    prefix = root.rstrip("/") + "/"
    k = bisect.bisect_left(changed, prefix)
    return k < len(changed) and changed[k].startswith(prefix)


def _agent_touched(i: Interpreter, changed: Sequence[str]) -> bool:
    """The agent made the interpreter, or changed a site folder of it where index tools
    install (an interpreter the base image brought, such as a base's own tools venv, is
    the base's: its distributions are not the agent's to reproduce)."""
    return i.created_by_agent or any(
        _changed_under(changed, d.location) for d in i.distributions
        if index_tool(d) and not d.location.startswith(DEBIAN_SITE))


def reproduced_interpreters(run: LoadedRun) -> list[Interpreter]:
    """The primary interpreter first, then any other the agent made or installed into."""
    primary = next((i for i in run.interpreters if i.path == run.primary), None)
    changed = sorted(c.path for c in run.changes)
    targets = [i for i in run.interpreters
               if i is not primary and _agent_touched(i, changed)]
    return ([primary] if primary else []) + sorted(targets, key=lambda i: i.path)


def audited_envs(ok: StepIndex, run: LoadedRun) -> AuditedEnvs:
    """``ok``: the log's commands that ran and succeeded."""
    installs: dict[str, Installs] = {}
    creates: dict[str, tuple[SimpleCommand, VenvCreate]] = {}
    for c, _x, s in ok.of(PipInstall):
        interp = interp_for(s.python, run)
        if interp is not None:
            installs.setdefault(interp.path, []).append((c, s))
    for c, _x, v in ok.of(VenvCreate):
        creates[v.path] = (c, v)
    syncing = [p for _c, _x, p in ok.of(ProjectTool) if p.verb != "lock"]
    return AuditedEnvs(installs=installs, creates=creates,
                       synced=frozenset(f"{p.project.rstrip('/')}/.venv" for p in syncing),
                       tools=frozenset(p.tool for p in syncing))


def _creation(interp: Interpreter, audited: AuditedEnvs, notes: Notes,
              base_python: Interpreter | None = None, recreated: bool = False,
              managed: str | None = None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """argv that makes a venv / other environment, and the argv prefix that runs its pip
    (``recreated``: a conda prefix its conda lock makes, synth.distill.conda_env;
    ``managed``: the downloaded interpreter's folder it runs on, which the artifact
    unpacks first, synth.distill.managed_python)."""
    made = audited.creates.get(interp.prefix)
    has_pip = any(d.name == "pip" for d in interp.distributions)
    python3 = python3_in(managed) if managed else "python3"
    if managed and interp.kind != "venv":  # the downloaded interpreter itself
        return (), ("python3", "-m", "pip", "--python", interp.path)
    if made is not None:
        _c, v = made
        base_py = python3 if managed else (v.python if "/" in v.python else "python3")
        if v.tool == "uv":
            create = (python3, "-m", "venv", "--without-pip", *v.options, interp.prefix)
            create = tuple(o for o in create if o != "--seed")
        else:
            create = (base_py, "-m", "venv", *v.options, interp.prefix)
    elif interp.kind == "venv":
        # Made by a tool (uv sync, poetry, pdm, pipenv, virtualenv): `venv` would add the
        # pip and setuptools of Python's own ensurepip, which the live env may not have had
        # at those versions or at all; the lock installs whatever seeded ones it had.
        create = (python3, "-m", "venv", "--without-pip", interp.prefix)
        has_pip = False  # until the lock installs it: the base's pip serves the venv
        if not audited.made_by_tool(interp.prefix):
            notes.warnings.append(f"no audited command created {interp.prefix}; it is made "
                                  f"with `{' '.join(create)}`")
    elif recreated:
        create = ()  # the conda lock makes the prefix
    else:
        create = ()
        notes.not_reproducible.append(
            f"{interp.kind} interpreter {interp.path}: only venvs and the system python3 "
            "are reproduced")
    # Its own pip where the rebuilt environment has one (the lock installs it, or `venv`
    # seeds it), else the base's, run for it (pip's --python).
    seeded = made is not None and made[1].tool != "uv" and "--without-pip" not in made[1].options
    pip = (interp.path, "-m", "pip") if has_pip or seeded else (
        "python3", "-m", "pip", "--python", interp.path)
    if create and interp.kind == "venv" and not managed:
        _check_base_interpreter(interp, base_python, notes)
    return create, pip


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _check_base_interpreter(interp: Interpreter, base: Interpreter | None,
                            notes: Notes) -> None:
    """A venv is rebuilt from the base's ``python3``: one made from another interpreter (a
    uv-managed or pyenv Python, another version) is not the same environment."""
    same = interp.base_prefix == base.prefix if base else False
    if base is None or not interp.base_prefix or (
            same and _minor(interp.version) == _minor(base.version)):
        return
    notes.not_reproducible.append(
        f"venv {interp.prefix} runs Python {interp.version} made from {interp.base_prefix}, "
        f"an interpreter the base image does not have (its python3 is {base.version} at "
        f"{base.prefix}): rebuilt from the base's python3, the environment is another one "
        "and its lock may not install")


def base_python(run: LoadedRun) -> Interpreter | None:
    """The ``python3`` a rebuilt venv is made from: the system interpreter under ``/usr``."""
    system = sorted((i for i in run.interpreters if i.kind == "system" and i.prefix == "/usr"),
                    key=lambda i: (i.path != "/usr/bin/python3", i.path))
    return system[0] if system else None


def env_plan(interp: Interpreter, idx: int, audited: AuditedEnvs, notes: Notes,
             base: Interpreter | None = None, *, recreated: bool = False,
             managed: str | None = None) -> PythonEnvPlan:
    """How environment ``idx`` (0: the primary one) is made, filled and locked
    (``recreated``: a conda prefix its conda lock makes before this; ``managed``: the
    downloaded interpreter it runs on, unpacked before it)."""
    index_url = DEFAULT_INDEX
    extra: list[str] = []
    find_links: list[str] = []
    bsp = False
    for _c, s in audited.of(interp):
        if s.index_url:
            index_url = s.index_url
        extra += [u for u in s.extra_index_urls if u not in extra]
        find_links += [f for f in s.find_links if f not in find_links]
        bsp = bsp or s.break_system_packages
    pins = tuple(sorted((d.name, d.version) for d in interp.distributions if lockable(d)))
    if interp.kind == "system":
        create: tuple[str, ...] = ()
        pip: tuple[str, ...] = (interp.path, "-m", "pip")
        bsp = True  # Debian marks its Python externally managed (PEP 668)
    else:
        create, pip = _creation(interp, audited, notes, base, recreated, managed)
    lock_file = "requirements.lock" if idx == 0 else (
        "requirements-" + re.sub(r"[^a-z0-9]+", "-", interp.prefix.lower()).strip("-") + ".lock")
    return PythonEnvPlan(
        python=interp.path, kind=interp.kind, version=interp.version, prefix=interp.prefix,
        create=create, pip=pip, lock_file=lock_file, pins=pins, index_url=index_url,
        extra_index_urls=tuple(extra), find_links=tuple(find_links),
        break_system_packages=bsp and interp.kind == "system",
    )
