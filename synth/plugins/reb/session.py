"""REB's report path in the session: one file, two names.

ResearchEnvBench's agents write their report to ``/opt/scimlopsbench/report.json``; synth's
to ``/synth/claims.json``. At session setup synth makes the first a symlink to the second,
inside the container (:func:`offer_report_path`), so an agent that follows either contract
writes the one file synth reads. synth reads it as before, through the container's archive
API, which never follows a symlink (:meth:`Container.read_file`): whatever the agent makes
of either name, synth never reads a host path. An agent that replaced the symlink by a
file of its own (an atomic rename does) is read at the REB name when the synth name is
absent (:func:`read_claims`).

Session code calls three functions here: :func:`offer_report_path` after the repository is
copied in, :func:`read_claims` and :func:`validate_claims` at capture (the second applies
the ``reb`` claims profile to tasks imported from REB).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from synth.engine.base import Mount
from synth.plugins.reb.profile import profile_errors, task_profile
from synth.record.agents import CONTAINER_CLAIMS
from synth.record.claims import ClaimsCheck
from synth.record.claims import validate_claims as synth_validate

if TYPE_CHECKING:
    from synth.formats.task import Task

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


def read_claims(container: _Container, max_bytes: int) -> bytes | None:
    """The claims file's bytes: ``/synth/claims.json``, else a regular file the agent left at
    REB's path (a symlink at either name is not followed: it reads as absent)."""
    raw = container.read_file(CONTAINER_CLAIMS, max_bytes=max_bytes)
    if raw is None:
        raw = container.read_file(REPORT_PATH, max_bytes=max_bytes)
    return raw


def validate_claims(task: Task | None, raw: bytes | None) -> ClaimsCheck:
    """synth's check of the claims, then the task's profile (``reb`` for a REB task)."""
    check = synth_validate(raw)
    profile = task_profile(task.task_dir if task is not None else None)
    if profile is None or check.claims is None:
        return check
    errors = profile_errors(check.claims, profile)
    if not errors:
        return check
    return ClaimsCheck("invalid", [*check.errors, *errors], check.claims)
