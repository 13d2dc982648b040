"""Which conda prefixes the artifact recreates, and the exact packages of each.

The final state's ``conda-meta`` records (:class:`~synth.formats.state.CondaPrefix`) name
every package of a prefix with the URL it was fetched from and its digest: the artifact
fetches those same archives, checks them and links them into the same path, with no solve.
A prefix the base image already had is left to the base unless the session added packages
to it; its pip layer is the interpreter's :class:`~synth.formats.plan.PythonEnvPlan`, as
for any environment (the conda packages' own distributions say INSTALLER ``conda`` and are
never locked from an index: :func:`synth.distill.envs.lockable`).
"""

from __future__ import annotations

import re

from synth.distill.common import Notes
from synth.distill.load import Interpreter
from synth.formats.plan import CondaEnvPlan, CondaPin
from synth.formats.state import CondaPackage

_SHA256 = re.compile(r"[0-9a-f]{64}")
_MD5 = re.compile(r"[0-9a-f]{32}")
#: An archive URL a lock line can carry: a scheme conda clients fetch, no blank, no ``#``
#: (the lock's digest separator), ending in the archive's file name.
_URL = re.compile(r"(?:https?|file)://[^\s#]+/[^\s#/]+(?:\.conda|\.tar\.bz2)")
#: A name, version or build as a lock and a comment may carry them.
_WORD = re.compile(r"[A-Za-z0-9_.+!*-]{1,200}")


def slug(prefix: str) -> str:
    """``/opt/conda/envs/research`` -> ``opt-conda-envs-research`` (lock file names)."""
    return re.sub(r"[^a-z0-9]+", "-", prefix.lower()).strip("-") or "root"


def conda_lock_file(prefix: str) -> str:
    return f"conda-{slug(prefix)}.lock"


def conda_pin(p: CondaPackage) -> CondaPin | None:
    """The package as a lock line pins it; None where conda-meta lacks what a checked
    fetch needs (a URL conda clients read, a sha256 or md5) or holds what a lock cannot."""
    sha256 = p.sha256 if p.sha256 and _SHA256.fullmatch(p.sha256) else None
    md5 = p.md5 if p.md5 and _MD5.fullmatch(p.md5) else None
    if not (p.url and _URL.fullmatch(p.url) and (sha256 or md5)):
        return None
    words = (p.name, p.version or "", p.build or "")
    if not all(_WORD.fullmatch(w) for w in words):
        return None
    channel = p.channel if p.channel and not re.search(r"\s", p.channel) else \
        p.url.rsplit("/", 2)[0]
    return CondaPin(name=p.name, version=p.version or "", build=p.build or "", url=p.url,
                    channel=channel, subdir=p.subdir or p.url.rsplit("/", 2)[1],
                    sha256=sha256, md5=None if sha256 else md5)


def conda_plan(interp: Interpreter, notes: Notes) -> CondaEnvPlan | None:
    """How ``interp``'s conda prefix is recreated; None where it is not one, the base image
    has it as it is, or it cannot be pinned (then a note says which packages)."""
    found = interp.conda
    if interp.kind != "conda" or found is None or not found.packages:
        return None
    if not interp.created_by_agent and not found.added:
        return None
    pins, unpinned = [], []
    for p in found.packages:
        pin = conda_pin(p)
        if pin is None:
            unpinned.append(p.name)
        else:
            pins.append(pin)
    if unpinned:
        notes.not_reproducible.append(
            f"conda environment {interp.prefix}: {', '.join(sorted(unpinned)[:8])} "
            "have no archive URL with a sha256 or md5 in conda-meta; the prefix is not "
            "recreated")
        return None
    platforms = sorted({p.subdir for p in pins if p.subdir != "noarch"})
    if len(platforms) > 1:
        notes.warnings.append(f"conda environment {interp.prefix} mixes platforms "
                              f"{', '.join(platforms)}; locked as {platforms[0]}")
    return CondaEnvPlan(
        prefix=interp.prefix, lock_file=conda_lock_file(interp.prefix),
        platform=platforms[0] if platforms else "noarch",
        channels=tuple(sorted({p.channel for p in pins})),
        packages=tuple(sorted(pins, key=lambda p: (p.name, p.version, p.build))),
        # Written into the lock's header comment: one printable line each.
        requested=tuple(r for r in found.requested if r.isprintable() and len(r) < 300))
