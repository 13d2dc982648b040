"""Typed steps the extractors return: data about what a command did, never Dockerfile text."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    """What one simple command did. ``kind`` names the step type in reports and JSON."""

    kind = "step"


@dataclass(frozen=True)
class AptInstall(Step):
    kind = "apt-install"
    packages: tuple[str, ...]


@dataclass(frozen=True)
class AptRemove(Step):
    kind = "apt-remove"
    packages: tuple[str, ...]


@dataclass(frozen=True)
class AptMaintenance(Step):
    """``apt-get update``, ``upgrade``, ``clean``, ``apt-mark``: folded into the apt layer."""

    kind = "apt-maintenance"
    action: str


@dataclass(frozen=True)
class LocalDeb(Step):
    kind = "dpkg-install"
    files: tuple[str, ...]


@dataclass(frozen=True)
class VenvCreate(Step):
    kind = "venv-create"
    tool: str
    path: str
    #: The interpreter that made it: an absolute path, or a name looked up on PATH.
    python: str
    options: tuple[str, ...] = ()


@dataclass(frozen=True)
class PipInstall(Step):
    kind = "pip-install"
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


@dataclass(frozen=True)
class PipUninstall(Step):
    kind = "pip-uninstall"
    tool: str
    python: str | None
    names: tuple[str, ...]


@dataclass(frozen=True)
class CondaAction(Step):
    """conda / mamba: not reproducible in a pip-locked image; reported with a pip mapping."""

    kind = "conda"
    tool: str
    verb: str
    packages: tuple[str, ...]
    channels: tuple[str, ...] = ()
    env_name: str | None = None


@dataclass(frozen=True)
class NativeBuild(Step):
    """A compile step replayed as it ran: setup.py, cmake, make, ninja, nvcc, a compiler."""

    kind = "native-build"
    tool: str
    argv: tuple[str, ...]
    python: str | None = None


@dataclass(frozen=True)
class EnvExport(Step):
    """``export X=1`` in a shell: lives only in that shell (its later commands' build env)."""

    kind = "env-export"
    names: tuple[str, ...]


@dataclass(frozen=True)
class EnvPersist(Step):
    """A variable written into a shell start-up file (``echo 'export X=1' >> ~/.bashrc``)."""

    kind = "env-persist"
    file: str
    assignments: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Download(Step):
    kind = "download"
    tool: str
    url: str
    dest: str | None


@dataclass(frozen=True)
class GitClone(Step):
    kind = "git-clone"
    url: str
    dest: str
    ref: str | None = None


@dataclass(frozen=True)
class ShellState(Step):
    """``cd``, ``source …/activate``: folded into the commands that follow."""

    kind = "shell-state"
    builtin: str


@dataclass(frozen=True)
class ReadOnly(Step):
    kind = "read-only"
    program: str


@dataclass(frozen=True)
class ProgramRun(Step):
    """A Python script or launcher run (``python train.py``): a check, not a setup step."""

    kind = "program-run"
    program: str


@dataclass(frozen=True)
class Unclassified(Step):
    """A command no extractor recognises; reported, its effects show up as unexplained."""

    kind = "unclassified"
    program: str
