"""``run.json``: a run's identity and outcome (docs/formats.md), written by the session.

:class:`RunRecord` types every field the session writes; its readers also get the document
as written (``raw``), fields of other writers included, which ``synth runs show`` prints.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

from msgspec import Meta

from synth.formats.base import Count, Digest, Document, Part, RunId, Timestamp

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
    """How the agent was run: ``replay`` a script, ``exec`` a program, ``shell`` a person,
    ``auto`` synth's own setup agent."""

    kind: Literal["replay", "exec", "shell", "auto"]
    script: str | None
    argv: tuple[str, ...] | None
    #: replay: stop at the first failing statement.
    stop_on_error: bool | None = None
    #: exec: the agent's mounts and the names (never the values) of its ``--agent-env``.
    mounts: tuple[AgentMount, ...] | None = None
    env_names: tuple[str, ...] | None = None
    #: auto: how many repairs the agent could make after a failure.
    repair_budget: int | None = None


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


class ToolChange(Part, frozen=True):
    """A source change a project tool's audited command made to its own manifest or lock
    file (``uv add``: pyproject.toml, uv.lock): explained, not a violation
    (synth.record.tool_edits)."""

    kind: Literal["tool_changed"]
    path: str
    change: str
    #: The tool's command as audited (``uv add tabulate``).
    command: str
    #: Its record in audit.jsonl.
    seq: int
    detail: str


class ClaimsCheckRecord(Part, frozen=True):
    """The agent's claims as the session checked them."""

    status: Literal["valid", "invalid", "missing"]
    errors: tuple[str, ...]


class LiveImage(Part, frozen=True, omit_defaults=True):
    ref: str
    id: str | None
    #: False when a secret value was found in the files the agent changed.
    shareable: bool | None = None
    #: When ``synth gc --keep-runs`` removed the image (``YYYY-mm-ddTHH:MM:SSZ``); absent
    #: while it is kept.
    pruned: str | None = None


class RunOwner(Part, frozen=True):
    """The synth process that made the run (``abandoned`` when it is gone)."""

    pid: int
    host: str


class AuditCut(Part, frozen=True):
    """What of the hook's stream was not copied (synth.record.collector)."""

    records: Count
    bytes: Count
    unread: Count


class ProcessSampling(Part, frozen=True):
    """The host's sampling of the agent's processes (synth.record.processes)."""

    sampled: bool
    seen: Count


class AuditCheck(Part, frozen=True):
    """The raw hook stream against synth's own evidence (docs/security.md)."""

    verified: bool | None
    findings: tuple[str, ...]
    cut: AuditCut | None = None
    #: The ``seq`` of each hook record of an installer no process seen from the host
    #: confirms: it explains no change.
    unconfirmed: tuple[int, ...] | None = None
    processes: ProcessSampling | None = None


class RunLimits(Part, frozen=True):
    """The session container's resource limits (synth/formats/limits.py): memory in bytes
    (no swap beyond it), processes, CPUs, writable-layer bytes; null where not limited."""

    memory: int | None
    pids: int | None
    cpus: float | None
    disk: int | None
    #: The storage driver enforced the disk limit.
    disk_enforced: bool


class FailedStatement(Part, frozen=True):
    """A statement of the agent that exited non-zero: its first line (masked), its exit."""

    command: str
    exit: int | None


class LeftoverProcess(Part, frozen=True):
    """A process the agent left running when its part ended (host pids, listed by the
    engine), which synth killed before reading the final state."""

    pid: int
    ppid: int
    command: str
    #: A child of the container's main process.
    main_child: bool


class LimitHit(Part, frozen=True):
    """An agent command during which the kernel enforced a limit: ``memory`` (OOM kills in
    the container's cgroup) or ``pids`` (forks refused), how often, and its exit status."""

    command: str
    kind: Literal["memory", "pids"]
    count: Annotated[int, Meta(ge=1)]
    exit: int | None


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
    limits: RunLimits | None = None
    limit_hits: tuple[LimitHit, ...] | None = None
    leftover_processes: tuple[LeftoverProcess, ...] | None = None
    #: The final state is the truth for export, but a statement that failed is said.
    failed_statements: tuple[FailedStatement, ...] | None = None
    #: Source changes a project tool made to its own files: not violations.
    tool_changes: tuple[ToolChange, ...] | None = None
