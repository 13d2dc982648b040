"""The report's account of every audited command: kept, folded or dropped, and why.

One rule per step type, chosen by ``match`` over the closed :data:`~synth.distill.steps.Step`
union (a new step type that is not handled here is a type error).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import assert_never

from synth.distill import conda, uv_project
from synth.distill.common import Notes, pkg_name, req_name, req_pin, satisfies
from synth.distill.envs import Installs, interp_for
from synth.distill.load import Distribution, Interpreter, LoadedRun
from synth.distill.project_locks import TOOL_LOCKS
from synth.distill.shell import SimpleCommand
from synth.distill.steps import (
    ENVIRONMENT_VERBS,
    PYTHON_CHECK,
    AgentClaims,
    AptInstall,
    AptMaintenance,
    AptRemove,
    CondaAction,
    Download,
    EnvExport,
    EnvPersist,
    GitClone,
    LocalDeb,
    NativeBuild,
    PipInstall,
    PipUninstall,
    ProgramRun,
    ProjectTool,
    ReadOnly,
    ShellState,
    Step,
    ToolConfig,
    Unclassified,
    VenvCreate,
)
from synth.formats.plan import CommandOutcome, DecisionKind, ManagedPython, PythonEnvPlan

Decision = tuple[DecisionKind, str]


@dataclass(frozen=True)
class DecideContext:
    """What the rules look at besides the command: the run and the plan made from it."""

    run: LoadedRun
    #: Refs of the commands replayed as native steps.
    kept_refs: frozenset[str]
    final_apt: Mapping[str, str]
    #: interpreter path -> distribution name -> distribution, in the final state.
    dists_of: Mapping[str, Mapping[str, Distribution]]
    envs: Sequence[PythonEnvPlan]
    #: pip command ref -> packages a later install in the same environment named again.
    reinstalled: Mapping[str, frozenset[str]]
    notes: Notes
    #: pip command ref -> a later exact ``uv sync`` of its environment (:func:`resynced_later`).
    resynced: Mapping[str, str] = field(default_factory=dict)
    #: prefix -> conda lock file of the conda prefixes the artifact recreates.
    conda_locks: Mapping[str, str] = field(default_factory=dict)
    #: The downloaded interpreters the artifact unpacks (synth.distill.managed_python).
    pythons: tuple[ManagedPython, ...] = ()
    #: ``synth export --without``: the environments left out, and the commands whose
    #: native steps go (synth.distill.leave_out.Without); kept commands of either are
    #: dropped, saying what they would have been.
    left_out_prefixes: frozenset[str] = frozenset()
    left_out_refs: frozenset[str] = frozenset()
    _final: dict[str | None, Mapping[str, Distribution]] = field(
        default_factory=dict, init=False, repr=False, compare=False)
    _kept: dict[str | None, str] = field(default_factory=dict, init=False, repr=False,
                                         compare=False)

    def final_dists(self, python: str | None) -> Mapping[str, Distribution]:
        """The final distributions of the interpreter a pip command's ``python`` names (one
        lookup per interpreter named, not per command)."""
        final = self._final.get(python)
        if final is None:
            interp = interp_for(python, self.run)
            final = self._final[python] = self.dists_of.get(interp.path, {}) if interp else {}
        return final

    def leaves_out(self, c: SimpleCommand, s: Step) -> bool:
        """Whether kept command ``c`` made something left out: a native step, or an
        environment (created it, installed into it)."""
        if c.ref in self.left_out_refs:
            return True
        match s:
            case VenvCreate():
                return s.path in self.left_out_prefixes
            case PipInstall():
                interp = interp_for(s.python, self.run)
                return interp is not None and interp.prefix in self.left_out_prefixes
            case _:
                return False

    def lock_kept(self, python: str | None) -> str:
        """Where a pip command's packages went: the lock of the environment its ``python``
        names (``requirements-opt-pdm.lock`` for a second one)."""
        kept = self._kept.get(python)
        if kept is None:
            interp = interp_for(python, self.run)
            files = [e.lock_file for e in self.envs if interp and e.python == interp.path]
            kept = self._kept[python] = (
                f"{files[0] if files else 'requirements.lock'} (versions from the final state)")
        return kept


def resynced_later(installs: Mapping[str, Installs],
                   syncs: Iterable[tuple[SimpleCommand, ProjectTool]],
                   interpreters: Iterable[Interpreter]) -> dict[str, str]:
    """pip command ref -> a later exact ``uv sync`` (its text) of the uv project whose
    environment the command installed into: that sync left the environment exactly as the
    project's lock selects, so nothing the pip command installed stays as it made it."""
    path_of = {i.prefix: i.path for i in interpreters}
    out: dict[str, str] = {}
    for c, p in syncs:
        if p.tool != "uv" or not uv_project.syncs_exactly(c.argv):
            continue
        venv = dict(c.env).get("UV_PROJECT_ENVIRONMENT", ".venv")
        venv = dict(c.assignments).get("UV_PROJECT_ENVIRONMENT", venv)
        python = path_of.get(posixpath.normpath(posixpath.join(p.project, venv)))
        for pc, _s in installs.get(python or "", []):
            if (pc.seq, pc.index) < (c.seq, c.index):
                out.setdefault(pc.ref, c.text)
    return out


def reinstalled_later(installs: Mapping[str, Installs]) -> dict[str, frozenset[str]]:
    """Packages a later successful install in the same environment named again."""
    out: dict[str, frozenset[str]] = {}
    for cmds in installs.values():
        seen: set[str] = set()
        for c, s in reversed(cmds):
            out[c.ref] = frozenset(seen)
            seen.update(req_name(r) for r in s.requirements)
    return out


def decide(c: SimpleCommand, extractor: str, s: Step, ctx: DecideContext) -> CommandOutcome:
    if c.succeeded:
        decision = _rule(c, s, ctx)
        if decision[0] == "kept" and (ctx.left_out_refs or ctx.left_out_prefixes) and (
                ctx.leaves_out(c, s)):
            decision = ("dropped", "left out on request (synth export --without); would "
                        f"be: {decision[1]}")
    elif not c.parsed:
        decision = ("dropped", "could not be parsed; kept verbatim here, not replayed")
    elif not c.ran:
        decision = ("dropped", "never ran (an earlier command of its line failed)")
    else:
        decision = ("dropped", f"failed (exit {c.exit})")
    # Positional (ref, command, cwd, extractor, step, decision, reason): one per command.
    return CommandOutcome(c.ref, c.text, c.cwd, extractor, s.kind, *decision)


def _kept_or(c: SimpleCommand, ctx: DecideContext, kept: str, dropped: str) -> Decision:
    return ("kept", kept) if c.ref in ctx.kept_refs else ("dropped", dropped)


def _rule(c: SimpleCommand, s: Step, ctx: DecideContext) -> Decision:
    match s:
        case ReadOnly():
            return "dropped", "read-only"
        case ShellState():
            return "folded", "shell state: carried into the commands that follow it"
        case EnvExport():
            return "folded", "build environment of the later commands of its shell"
        case EnvPersist():
            return _env_persist(s, ctx)
        case AptMaintenance():
            return "folded", "the apt layer updates the package lists itself"
        case AptInstall():
            return _apt_install(s, ctx)
        case AptRemove():
            if gone := [p for p in s.packages if pkg_name(p) in ctx.run.apt.removed]:
                return "kept", "apt layer removes base packages: " + ", ".join(gone)
            return "folded", "undoes an earlier install: the package is simply not locked"
        case LocalDeb():
            ctx.notes.warnings.append(f"local .deb installed by `{c.text}`: its packages are "
                                      "locked by version and must be available from the apt "
                                      "mirror")
            return "folded", ("apt.lock (the package versions; the .deb file itself is not "
                              "carried)")
        case VenvCreate():
            if any(e.prefix == s.path for e in ctx.envs):
                return "kept", f"Python environment {s.path}"
            return "dropped", "undone: the environment is not in the final state"
        case PipInstall():
            return _pip_install(c, s, ctx)
        case PipUninstall():
            return "folded", "the final state decides: uninstalled packages are not locked"
        case CondaAction():
            return _conda(c, s, ctx)
        case NativeBuild():
            return _kept_or(c, ctx, "native build step, replayed in order with its build env",
                            "a repeated build: replayed once, at its last run")
        case GitClone():
            return _kept_or(c, ctx, "source of a later build", "download not replayed; its "
                            "files show up as unexplained paths")
        case Download():
            return _kept_or(c, ctx, "download replayed, checked against the sha256 of the file "
                            "in the final state", "download not replayed (its file is gone, "
                            "or no sha256 of it could be taken); what it wrote shows up as "
                            "unexplained paths")
        case ProgramRun():
            return "dropped", _program_run(s)
        case ProjectTool():
            return "folded", _project_tool(s)
        case ToolConfig():
            return "dropped", _tool_config(s)
        case AgentClaims():
            return "dropped", ("the agent's claims: claims.json travels beside the artifact "
                               "and C5 checks it; not replayed")
        case Unclassified():
            return _unclassified(c, ctx)
        case _:
            assert_never(s)


def _unclassified(c: SimpleCommand, ctx: DecideContext) -> Decision:
    if ctx.pythons and (why := _python_install(c)):
        return "folded", why
    return "dropped", ("unclassified, not replayed; what it changed comes from the "
                       "final state (source.patch, carried files) or shows up as "
                       "unexplained paths")


def _program_run(s: ProgramRun) -> str:
    if s.program == PYTHON_CHECK:
        return ("a check that runs code (its imports run the packages' own code): not "
                "replayed; what it wrote (a config folder, a cache) shows up as unexplained "
                "paths")
    return ("runs a program (a check, not a setup step); what it wrote shows up as "
            "unexplained paths")


def _python_install(c: SimpleCommand) -> str | None:
    """Why ``uv python install`` / ``pyenv install`` is folded into the interpreters the
    artifact unpacks (synth.distill.managed_python); None for another command."""
    tool = posixpath.basename(c.argv[0]) if c.argv else None
    if tool == "uv" and c.argv[1:3] == ("python", "install"):
        return ("the interpreters it downloaded are unpacked from the same archives, "
                "checked against their sha256 (managed-python.lock)")
    if tool == "pyenv" and c.argv[1:2] == ("install",):
        return ("the interpreter it built is substituted by python-build-standalone's build "
                "of the same version, at the same path (managed-python.lock; see the warnings)")
    return None


def _tool_config(s: ToolConfig) -> str:
    if (s.tool, s.key, s.local) == ("pdm", "python", True):
        return ("writes the project's .pdm-python (the interpreter pdm uses for it), which "
                "travels in source/ (the final /workspace); not replayed")
    setting = f"{s.tool}'s setting {s.key}" if s.key else f"{s.tool}'s configuration"
    if s.local:
        return (f"writes {setting} into the project's own configuration file, which travels "
                "in source/ (the final /workspace); not replayed")
    return (f"writes {setting}, which shaped the commands after it: what they made comes "
            "from the final state; not replayed, and the tool's configuration file is not "
            "carried (it can hold credentials)")


def _project_tool(s: ProjectTool) -> str:
    if s.verb == "lock":
        return "writes the project's lock file, which travels in source/ (the final /workspace)"
    made = ("the environment it made or synced is reproduced from the final state: locked "
            "and installed at the same path" + (
                " (with `uv sync --frozen` from the project's uv.lock where that gives the "
                "final state; the warnings say where not)" if s.tool == "uv" else
                f"; the project's {TOOL_LOCKS.get(s.tool, 'lock file')} travels in source/"))
    if s.verb in ENVIRONMENT_VERBS:
        return (f"makes or removes one of {s.tool}'s environments for the project: each "
                "environment the run ended with is reproduced from the final state, locked "
                "and installed at the same path")
    if s.verb == "run" and s.installer:
        return (f"runs {s.installer} in the project's environment: what it installed is "
                "reproduced from the final state, locked and installed at the same path")
    if s.verb == "run":
        return ("runs a program in the project's environment: a check, not a setup step; "
                "the environment (which `uv run` syncs first) is reproduced from the final "
                "state, locked and installed at the same path")
    return made


def _env_persist(s: EnvPersist, ctx: DecideContext) -> Decision:
    live = [k for k, v in s.assignments if ctx.run.persisted_env.get(k) == v]
    if live or not s.assignments:
        return "kept", "final ENV (state/env.json)"
    return "dropped", "undone: the variable is not persisted in the final state"


def _apt_install(s: AptInstall, ctx: DecideContext) -> Decision:
    names = [pkg_name(p) for p in s.packages]
    present = [n for n in names if n in ctx.final_apt]
    if names and not present:
        return "dropped", "undone: none of its packages is installed at the end"
    gone = [n for n in names if n not in ctx.final_apt]
    return "kept", ("apt.lock (versions from the final state)"
                    + (f"; later undone: {', '.join(gone)}" if gone else ""))


def _pip_install(c: SimpleCommand, s: PipInstall, ctx: DecideContext) -> Decision:
    if c.ref in ctx.kept_refs:
        return "kept", "native build step (local / VCS install), replayed in order"
    final = ctx.final_dists(s.python)
    reqs = [(req_name(r), req_pin(r)) for r in s.requirements]
    if not reqs and (s.local or s.urls):
        return "dropped", _unmatched_build(final)
    if not reqs:
        return "kept", ctx.lock_kept(s.python)
    found = [(n, p) for n, p in reqs if n in final]
    if not found:
        return "dropped", "undone: none of its packages is installed at the end"
    sync = ctx.resynced.get(c.ref)
    if sync is not None:
        return "dropped", (f"replaced: a later `{sync}` made the environment exactly what the "
                           "project's uv.lock selects ("
                           + ", ".join(f"{n} {final[n].version}" for n, _p in found) + ")")
    later = ctx.reinstalled.get(c.ref, frozenset())
    replaced = [n for n, p in found
                if (p is not None and not satisfies(final[n].version, p)) or n in later]
    gone = [n for n, _p in reqs if n not in final]
    if len(replaced) == len(found):
        return "dropped", ("replaced: a later command changed "
                           + ", ".join(f"{n} to {final[n].version}" for n in replaced)
                           + (f" and removed {', '.join(gone)}" if gone else ""))
    notes = ([f"later undone: {', '.join(gone)}"] if gone else []) + (
        [f"later replaced: {', '.join(f'{n} (now {final[n].version})' for n in replaced)}"]
        if replaced else [])
    return "kept", "; ".join([ctx.lock_kept(s.python), *notes])


def _unmatched_build(final: Mapping[str, Distribution]) -> str:
    """Why a local / URL install matched no distribution of the final state. pip's legacy
    ``setup.py install`` (no ``wheel`` package beside an old pip) leaves egg-info without
    INSTALLER or ``direct_url.json``, which nothing can tie to the command: say so where the
    environment has such a distribution, rather than guess that it was undone."""
    legacy = sorted(d.name for d in final.values() if d.unrecorded)
    if legacy:
        return ("not replayed: what it built is not recorded as installed from a local path "
                "or URL; pip's legacy `setup.py install` records no source (no "
                f"direct_url.json), as for {', '.join(legacy)} here, or a later command "
                "uninstalled or reinstalled it")
    return "undone or replaced: a later command uninstalled or reinstalled what it built"


#: conda verbs whose effect the final state's conda-meta holds: a recreated prefix has it.
CONDA_CHANGES = frozenset({"create", "install", "update", "upgrade", "remove", "uninstall",
                           "env create", "env update"})


def _conda(c: SimpleCommand, s: CondaAction, ctx: DecideContext) -> Decision:
    """Folded where it changed a prefix the artifact recreates from its conda lock; else
    not reproduced, each package it names mapped to a distribution of the same name in
    the environment it targets (``-p``, ``-n``: :mod:`synth.distill.conda`) or in a
    reproduced one."""
    where = s.prefix or (conda.env_prefix(conda.UNKNOWN_ROOT, s.env_name) if s.env_name
                         else None)
    target = interp_for(where + "/bin/python", ctx.run) if where else None
    lock = ctx.conda_locks.get(target.prefix) if target is not None else None
    if target is not None and lock is not None and s.verb in CONDA_CHANGES:
        return "folded", f"recreated from the final state: {lock} pins {target.prefix}"
    pythons = ([target.path] if target else []) + [e.python for e in ctx.envs]
    mapped = []
    for p in s.packages:
        n = req_name(p)
        for python in dict.fromkeys(pythons):
            d = ctx.dists_of.get(python, {}).get(n)
            if d is not None:
                mapped.append(f"{n}=={d.version} ({d.installer or 'unknown installer'}, "
                              f"{python})")
    note = f"; mapped to pip: {', '.join(mapped)}" if mapped else "; no pip mapping found"
    if s.files:
        note += f"; spec files: {', '.join(s.files)}"
    ctx.notes.not_reproducible.append(f"`{c.text}`: conda is not reproduced{note}")
    return "dropped", "not reproducible: conda/mamba" + note
