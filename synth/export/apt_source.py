"""Where the artifact's .debs come from: the mirror the run used, then a snapshot archive.

apt.lock records, per package, the mirror root and pool path apt's indexes named in the
live container, and the sha256 and size of the .deb. The build fetches each file by URL
(``apt-fetch.sh``), from the recorded mirror first and, when the mirror no longer has it
(Debian drops superseded versions at each point release), from a snapshot archive at the
run's time; then ``sha256sum -c`` checks every file against apt.lock.

The snapshot URL is a template: ``{timestamp}`` becomes the run's end
(``20261129T101640Z``), ``{archive}`` the recorded mirror's archive (``debian``,
``debian-security``), so a site with its own snapshot mirror points synth at it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from synth.errors import UsageError

DEFAULT_APT_SNAPSHOT = "https://snapshot.debian.org/archive/{archive}/{timestamp}/"
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_KNOWN = ("timestamp", "archive")


@dataclass(frozen=True)
class AptSources:
    """The snapshot template as given, what it renders to for one run, and the order."""

    template: str
    #: The template with ``{timestamp}`` filled in (``{archive}`` is filled per package at
    #: build time); None when the run has no time to fill it with.
    url: str | None
    #: ``("mirror", "snapshot")``, or ``("snapshot",)`` with ``snapshot_only``.
    order: tuple[str, ...]


def check_template(template: str) -> str:
    """The template, or a :class:`UsageError` naming what is wrong with it."""
    if not re.match(r"^https?://[^/\s]+", template):
        raise UsageError(f"--apt-snapshot {template!r}: give an http:// or https:// URL.",
                         hint=f"The default is {DEFAULT_APT_SNAPSHOT}", option="--apt-snapshot")
    unknown = [p for p in _PLACEHOLDER.findall(template) if p not in _KNOWN]
    if unknown:
        raise UsageError(f"--apt-snapshot {template!r}: unknown placeholder "
                         f"{{{unknown[0]}}}; the known ones are {{timestamp}} and {{archive}}.",
                         option="--apt-snapshot")
    if any(c.isspace() or c in "'\"\\`$" for c in template):
        raise UsageError(f"--apt-snapshot {template!r}: quotes, spaces, `$` and backslashes "
                         "are not allowed in the URL.", option="--apt-snapshot")
    return template


def apt_sources(template: str | None, timestamp: str | None,
                snapshot_only: bool = False) -> AptSources:
    tpl = check_template(template or DEFAULT_APT_SNAPSHOT)
    url: str | None = tpl
    if "{timestamp}" in tpl:
        url = tpl.replace("{timestamp}", timestamp) if timestamp else None
    if url is not None and not url.endswith("/"):
        url += "/"
    if snapshot_only and url is None:
        raise UsageError("--apt-snapshot-only: the run records no time, so the snapshot URL "
                         f"{tpl} cannot be filled in.",
                         hint="Give a URL without {timestamp}.", option="--apt-snapshot-only")
    order = ("snapshot",) if snapshot_only else (("mirror", "snapshot") if url else ("mirror",))
    return AptSources(template=tpl, url=url, order=order)
