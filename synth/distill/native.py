"""Native steps: what the artifact replays in the run's order, with each build's env.

Local, VCS and URL installs of distributions the final state still has; compile steps
(setup.py, make, cmake, nvcc …); downloads whose file is still there, pinned by sha256;
and the clones those builds read from. A build run twice the same way is replayed once.
"""

from __future__ import annotations

import posixpath
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from synth.distill.carried import norm_name
from synth.distill.common import Notes, StepIndex, build_env
from synth.distill.envs import AuditedEnvs, Installs, interp_for, lockable
from synth.distill.load import Distribution, Interpreter, LoadedRun
from synth.distill.shell import SimpleCommand
from synth.distill.source import SOURCE_DEST
from synth.distill.steps import Download, GitClone, NativeBuild, PipInstall
from synth.formats.plan import NativeStep, PythonEnvPlan
from synth.formats.state import DEBIAN_SITE, PathChange

#: A native step with the position of its command in the log, ``(seq, index)``: the order
#: :func:`~synth.distill.shell.simple_commands` gives the commands in.
Placed = tuple[tuple[int, int], NativeStep]


def _position(c: SimpleCommand) -> tuple[int, int]:
    return c.seq, c.index


@dataclass(frozen=True)
class NativePlan:
    steps: tuple[NativeStep, ...]
    #: ``(interpreter path, distribution)`` a replayed install explains.
    explained: frozenset[tuple[str, str]]


def download_argv(s: Download) -> tuple[str, ...]:
    assert s.dest is not None
    if s.tool == "curl":
        return ("curl", "-fsSL", "--create-dirs", "-o", s.dest, s.url)
    return ("wget", "-q", "-O", s.dest, s.url)


def _install_opts(env: PythonEnvPlan) -> tuple[str, ...]:
    return ("--no-deps",) + (("--break-system-packages",) if env.break_system_packages else ())


#: A WHEEL ``Generator:``: ``setuptools (84.2.1)``, ``hatchling 1.27.0``.
_GENERATOR = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s+\(?v?([0-9][A-Za-z0-9.+!]*)\)?")
#: Generators named otherwise than the package that provides them.
_GENERATOR_PACKAGE = {"bdist-wheel": "wheel", "flit": "flit-core"}


def build_backend_pin(generator: str | None) -> str | None:
    """``name==version`` of the package a WHEEL ``Generator:`` names (``bdist_wheel
    (0.45.1)``, the older setuptools' builder, is ``wheel==0.45.1``); None for none or one
    that is not a name and a version."""
    m = _GENERATOR.fullmatch((generator or "").strip())
    if m is None:
        return None
    name = norm_name(m[1])
    return f"{_GENERATOR_PACKAGE.get(name, name)}=={m[2]}"


def step_pip(env: PythonEnvPlan) -> tuple[str, ...]:
    """The pip a native step of ``env`` runs: the environment's own where its lock
    installs one (native steps run after the lock), the pip that built the live install,
    else ``env.pip`` (the base's, for an environment made without pip: Debian's pip 23
    falls back to a legacy ``setup.py install`` where a newer one builds a wheel)."""
    if env.pip[:1] != (env.python,) and any(n.lower() == "pip" for n, _v in env.pins):
        return (env.python, "-m", "pip")
    return env.pip


def _local_step(c: SimpleCommand, s: PipInstall, env: PythonEnvPlan, d: Distribution,
                path: str) -> Placed:
    """The replay of install ``c`` of the local project ``path``, which installed ``d``."""
    argv = (*step_pip(env), "install", *_install_opts(env),
            *(("--no-build-isolation",) if s.no_build_isolation else ()),
            *s.build_options, *(("-e",) if d.editable else ()), path)
    return _position(c), NativeStep(
        ref=c.ref, tool=f"{s.tool}-local", argv=argv, cwd=c.cwd, env=build_env(c),
        distribution=f"{d.name}=={d.version}", network=not s.no_build_isolation,
        source=d.source, build_backend=None if s.no_build_isolation
        else build_backend_pin(d.wheel_generator))


#: Where a replayed step with no audited command of its own stands: after every other.
_LAST = (sys.maxsize, 0)


def _local_install(d: Distribution, env: PythonEnvPlan, installs: Installs) -> Placed | None:
    path = (d.url or "")[len("file://"):]
    for c, s in reversed(installs):
        if path in s.local or (s.requirement_files and posixpath.dirname(
                s.requirement_files[0]) == path):
            return _local_step(c, s, env, d, path)
    # A setup.py develop/install explains an egg-link or an egg-info install.
    return _tool_project_install(d, env, path)


def _tool_project_install(d: Distribution, env: PythonEnvPlan, path: str) -> Placed | None:
    """The research project a tool installed into its environment (``uv sync``, ``poetry
    install``, ``pdm install``, ``pipenv install -e .``: no pip command of its own), as the
    final state says it: the same folder of the source, editable or not, replayed with the
    environment's pip after everything else (its dependencies are in the lock)."""
    if not d.installer or not _under(path, SOURCE_DEST) or d.vcs_info is not None:
        return None
    argv = (*step_pip(env), "install", *_install_opts(env), *(("-e",) if d.editable else ()),
            path)
    return _LAST, NativeStep(
        ref=f"final state ({d.installer})", tool="pip-local", argv=argv, cwd=path, env=(),
        distribution=f"{d.name}=={d.version}", network=True, source=d.source)


_EGG_INFO = re.compile(r"(?P<dir>/.*)/(?P<name>[^/]+)\.egg-info")


def egg_info_projects(changes: Iterable[PathChange]) -> dict[str, frozenset[str]]:
    """Project folder -> the (normalised) names of the ``<name>.egg-info`` folders the run
    wrote in it (or in its ``src/``): what a ``setup.py`` build leaves beside its source."""
    out: dict[str, set[str]] = {}
    for ch in changes:
        m = _EGG_INFO.fullmatch(ch.path) if ch.kind in ("A", "C") else None
        if m is None:
            continue
        project = m["dir"]
        if posixpath.basename(project) == "src":
            out.setdefault(posixpath.dirname(project), set()).add(norm_name(m["name"]))
        out.setdefault(project, set()).add(norm_name(m["name"]))
    return {k: frozenset(v) for k, v in out.items()}


def _legacy_local_install(d: Distribution, env: PythonEnvPlan, installs: Installs,
                          projects: Mapping[str, frozenset[str]]) -> Placed | None:
    """An egg-info distribution with no ``direct_url.json`` (pip's legacy ``setup.py
    install``: an old pip without ``wheel``) is the install of the local project in whose
    folder the run wrote ``<its name>.egg-info``; replayed like any local install."""
    if not d.unrecorded:
        return None
    name = norm_name(d.name)
    for c, s in reversed(installs):
        for path in s.local:
            if name in projects.get(path.rstrip("/") or "/", ()):
                return _local_step(c, s, env, d, path)
    return None


def _remote_install(d: Distribution, env: PythonEnvPlan, installs: Installs,
                    notes: Notes) -> Placed | None:
    """A VCS or archive-URL install (PEP 610), replayed from its URL."""
    url = d.url or ""
    vcs = d.vcs_info
    if vcs is not None:
        target, kind = f"{d.name} @ {vcs.vcs or 'git'}+{url}@{vcs.commit_id or ''}", "vcs"
    elif d.direct_url is not None and d.direct_url.archive_info is not None:
        h = d.direct_url.archive_info.hash or ""
        target, kind = url + (f"#{h}" if h else ""), "url"  # PEP 610's "sha256=…" fragment
    else:
        return None
    for c, s in reversed(installs):
        if s.urls or (kind == "url" and s.local):
            return _position(c), NativeStep(
                ref=c.ref, tool=f"{s.tool}-{kind}",
                argv=(*step_pip(env), "install", *_install_opts(env), target), cwd=c.cwd,
                env=build_env(c), distribution=f"{d.name}=={d.version}", network=True,
                source=d.source)
    if kind == "vcs":
        notes.warnings.append(f"{d.name} came from {url} but no audited command installed it")
    return None


def _dist_step(d: Distribution, env: PythonEnvPlan, installs: Installs, notes: Notes,
               projects: Mapping[str, frozenset[str]]) -> Placed | None:
    """The replayed install of a local, VCS or URL distribution (None: not replayed; a
    ``setup.py install/develop`` is replayed by its NativeBuild step)."""
    url = d.url or ""
    if url.startswith("file://"):
        return _local_install(d, env, installs)
    if url:
        return _remote_install(d, env, installs, notes)
    return _legacy_local_install(d, env, installs, projects)


def _installs(envs_in: Sequence[Interpreter], env_plans: Sequence[PythonEnvPlan],
              audited: AuditedEnvs, notes: Notes, changes: Iterable[PathChange],
              ) -> tuple[list[Placed], set[tuple[str, str]]]:
    """Local / VCS distributions, matched to the command that installed them."""
    projects = egg_info_projects(changes)
    placed: list[Placed] = []
    explained: set[tuple[str, str]] = set()
    for interp, plan_env in zip(envs_in, env_plans, strict=True):
        for d in interp.distributions:
            if lockable(d) or d.location.startswith(DEBIAN_SITE):
                continue
            step = _dist_step(d, plan_env, audited.of(interp), notes, projects)
            if step is not None:
                placed.append(step)
                explained.add((interp.path, d.name))
    return placed, explained


_SETUP_INSTALLS = frozenset({"install", "develop"})


def _setup_installs(s: NativeBuild, cwd: str, interp: Interpreter | None,
                    projects: Mapping[str, frozenset[str]]) -> str | None:
    """``name==version`` of the distribution a ``setup.py install``/``develop`` step
    installed: the one whose ``<name>.egg-info`` the run wrote in the step's project folder
    and which the step's interpreter has. The same rule as pip's legacy ``setup.py
    install`` (:func:`_legacy_local_install`), so both routes of one install are treated
    alike: replayed, and the distribution built by that step."""
    if s.tool != "setup.py" or interp is None or not _SETUP_INSTALLS & set(s.argv):
        return None
    script = next((a for a in s.argv if a == "setup.py" or a.endswith("/setup.py")), None)
    if script is None:
        return None
    folder = posixpath.normpath(posixpath.join(cwd, posixpath.dirname(script)))
    names = projects.get(folder, frozenset())
    found = sorted(f"{d.name}=={d.version}" for d in interp.distributions
                   if norm_name(d.name) in names and d.version)
    return found[0] if len(found) == 1 else None


def _compiles(ok: StepIndex, run: LoadedRun,
              projects: Mapping[str, frozenset[str]]) -> list[Placed]:
    """Compile steps (setup.py, make, cmake, nvcc …) replayed as they ran."""
    out: list[Placed] = []
    for c, _x, s in ok.of(NativeBuild):
        argv = s.argv
        interp = interp_for(s.python, run) if s.python is not None else None
        if interp is not None:
            argv = (interp.path, *argv[1:])
        out.append((_position(c), NativeStep(
            ref=c.ref, tool=s.tool, argv=argv, cwd=c.cwd, env=build_env(c),
            network=s.tool == "setup.py",
            distribution=_setup_installs(s, c.cwd, interp or interp_for(None, run),
                                         projects))))
    return out


def _downloads(ok: StepIndex, hashes: Mapping[str, str]) -> list[Placed]:
    """Downloads whose file is still there, pinned by its sha256 (last one per file)."""
    last: dict[str, tuple[SimpleCommand, Download]] = {}
    for c, _x, s in ok.of(Download):
        if s.tool in ("wget", "curl") and s.dest and s.dest in hashes:
            last[s.dest] = (c, s)
    return [(_position(c), NativeStep(ref=c.ref, tool=f"download ({s.tool})",
                                      argv=download_argv(s), cwd=c.cwd, env=build_env(c),
                                      network=True, check_sha256=(hashes[dest], dest)))
            for dest, (c, s) in sorted(last.items())]


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root + "/")


def _add_clones(ok: StepIndex, native: list[Placed]) -> None:
    """Clones the kept builds (or later kept clones) read from."""
    for c, _x, s in ok.of(GitClone):
        if any(_under(st.cwd, s.dest) or any(_under(a, s.dest) for a in st.argv)
               for _, st in native):
            argv = ("git", "clone", *(("--branch", s.ref) if s.ref else ()), s.url, s.dest)
            native.append((_position(c), NativeStep(
                ref=c.ref, tool="git-clone", argv=argv, cwd=c.cwd, env=build_env(c),
                network=True)))


def native_plan(run: LoadedRun, ok: StepIndex,
                envs_in: Sequence[Interpreter], env_plans: Sequence[PythonEnvPlan],
                audited: AuditedEnvs, hashes: Mapping[str, str], notes: Notes) -> NativePlan:
    """Every native step, in the order its command ran; ``ok``: the log's commands that
    ran and succeeded (parsed, not failed), in order."""
    placed, explained = _installs(envs_in, env_plans, audited, notes, run.changes)
    placed += _compiles(ok, run, egg_info_projects(run.changes))
    placed += _downloads(ok, hashes)
    _add_clones(ok, placed)
    placed.sort(key=lambda t: (t[0], t[1].ref))
    return NativePlan(steps=_dedupe(s for _, s in placed), explained=frozenset(explained))


def installs_into(step: NativeStep, envs: Sequence[PythonEnvPlan]) -> PythonEnvPlan | None:
    """The environment ``step`` installs its distribution into: the one whose pip runs it
    (a replayed local install), else the one whose interpreter runs it (``setup.py
    install``); None for a step that names neither (``make``, a download)."""
    by_pip = (e for e in envs if e.pip and step.argv[:len(e.pip)] == e.pip)
    by_python = (e for e in envs if step.argv[:1] == (e.python,))
    return next(by_pip, None) or next(by_python, None)


def _dedupe(steps: Iterable[NativeStep]) -> tuple[NativeStep, ...]:
    """A build run twice the same way is replayed once, at its last position."""
    seen: set[tuple[object, ...]] = set()
    out: list[NativeStep] = []
    for s in reversed(list(steps)):
        key = (s.tool, s.argv, s.cwd, s.env)
        if key not in seen:
            seen.add(key)
            out.append(s)
    return tuple(reversed(out))
