"""A uv project's environment installed as uv made it (pure): ``uv sync --frozen
--no-install-project`` from the project's own ``pyproject.toml`` and ``uv.lock``, with the
extras and groups of the audited commands that synced it (those since the last exact sync,
together: ``uv run``, ``add`` and ``remove`` only add).

Chosen for an environment only where that gives the final state: the environment is the
project's ``.venv``, an audited ``uv sync``/``run``/``add``/``remove`` in the project made it,
the project's ``uv.lock`` agrees with the final state and, read as uv sync reads it, installs
the final set of packages with that selection (:func:`installed_by`), every package it names
comes from an index (or is the project itself), nothing is built from source and the
artifact is not an offline bundle. Otherwise the artifact installs synth's own lock, and
:func:`choose` says why. The project itself is installed afterwards by its native step, with
its build backend pinned (synth.distill.native), as before.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any

from packaging.markers import InvalidMarker, Marker, UndefinedComparison, UndefinedEnvironmentName
from packaging.utils import canonicalize_name

from synth.distill import project_locks
from synth.formats.plan import PythonEnvPlan, UvSync

#: uv commands that sync the project's environment.
_SYNCING = frozenset({"sync", "run", "add", "remove"})
#: Options that choose what a sync installs, with a value.
_WITH_VALUE = frozenset({"--extra", "--no-extra", "--group", "--no-group", "--only-group"})
#: Options that choose what a sync installs, without one.
_FLAGS = frozenset({"--all-extras", "--no-dev", "--only-dev", "--dev", "--all-groups",
                    "--no-default-groups", "--inexact"})
#: Options of ``uv run``/``sync`` that take a value (skipped with it when reading options).
_OTHER_VALUED = frozenset({"-p", "--python", "--directory", "--project", "--with",
                           "--with-requirements", "--with-editable", "--env-file", "-i",
                           "--index", "--index-url", "--default-index", "--extra-index-url",
                           "-f", "--find-links", "--cache-dir", "--config-file", "-C",
                           "--config-setting", "--package", "--python-platform", "--script",
                           "--module", "-m", "--optional", "--index-strategy",
                           "--keyring-provider", "--resolution", "--prerelease",
                           "--exclude-newer", "--link-mode", "--refresh-package",
                           "--reinstall-package", "--upgrade-package", "-P",
                           "--no-binary-package", "--no-build-package", "--rev", "--tag",
                           "--branch", "--bounds", "--marker", "--output-format",
                           "--color", "--allow-insecure-host", "--no-sources-package"})


def selection(argv: Sequence[str]) -> tuple[str, ...] | None:
    """The options choosing what ``argv`` (a ``uv`` command line) installs into the
    project's environment, in order; None when it is no command that syncs it. ``uv add``
    and ``uv remove`` sync with the defaults; ``uv run`` reads options up to the command
    it runs."""
    found = _verb(argv)
    if found is None:
        return None
    verb, rest = found
    # Nothing synced into the project's .venv: no sync, a dry run, or (uv run) a script, no
    # project or an isolated environment of its own.
    if {"--no-sync", "--dry-run", "--no-project", "--isolated", "--script"} & set(
            _leading(rest) if verb == "run" else rest):
        return None
    if verb in ("add", "remove"):
        return ()
    return _options(rest, stop_at_positional=verb == "run")


def _verb(argv: Sequence[str]) -> tuple[str, list[str]] | None:
    """The verb of a ``uv`` command that syncs the project's environment, and the words
    after it; None for another command."""
    if not argv or argv[0].rsplit("/", 1)[-1] != "uv":
        return None
    words = list(argv[1:])
    while words and words[0].startswith("-"):  # uv's global options before the verb
        words = words[2:] if words[0] in _OTHER_VALUED else words[1:]
    if not words or words[0] not in _SYNCING:
        return None
    return words[0], words[1:]


def _leading(args: Sequence[str]) -> list[str]:
    """The option words of ``uv run``'s arguments, before the program it runs."""
    out: list[str] = []
    i = 0
    while i < len(args) and args[i].startswith("-"):
        out.append(args[i])
        valued = _WITH_VALUE | _OTHER_VALUED
        i += 2 if args[i] in valued else 1
    return out


def _options(args: Sequence[str], *, stop_at_positional: bool) -> tuple[str, ...]:
    out: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        name, eq, value = word.partition("=")
        if not word.startswith("-"):
            if stop_at_positional:
                break
        elif name in _WITH_VALUE:
            if eq:
                out += [name, value]
            elif i + 1 < len(args):
                out += [name, args[i + 1]]
                i += 1
        elif word in _FLAGS:
            out.append(word)
        elif name in _OTHER_VALUED and not eq:
            i += 1
        i += 1
    return tuple(out)


def foreign_sources(text: str) -> list[str]:
    """The packages of ``uv.lock`` text that do not come from an index and are not the
    project itself (paths, git, URLs, workspace members), sorted; ValueError when it is not
    a uv.lock."""
    out = []
    for pkg in project_locks.toml_packages(text):
        source: Any = pkg.get("source") if isinstance(pkg, dict) else None
        if not isinstance(source, dict):
            continue
        if "registry" in source or set(source.items()) & {("editable", "."), ("virtual", "."),
                                                           ("directory", ".")}:
            continue
        kind = next(iter(source), "?")
        out.append(f"{pkg.get('name')} ({kind} {source.get(kind)})")
    return sorted(out)


def syncs_exactly(argv: Sequence[str]) -> bool:
    """Whether a syncing ``uv`` command removes what its selection does not name: ``uv
    sync`` does (unless ``--inexact``); ``uv run``, ``add`` and ``remove`` only add (unless
    ``uv run --exact``)."""
    verb, rest = _verb(argv) or ("", [])
    options = _leading(rest) if verb == "run" else rest
    return "--inexact" not in options and (verb == "sync" or "--exact" in options)


def selections(project: str, commands: Iterable[tuple[str, Sequence[str]]]
               ) -> list[tuple[str, ...]]:
    """The selections of the syncing commands in ``project`` since the last exact one (that
    one first): together they made what the environment holds at the end."""
    out: list[tuple[str, ...]] = []
    for cwd, argv in commands:
        found = selection(argv)
        if found is None or not (cwd == project or cwd.startswith(project + "/")):
            continue
        out = [found] if syncs_exactly(argv) else [*out, found]
    return out


def _values(words: Sequence[str], option: str) -> set[str]:
    """The values an option with one (``--extra``, ``--group``) is given in ``words``."""
    return {v for k, v in itertools.pairwise(words) if k == option}


#: The options :func:`merged` and :func:`installed_by` model; any other: they cannot tell.
_MODELLED = frozenset({"--extra", "--group", "--all-extras", "--all-groups", "--no-dev",
                       "--dev", "--no-default-groups", "--inexact"})


def _modelled(options: Sequence[str]) -> bool:
    words = list(options)
    i = 0
    while i < len(words):
        if words[i] not in _MODELLED:
            return False
        i += 2 if words[i] in ("--extra", "--group") else 1
    return True


def merged(chosen: Sequence[tuple[str, ...]]) -> tuple[str, ...] | None:
    """One ``uv sync`` selection that installs what ``chosen``, applied in turn without
    removing anything, installed; None where an option (``--only-group``, ``--no-extra``
    …) makes that more than a union."""
    if len(chosen) == 1:
        return tuple(chosen[0])
    if not all(_modelled(c) for c in chosen):
        return None
    extras = set().union(*(_values(c, "--extra") for c in chosen))
    groups = set().union(*(_values(c, "--group") for c in chosen))
    defaults = {"--no-default-groups" if "--no-default-groups" in c
                else "--no-dev" if "--no-dev" in c else "all" for c in chosen}
    out = (["--all-extras"] if any("--all-extras" in c for c in chosen)
           else [w for e in sorted(extras) for w in ("--extra", e)])
    if any("--all-groups" in c for c in chosen):
        return (*out, "--all-groups")
    if "all" not in defaults:
        out.append("--no-dev" if "--no-dev" in defaults else "--no-default-groups")
    return (*out, *(w for g in sorted(groups) for w in ("--group", g)))


def installed_by(lock_text: str, options: Sequence[str], python_version: str
                 ) -> frozenset[str] | None:
    """The canonical names of what ``uv sync --frozen OPTIONS`` installs from ``uv.lock``
    for CPython ``python_version`` on Linux x86_64, the project itself left out: its
    dependencies, those of the extras and dependency groups chosen (``dev`` the default
    group), and theirs, markers evaluated. None where this reading cannot tell: a marker
    it cannot evaluate, a package named at two versions with nothing to choose, an option
    it does not model."""
    try:
        packages = [p for p in project_locks.toml_packages(lock_text) if isinstance(p, dict)]
    except ValueError:
        return None
    return _installed(packages, options, python_version)


def _installed(packages: Sequence[dict[str, Any]], options: Sequence[str],
               python_version: str) -> frozenset[str] | None:
    """:func:`installed_by` over the lock's packages, read once by the caller."""
    if not _modelled(options):
        return None
    try:
        return _walk(packages, options, _marker_env(python_version))
    except (ValueError, KeyError, TypeError, AttributeError, InvalidMarker,
            UndefinedComparison, UndefinedEnvironmentName):
        return None


def _marker_env(version: str) -> dict[str, str]:
    return {"python_version": ".".join(version.split(".")[:2]), "python_full_version": version,
            "implementation_version": version, "os_name": "posix", "sys_platform": "linux",
            "platform_system": "Linux", "platform_machine": "x86_64",
            "platform_python_implementation": "CPython", "implementation_name": "cpython",
            "platform_release": "", "platform_version": "", "extra": ""}


def _walk(packages: Sequence[dict[str, Any]], options: Sequence[str], env: dict[str, str]
          ) -> frozenset[str] | None:
    """:func:`installed_by` over the lock's packages (raises where it cannot tell)."""
    by_name: dict[str, list[dict[str, Any]]] = {}
    for p in packages:
        by_name.setdefault(str(canonicalize_name(p["name"])), []).append(p)
    roots = [p for p in packages if set((p.get("source") or {}).items())
             & {("editable", "."), ("virtual", "."), ("directory", ".")}]
    if len(roots) != 1:
        return None
    root = roots[0]
    optional = root.get("optional-dependencies") or {}
    dev = root.get("dev-dependencies") or {}
    extras = set(optional) if "--all-extras" in options else _values(options, "--extra")
    groups = set(dev) if "--all-groups" in options else _values(options, "--group") | (
        set() if {"--no-dev", "--no-default-groups"} & set(options) else {"dev"} & set(dev))
    seen: set[tuple[str, str, str]] = set()
    queue: list[tuple[dict[str, Any], str]] = []

    def want(deps: Iterable[dict[str, Any]]) -> None:
        for dep in deps:
            marker = dep.get("marker")
            if marker and not Marker(marker).evaluate(env):
                continue
            found = [p for p in by_name.get(str(canonicalize_name(dep["name"])), [])
                     if "version" not in dep or str(p.get("version")) == dep["version"]]
            if len(found) != 1:
                raise ValueError(f"{dep['name']}: {len(found)} packages")
            pkg = found[0]
            for part in ("", *dep.get("extra", [])):
                key = (str(canonicalize_name(pkg["name"])), str(pkg.get("version")), part)
                if key not in seen:
                    seen.add(key)
                    queue.append((pkg, part))

    want([*(root.get("dependencies") or []),
          *(d for e in sorted(extras) for d in optional.get(e, [])),
          *(d for g in sorted(groups) for d in dev.get(g, []))])
    while queue:
        pkg, part = queue.pop()
        want((pkg.get("optional-dependencies") or {}).get(part, []) if part
             else pkg.get("dependencies") or [])
    own = str(canonicalize_name(root["name"]))
    return frozenset(name for name, _v, _p in seen if name != own)


def choose(env: PythonEnvPlan, project: str, lock_text: str | None,
           commands: Iterable[tuple[str, Sequence[str]]], *, sdists: Sequence[str],
           bundle: bool) -> tuple[UvSync | None, str | None]:
    """Whether ``env`` is installed by ``uv sync --frozen`` from the ``uv.lock`` of
    ``project`` (its text, None when it has none), given the audited ``(cwd, argv)``
    commands in order and what synth's lock builds from source (``sdists``): the choice,
    and the export note saying why not where the project looked like a uv one.

    The selection is that of the syncing commands since the last exact one, together
    (``uv sync --extra plot`` then ``uv run …`` keeps ``plot``), checked against the final
    state: where ``uv.lock`` says it installs something else, so would the artifact's
    ``uv sync``, and synth's lock installs the environment instead."""
    if env.prefix != project.rstrip("/") + "/.venv" or lock_text is None:
        return None, None
    synced = selections(project, commands)
    if not synced:
        return None, None
    try:
        pins = project_locks.lock_pins("uv.lock", lock_text)
        foreign = foreign_sources(lock_text)
    except ValueError:
        return None, None  # the project-lock note already says it was not read
    if project_locks.disagreements(pins, env.pins):
        return None, None  # the project-lock note already says where they differ
    # pip, setuptools, wheel: no disagreement for a reader, but `uv sync` removes them.
    unlocked = [f"{n} {v}" for n, v in env.pins
                if v not in pins.get(str(canonicalize_name(n)), ())]
    chosen, mismatch = _checked(env, lock_text, synced)
    why = ("it holds " + ", ".join(unlocked) + ", which uv.lock does not name (uv sync "
           "removes them)") if unlocked else mismatch or _why_not(foreign, sdists, bundle)
    if why:
        said = " ".join(chosen) or "no options"
        return None, (f"{env.prefix} is installed from synth's lock, not with `uv sync "
                      f"--frozen` from the project's uv.lock: {why} (the run synced it with "
                      f"{said}; the lock holds what that installed)")
    return UvSync(project=project, options=chosen), None


def _checked(env: PythonEnvPlan, lock_text: str, synced: Sequence[tuple[str, ...]]
             ) -> tuple[tuple[str, ...], str | None]:
    """The selection that gives the final state (the merged one, else the last command's
    alone), or where none does, the merged one and why it does not."""
    have = frozenset(str(canonicalize_name(n)) for n, _v in env.pins)
    union = merged(synced)
    candidates = list(dict.fromkeys(c for c in (union, synced[-1]) if c is not None))
    packages = [p for p in project_locks.toml_packages(lock_text) if isinstance(p, dict)]
    found = {}
    for options in candidates:
        found[options] = _installed(packages, options, env.version)
        if found[options] is None or found[options] == have:
            return options, None  # what it cannot tell, the build's own check does
    options = candidates[0]
    got = found[options] or frozenset()
    said = " ".join(options) or "no options"
    whose = ("the run's syncing commands together" if union is not None and len(synced) > 1
             else "the run's last syncing command")
    differs = [f"+{n}" for n in sorted(got - have)] + [f"-{n}" for n in sorted(have - got)]
    return options, (f"`uv sync --frozen` with {said} ({whose}) would install another set "
                     f"than the final state's ({', '.join(differs)})")


def _why_not(foreign: Sequence[str], sdists: Sequence[str], bundle: bool) -> str | None:
    if foreign:
        return "it names packages not from an index: " + ", ".join(foreign)
    if sdists:
        return ("some distributions are built from source, whose build requirements only "
                "synth's build-constraints lock pins: " + ", ".join(sdists))
    if bundle:
        return "--bundle installs offline from vendor/, and uv.lock names index URLs"
    return None
