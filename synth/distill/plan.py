"""``distill(run) -> BuildPlan``: a pure function from a loaded run to what to build.

The final state is the truth for *what* is installed (apt packages and versions, every
Python distribution and where it came from); the audit log says *how* (indexes,
find-links, build flags and build-time environment) and *in which order* native things
were built. Every audited command ends up in the report as kept, folded (its effect lives
in another step: ``cd``, ``export``, ``apt-get update``) or dropped with the reason;
paths the container changed that no kept step explains are listed as unexplained.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import posixpath
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion

from synth.config import CA_ENV_NAMES, CONTAINER_WHEELHOUSE
from synth.distill.carried import CarriedFile
from synth.distill.extractors import classify
from synth.distill.load import DebRecord, Distribution, Interpreter, LoadedRun
from synth.distill.provenance import risks, unaudited_changes
from synth.distill.shell import SimpleCommand, simple_commands
from synth.distill.steps import (
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
    ReadOnly,
    ShellState,
    Step,
    Unclassified,
    VenvCreate,
)

DEFAULT_INDEX = "https://pypi.org/simple"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: Variables never carried into a build: the CA (a secret at build time), shell noise.
_ENV_DENY = frozenset({*CA_ENV_NAMES, "PS1", "OLDPWD", "PWD", "SHLVL", "HOME", "_",
                       "VIRTUAL_ENV", "BASH_ENV", "HOSTNAME", "TERM"})
#: Where the base system's own packages live: apt's business, not the lock's.
_DEBIAN_SITE = ("/usr/lib/python3/dist-packages", "/usr/lib/python3.")


def canonical(name: str) -> str:
    """The PEP 503 name (packaging's, so every module agrees)."""
    return str(canonicalize_name(name))


def _req_name(spec: str) -> str:
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", spec)
    return canonical(m.group(1)) if m else canonical(spec)


@functools.lru_cache(maxsize=4096)
def _req_pin(spec: str) -> str | None:
    """The version specifier of a requirement (``==1.0``, ``<70``), None when it has none."""
    try:
        req = Requirement(spec)
    except InvalidRequirement:
        return None
    return str(req.specifier) or None


@functools.lru_cache(maxsize=4096)
def _satisfies(version: str, specifier: str) -> bool:
    try:
        return SpecifierSet(specifier).contains(version, prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return True


@dataclass(frozen=True)
class CommandOutcome:
    """One simple command of the audit log and what distillation did with it."""

    ref: str
    command: str
    cwd: str
    extractor: str
    step: str
    #: ``kept`` (a step of the artifact), ``folded`` (its effect lives in another step),
    #: ``dropped`` (not replayed; ``reason`` says why).
    decision: str
    reason: str


@dataclass(frozen=True)
class AptPlan:
    #: ``(package, version)`` of every package added or changed against the base, sorted.
    pins: tuple[tuple[str, str], ...] = ()
    #: Installed as dependencies in the run: marked automatic after the install.
    auto: tuple[str, ...] = ()
    #: Base packages the run removed.
    remove: tuple[str, ...] = ()
    #: The pins apt's indexes described in the live container: fetched by URL and
    #: checked by sha256. The other pins (``unhashed``) go through ``apt-get install``.
    debs: tuple[DebRecord, ...] = ()
    unhashed: tuple[tuple[str, str], ...] = ()
    #: The run's end as a snapshot.debian.org timestamp (``20261129T101640Z``).
    timestamp: str | None = None


@dataclass(frozen=True)
class PythonEnvPlan:
    """One Python environment to reproduce, and the pinned distributions it gets."""

    python: str
    kind: str
    version: str
    prefix: str
    #: argv creating it (``python3 -m venv /opt/venv``); empty for the system interpreter.
    create: tuple[str, ...]
    #: argv prefix that runs pip for this environment.
    pip: tuple[str, ...]
    lock_file: str
    pins: tuple[tuple[str, str], ...]
    index_url: str
    extra_index_urls: tuple[str, ...]
    #: find-links as the run saw them (URLs, or paths inside the container).
    find_links: tuple[str, ...]
    break_system_packages: bool


@dataclass(frozen=True)
class NativeStep:
    """A build replayed in its original order, with the environment it ran with."""

    ref: str
    tool: str
    argv: tuple[str, ...]
    cwd: str
    env: tuple[tuple[str, str], ...]
    #: ``name==version`` this step installs, when it installs a distribution.
    distribution: str | None = None
    network: bool = False
    #: ``(sha256, path)`` the step's output is checked against (pinned downloads).
    check_sha256: tuple[str, str] | None = None


@dataclass(frozen=True)
class SourcePlan:
    kind: str  # "path", "url" or "none"
    dest: str
    url: str | None = None
    commit: str | None = None
    #: Set by the export (synth.distill.final_state): source/ differs from the commit (or
    #: the original copy); the diff's file name; "M\tpath" lines; added paths left out.
    dirty: bool | None = None
    patch: str | None = None
    changed: tuple[str, ...] = ()
    not_carried: tuple[str, ...] = ()
    #: source/ is the final /workspace (read from the live image), not the host copy.
    from_final: bool = False


@dataclass(frozen=True)
class BuildPlan:
    task: str
    run_id: str
    base_ref: str
    base_id: str | None
    base_digest: str | None
    apt: AptPlan
    envs: tuple[PythonEnvPlan, ...]
    source: SourcePlan
    native: tuple[NativeStep, ...]
    #: Final ``ENV`` of the image: persisted variables and the primary venv on PATH.
    env: tuple[tuple[str, str], ...]
    #: Container paths the user asked to carry along (``--include``).
    includes: tuple[str, ...]
    #: The interpreter research code runs under, as a path inside the image.
    python: str
    outcomes: tuple[CommandOutcome, ...]
    unexplained: tuple[str, ...]
    not_reproducible: tuple[str, ...]
    warnings: tuple[str, ...]
    claims: bool = False
    uses_wheelhouse: bool = False
    #: glibc of the final state (libc6), for the lock's platform tag.
    glibc: str | None = None
    #: Why the run cannot be trusted (not succeeded, audit unverified…), when it was
    #: exported anyway with ``--allow-incomplete``; the report says so at the top.
    incomplete: tuple[str, ...] = ()
    #: Changes no audited command explains (see :mod:`synth.distill.provenance`).
    unaudited: tuple[str, ...] = ()
    #: Changes that alter which code runs: loader variables, startup files, setuid files.
    risks: tuple[str, ...] = ()
    #: Files of installed distributions the agent modified, put back after the lock, and
    #: what the artifact does not reproduce (``--allow-missing``): synth.distill.final_state.
    carried: tuple[CarriedFile, ...] = ()
    missing: tuple[str, ...] = ()

    @property
    def regenerate_command(self) -> str:
        return f"synth export Dockerfile --run {self.task}/{self.run_id}"

    def to_json(self) -> dict[str, object]:
        from dataclasses import asdict

        return asdict(self)


# --- environments -------------------------------------------------------------------------

def _interp_for(hint: str | None, run: LoadedRun) -> Interpreter | None:
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
        return None
    system = [i for i in interps if i.kind == "system"]
    system.sort(key=lambda i: (i.prefix != "/usr", i.path))
    return system[0] if system else None


def _lockable(d: Distribution) -> bool:
    return (d.direct_url is None and d.installer in ("pip", "uv")
            and not d.location.startswith(_DEBIAN_SITE))


def _agent_touched(i: Interpreter) -> bool:
    return i.created_by_agent or any(
        d.installer in ("pip", "uv") and not d.location.startswith(_DEBIAN_SITE)
        for d in i.distributions
    )


# --- the distillation ---------------------------------------------------------------------

@dataclass
class _Acc:
    outcomes: list[CommandOutcome] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    not_reproducible: list[str] = field(default_factory=list)


def _build_env(cmd: SimpleCommand) -> tuple[tuple[str, str], ...]:
    env = {**cmd.env_map(), **dict(cmd.assignments)}
    return tuple(sorted((k, v) for k, v in env.items() if k not in _ENV_DENY and "***" not in v))


def _outcome(cmd: SimpleCommand, extractor: str, step: Step, decision: str,
             reason: str) -> CommandOutcome:
    return CommandOutcome(ref=cmd.ref, command=cmd.text, cwd=cmd.cwd, extractor=extractor,
                          step=step.kind, decision=decision, reason=reason)


def _pkg_name(spec: str) -> str:
    return spec.split("=", 1)[0].split(":", 1)[0]


def download_candidates(run: LoadedRun) -> tuple[str, ...]:
    """Files that successful downloads wrote and the final state still has: their sha256
    (taken from the live image by the exporter) lets the artifact replay them pinned."""
    present = {c.path for c in run.changes if c.kind in ("A", "C")}
    out = set()
    with _gc_paused():
        for c in simple_commands(run.records):
            _x, s = classify(c)
            if (isinstance(s, Download) and s.tool in ("wget", "curl") and s.dest
                    and c.ran and not c.failed and s.dest in present):
                out.add(s.dest)
    return tuple(sorted(out))


def _download_argv(s: Download) -> tuple[str, ...]:
    assert s.dest is not None
    if s.tool == "curl":
        return ("curl", "-fsSL", "--create-dirs", "-o", s.dest, s.url)
    return ("wget", "-q", "-O", s.dest, s.url)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off for a while (reference counting still frees).

    Distilling makes a few small acyclic objects per audited command, hundreds of
    thousands on a long log; the collector's repeated passes over all of them cost more
    than the work itself (on 100,000 records, 6.2 s of CPU instead of 3.7 s)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def distill(run: LoadedRun, *, include: Sequence[str] = (),
            download_hashes: Mapping[str, str] | None = None) -> BuildPlan:
    """What to build from ``run``: pure, deterministic, no I/O.

    ``download_hashes`` maps files that downloads wrote (:func:`download_candidates`) to
    their sha256 in the final state; those downloads are replayed and checked.
    """
    with _gc_paused():
        return _distill(run, include, download_hashes)


def _distill(run: LoadedRun, include: Sequence[str],
             download_hashes: Mapping[str, str] | None) -> BuildPlan:
    acc = _Acc()
    hashes = dict(download_hashes or {})
    cmds = list(simple_commands(run.records))
    classified = [(c, *classify(c)) for c in cmds]
    final_apt = {_pkg_name(k): v for k, v in run.apt.final.items()}

    # Which environments to reproduce: the primary one first, then any other the agent made
    # or installed into.
    primary = next((i for i in run.interpreters if i.path == run.primary), None)
    targets = [i for i in run.interpreters if _agent_touched(i) and i is not primary]
    envs_in = ([primary] if primary else []) + sorted(targets, key=lambda i: i.path)
    dists_of = {i.path: {d.name: d for d in i.distributions} for i in run.interpreters}

    # Last successful local/VCS install of each distribution: those are replayed.
    native: list[tuple[int, NativeStep]] = []
    native_refs: set[str] = set()
    explained_dists: set[tuple[str, str]] = set()
    pip_by_env: dict[str, list[tuple[SimpleCommand, PipInstall]]] = {}
    venv_creates: dict[str, tuple[SimpleCommand, VenvCreate]] = {}
    ok = [(n, c, x, s) for n, (c, x, s) in enumerate(classified)
          if c.ran and not c.failed and c.parsed]
    for _n, c, _x, s in ok:
        if isinstance(s, PipInstall):
            interp = _interp_for(s.python, run)
            if interp is not None:
                pip_by_env.setdefault(interp.path, []).append((c, s))
        elif isinstance(s, VenvCreate):
            venv_creates[s.path] = (c, s)

    env_plans: list[PythonEnvPlan] = []
    for idx, interp in enumerate(envs_in):
        env_plans.append(_env_plan(interp, idx, run, pip_by_env.get(interp.path, []),
                                   venv_creates, acc))

    # Native steps: local / VCS distributions, matched to the command that installed them.
    for interp, plan_env in zip(envs_in, env_plans, strict=True):
        for d in interp.distributions:
            if _lockable(d) or d.location.startswith(_DEBIAN_SITE):
                continue
            step = _dist_step(d, interp, plan_env, pip_by_env.get(interp.path, []), classified,
                              acc)
            if step is not None:
                native.append(step)
                native_refs.add(step[1].ref)
                explained_dists.add((interp.path, d.name))

    # Compile steps (setup.py, make, cmake, nvcc …) replayed as they ran.
    for n, c, _x, s in ok:
        if isinstance(s, NativeBuild):
            python = s.python
            argv = s.argv
            if python is not None:
                interp = _interp_for(python, run)
                if interp is not None:
                    argv = (interp.path, *argv[1:])
            native.append((n, NativeStep(ref=c.ref, tool=s.tool, argv=argv, cwd=c.cwd,
                                         env=_build_env(c), network=s.tool == "setup.py")))
            native_refs.add(c.ref)

    # Downloads whose file is still there, pinned by its sha256 (last one per file).
    last_download: dict[str, tuple[int, SimpleCommand, Download]] = {}
    for n, c, _x, s in ok:
        if isinstance(s, Download) and s.dest and s.dest in hashes and s.tool in ("wget",
                                                                                   "curl"):
            last_download[s.dest] = (n, c, s)
    for dest, (n, c, s) in sorted(last_download.items()):
        native.append((n, NativeStep(ref=c.ref, tool=f"download ({s.tool})",
                                     argv=_download_argv(s), cwd=c.cwd, env=_build_env(c),
                                     network=True, check_sha256=(hashes[dest], dest))))
        native_refs.add(c.ref)

    # Clones the kept builds read from.
    for n, c, _x, s in ok:
        if isinstance(s, GitClone) and any(
            st.cwd == s.dest or st.cwd.startswith(s.dest + "/")
            or any(a == s.dest or a.startswith(s.dest + "/") for a in st.argv)
            for _, st in native
        ):
            argv = ("git", "clone", *(("--branch", s.ref) if s.ref else ()), s.url, s.dest)
            native.append((n, NativeStep(ref=c.ref, tool="git-clone", argv=argv, cwd=c.cwd,
                                         env=_build_env(c), network=True)))
            native_refs.add(c.ref)

    native.sort(key=lambda t: (t[0], t[1].ref))
    native_steps = _dedupe(s for _, s in native)
    kept_refs = {s.ref for s in native_steps}

    # Final ENV: what the agent persisted, plus the primary venv on PATH.
    env: dict[str, str] = {}
    for k, v in sorted(run.persisted_env.items()):
        if "***" in v or k in CA_ENV_NAMES:
            acc.warnings.append(f"persisted variable {k} holds a secret or the CA path; "
                                "not carried into the image")
            continue
        env[k] = v
    primary_plan = env_plans[0] if env_plans else None
    if primary_plan and primary_plan.kind != "system":
        env.setdefault("VIRTUAL_ENV", primary_plan.prefix)
        if "PATH" not in env:
            env["PATH"] = f"{primary_plan.prefix}/bin:{DEFAULT_PATH}"

    # Packages a later successful install in the same environment named again.
    reinstalled: dict[str, frozenset[str]] = {}
    for installs in pip_by_env.values():
        seen: set[str] = set()
        for c, s in reversed(installs):
            reinstalled[c.ref] = frozenset(seen)
            seen.update(_req_name(r) for r in s.requirements)

    # The report: every command, what became of it.
    for c, x, s in classified:
        acc.outcomes.append(_decide(c, x, s, run, kept_refs, final_apt, dists_of, env_plans,
                                    acc, reinstalled))

    apt = _apt_plan(run)
    unexplained = _unexplained(run, env_plans, native_steps, apt, include)
    for _interp_path, name in sorted(
        (i.path, d.name) for i in envs_in for d in i.distributions
        if not _lockable(d) and not d.location.startswith(_DEBIAN_SITE)
        and (i.path, d.name) not in explained_dists
    ):
        acc.warnings.append(f"distribution {name} in {_interp_path} was not installed from an "
                            "index and no audited command explains it; it is not reproduced")
    for i in run.interpreters:
        if i not in envs_in and i.kind == "conda":
            acc.not_reproducible.append(f"conda environment {i.prefix} ({len(i.distributions)} "
                                        "distributions) is not reproduced")
    if apt.unhashed:
        why = ("apt's package lists were gone at the end of the run" if run.apt.debs_captured
               else "the run predates .deb hashing")
        acc.warnings.append(
            f"{len(apt.unhashed)} Debian package(s) are pinned by version only, without a "
            f"sha256 ({why}): {', '.join(n for n, _ in apt.unhashed[:8])}"
            f"{' …' if len(apt.unhashed) > 8 else ''}")
    if run.info.base_digest is None:
        acc.warnings.append(
            f"base image {run.info.base_ref} has no registry digest; the local image ID "
            f"{run.info.base_id or '(unknown)'} is recorded in manifest.json — rebuild on a "
            "machine that has that same image")
    uses_wh = any(
        any(CONTAINER_WHEELHOUSE in fl or (run.info.wheelhouse and run.info.wheelhouse in fl)
            for fl in e.find_links)
        for e in env_plans
    )
    repo = run.repo
    if repo is None:
        source = SourcePlan(kind="none", dest="/workspace")
        acc.warnings.append("the task file is gone: the artifact carries no source; "
                            "COPY your repository to /workspace yourself")
    elif repo.url:
        source = SourcePlan(kind="url", dest="/workspace", url=repo.url, commit=repo.commit)
    else:
        source = SourcePlan(kind="path", dest="/workspace")
    return BuildPlan(
        task=run.info.task_name,
        run_id=run.info.run_id,
        base_ref=run.info.base_ref,
        base_id=run.info.base_id,
        base_digest=run.info.base_digest,
        apt=apt,
        envs=tuple(env_plans),
        source=source,
        native=native_steps,
        env=tuple(sorted(env.items())),
        includes=tuple(sorted(set(include))),
        python=primary_plan.python if primary_plan else "python3",
        outcomes=tuple(acc.outcomes),
        unexplained=unexplained,
        not_reproducible=tuple(sorted(set(acc.not_reproducible))),
        warnings=tuple(sorted(set(acc.warnings))),
        claims=run.claims_present,
        uses_wheelhouse=uses_wh,
        glibc=final_apt.get("libc6"),
        unaudited=unaudited_changes(run),
        risks=risks(run),
    )


def _dedupe(steps: Iterable[NativeStep]) -> tuple[NativeStep, ...]:
    """A build run twice the same way is replayed once, at its last position."""
    items = list(steps)
    out: list[NativeStep] = []
    for i, s in enumerate(items):
        key = (s.tool, s.argv, s.cwd, s.env)
        if any((t.tool, t.argv, t.cwd, t.env) == key for t in items[i + 1:]):
            continue
        out.append(s)
    return tuple(out)


def _env_plan(
    interp: Interpreter,
    idx: int,
    run: LoadedRun,
    installs: list[tuple[SimpleCommand, PipInstall]],
    venv_creates: Mapping[str, tuple[SimpleCommand, VenvCreate]],
    acc: _Acc,
) -> PythonEnvPlan:
    index_url = DEFAULT_INDEX
    extra: list[str] = []
    find_links: list[str] = []
    bsp = False
    for _c, s in installs:
        if s.index_url:
            index_url = s.index_url
        extra += [u for u in s.extra_index_urls if u not in extra]
        find_links += [f for f in s.find_links if f not in find_links]
        bsp = bsp or s.break_system_packages
    pins = tuple(sorted((d.name, d.version) for d in interp.distributions if _lockable(d)))
    if interp.kind == "system":
        create: tuple[str, ...] = ()
        pip: tuple[str, ...] = (interp.path, "-m", "pip")
        bsp = True  # Debian marks its Python externally managed (PEP 668)
    else:
        made = venv_creates.get(interp.prefix)
        has_pip = any(d.name == "pip" for d in interp.distributions)
        if made is not None:
            _c, v = made
            base_py = v.python if "/" in v.python else "python3"
            if v.tool == "uv":
                create = ("python3", "-m", "venv", "--without-pip", *v.options, interp.prefix)
                create = tuple(o for o in create if o != "--seed")
            else:
                create = (base_py, "-m", "venv", *v.options, interp.prefix)
        elif interp.kind == "venv":
            create = ("python3", "-m", "venv", interp.prefix)
            acc.warnings.append(f"no audited command created {interp.prefix}; it is made with "
                                "`python3 -m venv`")
        else:
            create = ()
            acc.not_reproducible.append(
                f"{interp.kind} interpreter {interp.path}: only venvs and the system python3 "
                "are reproduced")
        pip = (interp.path, "-m", "pip") if has_pip or (made and made[1].tool != "uv") else (
            "python3", "-m", "pip", "--python", interp.path)
    lock_file = "requirements.lock" if idx == 0 else (
        "requirements-" + re.sub(r"[^a-z0-9]+", "-", interp.prefix.lower()).strip("-") + ".lock")
    return PythonEnvPlan(
        python=interp.path, kind=interp.kind, version=interp.version, prefix=interp.prefix,
        create=create, pip=pip, lock_file=lock_file, pins=pins, index_url=index_url,
        extra_index_urls=tuple(extra), find_links=tuple(find_links),
        break_system_packages=bsp and interp.kind == "system",
    )


def _dist_step(
    d: Distribution,
    interp: Interpreter,
    env: PythonEnvPlan,
    installs: list[tuple[SimpleCommand, PipInstall]],
    classified: Sequence[tuple[SimpleCommand, str, Step]],
    acc: _Acc,
) -> tuple[int, NativeStep] | None:
    """The replayed install of a local, VCS or URL distribution."""
    url = d.url or ""
    order = {c.ref: n for n, (c, _x, _s) in enumerate(classified)}
    install_opts = ("--no-deps",) + (("--break-system-packages",)
                                     if env.break_system_packages else ())
    if url.startswith("file://"):
        path = url[len("file://"):]
        for c, s in reversed(installs):
            matches = path in s.local or (s.requirement_files and posixpath.dirname(
                s.requirement_files[0]) == path)
            if not matches:
                continue
            argv = (*env.pip, "install", *install_opts,
                    *(("--no-build-isolation",) if s.no_build_isolation else ()),
                    *s.build_options, *(("-e",) if d.editable else ()), path)
            return order[c.ref], NativeStep(
                ref=c.ref, tool=f"{s.tool}-local", argv=argv, cwd=c.cwd, env=_build_env(c),
                distribution=f"{d.name}=={d.version}", network=not s.no_build_isolation)
        # A setup.py develop/install explains an egg-link or an egg-info install.
        return None
    vcs = d.vcs_info
    if vcs is not None and url:
        target = f"{d.name} @ {vcs.get('vcs', 'git')}+{url}@{vcs.get('commit_id', '')}"
        for c, s in reversed(installs):
            if s.urls:
                return order[c.ref], NativeStep(
                    ref=c.ref, tool=f"{s.tool}-vcs", argv=(*env.pip, "install", *install_opts,
                                                           target),
                    cwd=c.cwd, env=_build_env(c), distribution=f"{d.name}=={d.version}",
                    network=True)
        acc.warnings.append(f"{d.name} came from {url} but no audited command installed it")
        return None
    if url and d.direct_url and "archive_info" in d.direct_url:
        info = d.direct_url.get("archive_info") or {}
        h = info.get("hash") or ""
        target = url + (f"#{h}" if h else "")  # PEP 610's "sha256=…" is the fragment
        for c, s in reversed(installs):
            if s.urls or s.local:
                return order[c.ref], NativeStep(
                    ref=c.ref, tool=f"{s.tool}-url", argv=(*env.pip, "install", *install_opts,
                                                           target),
                    cwd=c.cwd, env=_build_env(c), distribution=f"{d.name}=={d.version}",
                    network=True)
    # Installed by `setup.py install/develop`: the NativeBuild step replays it.
    if any(isinstance(s, NativeBuild) and s.tool == "setup.py" and c.ran and not c.failed
           for c, _x, s in classified):
        return None
    return None


def _apt_plan(run: LoadedRun) -> AptPlan:
    pins = dict(run.apt.added)
    for name, (_old, new) in run.apt.changed.items():
        pins[name] = new
    manual = {_pkg_name(m) for m in run.apt.manual}
    auto = sorted(n for n in pins if _pkg_name(n) not in manual)
    debs = tuple(d for n, v in sorted(pins.items())
                 if (d := run.apt.debs.get(n)) is not None and d.version == v)
    hashed = {d.name for d in debs}
    return AptPlan(pins=tuple(sorted(pins.items())), auto=tuple(auto),
                   remove=tuple(sorted(run.apt.removed)), debs=debs,
                   unhashed=tuple((n, v) for n, v in sorted(pins.items()) if n not in hashed),
                   timestamp=snapshot_timestamp(run.info.ended))


def snapshot_timestamp(iso: str | None) -> str | None:
    """``2026-11-29T10:16:40Z`` -> ``20261129T101640Z`` (snapshot.debian.org's form)."""
    m = re.match(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)", iso or "")
    return "{}{}{}T{}{}{}Z".format(*m.groups()) if m else None


def _decide(
    c: SimpleCommand,
    extractor: str,
    s: Step,
    run: LoadedRun,
    kept_refs: set[str],
    final_apt: Mapping[str, str],
    dists_of: Mapping[str, Mapping[str, Distribution]],
    envs: Sequence[PythonEnvPlan],
    acc: _Acc,
    reinstalled: Mapping[str, frozenset[str]],
) -> CommandOutcome:
    def out(decision: str, reason: str) -> CommandOutcome:
        return _outcome(c, extractor, s, decision, reason)

    if not c.parsed:
        return out("dropped", "could not be parsed; kept verbatim here, not replayed")
    if not c.ran:
        return out("dropped", "never ran (an earlier command of its line failed)")
    if c.failed:
        return out("dropped", f"failed (exit {c.exit})")
    if isinstance(s, ReadOnly):
        return out("dropped", "read-only")
    if isinstance(s, ShellState):
        return out("folded", "shell state: carried into the commands that follow it")
    if isinstance(s, EnvExport):
        return out("folded", "build environment of the later commands of its shell")
    if isinstance(s, EnvPersist):
        live = [k for k, v in s.assignments if run.persisted_env.get(k) == v]
        if live or not s.assignments:
            return out("kept", "final ENV (state/env.json)")
        return out("dropped", "undone: the variable is not persisted in the final state")
    if isinstance(s, AptMaintenance):
        return out("folded", "the apt layer updates the package lists itself")
    if isinstance(s, AptInstall):
        names = [_pkg_name(p) for p in s.packages]
        present = [n for n in names if n in final_apt]
        if names and not present:
            return out("dropped", "undone: none of its packages is installed at the end")
        gone = [n for n in names if n not in final_apt]
        return out("kept", "apt.lock (versions from the final state)"
                   + (f"; later undone: {', '.join(gone)}" if gone else ""))
    if isinstance(s, AptRemove):
        gone = [p for p in s.packages if _pkg_name(p) in run.apt.removed]
        if gone:
            return out("kept", "apt layer removes base packages: " + ", ".join(gone))
        return out("folded", "undoes an earlier install: the package is simply not locked")
    if isinstance(s, LocalDeb):
        acc.warnings.append(f"local .deb installed by `{c.text}`: its packages are locked by "
                            "version and must be available from the apt mirror")
        return out("folded", "apt.lock (the package versions; the .deb file itself is not "
                   "carried)")
    if isinstance(s, VenvCreate):
        if any(e.prefix == s.path for e in envs):
            return out("kept", f"Python environment {s.path}")
        return out("dropped", "undone: the environment is not in the final state")
    if isinstance(s, PipInstall):
        if c.ref in kept_refs:
            return out("kept", "native build step (local / VCS install), replayed in order")
        interp = _interp_for(s.python, run)
        final = dists_of.get(interp.path, {}) if interp else {}
        reqs = [(_req_name(r), _req_pin(r)) for r in s.requirements]
        if not reqs and (s.local or s.urls):
            return out("dropped", "undone or replaced: a later command uninstalled or "
                       "reinstalled what it built")
        if not reqs:
            return out("kept", "requirements.lock (versions from the final state)")
        found = [(n, p) for n, p in reqs if n in final]
        if not found:
            return out("dropped", "undone: none of its packages is installed at the end")
        later = reinstalled.get(c.ref, frozenset())
        replaced = [n for n, p in found if (p is not None
                    and not _satisfies(final[n].version, p)) or n in later]
        if len(replaced) == len(found):
            gone = [n for n, _p in reqs if n not in final]
            return out("dropped", "replaced: a later command changed "
                       + ", ".join(f"{n} to {final[n].version}" for n in replaced)
                       + (f" and removed {', '.join(gone)}" if gone else ""))
        gone = [n for n, _p in reqs if n not in final]
        notes = ([f"later undone: {', '.join(gone)}"] if gone else []) + (
            [f"later replaced: {', '.join(f'{n} (now {final[n].version})' for n in replaced)}"]
            if replaced else [])
        return out("kept", "; ".join(["requirements.lock (versions from the final state)",
                                      *notes]))
    if isinstance(s, PipUninstall):
        return out("folded", "the final state decides: uninstalled packages are not locked")
    if isinstance(s, CondaAction):
        mapped = []
        for p in s.packages:
            n = _req_name(p)
            for e in envs:
                d = dists_of.get(e.python, {}).get(n)
                if d is not None:
                    mapped.append(f"{n}=={d.version} (pip, {e.python})")
        note = f"; mapped to pip: {', '.join(mapped)}" if mapped else "; no pip mapping found"
        acc.not_reproducible.append(f"`{c.text}`: conda is not reproduced{note}")
        return out("dropped", "not reproducible: conda/mamba" + note)
    if isinstance(s, NativeBuild):
        if c.ref in kept_refs:
            return out("kept", "native build step, replayed in order with its build env")
        return out("dropped", "a repeated build: replayed once, at its last run")
    if isinstance(s, GitClone):
        if c.ref in kept_refs:
            return out("kept", "source of a later build")
        return out("dropped", "download not replayed; its files show up as unexplained paths")
    if isinstance(s, Download):
        if c.ref in kept_refs:
            return out("kept", "download replayed, checked against the sha256 of the file "
                       "in the final state")
        return out("dropped", "download not replayed (its file is gone, or no sha256 of it "
                   "could be taken); what it wrote shows up as unexplained paths")
    if isinstance(s, ProgramRun):
        return out("dropped", "runs a program (a check, not a setup step); what it wrote "
                   "shows up as unexplained paths")
    if isinstance(s, Unclassified):
        return out("dropped", "unclassified; its effects show up as unexplained paths")
    return out("dropped", "no rule")


def _covered(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _unexplained(
    run: LoadedRun,
    envs: Sequence[PythonEnvPlan],
    native: Sequence[NativeStep],
    apt: AptPlan,
    include: Sequence[str],
) -> tuple[str, ...]:
    roots: list[str] = [*include]
    for e in envs:
        if e.kind == "system":
            roots += ["/usr/local/lib", "/usr/local/bin", "/usr/local/include",
                      "/usr/local/share"]
        else:
            roots.append(e.prefix)
    if apt.pins or apt.remove:
        roots += ["/usr/bin", "/usr/sbin", "/usr/lib", "/usr/libexec", "/usr/include",
                  "/usr/share", "/etc", "/var/lib/dpkg", "/var/lib/apt", "/var/cache",
                  "/var/log", "/var/lib/ucf", "/var/lib/dbus", "/var/lib/systemd", "/sbin",
                  "/usr/local/share/fonts", "/usr/local/share/ca-certificates",
                  "/bin", "/lib", "/lib64", "/usr/lib64", "/var/lib/pam", "/usr/src"]
    for s in native:
        if s.check_sha256 is not None:
            roots.append(s.check_sha256[1])
            continue
        roots.append(s.cwd)
        if s.tool == "git-clone":
            roots.append(s.argv[-1])
    roots += list(run.env_sources.values())
    if run.repo is not None:
        roots.append("/workspace")  # the source the artifact carries
    changed = [c for c in run.changes if not _covered(c.path, roots)]
    # A directory is listed through what changed below it, never by itself; one made to
    # hold something a kept step explains is explained with it.
    below = [c.path for c in (*run.changes, *run.noise)]
    leftover = [c for c in changed
                if not (any(_covered(r, [c.path]) for r in roots)
                        or (c.kind == "C" and any(b != c.path and _covered(b, [c.path])
                                                  for b in below)))]
    added = {c.path for c in leftover if c.kind == "A"}
    out = [f"{c.kind} {c.path}" for c in leftover
           if not any(_covered(c.path, [a]) and a != c.path for a in added)]
    return tuple(sorted(set(out)))
