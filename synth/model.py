"""Typed, immutable forms of the run and artifact files (docs/formats.md).

Pure: no I/O. :mod:`synth.store` reads a file, checks its size, encoding, format number
and JSON Schema, and only then calls ``from_json`` here, so ``from_json`` may rely on the
schema (required fields present, types right). Each file has one format constant.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: The newest format of each file this synth reads and writes.
RUN_FORMAT = 1
AUDIT_FORMAT = 1
APT_STATE_FORMAT = 1
PYTHON_STATE_FORMAT = 1
DIFF_STATE_FORMAT = 1
ENV_STATE_FORMAT = 1
PROVENANCE_STATE_FORMAT = 1
MANIFEST_FORMAT = 1
EXPORT_REPORT_FORMAT = 1
#: verify.json (verify.result.VERIFY_FORMAT writes it; verify/ does not import synth).
VERIFY_FORMAT = 1


def _opt_str(value: Any) -> str | None:
    return str(value) if value else None


def _opt_int(value: Any) -> int | None:
    """An integer field (JSON Schema also calls ``2.0`` an integer)."""
    return int(value) if value is not None else None


@dataclass(frozen=True)
class RunRecord:
    """``run.json``: a run's identity and outcome. ``raw`` is the whole validated document."""

    run_id: str
    task_name: str
    task_file: str | None
    agent_kind: str
    agent_script: str | None
    base_ref: str
    base_id: str | None
    base_digest: str | None
    status: str
    started: str
    ended: str | None
    wheelhouse: str | None
    ca_bundle: bool
    live_image: str | None
    claims_status: str
    violations: int
    capture_errors: tuple[str, ...]
    error: str | None
    raw: Mapping[str, Any]

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> RunRecord:
        task, agent, base = doc["task"], doc["agent"], doc["base_image"]
        live = doc.get("live_image") or {}
        return cls(
            run_id=str(doc["run_id"]), task_name=str(task["name"]),
            task_file=_opt_str(task.get("task_file")), agent_kind=str(agent["kind"]),
            agent_script=_opt_str(agent.get("script")), base_ref=str(base["ref"]),
            base_id=_opt_str(base.get("id")), base_digest=_opt_str(base.get("digest")),
            status=str(doc["status"]), started=str(doc["started"]),
            ended=_opt_str(doc.get("ended")), wheelhouse=_opt_str(doc.get("wheelhouse")),
            ca_bundle=bool(doc["ca_bundle"]), live_image=_opt_str(live.get("ref")),
            claims_status=str((doc.get("claims") or {}).get("status", "missing")),
            violations=len(doc.get("violations") or ()),
            capture_errors=tuple(str(e) for e in doc.get("capture_errors") or ()),
            error=_opt_str(doc.get("error")), raw=doc,
        )


@dataclass(frozen=True)
class AuditRecord:
    """One ``command`` record of ``audit.jsonl``."""

    seq: int
    source: str
    command: str
    cwd: str
    exit: int | None
    parent_seq: int | None = None
    pipestatus: tuple[int, ...] = ()
    start: float | None = None
    end: float | None = None
    #: Nesting of the shell that ran it (0: the agent's own ``bash -c``).
    depth: int = 0
    #: For ``synth`` records: whose command it was (``agent``, or synth's own work).
    phase: str | None = None

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> AuditRecord:
        text = obj.get("command")
        if not isinstance(text, str):
            text = shlex.join(str(a) for a in obj.get("argv") or ())
        start, end = obj.get("start"), obj.get("end")
        return cls(
            seq=int(obj["seq"]), source=str(obj["source"]), command=text,
            cwd=str(obj.get("cwd") or "/"), exit=_opt_int(obj.get("exit")),
            parent_seq=_opt_int(obj.get("parent_seq")),
            pipestatus=tuple(p for p in obj.get("pipestatus") or () if isinstance(p, int)),
            start=float(start) if start is not None else None,
            end=float(end) if end is not None else None,
            depth=int(obj.get("depth") or 0), phase=_opt_str(obj.get("phase")),
        )


@dataclass(frozen=True)
class AuditLog:
    """``audit.jsonl``: the header and every record after it, as validated documents."""

    header: Mapping[str, Any]
    records: tuple[Mapping[str, Any], ...]

    def commands(self) -> tuple[AuditRecord, ...]:
        """The command records (not ``unparsed`` lines, nor a shell record with no text),
        typed, ordered by ``seq``."""
        cmds = (AuditRecord.from_json(r) for r in self.records if r.get("type") == "command"
                and (isinstance(r.get("command"), str) or isinstance(r.get("argv"), list)))
        return tuple(sorted(cmds, key=lambda r: r.seq))


@dataclass(frozen=True)
class Distribution:
    name: str
    version: str
    installer: str | None
    requested: bool
    direct_url: Mapping[str, Any] | None
    location: str

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Distribution:
        direct = obj.get("direct_url")
        return cls(
            name=str(obj["name"]), version=str(obj.get("version") or ""),
            installer=str(obj["installer"]).strip() if obj.get("installer") else None,
            requested=bool(obj.get("requested")),
            direct_url=direct if isinstance(direct, dict) else None,
            location=str(obj.get("location") or ""),
        )

    @property
    def url(self) -> str | None:
        return str(self.direct_url["url"]) if self.direct_url and "url" in self.direct_url else None

    @property
    def editable(self) -> bool:
        info = (self.direct_url or {}).get("dir_info") or {}
        return bool(info.get("editable", False))

    @property
    def vcs_info(self) -> Mapping[str, Any] | None:
        info = (self.direct_url or {}).get("vcs_info")
        return info if isinstance(info, Mapping) else None


@dataclass(frozen=True)
class Interpreter:
    path: str
    kind: str
    version: str
    prefix: str
    base_prefix: str
    created_by_agent: bool
    distributions: tuple[Distribution, ...]

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Interpreter:
        dists = (Distribution.from_json(d) for d in obj.get("distributions") or ())
        return cls(
            path=str(obj["path"]), kind=str(obj["kind"]), version=str(obj.get("version") or ""),
            prefix=str(obj.get("prefix") or ""), base_prefix=str(obj.get("base_prefix") or ""),
            created_by_agent=bool(obj["created_by_agent"]),
            distributions=tuple(sorted(dists, key=lambda d: d.name)),
        )


@dataclass(frozen=True)
class PythonState:
    """``state/python.json``."""

    interpreters: tuple[Interpreter, ...]
    primary: str | None
    errors: tuple[Any, ...]

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> PythonState:
        return cls(
            interpreters=tuple(Interpreter.from_json(i) for i in doc["interpreters"]),
            primary=_opt_str(doc.get("primary")), errors=tuple(doc.get("errors") or ()),
        )

    def primary_interpreter(self) -> Interpreter | None:
        return next((i for i in self.interpreters if i.path == self.primary), None)


@dataclass(frozen=True)
class DebRecord:
    """One pinned .deb as apt's indexes in the live container described it."""

    name: str
    version: str
    arch: str
    sha256: str
    size: int
    #: The archive root it came from (``http://deb.debian.org/debian``) and the pool path.
    mirror: str
    filename: str

    @classmethod
    def from_json(cls, name: str, d: Mapping[str, Any]) -> DebRecord:
        return cls(name=name, version=str(d["version"]), arch=str(d.get("arch") or ""),
                   sha256=str(d["sha256"]), size=int(d["size"]), mirror=str(d["mirror"]),
                   filename=str(d["filename"]))


@dataclass(frozen=True)
class AptState:
    """``state/apt.json``."""

    base: Mapping[str, str]
    final: Mapping[str, str]
    added: Mapping[str, str]
    changed: Mapping[str, tuple[str, str]]
    removed: Mapping[str, str]
    manual: tuple[str, ...]
    #: Content hashes of the pinned .debs (runs before they were captured have none).
    debs: Mapping[str, DebRecord] = field(default_factory=dict)
    #: True when the run captured .deb hashes at all (an older run did not).
    debs_captured: bool = False

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> AptState:
        def names(key: str) -> dict[str, str]:
            return {str(k): str(v) for k, v in doc[key].items()}

        return cls(
            base=names("base"), final=names("final"), added=names("added"),
            changed={str(k): (str(v[0]), str(v[1])) for k, v in doc["changed"].items()},
            removed=names("removed"), manual=tuple(sorted(str(m) for m in doc["manual"])),
            debs={str(n): DebRecord.from_json(str(n), d)
                  for n, d in (doc.get("debs") or {}).items()},
            debs_captured="debs" in doc,
        )


@dataclass(frozen=True)
class Provenance:
    """``state/provenance.json``: mtimes of changed files, apt packages and distributions,
    and the setuid/setgid files the agent added (synth.distill.provenance)."""

    file_times: Mapping[str, float]
    apt_times: Mapping[str, float]
    #: interpreter path -> canonical distribution name -> time
    dist_times: Mapping[str, Mapping[str, float]]
    setuid: tuple[str, ...]

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Provenance:
        return cls(
            file_times={str(k): float(v) for k, v in doc["file_times"].items()},
            apt_times={str(k): float(v) for k, v in doc["apt_times"].items()},
            dist_times={str(i): {str(k): float(v) for k, v in d.items()}
                        for i, d in doc["dist_times"].items()},
            setuid=tuple(str(p) for p in doc["setuid"]),
        )


@dataclass(frozen=True)
class PathChange:
    kind: str
    path: str


@dataclass(frozen=True)
class DiffState:
    """``state/diff.json``: the session container's changes, noise apart."""

    changes: tuple[PathChange, ...]
    noise: tuple[PathChange, ...]

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> DiffState:
        def changes(key: str) -> tuple[PathChange, ...]:
            return tuple(PathChange(str(c["kind"]), str(c["path"])) for c in doc[key])

        return cls(changes=changes("changes"), noise=changes("noise"))


@dataclass(frozen=True)
class EnvState:
    """``state/env.json``: persisted environment variables and where each was set."""

    persisted: Mapping[str, str]
    sources: Mapping[str, str]

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> EnvState:
        return cls(persisted={str(k): str(v) for k, v in doc["persisted"].items()},
                   sources={str(k): str(v) for k, v in doc["sources"].items()})


@dataclass(frozen=True)
class Manifest:
    """An artifact's ``manifest.json``. ``raw`` is the whole validated document."""

    task: str
    run_id: str
    synth_version: str
    python: str | None
    base_ref: str | None
    files: Mapping[str, str]
    inputs: Mapping[str, str]
    claims: str | None
    raw: Mapping[str, Any]

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Manifest:
        base = doc["base_image"]
        return cls(
            task=str(doc["task"]), run_id=str(doc["run_id"]),
            synth_version=str(doc["synth_version"]), python=_opt_str(doc.get("python")),
            base_ref=_opt_str(base.get("ref")), files=dict(doc["files"]),
            inputs=dict(doc.get("inputs") or {}), claims=_opt_str(doc.get("claims")), raw=doc,
        )
