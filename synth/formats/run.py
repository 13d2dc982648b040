"""``run.json``: a run's identity and outcome (docs/formats.md), written by the session.

:class:`RunRecord` types every field the session writes; its readers also get the document
as written (``raw``), fields of other writers included, which ``synth runs show`` prints.
"""

from __future__ import annotations

from typing import Final, Literal

from synth.formats.base import Digest, Document, Part, RunId, Timestamp

#: The newest run.json format this synth reads and writes.
RUN_FORMAT: Final = 1

RunStatus = Literal["running", "abandoned", "incomplete", "succeeded", "failed", "timeout",
                    "interrupted", "error"]


class RunTask(Part, frozen=True):
    name: str
    task_file: str


class AgentMount(Part, frozen=True):
    """A folder an ``exec`` agent's own tooling is mounted from."""

    source: str
    target: str
    read_only: bool


class RunAgent(Part, frozen=True):
    """How the agent was run: ``replay`` a script, ``exec`` a program, ``shell`` a person."""

    kind: Literal["replay", "exec", "shell"]
    script: str | None
    argv: tuple[str, ...] | None
    #: replay: stop at the first failing statement.
    stop_on_error: bool | None = None
    #: exec: the agent's mounts and the names (never the values) of its ``--agent-env``.
    mounts: tuple[AgentMount, ...] | None = None
    env_names: tuple[str, ...] | None = None


class RunBaseImage(Part, frozen=True):
    ref: str
    id: str | None
    labels: dict[str, str]
    #: A registry digest of the base (no run.json has one: the session records
    #: ``repo_digests``).
    digest: str | None = None
    #: docker image inspect ``RootFS.Layers`` of the base.
    rootfs: tuple[str, ...] | None = None
    #: docker image inspect ``RepoDigests`` of the base (empty for a local image).
    repo_digests: tuple[str, ...] | None = None


class TreeChange(Part, frozen=True):
    path: str
    change: Literal["modified", "deleted", "added"]


class SourceTree(Part, frozen=True):
    """``/workspace`` hashed before and after the agent (docs/formats.md)."""

    before: Digest
    after: Digest
    changed: tuple[TreeChange, ...]


class Violation(Part, frozen=True):
    kind: str
    path: str | None = None
    change: str | None = None
    detail: str | None = None


class ClaimsCheckRecord(Part, frozen=True):
    """The agent's claims as the session checked them."""

    status: Literal["valid", "invalid", "missing"]
    errors: tuple[str, ...]


class LiveImage(Part, frozen=True):
    ref: str
    id: str | None
    #: False when a secret value was found in the files the agent changed.
    shareable: bool | None = None


class RunOwner(Part, frozen=True):
    """The synth process that made the run (``abandoned`` when it is gone)."""

    pid: int
    host: str


class AuditCheck(Part, frozen=True):
    """The raw hook stream against synth's own evidence (docs/security.md)."""

    verified: bool | None
    findings: tuple[str, ...]


class RunRecord(Document, frozen=True, kw_only=True):
    """``run.json``. ``raw`` is the document as read (fields no type here names are kept
    there: ``synth runs show`` prints it whole)."""

    format: Literal[1]
    run_id: RunId
    synth_version: str
    task: RunTask
    agent: RunAgent
    base_image: RunBaseImage
    started: Timestamp
    ended: Timestamp | None
    status: RunStatus
    agent_exit_code: int | None
    timeout: float | None
    source_tree: SourceTree | None
    violations: tuple[Violation, ...]
    claims: ClaimsCheckRecord
    live_image: LiveImage | None
    container: str | None
    kept: bool
    wheelhouse: str | None
    ca_bundle: bool
    #: The names (never the values) of the ``--agent-env`` variables.
    secret_env: tuple[str, ...]
    capture_errors: tuple[str, ...]
    error: str | None
    trace_exec: bool | None = None
    owner: RunOwner | None = None
    audit: AuditCheck | None = None
    #: Paths of files the agent changed that hold a secret value.
    secret_findings: tuple[str, ...] | None = None
