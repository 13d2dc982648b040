"""Read a run directory (docs/formats.md) into a typed, immutable :class:`LoadedRun`.

Loading is the only I/O of distillation: :func:`synth.distill.plan.distill` is a pure
function of what this returns. Unknown (newer) formats are refused, never guessed at.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from synth.errors import ExportError

#: The newest format of each run file this reader understands.
KNOWN_FORMATS: Mapping[str, int] = {
    "run.json": 1,
    "audit.jsonl": 1,
    "state/apt.json": 1,
    "state/python.json": 1,
    "state/diff.json": 1,
    "state/env.json": 1,
    "state/provenance.json": 1,
}
#: The run files an export is distilled from; their sha256 goes into the manifest.
INPUT_FILES = ("run.json", "audit.jsonl", "state/apt.json", "state/diff.json",
               "state/env.json", "state/python.json", "state/provenance.json")


@dataclass(frozen=True)
class AuditRecord:
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


@dataclass(frozen=True)
class Distribution:
    name: str
    version: str
    installer: str | None
    requested: bool
    direct_url: Mapping[str, Any] | None
    location: str

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


@dataclass(frozen=True)
class AptState:
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


@dataclass(frozen=True)
class PathChange:
    kind: str
    path: str


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
    #: When the session ended (ISO 8601, UTC), for the time-pinned apt snapshot source.
    ended: str | None = None
    #: The base image's RootFS.Layers, RepoDigests and labels (a synth base's recipe).
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
    #: The task's repository, from its task file; None when the task file is gone.
    repo: RepoRef | None
    #: sha256 of each input file that exists, by its path relative to the run directory.
    input_hashes: Mapping[str, str]
    #: When each change happened and which setuid files appeared (None: not captured).
    provenance: Provenance | None = None
    #: The agent's kind (replay, exec, shell), from run.json.
    agent_kind: str | None = None


@dataclass(frozen=True)
class Provenance:
    """``state/provenance.json``: mtimes of changed files, apt packages and distributions."""

    file_times: Mapping[str, float]
    apt_times: Mapping[str, float]
    #: interpreter path -> canonical distribution name -> time
    dist_times: Mapping[str, Mapping[str, float]]
    setuid: tuple[str, ...]


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _read_json(run_dir: Path, rel: str, *, required: bool) -> dict[str, Any]:
    path = run_dir / rel
    if not path.is_file():
        if required:
            raise ExportError(
                f"{path} is missing: {run_dir} is not a complete run directory.",
                hint="Export a run that finished its state snapshot (`synth runs list`).",
            )
        return {"format": KNOWN_FORMATS[rel]}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ExportError(f"{path}: not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ExportError(f"{path}: expected a JSON object")
    _check_format(path, data.get("format"), KNOWN_FORMATS[rel])
    return data


def _check_format(path: Path, got: object, known: int) -> None:
    if not isinstance(got, int):
        raise ExportError(f"{path}: no integer `format` field; not a synth file.")
    if got > known:
        raise ExportError(
            f"{path}: format {got} is newer than this synth understands (<= {known}).",
            hint="Upgrade synth to export this run.",
        )


def _load_audit(run_dir: Path) -> tuple[AuditRecord, ...]:
    path = run_dir / "audit.jsonl"
    if not path.is_file():
        raise ExportError(f"{path} is missing: {run_dir} has no audit log.")
    records: list[AuditRecord] = []
    header_seen = False
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            # A killed session may leave a torn last line; anything else is corruption.
            if number == len(lines):
                break
            raise ExportError(f"{path}:{number}: not valid JSON") from None
        kind = obj.get("type")
        if kind == "header":
            _check_format(path, obj.get("format"), KNOWN_FORMATS["audit.jsonl"])
            header_seen = True
            continue
        if kind != "command":
            continue
        if "command" in obj and isinstance(obj["command"], str):
            text = obj["command"]
        elif isinstance(obj.get("argv"), list):
            import shlex

            text = shlex.join(str(a) for a in obj["argv"])
        else:
            continue
        exit_code = obj.get("exit")
        parent = obj.get("parent_seq")
        records.append(AuditRecord(
            seq=int(obj.get("seq", number)),
            source=str(obj.get("source", "")),
            command=text,
            cwd=str(obj.get("cwd") or "/"),
            exit=int(exit_code) if isinstance(exit_code, int) else None,
            parent_seq=int(parent) if isinstance(parent, int) else None,
            pipestatus=tuple(int(p) for p in obj.get("pipestatus") or () if isinstance(p, int)),
            start=float(obj["start"]) if isinstance(obj.get("start"), int | float) else None,
            end=float(obj["end"]) if isinstance(obj.get("end"), int | float) else None,
            depth=int(obj["depth"]) if isinstance(obj.get("depth"), int) else 0,
            phase=str(obj["phase"]) if obj.get("phase") else None,
        ))
    if not header_seen:
        raise ExportError(f"{path}: no header record; not a synth audit log.")
    return tuple(sorted(records, key=lambda r: r.seq))


def _distribution(obj: Mapping[str, Any]) -> Distribution:
    direct = obj.get("direct_url")
    return Distribution(
        name=str(obj["name"]),
        version=str(obj["version"]),
        installer=str(obj["installer"]).strip() if obj.get("installer") else None,
        requested=bool(obj.get("requested", False)),
        direct_url=direct if isinstance(direct, dict) else None,
        location=str(obj.get("location") or ""),
    )


def _load_repo(task_file: str | None) -> RepoRef | None:
    if not task_file or not Path(task_file).is_file():
        return None
    from synth.task import load_task

    task = load_task(Path(task_file))
    path = task.repo_path
    return RepoRef(path=str(path) if path else None, url=task.repo.url, commit=task.repo.commit)


def repo_name(ref: str) -> str:
    """``registry:5000/name:tag`` -> ``registry:5000/name`` (no tag, no digest)."""
    ref = ref.split("@", 1)[0]
    head, _, last = ref.rpartition("/")
    return (head + "/" if head else "") + last.split(":", 1)[0]


def repo_digest(ref: str, repo_digests: Any) -> str | None:
    """The ``sha256:…`` a registry gave the base ``ref`` (RepoDigests), if any."""
    digests = [str(d) for d in repo_digests if "@sha256:" in str(d)]
    same = [d for d in digests if repo_name(d) == repo_name(ref)]
    chosen = same or sorted(digests)
    return chosen[0].split("@", 1)[1] if chosen else None


def _deb_record(name: str, d: Mapping[str, Any]) -> DebRecord:
    return DebRecord(name=name, version=str(d["version"]), arch=str(d.get("arch") or ""),
                     sha256=str(d["sha256"]), size=int(d["size"]), mirror=str(d["mirror"]),
                     filename=str(d["filename"]))


def load_run(run_dir: Path) -> LoadedRun:
    """Read ``run_dir``; raises :class:`ExportError` naming the file that is wrong."""
    run_dir = run_dir.resolve()
    if not run_dir.is_dir():
        raise ExportError(f"{run_dir} is not a directory.")
    run = _read_json(run_dir, "run.json", required=True)
    apt = _read_json(run_dir, "state/apt.json", required=True)
    python = _read_json(run_dir, "state/python.json", required=True)
    diff = _read_json(run_dir, "state/diff.json", required=False)
    env = _read_json(run_dir, "state/env.json", required=False)
    prov = _read_json(run_dir, "state/provenance.json", required=False)
    try:
        task = run.get("task") or {}
        base = run.get("base_image") or {}
        live = run.get("live_image") or {}
        info = RunInfo(
            run_id=str(run["run_id"]),
            task_name=str(task["name"]),
            task_file=str(task["task_file"]) if task.get("task_file") else None,
            base_ref=str(base["ref"]),
            base_id=str(base["id"]) if base.get("id") else None,
            base_digest=str(base["digest"]) if base.get("digest") else repo_digest(
                str(base["ref"]), base.get("repo_digests") or []),
            status=str(run.get("status", "unknown")),
            wheelhouse=str(run["wheelhouse"]) if run.get("wheelhouse") else None,
            ca_bundle=bool(run.get("ca_bundle", False)),
            live_image=str(live["ref"]) if isinstance(live, dict) and live.get("ref") else None,
            ended=str(run.get("ended") or run.get("started") or "") or None,
            base_rootfs=tuple(str(x) for x in base.get("rootfs") or ()),
            base_repo_digests=tuple(sorted(str(x) for x in base.get("repo_digests") or ())),
            base_labels={str(k): str(v) for k, v in (base.get("labels") or {}).items()},
        )
        interpreters = tuple(
            Interpreter(
                path=str(i["path"]),
                kind=str(i.get("kind", "system")),
                version=str(i.get("version", "")),
                prefix=str(i.get("prefix", "")),
                base_prefix=str(i.get("base_prefix", "")),
                created_by_agent=bool(i.get("created_by_agent", False)),
                distributions=tuple(
                    sorted((_distribution(d) for d in i.get("distributions", [])),
                           key=lambda d: d.name)
                ),
            )
            for i in python.get("interpreters", [])
        )
        changed_raw = apt.get("changed") or {}
        apt_state = AptState(
            base=dict(apt.get("base") or {}),
            final=dict(apt.get("final") or {}),
            added=dict(apt.get("added") or {}),
            changed={k: (str(v[0]), str(v[1])) for k, v in changed_raw.items()},
            removed=dict(apt.get("removed") or {}),
            manual=tuple(sorted(apt.get("manual") or ())),
            debs={str(n): _deb_record(str(n), d) for n, d in (apt.get("debs") or {}).items()},
            debs_captured="debs" in apt,
        )
        changes = tuple(PathChange(str(c["kind"]), str(c["path"]))
                        for c in diff.get("changes", []))
        noise = tuple(PathChange(str(c["kind"]), str(c["path"])) for c in diff.get("noise", []))
        provenance = Provenance(
            file_times={str(k): float(v) for k, v in (prov.get("file_times") or {}).items()},
            apt_times={str(k): float(v) for k, v in (prov.get("apt_times") or {}).items()},
            dist_times={str(i): {str(k): float(v) for k, v in d.items()}
                        for i, d in (prov.get("dist_times") or {}).items()},
            setuid=tuple(str(p) for p in prov.get("setuid") or ()),
        ) if (run_dir / "state" / "provenance.json").is_file() else None
        agent_kind = (run.get("agent") or {}).get("kind")
    except (KeyError, TypeError, IndexError, ValueError) as exc:
        raise ExportError(f"{run_dir}: malformed run file ({type(exc).__name__}: {exc}).") from exc
    hashes = {rel: sha256_file(run_dir / rel) for rel in INPUT_FILES if (run_dir / rel).is_file()}
    return LoadedRun(
        run_dir=run_dir,
        info=info,
        records=_load_audit(run_dir),
        apt=apt_state,
        interpreters=interpreters,
        primary=str(python["primary"]) if python.get("primary") else None,
        changes=changes,
        noise=noise,
        persisted_env={str(k): str(v) for k, v in (env.get("persisted") or {}).items()},
        env_sources={str(k): str(v) for k, v in (env.get("sources") or {}).items()},
        claims_present=(run_dir / "claims.json").is_file(),
        repo=_load_repo(info.task_file),
        input_hashes=hashes,
        provenance=provenance,
        agent_kind=str(agent_kind) if agent_kind else None,
    )
