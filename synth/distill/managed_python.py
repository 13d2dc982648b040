"""Interpreters a Python manager installed: which ones the artifact unpacks, and from where.

``uv python install`` (or ``uv venv -p 3.12`` on a base without 3.12) unpacks a
python-build-standalone archive into ``<uv's python dir>/<key>/``; a venv made from it
names that folder (or uv's minor-version link to it) as its ``base_prefix``. The artifact
unpacks the same archive at the same path before making the venv from it. ``pyenv
install 3.10.14`` compiles CPython into ``~/.pyenv/versions/3.10.14``: its sources and
configure run are not something a build can repeat byte for byte, so the artifact
substitutes python-build-standalone's build of the same version at the same path, and the
report says so. Distill only names the build and where the run's uv was told to look (its
downloads list and mirror, from the audited ``uv`` commands); the export resolves the
archive's URL and sha256 (synth.export.managed_python), since that needs the network.

uv also links the interpreter's executable into its bin folder (``~/.local/bin/python3.11``)
and keeps a lock, a scratch folder and a ``.gitignore`` beside its interpreters. The links
are made again from the targets the exporter reads in the live image
(:func:`link_candidates`); the bookkeeping entries are uv's own, made again by uv when it
next runs, and explained as such (themselves, not what another program put inside them).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence

from msgspec.structs import replace

from synth.distill.common import Notes
from synth.distill.load import Interpreter, LoadedRun
from synth.distill.shell import SimpleCommand
from synth.formats.plan import ManagedPython, PythonEnvPlan

#: A uv install folder's name: ``cpython-3.11.2-linux-x86_64-gnu``,
#: ``cpython-3.13.1+freethreaded-linux-…``; uv's minor-version link has no patch.
_KEY = re.compile(r"^(?P<impl>[a-z]+)-(?P<version>\d+\.\d+(?:\.\d+[a-z0-9]*)?)(?P<rest>[+-].+)$")
#: uv's options and variables saying where interpreters are downloaded from.
_JSON_URL = ("--python-downloads-json-url", "UV_PYTHON_DOWNLOADS_JSON_URL")
_MIRROR = ("--mirror", "UV_PYTHON_INSTALL_MIRROR")
#: The platform of the builds substituted for pyenv's (the images synth locks for).
_PLATFORM = "linux-x86_64-gnu"
#: The executables uv links into its bin folder: ``python3.11`` (``python3`` and ``python``
#: too with ``--default``; ``python3.13t`` free-threaded; ``pypy3.10``).
_EXECUTABLE = re.compile(r"(python|pypy|graalpy)(3(\.\d+)?t?)?")
#: What uv keeps beside its interpreters: its lock, scratch folder, cache and .gitignore.
UV_BOOKKEEPING = (".cache", ".gitignore", ".lock", ".temp")
#: At most this many paths are asked of the live image (agent-written names, all of them).
_MAX_LINK_CANDIDATES = 64


def is_uv_managed(prefix: str | None) -> bool:
    """A folder under uv's python directory, named plainly: absolute, normalised, no blank
    (the probe reports it from the final state, which the agent wrote)."""
    return prefix is not None and _plain(prefix) and "/uv/python/" in f"{prefix}/"


def is_pyenv_build(prefix: str | None) -> bool:
    """A folder of pyenv's versions (``~/.pyenv/versions/3.10.14``), named plainly."""
    parts = prefix.split("/") if prefix is not None and _plain(prefix) else []
    return len(parts) >= 4 and parts[-2] == "versions" and parts[-3] in ("pyenv", ".pyenv")


def _plain(path: str) -> bool:
    return (posixpath.isabs(path) and posixpath.normpath(path) == path
            and not any(ch.isspace() for ch in path))


def python3_in(home: str) -> str:
    """The ``python3`` of an interpreter's folder: what makes its venvs."""
    return f"{home}/bin/python3"


def made_from(env: PythonEnvPlan, python: ManagedPython) -> bool:
    """The plan makes ``env`` with ``python``'s own ``python3`` (through a link or not)."""
    return env.create[:1] in {(python3_in(h),) for h in (python.prefix, *python.links)}


def runs_on(env: PythonEnvPlan, python: ManagedPython) -> bool:
    """``env`` is the unpacked interpreter itself, or a venv made from it."""
    return env.prefix in (python.prefix, *python.links) or made_from(env, python)


def managed_base(interp: Interpreter) -> str | None:
    """The downloaded (uv) or compiled (pyenv) interpreter folder ``interp`` runs on:
    itself, or its venv's base."""
    if interp.kind == "uv" and is_uv_managed(interp.prefix):
        return interp.prefix
    if interp.kind == "pyenv" and is_pyenv_build(interp.prefix):
        return interp.prefix
    if interp.kind == "venv" and (is_uv_managed(interp.base_prefix)
                                  or is_pyenv_build(interp.base_prefix)):
        return interp.base_prefix
    return None


def _uv_dirs(run: LoadedRun) -> set[str]:
    """uv's python folders of the run's interpreters (the folders their builds sit in)."""
    return {posixpath.dirname(base) for i in run.interpreters
            if (base := managed_base(i)) is not None and is_uv_managed(base)}


def link_candidates(run: LoadedRun) -> tuple[str, ...]:
    """Paths the run added that may be links uv made to an interpreter it installed: in
    uv's python folder (the minor-version link) and executables named like an interpreter
    outside every environment's prefix (``~/.local/bin/python3.11``, ``/usr/local/bin/…``;
    a system interpreter's prefix is ``/usr``, which holds all). Their targets, read
    in the live image by the exporter, let the artifact make them again."""
    dirs = _uv_dirs(run)
    if not dirs:
        return ()
    inside = tuple(f"{p}/" for p in {*(i.prefix for i in run.interpreters
                                       if i.prefix and i.kind != "system"), *dirs})
    out = []
    for c in run.changes:
        parent, name = posixpath.split(c.path)
        if c.kind != "A" or not _plain(c.path) or "=" in c.path or c.path in dirs:
            continue
        if parent in dirs or (_EXECUTABLE.fullmatch(name) and not c.path.startswith(inside)):
            out.append(c.path)
    return tuple(sorted(out)[:_MAX_LINK_CANDIDATES])


def explained_paths(python: ManagedPython) -> tuple[str, ...]:
    """What the artifact's unpacking of ``python`` accounts for, with all that is below:
    its folder, its links and executables."""
    return (python.prefix, *python.links, *(path for path, _ in python.executables))


def bookkeeping_paths(python: ManagedPython) -> tuple[str, ...]:
    """uv's bookkeeping entries beside ``python``'s folder, themselves only: uv makes them
    again when it next runs, and leaves its scratch folder empty; a file the run left
    inside one is not uv's doing that the artifact accounts for."""
    if python.tool != "uv":
        return ()
    return tuple(posixpath.join(posixpath.dirname(python.prefix), n) for n in UV_BOOKKEEPING)


def managed_pythons(run: LoadedRun, envs: Sequence[Interpreter],
                    commands: Iterable[SimpleCommand], notes: Notes,
                    link_targets: Mapping[str, str] | None = None
                    ) -> tuple[ManagedPython, ...]:
    """The uv-managed and pyenv-built interpreters ``envs`` run on, sorted by prefix
    (``commands``: the log's successful simple commands, for the downloads list and mirror
    uv was given; ``link_targets``: the targets of :func:`link_candidates` that are links,
    from the live image); a pyenv build's substitution is named in ``notes``."""
    bases = [(interp, base, real) for interp in envs
             if (base := managed_base(interp))
             and _made_in_run(run, base, (real := _real_prefix(base, interp.version))[0])]
    if not bases:
        return ()
    json_url, mirror = uv_download_settings(commands)
    found: dict[str, ManagedPython] = {}
    for interp, base, (prefix, links) in bases:
        if is_pyenv_build(base):
            version = _version(run, base, interp, "pyenv")
            found[base] = ManagedPython(tool="pyenv", key=f"cpython-{version}-{_PLATFORM}",
                                        prefix=base, version=version)
            notes.warnings.append(
                f"pyenv's build of Python {version} at {base} is substituted by "
                f"python-build-standalone's build of the same version (cpython-{version}), "
                "unpacked at the same path: the same version, not the same binary (its "
                "configure options and patches may differ)")
            continue
        if prefix in found:
            links = tuple(sorted({*found[prefix].links, *links}))
        found[prefix] = ManagedPython(
            tool="uv", key=posixpath.basename(prefix), prefix=prefix,
            version=_version(run, prefix, interp, "uv"), links=links,
            downloads_json_url=json_url, mirror=mirror)
    return tuple(_with_links(found[p], link_targets or {}) for p in sorted(found))


def _with_links(python: ManagedPython, targets: Mapping[str, str]) -> ManagedPython:
    """``python`` with the links uv made to it: a link beside it to its folder (uv's
    minor-version link) among ``links``, one to a file in it among ``executables`` (the
    target as uv wrote it). A target that is blank, holds a blank or ``=``, or leads
    anywhere else is not the interpreter's."""
    if python.tool != "uv":
        return python
    leads = {path: posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
             for path, target in targets.items()
             if target and "=" not in target and not any(ch.isspace() for ch in target)}
    links = sorted({*python.links, *(path for path, to in leads.items() if to == python.prefix
                                     and posixpath.dirname(path) == posixpath.dirname(to))})
    names = (python.prefix, *links)  # an executable may lead through the minor link
    executables = tuple((path, targets[path]) for path, to in sorted(leads.items())
                        if any(to.startswith(f"{n}/") for n in names))
    return replace(python, links=tuple(links), executables=executables)


def _made_in_run(run: LoadedRun, *folders: str) -> bool:
    """The run added the interpreter at ``folders`` (its folder, uv's link to it): an image
    that already has it needs nothing unpacked. The probe says whether the agent made it;
    one it did not find is the run's when the run's changes add it."""
    found = [i for i in run.interpreters if i.prefix in folders]
    if found:
        return any(i.created_by_agent for i in found)
    return any(c.kind == "A" and any(f == c.path or f.startswith(c.path.rstrip("/") + "/")
                                     for f in folders) for c in run.changes)


def _real_prefix(base: str, version: str) -> tuple[str, tuple[str, ...]]:
    """The install folder and the links that name it: a base through uv's minor-version
    link (``cpython-3.11-…``) is the folder of the full version (``cpython-3.11.2-…``)."""
    m = _KEY.match(posixpath.basename(base.rstrip("/")))
    if m is None or m["version"].count(".") >= 2 or not version:
        return base, ()
    key = f"{m['impl']}-{version}{m['rest']}"
    return posixpath.join(posixpath.dirname(base), key), (base,)


def _version(run: LoadedRun, prefix: str, interp: Interpreter, kind: str) -> str:
    own = next((i for i in run.interpreters if i.kind == kind and i.prefix == prefix), None)
    return (own or interp).version


def uv_download_settings(commands: Iterable[SimpleCommand]) -> tuple[str | None, str | None]:
    """The downloads list and mirror the run's ``uv`` commands were given (the last one
    that says), as options or as variables set for them."""
    json_url: str | None = None
    mirror: str | None = None
    for c in commands:
        if not c.argv or posixpath.basename(c.argv[0]) != "uv":
            continue
        variables = dict((*c.env, *c.assignments))
        json_url = _option(c.argv, variables, _JSON_URL) or json_url
        mirror = _option(c.argv, variables, _MIRROR) or mirror
    return json_url, mirror


def _option(argv: Sequence[str], variables: dict[str, str],
            names: tuple[str, str]) -> str | None:
    flag, variable = names
    for i, word in enumerate(argv):
        if word == flag and i + 1 < len(argv):
            return argv[i + 1]
        if word.startswith(flag + "="):
            return word.split("=", 1)[1]
    return variables.get(variable) or None
