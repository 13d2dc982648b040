"""REB's report path in the session: one file, two names.

ResearchEnvBench's agents write their report to ``/opt/scimlopsbench/report.json``; synth's
to ``/synth/claims.json``. At session setup synth makes the first a symlink to the second,
inside the container (:func:`offer_report_path`), so an agent that follows either contract
writes the one file synth reads. synth reads it as before, through the container's archive
API, which never follows a symlink (:meth:`Container.read_file`): whatever the agent makes
of either name, synth never reads a host path. An agent that replaced the symlink by a
file of its own (an atomic rename does) is read at the REB name when the synth name is
absent (:func:`read_claims`).

The profile (:mod:`synth.plugins.reb.plugin`) calls :func:`offer_report_path` after the
repository is copied in, and names :data:`REPORT_PATH` as a second place to read the claims
from at capture (the core reads ``/synth/claims.json`` first).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from synth.engine.base import Mount
from synth.formats.claims import CONTAINER_CLAIMS

REPORT_DIR = "/opt/scimlopsbench"
REPORT_PATH = REPORT_DIR + "/report.json"


class _Container(Protocol):
    def exec(self, argv: Sequence[str]) -> object: ...
    def read_file(self, path: str, *, max_bytes: int | None = None) -> bytes | None: ...


def link_command() -> list[str]:
    """The command (run as root) that makes REB's report path a second name of the claims
    file: the folder is the agent's to write in, as ``/synth`` is."""
    script = (f"mkdir -p {shlex.quote(REPORT_DIR)} && chmod 1777 {shlex.quote(REPORT_DIR)} && "
              f"ln -sfn {shlex.quote(CONTAINER_CLAIMS)} {shlex.quote(REPORT_PATH)}")
    return ["sh", "-c", script]


def report_mount(claims: Path | None) -> list[Mount]:
    """For a verification container: the agent's claims, read-only, at REB's report path
    (REB's probes read their interpreter from it); none without a claims file."""
    return [Mount(claims, REPORT_PATH)] if claims is not None and claims.is_file() else []


def offer_report_path(container: _Container) -> None:
    container.exec(link_command())  # the session's commands run as root
