"""A uv project's environment installed as uv made it (pure): ``uv sync --frozen
--no-install-project`` from the project's own ``pyproject.toml`` and ``uv.lock``, with the
extras and groups of the audited command that synced it.

Chosen for an environment only where that gives the final state: the environment is the
project's ``.venv``, an audited ``uv sync``/``run``/``add``/``remove`` in the project made it,
the project's ``uv.lock`` agrees with the final state, every package it names comes from an
index (or is the project itself), nothing is built from source and the artifact is not an
offline bundle. Otherwise the artifact installs synth's own lock, and :func:`choose` says
why. The project itself is installed afterwards by its native step, with its build backend
pinned (synth.distill.native), as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

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
    if not argv or argv[0].rsplit("/", 1)[-1] != "uv":
        return None
    words = list(argv[1:])
    while words and words[0].startswith("-"):  # uv's global options before the verb
        words = words[2:] if words[0] in _OTHER_VALUED else words[1:]
    if not words or words[0] not in _SYNCING:
        return None
    verb, rest = words[0], words[1:]
    # Nothing synced into the project's .venv: no sync, a dry run, or (uv run) a script, no
    # project or an isolated environment of its own.
    if {"--no-sync", "--dry-run", "--no-project", "--isolated", "--script"} & set(
            _leading(rest) if verb == "run" else rest):
        return None
    if verb in ("add", "remove"):
        return ()
    return _options(rest, stop_at_positional=verb == "run")


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


def choose(env: PythonEnvPlan, project: str, lock_text: str | None,
           commands: Iterable[tuple[str, Sequence[str]]], *, sdists: Sequence[str],
           bundle: bool) -> tuple[UvSync | None, str | None]:
    """Whether ``env`` is installed by ``uv sync --frozen`` from the ``uv.lock`` of
    ``project`` (its text, None when it has none), given the audited ``(cwd, argv)``
    commands in order and what synth's lock builds from source (``sdists``): the choice,
    and the export note saying why not where the project looked like a uv one."""
    if env.prefix != project.rstrip("/") + "/.venv" or lock_text is None:
        return None, None
    chosen = None
    for cwd, argv in commands:
        found = selection(argv)
        if found is not None and (cwd == project or cwd.startswith(project + "/")):
            chosen = found
    if chosen is None:
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
    why = ("it holds " + ", ".join(unlocked) + ", which uv.lock does not name (uv sync "
           "removes them)") if unlocked else _why_not(foreign, sdists, bundle)
    if why:
        return None, (f"{env.prefix} is installed from synth's lock, not with `uv sync "
                      f"--frozen` from the project's uv.lock: {why}")
    return UvSync(project=project, options=chosen), None


def _why_not(foreign: Sequence[str], sdists: Sequence[str], bundle: bool) -> str | None:
    if foreign:
        return "it names packages not from an index: " + ", ".join(foreign)
    if sdists:
        return ("some distributions are built from source, whose build requirements only "
                "synth's build-constraints lock pins: " + ", ".join(sdists))
    if bundle:
        return "--bundle installs offline from vendor/, and uv.lock names index URLs"
    return None
