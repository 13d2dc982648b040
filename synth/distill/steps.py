"""Typed steps the extractors return: data about what a command did, never Dockerfile text.

:data:`Step` is a closed union: code that handles steps ``match``-es on it and ends with
``typing.assert_never``, so a new step type is a type error wherever it is not handled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, TypeAlias

from synth.util.frozen import cheap_init


@dataclass(frozen=True)
class StepBase:
    """What one simple command did. ``kind`` names the step type in reports and JSON."""

    kind: ClassVar[str] = "step"


@cheap_init
@dataclass(frozen=True)
class AptInstall(StepBase):
    kind: ClassVar[str] = "apt-install"
    packages: tuple[str, ...]


@cheap_init
@dataclass(frozen=True)
class AptRemove(StepBase):
    kind: ClassVar[str] = "apt-remove"
    packages: tuple[str, ...]


@cheap_init
@dataclass(frozen=True)
class AptMaintenance(StepBase):
    """``apt-get update``, ``upgrade``, ``clean``, ``apt-mark``: folded into the apt layer."""

    kind: ClassVar[str] = "apt-maintenance"
    action: str


@cheap_init
@dataclass(frozen=True)
class LocalDeb(StepBase):
    kind: ClassVar[str] = "dpkg-install"
    files: tuple[str, ...]


@cheap_init
@dataclass(frozen=True)
class VenvCreate(StepBase):
    kind: ClassVar[str] = "venv-create"
    tool: str
    path: str
    #: The interpreter that made it: an absolute path, or a name looked up on PATH.
    python: str
    options: tuple[str, ...] = ()


@cheap_init
@dataclass(frozen=True)
class PipInstall(StepBase):
    kind: ClassVar[str] = "pip-install"
    tool: str
    #: The interpreter the packages went to, when the command says (abs path or PATH name).
    python: str | None
    #: Requirement specifiers resolved from an index (``numpy==1.26.4``, ``wandb``).
    requirements: tuple[str, ...] = ()
    #: ``-r`` files, absolute.
    requirement_files: tuple[str, ...] = ()
    #: Local paths (directories, wheels, sdists), absolute; editable ones listed in ``editables``.
    local: tuple[str, ...] = ()
    editables: tuple[str, ...] = ()
    #: VCS and archive URLs.
    urls: tuple[str, ...] = ()
    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    no_build_isolation: bool = False
    no_index: bool = False
    #: Build options passed through to a replayed local build (``-C k=v``, ``--no-binary``…).
    build_options: tuple[str, ...] = ()
    break_system_packages: bool = False


@cheap_init
@dataclass(frozen=True)
class PipUninstall(StepBase):
    kind: ClassVar[str] = "pip-uninstall"
    tool: str
    python: str | None
    names: tuple[str, ...]


@cheap_init
@dataclass(frozen=True)
class CondaAction(StepBase):
    """conda / mamba / micromamba: not reproducible in a pip-locked image; reported with a
    pip mapping. ``verb`` is ``create``, ``install``, ``env create``, …"""

    kind: ClassVar[str] = "conda"
    tool: str
    verb: str
    #: Package specs (``python=3.11``, ``numpy``), never an option's value.
    packages: tuple[str, ...]
    #: ``-c`` / ``--channel``, in order.
    channels: tuple[str, ...] = ()
    #: ``-n`` / ``--name``.
    env_name: str | None = None
    #: ``-p`` / ``--prefix``, absolute.
    prefix: str | None = None
    #: ``-f`` / ``--file`` spec files (``environment.yml``, an explicit or a requirements
    #: list), absolute.
    files: tuple[str, ...] = ()


@cheap_init
@dataclass(frozen=True)
class NativeBuild(StepBase):
    """A compile step replayed as it ran: setup.py, cmake, make, ninja, nvcc, a compiler."""

    kind: ClassVar[str] = "native-build"
    tool: str
    argv: tuple[str, ...]
    python: str | None = None


@cheap_init
@dataclass(frozen=True)
class EnvExport(StepBase):
    """``export X=1`` in a shell: lives only in that shell (its later commands' build env)."""

    kind: ClassVar[str] = "env-export"
    names: tuple[str, ...]


@cheap_init
@dataclass(frozen=True)
class EnvPersist(StepBase):
    """A variable written into a shell start-up file (``echo 'export X=1' >> ~/.bashrc``)."""

    kind: ClassVar[str] = "env-persist"
    file: str
    assignments: tuple[tuple[str, str], ...]


@cheap_init
@dataclass(frozen=True)
class Download(StepBase):
    kind: ClassVar[str] = "download"
    tool: str
    url: str
    dest: str | None


@cheap_init
@dataclass(frozen=True)
class GitClone(StepBase):
    kind: ClassVar[str] = "git-clone"
    url: str
    dest: str
    ref: str | None = None


@cheap_init
@dataclass(frozen=True)
class ShellState(StepBase):
    """``cd``, ``source …/activate``: folded into the commands that follow."""

    kind: ClassVar[str] = "shell-state"
    builtin: str


@cheap_init
@dataclass(frozen=True)
class ReadOnly(StepBase):
    kind: ClassVar[str] = "read-only"
    program: str


#: The program of a :class:`ProgramRun` that is a ``python -c`` importing packages
#: (``python -c "import cartopy"``): a check that runs their code, not a read-only one.
PYTHON_CHECK = "python -c (imports packages)"


@cheap_init
@dataclass(frozen=True)
class ProgramRun(StepBase):
    """A Python script or launcher run (``python train.py``), or a ``python -c`` that
    imports packages: a check, not a setup step."""

    kind: ClassVar[str] = "program-run"
    program: str


@cheap_init
@dataclass(frozen=True)
class ProjectTool(StepBase):
    """A project's environment tool at work in a folder: ``uv sync``/``lock``/``add``/
    ``remove``/``run``, ``poetry install``/``lock``/``add``…, ``pdm``, ``pipenv``; or
    making one of the tool's own environments (:data:`ENVIRONMENT_VERBS`: ``poetry env
    use``, ``pdm venv create -n``). What it installed is reproduced from the final state (a
    uv project's .venv by ``uv sync --frozen``: synth.distill.uv_project); the lock file it
    writes travels in source/."""

    kind: ClassVar[str] = "project-tool"
    tool: str
    verb: str
    project: str
    #: What ``run`` runs, where it is an installer (``pip``: ``pipenv run pip install x``).
    installer: str | None = None


#: A :class:`ProjectTool`'s verbs that make or remove one of the tool's environments
#: (``poetry env use``/``remove``, ``pdm venv create -n``/``remove``) and install nothing.
ENVIRONMENT_VERBS = frozenset({"env", "venv"})


@cheap_init
@dataclass(frozen=True)
class ToolConfig(StepBase):
    """A setting written into a tool's own configuration (``poetry config
    virtualenvs.in-project true``, ``pip config set``, ``conda config --add``, ``pdm
    config``): it shapes the commands after it, whose result the final state holds; not
    replayed, and the file is carried only where it is the project's (``--local``: in
    source/), since a tool's configuration can hold credentials."""

    kind: ClassVar[str] = "tool-config"
    tool: str
    #: The setting's name where the command names one (``virtualenvs.in-project``).
    key: str | None
    #: The setting is the project's own (``poetry config --local``): its file is in source/.
    local: bool = False


@cheap_init
@dataclass(frozen=True)
class AgentClaims(StepBase):
    """A command that writes the agent's self-report, ``/synth/claims.json`` (``cat >
    /synth/claims.json <<EOF``, ``tee``): the file travels beside the artifact as
    ``claims.json`` and C5 checks it; not replayed."""

    kind: ClassVar[str] = "claims"
    program: str


@cheap_init
@dataclass(frozen=True)
class Unclassified(StepBase):
    """A command no extractor recognises; reported, its effects show up as unexplained."""

    kind: ClassVar[str] = "unclassified"
    program: str


#: Every step an extractor can return.
Step: TypeAlias = (
    AptInstall
    | AptRemove
    | AptMaintenance
    | LocalDeb
    | VenvCreate
    | PipInstall
    | PipUninstall
    | CondaAction
    | NativeBuild
    | EnvExport
    | EnvPersist
    | Download
    | GitClone
    | ShellState
    | ReadOnly
    | ProgramRun
    | ProjectTool
    | ToolConfig
    | AgentClaims
    | Unclassified
)
