"""What no audited command explains, and what changes which code runs (pure).

The lock follows the final state whatever produced it; these lists make sure nothing the
final state holds slips into the artifact unnamed:

* *unaudited* — an apt package, a distribution, a persisted variable or a file whose
  change time (read in the container) falls while no audited command was running: it was
  made outside bash (a Python ``subprocess``, ``sh -c`` from an agent's tool, a shell
  started with the hook switched off) or by something that outlived its command;
* *risks* — variables that redirect code loading, ``sitecustomize``/``usercustomize`` and
  ``.pth`` files no installed distribution accounts for, setuid/setgid files, and
  variables that point into places export treats as noise.

Limit: change times are the agent's to forge (``touch -d``); a forged time can hide a
change from the first list, never add one.
"""

from __future__ import annotations

import bisect
import posixpath
import re
import time
from collections.abc import Container, Iterable, Mapping
from typing import Any

from packaging.utils import canonicalize_name

from synth.distill.load import LoadedRun
from synth.util.noise import noise_reason
from synth.util.wrappers import unwrapped

#: Variables that change which code runs, and how.
CODE_LOADING_ENV: dict[str, str] = {
    "PYTHONPATH": "adds folders to Python's import path",
    "PYTHONHOME": "moves Python's standard library",
    "PYTHONSTARTUP": "runs a file when Python starts interactively",
    "PYTHONUSERBASE": "moves the user site-packages folder",
    "PYTHONINSPECT": "changes how Python exits",
    "LD_PRELOAD": "loads a library into every process",
    "LD_LIBRARY_PATH": "changes which shared libraries are loaded",
    "LD_AUDIT": "loads an audit library into every process",
    "BASH_ENV": "runs a file in every non-interactive bash",
    "ENV": "runs a file in every POSIX sh",
    "PERL5LIB": "adds folders to Perl's module path",
    "NODE_OPTIONS": "changes how Node.js starts",
}
_STARTUP_FILES = {"sitecustomize.py": "runs at every Python start",
                  "usercustomize.py": "runs at every Python start (user site)"}
#: .pth files that installers write for themselves.
_INSTALLER_PTH = ("distutils-precedence", "easy-install", "_virtualenv", "__editable__")
_HATCH_EDITABLE = "_editable_impl_"
#: Seconds of slack around each audited command: file times come from the kernel's coarse
#: clock, up to a few milliseconds behind the one the hook and synth read.
_SLACK = 0.05


def _when(t: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(t))


class _Windows:
    """The time spans in which an audited command was running."""

    def __init__(self, spans: Iterable[tuple[float, float]]) -> None:
        merged: list[list[float]] = []
        for start, end in sorted(spans):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        self.starts = [s for s, _ in merged]
        self.ends = [e for _, e in merged]

    def covers(self, t: float) -> bool:
        i = bisect.bisect_right(self.starts, t) - 1
        return i >= 0 and t <= self.ends[i]


#: Programs whose run explains a new distribution / apt package.
_PYTHON_INSTALLERS = frozenset({"pip", "pip3", "uv", "conda", "mamba", "micromamba", "poetry",
                                "pdm", "pipenv", "pipx", "easy_install", "setup.py", "hatch",
                                "flit", "venv", "virtualenv", "ensurepip"})
_APT_INSTALLERS = frozenset({"apt", "apt-get", "aptitude", "dpkg", "gdebi"})


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _programs(command: str) -> set[str]:
    """Basenames of the program and of a ``-m module`` / script it runs (first words, after
    ``X=1`` assignments and wrappers such as ``sudo``)."""
    words = command.split()
    while words and _ASSIGNMENT.match(words[0]):
        words = words[1:]  # leading VAR=value assignments
    words = list(unwrapped(words))  # sudo, env X=1, nice…
    if not words:
        return set()
    names = {posixpath.basename(words[0])}
    if len(words) > 2 and words[1] == "-m":
        names.add(words[2])
    if len(words) > 1 and words[1].endswith(".py"):
        names.add(posixpath.basename(words[1]))
    return names


def audited_windows(run: LoadedRun, programs: frozenset[str] | None = None) -> _Windows:
    """When an audited command ran; with ``programs``, only simple commands running one of
    them (a new distribution is explained by an installer, not by any command)."""
    spans: list[tuple[float, float]] = []
    for r in run.records:
        if r.start is None or r.source == "exec-trace" or r.seq in run.unconfirmed:
            continue  # an installer record no process seen from the host confirmed
        if r.source == "synth" and (r.phase not in (None, "agent") or run.agent_kind != "replay"):
            continue  # synth's own work, or an exec agent's whole program, explains nothing
        if programs is not None and (r.source != "bash-hook"
                                     or not _programs(r.command) & programs):
            continue
        end = r.end if r.end is not None else r.start
        spans.append((r.start - _SLACK, end + _SLACK))
    return _Windows(spans)


def session_start(run: LoadedRun) -> float | None:
    starts = [r.start for r in run.records if r.source == "synth" and r.start is not None]
    return min(starts) - _SLACK if starts else None


def unaudited_changes(run: LoadedRun) -> tuple[str, ...]:
    prov = run.provenance
    start = session_start(run)
    if prov is None or start is None:
        return ()
    any_command = audited_windows(run)
    apt_installs = audited_windows(run, _APT_INSTALLERS)
    py_installs = audited_windows(run, _PYTHON_INSTALLERS)
    out: list[str] = []

    def check(what: str, t: float | None, windows: _Windows, during: str) -> None:
        if t is not None and t >= start and not windows.covers(t):
            out.append(f"{what} (changed {_when(t)} UTC, while no audited {during} ran)")

    for name in sorted(set(run.apt.added) | set(run.apt.changed)):
        check(f"apt package {name}", prov.apt_times.get(name), apt_installs,
              "apt/dpkg command")
    for interp in run.interpreters:
        times = prov.dist_times.get(interp.path, {})
        for d in interp.distributions:
            check(f"distribution {d.name} {d.version} in {interp.path}",
                  times.get(str(canonicalize_name(d.name))), py_installs, "Python installer")
    for name, source in sorted(run.env_sources.items()):
        if name in run.persisted_env:
            check(f"variable {name} (set in {source})", prov.file_times.get(source),
                  any_command, "command")
    for path, t in sorted(prov.file_times.items()):
        check(f"file {path}", t, any_command, "command")
    return tuple(out)


def _pth_explained(name: str, dists: set[str]) -> bool:
    stem = name.removesuffix(".pth")
    if stem.startswith(_INSTALLER_PTH):
        return True
    # hatchling's editable install writes _editable_impl_<distribution>.pth.
    stem = stem.removeprefix(_HATCH_EDITABLE)
    return str(canonicalize_name(stem.lstrip("_"))) in dists


_STDLIB_DIR = re.compile(r"python\d+\.\d+$")


def _read_at_start(path: str, on_path: Container[str]) -> bool:
    """A file where Python's start reads a ``.pth`` or imports ``sitecustomize``: right in
    a site folder, the standard library's folder or a ``PYTHONPATH`` folder; one deeper in
    a package (pdm's own ``pdm/pep582/sitecustomize.py``) is that package's data."""
    folder = posixpath.dirname(path)
    name = posixpath.basename(folder)
    return (name in ("site-packages", "dist-packages") or bool(_STDLIB_DIR.match(name))
            or folder in on_path)


def risks(run: LoadedRun) -> tuple[str, ...]:
    out: list[str] = []
    for name, value in sorted(run.persisted_env.items()):
        source = run.env_sources.get(name, "the environment")
        if name in CODE_LOADING_ENV:
            out.append(f"ENV {name}={value} (from {source}) {CODE_LOADING_ENV[name]}")
        for part in value.split(":"):
            reason = noise_reason(part) if part.startswith("/") else None
            if reason is not None and reason != "__pycache__":
                out.append(f"ENV {name} points into {part}, which export does not carry "
                           f"({reason}): the rebuilt image runs without it")
    dists = {str(canonicalize_name(d.name)) for i in run.interpreters
             for d in i.distributions}
    on_path = {p.rstrip("/") for p in run.persisted_env.get("PYTHONPATH", "").split(":") if p}
    for change in (*run.changes, *run.noise):
        if change.kind == "D" or not _read_at_start(change.path, on_path):
            continue
        base = posixpath.basename(change.path)
        if base in _STARTUP_FILES:
            out.append(f"{change.path}: {_STARTUP_FILES[base]}")
        elif base.endswith(".pth") and not _pth_explained(base, dists):
            out.append(f"{change.path}: a .pth file no installed distribution accounts for "
                       "(its import lines run at every Python start)")
    if run.provenance is not None:
        out += [f"{p}: setuid/setgid file added by the agent" for p in run.provenance.setuid]
    return tuple(sorted(set(out)))


def code_loading_risks(found: Mapping[str, Any] | None,
                       carried: Iterable[tuple[str, str]] = (),
                       changed: Container[str] | None = None) -> tuple[str, ...]:
    """Risks the live image's code-loading probe (``pyramid/probes/code_loading.py``)
    names: each ``.pth`` file with lines Python runs at start that no installed
    distribution lists or that changed after install (one as its distribution installed
    it, setuptools' ``distutils-precedence.pth``, an editable install's finder, comes
    with the locked distribution and is not a change), sitecustomize/usercustomize,
    ``/etc/ld.so.preload``; and each distribution file changed after install that the
    artifact carries (``carried``: ``(path, distribution)``). ``changed``: the paths the
    run added or changed; a ``.pth`` or start-up file outside it came with the base image
    (Debian's own ``distutils-precedence.pth``) and is not the run's doing."""
    out: list[str] = []
    for p in (found or {}).get("pth") or ():
        n, path, first = p.get("executable_lines") or 0, p.get("path"), p.get("first")
        if not n or (p.get("owner") and p.get("matches_record")) or (
                changed is not None and path not in changed):
            continue
        runs = f"{n} line(s) Python runs at every start (`{first}`)"
        if not p.get("owner"):
            out.append(f"{path}: a .pth file no installed distribution lists: {runs}")
        else:
            out.append(f"{path}: a .pth file of {p['owner']} changed after install: {runs}")
    for path in (found or {}).get("startup") or ():
        if changed is not None and path not in changed:
            continue
        base = posixpath.basename(str(path))
        out.append(f"{path}: {_STARTUP_FILES.get(base, 'runs at every Python start')}")
    preload = (found or {}).get("ld_so_preload")
    if preload:
        libs = " ".join(preload.split())[:200]
        out.append(f"/etc/ld.so.preload: loads {libs} into every process")
    for path, dist in carried:
        if path.endswith((".py", ".so", ".pth", ".pyx")):
            out.append(f"{path}: code of {dist} changed after install (its RECORD says "
                       "otherwise); the artifact carries the changed file")
    return tuple(sorted(set(out)))


def merged_risks(diff_based: Iterable[str], probed: Iterable[str],
                 probe_ran: bool) -> tuple[str, ...]:
    """The export's risks: the probe names every .pth itself, so where it ran the .pth
    lines read off the container's diff give way to its own."""
    kept = [r for r in diff_based if not (probe_ran and ": a .pth file no installed" in r)]
    return tuple(sorted({*kept, *probed}))
