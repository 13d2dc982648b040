"""Read a run directory (docs/formats.md) into a typed, immutable :class:`LoadedRun`.

Loading is the only I/O of distillation: :func:`synth.distill.plan.distill` is a pure
function of what this returns. Every file is read through :mod:`synth.formats.store` (one loader
per file, one error policy); unknown (newer) formats are refused, never guessed at.
"""

from __future__ import annotations

import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from synth.errors import ExportError, InputFileError
from synth.formats.audit import AuditRecord
from synth.formats.state import (
    AptState,
    DebRecord,
    Distribution,
    Interpreter,
    NoiseChange,
    PathChange,
    Provenance,
)
from synth.formats.store import CLAIMS, RunDir, is_file, sha256_file
from synth.formats.task import load_task
from synth.util.noise import noise_reason

__all__ = [
    "AptState", "AuditRecord", "DebRecord", "Distribution", "Interpreter", "LoadedRun",
    "PathChange", "Provenance", "RepoRef", "RunInfo", "load_run", "repo_digest", "repo_name",
    "sha256_file",
]


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    task_name: str
    task_file: str | None
    base_ref: str
    base_id: str | None
    base_digest: str | None
    status: str
    wheelhouse: str | None
    ca_bundle: bool
    live_image: str | None
    #: When the run ended (ISO 8601), for the apt snapshot's timestamp; None if unknown.
    ended: str | None = None
    #: The base image's RootFS.Layers and RepoDigests, as the run saw them.
    base_rootfs: tuple[str, ...] = ()
    base_repo_digests: tuple[str, ...] = ()
    base_labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RepoRef:
    """The task's repository: a host folder, or a git URL at a commit."""

    path: str | None
    url: str | None
    commit: str | None


@dataclass(frozen=True)
class LoadedRun:
    run_dir: Path
    info: RunInfo
    records: tuple[AuditRecord, ...]
    apt: AptState
    interpreters: tuple[Interpreter, ...]
    primary: str | None
    changes: tuple[PathChange, ...]
    noise: tuple[PathChange, ...]
    persisted_env: Mapping[str, str]
    env_sources: Mapping[str, str]
    claims_present: bool
    #: Why claims.json is not valid (it is exported anyway, and C5 fails on it), or None.
    claims_error: str | None
    #: The task's repository, from its task file; None when the task file is gone.
    repo: RepoRef | None
    #: sha256 of each input file that exists, by its path relative to the run directory.
    input_hashes: Mapping[str, str]
    #: When each change happened and which setuid files appeared (None: not captured).
    provenance: Provenance | None = None
    #: The agent's kind (replay, exec, shell), from run.json.
    agent_kind: str | None = None
    #: ``seq`` of the installer records no process seen from the host confirmed
    #: (run.json ``audit.unconfirmed``): they explain no change (synth.record.processes).
    unconfirmed: frozenset[int] = frozenset()


def repo_name(ref: str) -> str:
    """``registry:5000/name:tag`` -> ``registry:5000/name`` (no tag, no digest)."""
    ref = ref.split("@", 1)[0]
    head, _, last = ref.rpartition("/")
    return (head + "/" if head else "") + last.split(":", 1)[0]


def repo_digest(ref: str, repo_digests: Sequence[Any]) -> str | None:
    """The ``sha256:…`` a registry gave the base ``ref`` (RepoDigests), if any. Only a
    digest of ``ref``'s own repository counts: the Dockerfile renders ``FROM <ref's
    repository>@<digest>``, which another repository's digest would not resolve."""
    same = sorted(str(d) for d in repo_digests
                  if "@sha256:" in str(d) and repo_name(str(d)) == repo_name(ref))
    return same[0].split("@", 1)[1] if same else None


def _load_repo(task_file: str | None) -> RepoRef | None:
    if not task_file or not is_file(task_file):
        return None

    task = load_task(Path(task_file))
    path = task.repo_path
    return RepoRef(path=str(path) if path else None, url=task.repo.url, commit=task.repo.commit)


def _claims_error(run: RunDir) -> str | None:
    """Why the run's claims.json is bad (it travels anyway: C5 fails on it), or None.
    One that is not a regular file, or over its size cap, is refused outright: export
    would follow the link or copy (and verify load) the whole of it."""
    path = run.file(CLAIMS)
    if not run.has(CLAIMS):
        return None
    info = path.lstat()
    if not stat.S_ISREG(info.st_mode):
        raise InputFileError(f"{path}: not a regular file; refused", path=path)
    if info.st_size > CLAIMS.max_bytes:
        raise InputFileError(f"{path}: {info.st_size} bytes, over the "
                             f"{CLAIMS.max_bytes}-byte limit of a claims.json; refused unread",
                             path=path)
    try:
        run.claims()
    except InputFileError as exc:
        return exc.message
    return None


def _agent_records(run: RunDir) -> tuple[AuditRecord, ...]:
    """The audit's commands without synth's own (``phase`` ``synth``: setup, capture)."""
    return tuple(r for r in run.audit_commands() if r.phase != "synth")


def renoise(changes: Sequence[PathChange], noise: Sequence[PathChange]
            ) -> tuple[tuple[PathChange, ...], tuple[PathChange, ...]]:
    """The run's changes and noise by today's rules (synth.util.noise): a run recorded
    before a path became noise (``~/.local/state``) has it among its changes."""
    kept: list[PathChange] = []
    moved: list[PathChange] = []
    for c in changes:
        reason = noise_reason(c.path)
        if reason is None:
            kept.append(c)
        else:
            moved.append(NoiseChange(kind=c.kind, path=c.path, reason=reason))
    if not moved:
        return tuple(changes), tuple(noise)
    return tuple(kept), tuple(sorted((*noise, *moved), key=lambda c: (c.path, c.kind)))


def load_run(run_dir: Path, *, with_task: bool = True) -> LoadedRun:
    """Read ``run_dir``; raises :class:`InputFileError` naming the file that is wrong.
    ``with_task=False`` leaves the task file unread (``repo`` None): for readers such as
    diff that need the run's own files only."""
    run_dir = run_dir.resolve()
    if not run_dir.is_dir():
        raise ExportError(f"{run_dir} is not a directory.", path=run_dir)
    run = RunDir(run_dir)
    record = run.run_record()
    python = run.python_state()
    diff = run.diff_state()
    env = run.env_state()
    base = record.base_image
    repo_digests = tuple(sorted(base.repo_digests or ()))
    info = RunInfo(
        run_id=record.run_id, task_name=record.task.name, task_file=record.task.task_file or None,
        base_ref=base.ref, base_id=base.id or None,
        base_digest=base.digest or repo_digest(base.ref, repo_digests),
        status=record.status, wheelhouse=record.wheelhouse or None, ca_bundle=record.ca_bundle,
        live_image=record.live_image.ref if record.live_image is not None else None,
        ended=record.ended or record.started or None, base_rootfs=base.rootfs or (),
        base_repo_digests=repo_digests, base_labels=dict(base.labels),
    )
    changes, noise = renoise(diff.changes, diff.noise)
    return LoadedRun(
        run_dir=run_dir, info=info, records=_agent_records(run), apt=run.apt_state(),
        interpreters=python.interpreters, primary=python.primary, changes=changes,
        noise=noise, persisted_env=env.persisted, env_sources=env.sources,
        claims_present=run.has(CLAIMS), claims_error=_claims_error(run),
        repo=_load_repo(info.task_file) if with_task else None,
        input_hashes=run.input_hashes(), provenance=run.provenance(),
        agent_kind=record.agent.kind,
        unconfirmed=frozenset(record.audit.unconfirmed or ()) if record.audit else frozenset(),
    )
