"""What the export carries beyond the lock, and what it may not leave out (pure).

* A file of an installed distribution whose sha256 no longer matches its RECORD (the
  agent's ``sed -i`` in site-packages) is *carried*: copied from the live image into
  ``carried/`` and put back after the lock installs, then checked with ``sha256sum -c``
  (:class:`CarriedFile`, ``carried.sha256``). One of a distribution a native step builds
  (a local or VCS install, which writes it again) is put back after the native steps
  instead (``carried-after-builds.sha256``).
* Every distribution of a reproduced environment is locked, built by a native step, or it
  is *missing*: the export fails naming it unless ``--allow-missing``.
* Paths a Debian package owns (``/var/lib/dpkg/info/*.list``) are apt's, never
  "unexplained".
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from packaging.utils import canonicalize_name

from synth.formats.plan import CarriedFile

if TYPE_CHECKING:
    from synth.formats.fingerprint import Fingerprint

CARRIED_SUMS = "carried.sha256"
CARRIED_LATE_SUMS = "carried-after-builds.sha256"


def norm_name(name: str) -> str:
    """PEP 503 normalised distribution name (packaging's ``canonicalize_name``)."""
    return str(canonicalize_name(name))


_norm = norm_name


def dpkg_explained(unexplained: Iterable[str], dpkg_paths: frozenset[str]) -> tuple[str, ...]:
    """``unexplained`` ("K /path" lines) without the paths a Debian package owns."""
    return tuple(line for line in unexplained
                 if line.partition(" ")[2] not in dpkg_paths)


def modified_files(fp: Fingerprint, rebuilt_by_step: Iterable[str],
                   ) -> tuple[CarriedFile, ...]:
    """Each file whose sha256 differs from its distribution's RECORD, to carry.

    ``rebuilt_by_step``: distributions a native step builds (it writes their files again),
    whose modified files are put back after the native steps."""
    step_built = {_norm(n) for n in rebuilt_by_step}
    carried: list[CarriedFile] = []
    for d in fp.distributions:
        if d.shadowed or d.editable:
            continue
        for rel, digest in sorted(d.modified.items()):
            if digest.startswith("symlink:"):
                continue
            path = posixpath.normpath(posixpath.join(d.location, rel))
            carried.append(CarriedFile(path=path, sha256=digest, distribution=d.name,
                                       after_builds=_norm(d.name) in step_built))
    return tuple(sorted(carried, key=lambda c: c.path))


def carried_sums(files: Sequence[CarriedFile]) -> str:
    """``carried.sha256``: what ``sha256sum -c`` checks after the files are put back."""
    return "".join(f"{f.sha256}  {f.path}\n" for f in files)


def unreproduced(fp: Fingerprint, pins: Mapping[str, str], built: Iterable[str],
                 debian_site: str = "/usr/lib/python3/dist-packages",
                 conda_prefixes: Iterable[str] = ()) -> tuple[str, ...]:
    """Distributions in the final state that nothing in the artifact reproduces.

    ``pins``: name -> version of the primary environment's lock; ``built``: names a native
    step builds; ``conda_prefixes``: the prefixes the artifact recreates from their conda
    locks, whose conda-installed distributions (``INSTALLER`` ``conda``) come with them.
    A distribution from Debian's own site directory is apt's. An editable one
    is reproduced only by a step that installs it again: its code is in the source the
    artifact carries, but without its metadata and ``.pth`` it is not installed."""
    locked = {_norm(n): v for n, v in pins.items()}
    step_built = {_norm(n) for n in built}
    conda = tuple(p.rstrip("/") + "/" for p in conda_prefixes)
    out: list[str] = []
    for d in fp.distributions:
        key = _norm(d.name)
        if d.shadowed or d.location.startswith(debian_site) or d.source == "os package":
            continue
        if conda and d.installer == "conda" and d.location.startswith(conda):
            continue
        if key in step_built:
            continue
        if key not in locked:
            out.append(f"{d.name} {d.version or '?'} ({d.source}, in {d.location}) is "
                       "neither locked nor built by a step")
        elif d.version and locked[key] != d.version:
            out.append(f"{d.name} {d.version} is locked at {locked[key]}")
    return tuple(sorted(out))
