"""Warnings about the final state that a lock reproduces faithfully but a reader must know
(pure): the task's main framework replaced by a later install, packages that went into a
second interpreter, ``pip check`` conflicts, and files two locked distributions both
install (the winner then depends on install order).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from synth.distill.steps import PipInstall
from synth.formats.plan import PythonEnvPlan

#: The frameworks a task is built around: a later install replacing one is always worth a
#: line (a CPU torch silently swapped for a CUDA build, say).
FRAMEWORKS = frozenset({"torch", "tensorflow", "tensorflow-cpu", "jax", "jaxlib",
                        "paddlepaddle", "mxnet"})


def _norm(name: str) -> str:
    return str(canonicalize_name(name))


def _split(spec: str) -> tuple[str, str]:
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(.*)", spec)
    return (_norm(m.group(1)), m.group(2).split(";")[0].strip()) if m else (_norm(spec), "")


def requirement_name(spec: str) -> str:
    """The normalised distribution name of a requirement specifier."""
    return _split(spec)[0]


def _cpu_source(step: PipInstall, spec: str) -> bool:
    where = (step.index_url or "", *step.extra_index_urls, *step.find_links, spec)
    return any(re.search(r"(?:/|\+)cpu\b", w) for w in where)


def _mismatch(spec: str, final: str, cpu: bool) -> bool:
    try:
        version = Version(final)
    except InvalidVersion:
        return False
    if cpu and "cpu" not in (version.local or ""):
        return True
    try:
        return bool(spec) and not SpecifierSet(spec).contains(version, prereleases=True)
    except InvalidSpecifier:
        return False


def framework_replaced(installs: Iterable[tuple[str, PipInstall]],
                       final: Mapping[str, str]) -> list[str]:
    """A framework the agent named in an install whose final version is not what it named
    (another version, or a non-CPU build where it asked for a CPU one): in the last install
    that named it (something else replaced it silently), or else in the first (a later
    install that named it replaced what the agent set up, and checked, first).
    ``installs``: the successful pip/uv installs in audit order, as (audit ref, step)."""
    first: dict[str, tuple[str, str, bool]] = {}
    last: dict[str, tuple[str, str, bool]] = {}
    for ref, step in installs:
        for req in step.requirements:
            name, spec = _split(req)
            if name in FRAMEWORKS:
                last[name] = (ref, req, _cpu_source(step, spec))
                first.setdefault(name, last[name])
    finals = {_norm(k): v for k, v in final.items()}
    out = []
    for name, (ref, req, cpu) in sorted(last.items()):
        now = finals.get(name)
        if now is None:
            continue
        if _mismatch(_split(req)[1], now, cpu):
            out.append(f"a later install replaced the task's main framework: audit {ref} "
                       f"installed `{req}`{' (a CPU build)' if cpu else ''}, the final state "
                       f"has {name} {now}")
            continue
        ref0, req0, cpu0 = first[name]
        if _mismatch(_split(req0)[1], now, cpu0):
            out.append(f"a later install replaced the task's main framework: audit {ref0} "
                       f"installed `{req0}`{' (a CPU build)' if cpu0 else ''}, audit {ref} "
                       f"installed `{req}`; the final state has {name} {now}")
    return out


def second_interpreters(envs: Sequence[tuple[str, int]], *, tool: str | None = None,
                        tool_envs: Iterable[str] = ()) -> list[str]:
    """``envs``: (interpreter, pins) in the plan's order, the primary first; ``tool``: the
    project tool that installed the primary environment, whose own environment (one of
    ``tool_envs``, the interpreters whose environment holds it) is named as such."""
    if len(envs) < 2:
        return []
    primary = envs[0][0]
    own = set(tool_envs)
    return [(f"{python} ({pins} pinned) is the environment of {tool}, which installed the "
             f"primary {primary}: the artifact makes it too, so {tool} is in the image "
             f"({posixpath.dirname(python)}/{tool})"
             if tool and python in own else
             f"packages went into a second interpreter: {python} ({pins} pinned) besides the "
             f"primary {primary}; code run with {primary} does not see them") + _leave_out(
                 python, tool if python in own else None)
            for python, pins in envs[1:]]


def plan_second_interpreters(envs: Sequence[PythonEnvPlan]) -> list[str]:
    """:func:`second_interpreters` of a plan's environments."""
    primary = envs[0] if envs else None
    tool = None if primary is None else (
        primary.project_install.tool if primary.project_install is not None else
        "uv" if primary.uv_sync is not None else None)
    return second_interpreters(
        [(e.python, len(e.pins)) for e in envs], tool=tool,
        tool_envs=[e.python for e in envs[1:] if tool and any(_norm(n) == tool
                                                              for n, _v in e.pins)])


def _leave_out(python: str, tool: str | None = None) -> str:
    """How to leave out a second environment that is a tool's own (``/opt/uv``, poetry's):
    the system interpreter's folder is no environment of the agent's to leave out."""
    prefix = posixpath.dirname(posixpath.dirname(python))
    if prefix in ("", "/", "/usr", "/usr/local"):
        return ""
    if tool:
        return f" (an image without {tool}: `synth export --without prefix:{prefix}`)"
    return (f" (the artifact makes it too; a tool's own environment the research code never "
            f"runs with is left out with `synth export --without prefix:{prefix}`)")


def pip_check(lines: Iterable[str]) -> list[str]:
    return [f"pip check reports a conflict in the locked set: {line}" for line in lines]


def overlaps(owners: Mapping[str, Sequence[str]], locked: Iterable[str]) -> list[str]:
    """Files that two or more locked distributions install, grouped by the distributions."""
    pinned = {_norm(n) for n in locked}
    groups: dict[tuple[str, ...], list[str]] = {}
    for path, names in sorted(owners.items()):
        names = sorted({n for n in names if _norm(n) in pinned})
        if len(names) > 1:
            groups.setdefault(tuple(names), []).append(path)
    out = []
    for names, paths in sorted(groups.items()):
        shown = ", ".join(p.rsplit("/site-packages/", 1)[-1] for p in paths[:3])
        out.append(f"{' and '.join(names)} install the same {len(paths)} file(s) ({shown}"
                   f"{', …' if len(paths) > 3 else ''}): which one wins depends on install "
                   "order")
    return out
