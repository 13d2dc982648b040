"""What the report says besides the outcomes: paths no kept step explains, and notes on
what the artifact cannot reproduce exactly."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence

from synth.distill.common import Notes
from synth.distill.envs import lockable
from synth.distill.load import Interpreter, LoadedRun
from synth.distill.managed_python import bookkeeping_paths, explained_paths
from synth.formats.plan import AptPlan, ManagedPython, NativeStep, PythonEnvPlan
from synth.formats.state import DEBIAN_SITE

#: What the apt layer explains: a package install touches these.
_APT_ROOTS = ("/usr/bin", "/usr/sbin", "/usr/lib", "/usr/libexec", "/usr/include",
              "/usr/share", "/etc", "/var/lib/dpkg", "/var/lib/apt", "/var/cache",
              "/var/log", "/var/lib/ucf", "/var/lib/dbus", "/var/lib/systemd", "/sbin",
              "/usr/local/share/fonts", "/usr/local/share/ca-certificates",
              "/bin", "/lib", "/lib64", "/usr/lib64", "/var/lib/pam", "/usr/src")
_SYSTEM_PY_ROOTS = ("/usr/local/lib", "/usr/local/bin", "/usr/local/include",
                    "/usr/local/share")


def _covered(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _explained_roots(run: LoadedRun, envs: Sequence[PythonEnvPlan],
                     native: Sequence[NativeStep], apt: AptPlan,
                     include: Sequence[str]) -> list[str]:
    roots: list[str] = [*include]
    for e in envs:
        if e.kind == "system":
            roots += _SYSTEM_PY_ROOTS
        else:
            roots.append(e.prefix)
    if apt.pins or apt.remove:
        roots += _APT_ROOTS
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
    return roots


def unexplained(run: LoadedRun, envs: Sequence[PythonEnvPlan], native: Sequence[NativeStep],
                apt: AptPlan, include: Sequence[str],
                pythons: Sequence[ManagedPython] = ()) -> tuple[str, ...]:
    """``KIND PATH`` of each change no kept step explains (``pythons``: the downloaded
    interpreters the artifact unpacks, with their links)."""
    roots = _explained_roots(run, envs, native, apt, include)
    roots += [path for p in pythons for path in explained_paths(p)]
    exact = {path for p in pythons for path in bookkeeping_paths(p)}
    changed = [c for c in run.changes if not _covered(c.path, roots) and c.path not in exact]
    # A directory is listed through what changed below it, never by itself; one made to
    # hold something a kept step explains is explained with it.
    below = [c.path for c in (*run.changes, *run.noise)]
    leftover = [c for c in changed
                if not (any(_covered(r, [c.path]) for r in roots)
                        or (c.kind == "C" and any(b != c.path and _covered(b, [c.path])
                                                  for b in below)))]
    # An added folder that holds only noise (~/.local made for ~/.local/state's logs) is
    # noise with it; an empty one stays listed.
    noisy, real = _folders_above(c.path for c in run.noise), _folders_above(
        c.path for c in run.changes)
    leftover = [c for c in leftover
                if not (c.kind == "A" and c.path in noisy and c.path not in real)]
    added = {c.path for c in leftover if c.kind == "A"}
    out = [f"{c.kind} {c.path}" for c in leftover
           if not any(_covered(c.path, [a]) and a != c.path for a in added)]
    return tuple(sorted(set(out)))


def _folders_above(paths: Iterable[str]) -> set[str]:
    """Every folder above one of ``paths`` (``/a`` and ``/a/b`` for ``/a/b/c``)."""
    out: set[str] = set()
    for path in paths:
        head = posixpath.dirname(path)
        while head not in out and head not in ("/", ""):
            out.add(head)
            head = posixpath.dirname(head)
    return out


def add_notes(run: LoadedRun, envs_in: Sequence[Interpreter],
              explained: frozenset[tuple[str, str]], apt: AptPlan, notes: Notes) -> None:
    """Distributions nothing explains, conda environments, unhashed .debs, a base image
    without a digest."""
    for interp_path, name in sorted(
        (i.path, d.name) for i in envs_in for d in i.distributions
        if not lockable(d) and not d.location.startswith(DEBIAN_SITE)
        and (i.path, d.name) not in explained
    ):
        notes.warnings.append(f"distribution {name} in {interp_path} was not installed from "
                              "an index and no audited command explains it; it is not "
                              "reproduced")
    for i in run.interpreters:
        if i not in envs_in and i.kind == "conda":
            notes.not_reproducible.append(f"conda environment {i.prefix} "
                                          f"({len(i.distributions)} distributions) is not "
                                          "reproduced")
    if apt.unhashed:
        why = ("apt's package lists were gone at the end of the run" if run.apt.debs_captured
               else "the run predates .deb hashing")
        notes.warnings.append(
            f"{len(apt.unhashed)} Debian package(s) are pinned by version only, without a "
            f"sha256 ({why}): {', '.join(n for n, _ in apt.unhashed[:8])}"
            f"{' …' if len(apt.unhashed) > 8 else ''}")
    if run.info.base_digest is None:
        notes.warnings.append(no_digest_warning(run))


def no_digest_warning(run: LoadedRun) -> str:
    """The warning for a base with no registry digest (the exporter drops it for synth's
    own base, which the artifact names by the digest synth publishes it under)."""
    return (f"base image {run.info.base_ref} has no registry digest; the local image ID "
            f"{run.info.base_id or '(unknown)'} is recorded in manifest.json — rebuild on a "
            "machine that has that same image")
