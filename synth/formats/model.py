"""Typed, immutable forms of the run and artifact files (docs/formats.md).

Pure: no I/O. :mod:`synth.formats.store` reads a file, checks its size, encoding, format number
and JSON Schema, and only then calls ``from_json`` here, so ``from_json`` may rely on the
schema (required fields present, types right). Each file has one format constant.
"""

from __future__ import annotations

import functools
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from operator import attrgetter
from typing import Any, NamedTuple

from synth.errors import InputFileError
from synth.pyramid.result import Report
from synth.util.frozen import cheap_init

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
#: plan.json: the frozen BuildPlan and DistillReport an artifact was rendered from (2: the
#: report without its per-command outcomes, which format 1 repeated; both are read).
PLAN_FORMAT = 2
#: Its name in an artifact: diff and verify read it, never the rendered Dockerfile.
PLAN_FILE = "plan.json"
#: verify.json: :class:`VerifyDocument` writes it, the store refuses a newer one.
VERIFY_FORMAT = 1
#: ``verification.json``, the record verify leaves in an artifact folder.
VERIFICATION_FORMAT = 1


_new_tuple = tuple.__new__


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

    def to_json(self) -> dict[str, Any]:
        """The document it was read from: ``raw`` is kept whole, and the typed fields are
        derived from it (the session writes run.json, not this method)."""
        return dict(self.raw)


#: The keys of a ``command`` record of ``audit.jsonl`` by its source (docs/formats.md);
#: ``incomplete`` and ``pipeline`` are written only when true.
_AUDIT_COMMON = ("type", "source", "session", "seq", "command", "cwd", "start", "end", "exit",
                 "pipestatus")
_SHELL_KEYS = (*_AUDIT_COMMON, "pid", "ppid", "cwd_end", "depth", "parent_seq")
AUDIT_KEYS: Mapping[str, tuple[str, ...]] = {
    "bash-c": _SHELL_KEYS, "bash-script": _SHELL_KEYS, "bash-shell": _SHELL_KEYS,
    "bash-hook": (*_AUDIT_COMMON, "pid", "depth", "parent_seq"),
    "synth": (*_AUDIT_COMMON, "argv", "timed_out", "phase"),
    "exec-trace": (*_AUDIT_COMMON, "pid", "path", "argv"),
}


class AuditRecord(NamedTuple):
    """One ``command`` record of ``audit.jsonl``: read by distill, written by the session
    (:func:`synth.record.audit.merge_audit`). A named tuple, not a dataclass: a long log
    has 100,000 of them, and a tuple is made in one call and holds its 21 fields without a
    dict (a quarter of the memory)."""

    seq: int
    source: str
    #: The command's text; ``""`` when a hook record named none (written as null).
    command: str
    #: ``"/"`` when the record has none (``cwd_known`` false; written as null).
    cwd: str
    exit: int | None
    parent_seq: int | None = None
    pipestatus: tuple[int, ...] = ()
    start: float | None = None
    end: float | None = None
    #: Nesting of the shell that ran it (0: the agent's own ``bash -c``).
    depth: int = 0
    #: For ``synth`` records: whose command it was (``agent``, or ``synth``'s own work).
    phase: str | None = None
    session: str = ""
    pid: int | None = None
    ppid: int | None = None
    cwd_known: bool = True
    #: A shell's working directory when it exited.
    cwd_end: str | None = None
    #: The argv of a ``synth`` or ``exec-trace`` record.
    argv: tuple[str, ...] = ()
    #: The executable an ``exec-trace`` record ran.
    path: str | None = None
    timed_out: bool = False
    #: The command never reported its end (killed, or the stream was cut).
    incomplete: bool = False
    #: An element of a pipeline, with its own status from the pipeline's PIPESTATUS.
    pipeline: bool = False

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> AuditRecord:
        get = obj.get
        text = get("command")
        if type(text) is not str:
            text = shlex.join(str(a) for a in get("argv") or ())
        cwd, start, end = get("cwd"), get("start"), get("end")
        pipestatus, argv = get("pipestatus"), get("argv")
        seq, code, parent, pid, ppid = (obj["seq"], get("exit"), get("parent_seq"), get("pid"),
                                        get("ppid"))
        # Made once per line of long audit logs, as the tuple it is: every field in order
        # (test_model_json checks the result equals the one the named tuple's __new__
        # makes). The schema has checked the types; an integer may still be written 2.0
        # (JSON Schema calls that an integer).
        record: AuditRecord = _new_tuple(cls, (
            seq if type(seq) is int else int(seq), obj["source"], text, cwd or "/",
            code if code is None or type(code) is int else int(code),
            parent if parent is None or type(parent) is int else int(parent),
            tuple([p for p in pipestatus if isinstance(p, int)]) if pipestatus else (),
            start if start is None or type(start) is float else float(start),
            end if end is None or type(end) is float else float(end),
            int(get("depth") or 0), get("phase") or None, get("session") or "",
            pid if pid is None or type(pid) is int else int(pid),
            ppid if ppid is None or type(ppid) is int else int(ppid),
            bool(cwd), get("cwd_end") or None,
            tuple(map(str, argv)) if argv else (), get("path") or None,
            bool(get("timed_out")), bool(get("incomplete")), bool(get("pipeline")),
        ))
        return record

    def to_json(self) -> dict[str, Any]:
        """The record as ``audit.jsonl`` holds it: the keys of its source only."""
        values: dict[str, Any] = {
            "type": "command", "source": self.source, "session": self.session,
            "seq": self.seq, "command": self.command,
            "cwd": self.cwd if self.cwd_known else None,
            "start": self.start, "end": self.end, "exit": self.exit,
            "pipestatus": list(self.pipestatus) or None, "pid": self.pid, "ppid": self.ppid,
            "cwd_end": self.cwd_end, "depth": self.depth, "parent_seq": self.parent_seq,
            "argv": list(self.argv), "timed_out": self.timed_out, "phase": self.phase,
            "path": self.path,
        }
        if self.source == "bash-hook" and not self.command:
            values["command"] = None
        doc = {k: values[k] for k in AUDIT_KEYS[self.source]}
        if self.incomplete:
            doc["incomplete"] = True
        if self.pipeline:
            doc["pipeline"] = True
        return doc


@dataclass(frozen=True)
class AuditLog:
    """``audit.jsonl``: the header and every record after it, as validated documents."""

    header: Mapping[str, Any]
    records: tuple[Mapping[str, Any], ...]

    def commands(self) -> tuple[AuditRecord, ...]:
        """The command records (not ``unparsed`` lines, nor a shell record with no text),
        typed, ordered by ``seq``."""
        return commands_of(self.records)


def commands_of(records: Iterable[Mapping[str, Any]]) -> tuple[AuditRecord, ...]:
    """The command records of validated ``audit.jsonl`` records (not ``unparsed`` lines,
    nor a shell record with no text), typed, ordered by ``seq``."""
    cmds = [AuditRecord.from_json(r) for r in records if r.get("type") == "command"
            and (isinstance(r.get("command"), str) or isinstance(r.get("argv"), list))]
    cmds.sort(key=attrgetter("seq"))
    return tuple(cmds)


#: Where Debian's python3-* packages live: distributions there are the OS's, never locked.
DEBIAN_SITE = ("/usr/lib/python3/dist-packages", "/usr/lib/python3.")


def direct_url_kind(direct_url: Mapping[str, Any] | None) -> str | None:
    """The kind of a PEP 610 ``direct_url.json`` object: ``vcs``, ``dir``, ``local-archive``
    (a ``file:`` archive), ``archive``; None without one."""
    if not direct_url:
        return None
    if "vcs_info" in direct_url:
        return "vcs"
    if "dir_info" in direct_url:
        return "dir"
    return "local-archive" if str(direct_url.get("url", "")).startswith("file:") else "archive"


def distribution_source(
    kind: str | None,
    url: str | None,
    editable: bool = False,
    *,
    installer: str | None = "pip",
    metadata_dir: str = "",
    files_from: str | None = None,
) -> str:
    """Where a distribution came from, in words, from its PEP 610 data and metadata layout.

    "index" (installed by name: an index or a find-links wheelhouse; pip does not record
    which), "local build" (a local directory), "editable", "vcs", "url" (a remote archive),
    "local file" (a wheel or sdist file), "setup.py install" (a legacy egg-info install),
    "os package" (no installer recorded: Debian's python3-* packages).
    """
    if editable:
        return "editable"
    if kind is None:
        if metadata_dir.endswith(".egg-info"):
            return "setup.py install" if files_from == "installed-files.txt" else "os package"
        return "index" if installer else "os package"
    if kind == "vcs":
        return "vcs"
    if kind == "dir":
        return "local build"
    if kind == "local-archive":
        return "local file"
    return "url"


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

    def to_json(self) -> dict[str, Any]:
        """The fields kept (not ``display_name``); see :meth:`PythonState.to_json`."""
        return {"name": self.name, "version": self.version, "installer": self.installer,
                "requested": self.requested,
                "direct_url": dict(self.direct_url) if self.direct_url is not None else None,
                "location": self.location}

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

    @property
    def unrecorded(self) -> bool:
        """Installed with no record of its installer or source (no INSTALLER, no
        ``direct_url.json``), outside Debian's site: what pip's legacy ``setup.py install``
        leaves (an old pip without ``wheel``)."""
        return (self.installer is None and self.direct_url is None
                and not self.location.startswith(DEBIAN_SITE))

    @property
    def source(self) -> str:
        """Where it came from, in :func:`distribution_source`'s words (an unrecorded one:
        "setup.py install", as the fingerprint of an image says from its egg-info)."""
        if self.unrecorded:
            return "setup.py install"
        return distribution_source(direct_url_kind(self.direct_url), self.url, self.editable,
                                   installer=self.installer)


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

    def to_json(self) -> dict[str, Any]:
        """The fields kept (not ``realpath``, ``sys_path``, ``error``…)."""
        return {"path": self.path, "kind": self.kind, "version": self.version,
                "prefix": self.prefix, "base_prefix": self.base_prefix,
                "created_by_agent": self.created_by_agent,
                "distributions": [d.to_json() for d in self.distributions]}


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

    def to_json(self) -> dict[str, Any]:
        """``state/python.json`` as far as this class keeps it: an interpreter's probe
        details beyond its fields (``realpath``, ``sys_path``…) are not kept."""
        return {"format": PYTHON_STATE_FORMAT,
                "interpreters": [i.to_json() for i in self.interpreters],
                "primary": self.primary, "errors": list(self.errors)}

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

    def to_json(self) -> dict[str, Any]:
        """A ``debs`` record of ``state/apt.json`` (the name is its key there)."""
        return {"version": self.version, "arch": self.arch, "sha256": self.sha256,
                "size": self.size, "mirror": self.mirror, "filename": self.filename}


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

    def to_json(self) -> dict[str, Any]:
        """``state/apt.json`` as far as this class keeps it (not ``debs_missing``)."""
        doc: dict[str, Any] = {
            "format": APT_STATE_FORMAT, "base": dict(self.base), "final": dict(self.final),
            "added": dict(self.added),
            "changed": {k: list(v) for k, v in self.changed.items()},
            "removed": dict(self.removed), "manual": list(self.manual)}
        if self.debs_captured:
            doc["debs"] = {n: d.to_json() for n, d in self.debs.items()}
        return doc


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

    def to_json(self) -> dict[str, Any]:
        """``state/provenance.json`` as far as this class keeps it (not ``setuid_known``)."""
        return {"format": PROVENANCE_STATE_FORMAT, "file_times": dict(self.file_times),
                "apt_times": dict(self.apt_times),
                "dist_times": {i: dict(d) for i, d in self.dist_times.items()},
                "setuid": list(self.setuid)}


@dataclass(frozen=True)
class PathChange:
    kind: str
    path: str
    #: Why a ``noise`` item is noise (synth.util.noise); None for a real change.
    reason: str | None = None

    def to_json(self) -> dict[str, str]:
        doc = {"kind": self.kind, "path": self.path}
        if self.reason is not None:
            doc["reason"] = self.reason
        return doc


@dataclass(frozen=True)
class DiffState:
    """``state/diff.json``: the session container's changes, noise apart."""

    changes: tuple[PathChange, ...]
    noise: tuple[PathChange, ...]

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> DiffState:
        def changes(key: str) -> tuple[PathChange, ...]:
            return tuple(PathChange(str(c["kind"]), str(c["path"]), _opt_str(c.get("reason")))
                         for c in doc[key])

        return cls(changes=changes("changes"), noise=changes("noise"))

    def to_json(self) -> dict[str, Any]:
        """``state/diff.json``, every field."""
        return {"format": DIFF_STATE_FORMAT, "changes": [c.to_json() for c in self.changes],
                "noise": [c.to_json() for c in self.noise]}


@dataclass(frozen=True)
class EnvState:
    """``state/env.json``: persisted environment variables and where each was set."""

    persisted: Mapping[str, str]
    sources: Mapping[str, str]

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> EnvState:
        return cls(persisted={str(k): str(v) for k, v in doc["persisted"].items()},
                   sources={str(k): str(v) for k, v in doc["sources"].items()})

    def to_json(self) -> dict[str, Any]:
        """``state/env.json``, every field."""
        return {"format": ENV_STATE_FORMAT, "persisted": dict(self.persisted),
                "sources": dict(self.sources)}


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

    def to_json(self) -> dict[str, Any]:
        """The document it was read from: ``raw`` is kept whole, and the typed fields are
        derived from it (the export writes manifest.json, not this method)."""
        return dict(self.raw)


# --- the build plan and the distill report (plan.json) --------------------------------------

def _pairs(value: Any) -> tuple[tuple[str, str], ...]:
    return tuple((str(k), str(v)) for k, v in value)


def _strs(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value)


def check_plan_format(doc: Mapping[str, Any], where: str) -> None:
    """Refuse a plan or report document written by a newer synth (or with no format)."""
    fmt = doc.get("format")
    if not isinstance(fmt, int) or isinstance(fmt, bool):
        raise InputFileError(f"{where}: no integer `format` field; not a synth plan.json")
    if fmt > PLAN_FORMAT:
        raise InputFileError(
            f"{where}: plan format {fmt} is newer than this synth reads (<= {PLAN_FORMAT}).",
            hint="Upgrade synth to read it.")


@cheap_init
@dataclass(frozen=True)
class CommandOutcome:
    """One simple command of the audit log and what distillation did with it."""

    ref: str
    command: str
    cwd: str
    extractor: str
    step: str
    #: ``kept`` (a step of the artifact), ``folded`` (its effect lives in another step),
    #: ``dropped`` (not replayed; ``reason`` says why).
    decision: str
    reason: str

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> CommandOutcome:
        return cls(**{k: str(d[k]) for k in ("ref", "command", "cwd", "extractor", "step",
                                              "decision", "reason")})


@dataclass(frozen=True)
class AptPlan:
    #: ``(package, version)`` of every package added or changed against the base, sorted.
    pins: tuple[tuple[str, str], ...] = ()
    #: Installed as dependencies in the run: marked automatic after the install.
    auto: tuple[str, ...] = ()
    #: Base packages the run removed.
    remove: tuple[str, ...] = ()
    #: The pins apt's indexes described in the live container: fetched by URL and
    #: checked by sha256. The other pins (``unhashed``) go through ``apt-get install``.
    debs: tuple[DebRecord, ...] = ()
    unhashed: tuple[tuple[str, str], ...] = ()
    #: The run's end as a snapshot.debian.org timestamp (``20261129T101640Z``).
    timestamp: str | None = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AptPlan:
        return cls(pins=_pairs(d["pins"]), auto=_strs(d["auto"]), remove=_strs(d["remove"]),
                   debs=tuple(DebRecord.from_json(str(x["name"]), x) for x in d["debs"]),
                   unhashed=_pairs(d["unhashed"]), timestamp=_opt_str(d.get("timestamp")))


@dataclass(frozen=True)
class PythonEnvPlan:
    """One Python environment to reproduce, and the pinned distributions it gets."""

    python: str
    kind: str
    version: str
    prefix: str
    #: argv creating it (``python3 -m venv /opt/venv``); empty for the system interpreter.
    create: tuple[str, ...]
    #: argv prefix that runs pip for this environment.
    pip: tuple[str, ...]
    lock_file: str
    pins: tuple[tuple[str, str], ...]
    index_url: str
    extra_index_urls: tuple[str, ...]
    #: find-links as the run saw them (URLs, or paths inside the container).
    find_links: tuple[str, ...]
    break_system_packages: bool

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> PythonEnvPlan:
        return cls(
            python=str(d["python"]), kind=str(d["kind"]), version=str(d["version"]),
            prefix=str(d["prefix"]), create=_strs(d["create"]), pip=_strs(d["pip"]),
            lock_file=str(d["lock_file"]), pins=_pairs(d["pins"]),
            index_url=str(d["index_url"]), extra_index_urls=_strs(d["extra_index_urls"]),
            find_links=_strs(d["find_links"]),
            break_system_packages=bool(d["break_system_packages"]))


@dataclass(frozen=True)
class NativeStep:
    """A build replayed in its original order, with the environment it ran with."""

    ref: str
    tool: str
    argv: tuple[str, ...]
    cwd: str
    env: tuple[tuple[str, str], ...]
    #: ``name==version`` this step installs, when it installs a distribution.
    distribution: str | None = None
    network: bool = False
    #: ``(sha256, path)`` the step's output is checked against (pinned downloads).
    check_sha256: tuple[str, str] | None = None
    #: How the run had ``distribution`` installed (:attr:`Distribution.source`), which the
    #: replay repeats; None when the step installs none (or in a format-1 plan.json).
    source: str | None = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> NativeStep:
        check = d.get("check_sha256")
        return cls(ref=str(d["ref"]), tool=str(d["tool"]), argv=_strs(d["argv"]),
                   cwd=str(d["cwd"]), env=_pairs(d["env"]),
                   distribution=_opt_str(d.get("distribution")),
                   network=bool(d.get("network")),
                   check_sha256=(str(check[0]), str(check[1])) if check else None,
                   source=_opt_str(d.get("source")))


@dataclass(frozen=True)
class SourcePlan:
    kind: str  # "path", "url" or "none"
    dest: str
    url: str | None = None
    commit: str | None = None
    #: Set by the export (synth.export.final_state): source/ differs from the commit (or
    #: the original copy); the diff's file name; "M\tpath" lines; added paths left out.
    dirty: bool | None = None
    patch: str | None = None
    changed: tuple[str, ...] = ()
    not_carried: tuple[str, ...] = ()
    #: source/ is the final /workspace (read from the live image), not the host copy.
    from_final: bool = False

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SourcePlan:
        dirty = d.get("dirty")
        return cls(kind=str(d["kind"]), dest=str(d["dest"]), url=_opt_str(d.get("url")),
                   commit=_opt_str(d.get("commit")),
                   dirty=None if dirty is None else bool(dirty),
                   patch=_opt_str(d.get("patch")), changed=_strs(d.get("changed", ())),
                   not_carried=_strs(d.get("not_carried", ())),
                   from_final=bool(d.get("from_final")))


#: Where an artifact keeps the files it carries (``carried/<absolute path>``).
CARRIED_DIR = "carried"


@dataclass(frozen=True)
class CarriedFile:
    """A file of an installed distribution the agent modified, put back after the lock."""

    path: str  # absolute, in the image
    sha256: str
    distribution: str
    #: Of a distribution a native step builds: put back after the native steps.
    after_builds: bool = False

    @property
    def artifact_path(self) -> str:
        return f"{CARRIED_DIR}{self.path}"

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> CarriedFile:
        return cls(path=str(d["path"]), sha256=str(d["sha256"]),
                   distribution=str(d["distribution"]),
                   after_builds=bool(d.get("after_builds")))


@dataclass(frozen=True)
class BuildPlan:
    """What to build: everything the templates render, nothing about how it was decided."""

    task: str
    run_id: str
    base_ref: str
    base_id: str | None
    base_digest: str | None
    apt: AptPlan
    envs: tuple[PythonEnvPlan, ...]
    source: SourcePlan
    native: tuple[NativeStep, ...]
    #: Final ``ENV`` of the image: persisted variables and the primary venv on PATH.
    env: tuple[tuple[str, str], ...]
    #: Container paths the user asked to carry along (``--include``).
    includes: tuple[str, ...]
    #: The interpreter research code runs under, as a path inside the image.
    python: str
    claims: bool = False
    uses_wheelhouse: bool = False
    #: glibc of the final state (libc6), for the lock's platform tag.
    glibc: str | None = None
    #: Files of installed distributions the agent modified, put back after the lock, and
    #: what the artifact does not reproduce (``--allow-missing``): synth.export.final_state.
    carried: tuple[CarriedFile, ...] = ()
    missing: tuple[str, ...] = ()

    @property
    def regenerate_command(self) -> str:
        return f"synth export {self.task}/{self.run_id}"

    def to_json(self) -> dict[str, Any]:
        return {"format": PLAN_FORMAT, **_plain(self)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any], where: str = "plan") -> BuildPlan:
        check_plan_format(d, where)
        return cls(
            task=str(d["task"]), run_id=str(d["run_id"]), base_ref=str(d["base_ref"]),
            base_id=_opt_str(d.get("base_id")), base_digest=_opt_str(d.get("base_digest")),
            apt=AptPlan.from_json(d["apt"]),
            envs=tuple(PythonEnvPlan.from_json(e) for e in d["envs"]),
            source=SourcePlan.from_json(d["source"]),
            native=tuple(NativeStep.from_json(s) for s in d["native"]),
            env=_pairs(d["env"]), includes=_strs(d["includes"]), python=str(d["python"]),
            claims=bool(d.get("claims")), uses_wheelhouse=bool(d.get("uses_wheelhouse")),
            glibc=_opt_str(d.get("glibc")),
            carried=tuple(CarriedFile.from_json(c) for c in d.get("carried", ())),
            missing=_strs(d.get("missing", ())))


@dataclass(frozen=True)
class DistillReport:
    """How the plan was decided: every command's outcome, and what could not be explained."""

    outcomes: tuple[CommandOutcome, ...] = ()
    unexplained: tuple[str, ...] = ()
    not_reproducible: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    #: Why the run cannot be trusted (not succeeded, audit unverified…), when it was
    #: exported anyway with ``--allow-incomplete``; the report says so at the top.
    incomplete: tuple[str, ...] = ()
    #: Changes no audited command explains (see :mod:`synth.distill.provenance`).
    unaudited: tuple[str, ...] = ()
    #: Changes that alter which code runs: loader variables, startup files, setuid files.
    risks: tuple[str, ...] = ()

    def to_json(self, *, outcomes: bool = True) -> dict[str, Any]:
        """``outcomes=False``: without the per-command outcomes, as an artifact's
        ``plan.json`` holds the report (its ``export-report.json`` lists them, once)."""
        doc: dict[str, Any] = {"format": PLAN_FORMAT}
        if outcomes:
            # asdict() deep-copies each of a long log's outcomes; they are flat: built directly.
            doc["outcomes"] = [dict(vars(o)) for o in self.outcomes]
        for f in fields(self):
            if f.name != "outcomes":
                doc[f.name] = list(getattr(self, f.name))
        return doc

    @classmethod
    def from_json(cls, d: Mapping[str, Any], where: str = "report") -> DistillReport:
        """``outcomes`` is absent from an artifact's ``plan.json`` (format 2): the report
        then has none (they are in its ``export-report.json``)."""
        check_plan_format(d, where)
        return cls(outcomes=tuple(CommandOutcome.from_json(o) for o in d.get("outcomes", ())),
                   **{k: _strs(d[k]) for k in ("unexplained", "not_reproducible", "warnings",
                                               "incomplete", "unaudited", "risks")})


def plan_document(plan: BuildPlan, report: DistillReport, *,
                  outcomes: bool = False) -> dict[str, Any]:
    """``plan.json``: the plan and the report an artifact was rendered from; the report
    without its per-command outcomes unless ``outcomes`` (``synth export --plan``, which
    writes no ``export-report.json``). Kept out of the artifact's file, they would repeat
    its export report's 150,000 records on a long log (docs/formats.md)."""
    return {"format": PLAN_FORMAT, "plan": plan.to_json(),
            "report": report.to_json(outcomes=outcomes)}


def read_plan_document(doc: Mapping[str, Any], where: str) -> tuple[BuildPlan, DistillReport]:
    check_plan_format(doc, where)
    return (BuildPlan.from_json(doc["plan"], f"{where}: plan"),
            DistillReport.from_json(doc["report"], f"{where}: report"))


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))


def _plain(o: Any) -> Any:
    """``dataclasses.asdict`` of a frozen dataclass of tuples and scalars, without its deep
    copies: a tuple of scalars (most of a long log's plan: the apt pins) is shared as it is,
    being immutable."""
    if is_dataclass(o) and not isinstance(o, type):
        return {name: _plain(getattr(o, name)) for name in _field_names(type(o))}
    if isinstance(o, tuple):
        if all(isinstance(v, (str, int, float, type(None))) for v in o):
            return o
        return tuple(_plain(v) for v in o)
    if isinstance(o, dict):
        return {k: _plain(v) for k, v in o.items()}
    return o


# --- the agent's claims (claims.json) --------------------------------------------------------

def _text(value: Any) -> str | None:
    """A string field as written (``""`` stays ``""``); None for null or absent."""
    return value if isinstance(value, str) else None


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _mapping(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else None


@dataclass(frozen=True)
class Claims:
    """An agent's ``claims.json``: ResearchEnvBench's ``report.json`` fields. These fields
    are synth's one declaration of them: the claims schema's ``properties`` are exactly
    these (a test), and C5's own list (``synth.pyramid.claims``, which imports no synth) is checked
    against the schema. No ``format``: the agent writes the file. ``None`` is "unknown"
    (null or absent). Extra fields are allowed and kept: ``raw`` is the whole validated
    document, as the agent wrote it (C5 and REB's ``report.json`` get it whole)."""

    python_path: str | None
    python_version: str | None
    torch_version: str | None
    jax_version: str | None
    jaxlib_version: str | None
    tensorflow_version: str | None
    cupy_version: str | None
    cuda_available: bool | None
    #: None also for a count JSON writes as a non-integer number (``2.0``): REB counts
    #: only an integer.
    gpu_count: int | None
    ddp_expected_ok: bool | None
    env_tool: str | None
    env_name: str | None
    notes: str | tuple[str, ...] | None
    #: The compiled extensions the agent says it built (importable module names).
    native_modules_built: tuple[str, ...] | None
    # REB's optional report fields.
    dataset_hf_id: str | None
    model_hf_id: str | None
    installed_packages: tuple[Mapping[str, Any], ...] | None
    capabilities: Mapping[str, Any] | None
    artifacts: Mapping[str, Any] | None
    raw: Mapping[str, Any]

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Claims:
        # The text fields, by their annotation (a string here: annotations are postponed).
        text = {f.name: _text(doc.get(f.name)) for f in fields(cls) if f.type == "str | None"}
        count, notes = doc.get("gpu_count"), doc.get("notes")
        native, packages = doc.get("native_modules_built"), doc.get("installed_packages")
        return cls(
            **text, cuda_available=_flag(doc.get("cuda_available")),
            gpu_count=count if isinstance(count, int) and not isinstance(count, bool) else None,
            ddp_expected_ok=_flag(doc.get("ddp_expected_ok")),
            notes=tuple(str(n) for n in notes) if isinstance(notes, list) else _text(notes),
            native_modules_built=tuple(str(m) for m in native)
            if isinstance(native, list) else None,
            installed_packages=tuple(i for i in packages if isinstance(i, Mapping))
            if isinstance(packages, list) else None,
            capabilities=_mapping(doc.get("capabilities")),
            artifacts=_mapping(doc.get("artifacts")), raw=doc)

    def to_json(self) -> dict[str, Any]:
        """The document it was read from, extra fields and all (``raw`` is kept whole)."""
        return dict(self.raw)

    @property
    def extra(self) -> dict[str, Any]:
        """The fields the claims schema does not declare (an agent may add its own)."""
        known = {f.name for f in fields(self)} - {"raw"}
        return {k: v for k, v in self.raw.items() if k not in known}


# --- the export report (export-report.json) --------------------------------------------------

def decision_counts(outcomes: Iterable[CommandOutcome]) -> dict[str, int]:
    """How many commands were kept, folded and dropped."""
    counts = {"kept": 0, "folded": 0, "dropped": 0}
    for o in outcomes:
        counts[o.decision] = counts.get(o.decision, 0) + 1
    return counts


@dataclass(frozen=True)
class ReportSource:
    """The export report's ``source``: how ``source/`` differs from the task's commit."""

    commit: str | None = None
    dirty: bool | None = None
    patch: str | None = None
    changed: tuple[str, ...] = ()
    not_carried: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ReportSource:
        return cls(commit=_text(d.get("commit")), dirty=_flag(d.get("dirty")),
                   patch=_text(d.get("patch")), changed=_strs(d.get("changed", ())),
                   not_carried=_strs(d.get("not_carried", ())))

    def to_json(self) -> dict[str, Any]:
        return {"commit": self.commit, "dirty": self.dirty, "patch": self.patch,
                "changed": list(self.changed), "not_carried": list(self.not_carried)}


@dataclass(frozen=True)
class BundleKind:
    """The vendored files of one kind (deb, wheel, sdist, download…)."""

    files: int
    bytes: int


@dataclass(frozen=True)
class BundleSummary:
    """``export --bundle``'s ``vendor/`` (synth.export.bundle.summary): size, kinds, offline."""

    dir: str
    files: int
    bytes: int
    by_kind: Mapping[str, BundleKind]
    offline: bool
    #: ``ref: tool`` of each kept step that still reaches the network.
    needs_network: tuple[str, ...]

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> BundleSummary:
        return cls(dir=str(d["dir"]), files=int(d["files"]), bytes=int(d["bytes"]),
                   by_kind={str(k): BundleKind(int(v["files"]), int(v["bytes"]))
                            for k, v in d["by_kind"].items()},
                   offline=bool(d["offline"]), needs_network=_strs(d["needs_network"]))

    def to_json(self) -> dict[str, Any]:
        return {"dir": self.dir, "files": self.files, "bytes": self.bytes,
                "by_kind": {k: {"files": v.files, "bytes": v.bytes}
                            for k, v in self.by_kind.items()},
                "offline": self.offline, "needs_network": list(self.needs_network)}


def _outcome(d: Mapping[str, Any]) -> CommandOutcome:
    """A command of the export report (its schema allows null where synth writes text)."""
    return CommandOutcome(**{k: str(d[k]) if d[k] is not None else "" for k in (
        "ref", "command", "cwd", "extractor", "step", "decision", "reason")})


@dataclass(frozen=True)
class ExportReport:
    """An artifact's ``export-report.json``: every audited command with its decision, and
    what the plan could not explain or reproduce (docs/export.md). Made from the plan and
    the distill report (:meth:`of`); ``export-report.md`` says the same for people."""

    task: str
    run_id: str
    #: The command that regenerates the artifact.
    command: str
    commands: tuple[CommandOutcome, ...]
    unexplained: tuple[str, ...]
    not_reproducible: tuple[str, ...]
    warnings: tuple[str, ...]
    incomplete: tuple[str, ...] = ()
    risks: tuple[str, ...] = ()
    unaudited: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    carried: tuple[CarriedFile, ...] = ()
    source: ReportSource = ReportSource()
    bundle: BundleSummary | None = None

    @property
    def counts(self) -> dict[str, int]:
        return decision_counts(self.commands)

    @classmethod
    def of(cls, plan: BuildPlan, report: DistillReport,
           bundle: Mapping[str, Any] | None = None) -> ExportReport:
        src = plan.source
        return cls(
            task=plan.task, run_id=plan.run_id, command=plan.regenerate_command,
            commands=report.outcomes, unexplained=report.unexplained,
            not_reproducible=report.not_reproducible, warnings=report.warnings,
            incomplete=report.incomplete, risks=report.risks, unaudited=report.unaudited,
            missing=plan.missing, carried=plan.carried,
            source=ReportSource(src.commit, src.dirty, src.patch, src.changed, src.not_carried),
            bundle=BundleSummary.from_json(bundle) if bundle is not None else None)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ExportReport:
        lists = {k: _strs(d.get(k, ())) for k in (
            "unexplained", "not_reproducible", "warnings", "incomplete", "risks",
            "unaudited", "missing")}
        bundle = d.get("bundle")
        return cls(
            task=str(d["task"]), run_id=str(d["run_id"]), command=str(d["command"]),
            commands=tuple(_outcome(c) for c in d["commands"]), **lists,
            carried=tuple(CarriedFile.from_json(c) for c in d.get("carried", ())),
            source=ReportSource.from_json(d.get("source") or {}),
            bundle=BundleSummary.from_json(bundle) if bundle is not None else None)

    def to_json(self) -> dict[str, Any]:
        return self._document([dict(vars(o)) for o in self.commands])

    def encoder_document(self) -> dict[str, Any]:
        """:meth:`to_json`'s document for an encoder that only reads it (the writer of
        ``export-report.json``): its command records are the outcomes' own field dicts,
        not copies of them (a long log has 150,000). Never to be changed."""
        return self._document([vars(o) for o in self.commands])

    def _document(self, commands: list[dict[str, Any]]) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "format": EXPORT_REPORT_FORMAT, "task": self.task, "run_id": self.run_id,
            "command": self.command, "counts": self.counts, "commands": commands,
            "unexplained": list(self.unexplained),
            "not_reproducible": list(self.not_reproducible), "warnings": list(self.warnings),
            "incomplete": list(self.incomplete), "risks": list(self.risks),
            "unaudited": list(self.unaudited), "missing": list(self.missing),
            "carried": [dict(vars(c)) for c in self.carried], "source": self.source.to_json(),
        }
        if self.bundle is not None:
            doc["bundle"] = self.bundle.to_json()
        return doc


@dataclass(frozen=True)
class Difference:
    """One thing that differs between two sides (``synth diff``, fingerprints): ``kind`` is
    added, removed or changed (or a fingerprint's category); ``a``/``b`` the two sides'
    values, None where absent there."""

    kind: str
    key: str
    a: str | None
    b: str | None
    detail: str = ""
    #: A difference made of files (a distribution's content at the same version): each file
    #: that differs, by path; the JSON carries the first :data:`FILES_NAMED` and the count.
    files: tuple[Difference, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "key": self.key, "a": self.a, "b": self.b,
                               "detail": self.detail}
        if self.files:
            out["files"] = [f.to_json() for f in self.files[:FILES_NAMED]]
            out["files_differing"] = len(self.files)
        return out


#: How many differing files of one difference verify.json and the summary lines name.
FILES_NAMED = 20



# --- the verify document (verify.json) -------------------------------------------------------

def _number(value: Any) -> float | None:
    """A number as read (an integer stays one, so it is written back the same)."""
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _opt_bool(value: Any) -> bool | None:
    return bool(value) if value is not None else None


def _some(**values: Any) -> dict[str, Any]:
    """The values that are not None (a key an older verify.json lacks stays absent)."""
    return {k: v for k, v in values.items() if v is not None}


@dataclass(frozen=True)
class VerifyTarget:
    """What ``synth verify`` was given: a run, an artifact or a task, and where it is."""

    kind: str
    path: str
    task: str | None
    #: The artifact rebuilt (``verify RUN --rebuild`` exports one).
    artifact_dir: str | None = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> VerifyTarget:
        return cls(kind=str(d["kind"]), path=str(d["path"]), task=_text(d.get("task")),
                   artifact_dir=_text(d.get("artifact_dir")))

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": self.path, "task": self.task,
                **_some(artifact_dir=self.artifact_dir)}


@dataclass(frozen=True)
class VerifyBuild:
    """The rebuild from scratch (``build``); None fields are absent from the file."""

    image: str
    image_id: str | None
    seconds: float | None = None
    log: str | None = None
    no_cache: bool | None = None
    offline: bool | None = None
    artifact_dir: str | None = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> VerifyBuild:
        return cls(image=str(d["image"]), image_id=_text(d.get("image_id")),
                   seconds=_number(d.get("seconds")), log=_text(d.get("log")),
                   no_cache=_opt_bool(d.get("no_cache")), offline=_opt_bool(d.get("offline")),
                   artifact_dir=_text(d.get("artifact_dir")))

    def to_json(self) -> dict[str, Any]:
        return {"image": self.image, "image_id": self.image_id, **_some(
            seconds=self.seconds, log=self.log, no_cache=self.no_cache, offline=self.offline,
            artifact_dir=self.artifact_dir)}


@dataclass(frozen=True)
class VerifyFidelity:
    """Does the rebuilt image do all the live one does (``fidelity``)? ``gaps``: each level
    where it does worse (``level``, ``live``, ``rebuilt``)."""

    live_highest: str | None
    rebuilt_highest: str | None
    reaches_live_level: bool
    gaps: tuple[Mapping[str, Any], ...]
    #: The fingerprint comparison's status as fidelity judged it.
    fingerprint: str | None = None
    failures: tuple[str, ...] | None = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> VerifyFidelity:
        failures = d.get("failures")
        return cls(live_highest=_text(d.get("live_highest")),
                   rebuilt_highest=_text(d.get("rebuilt_highest")),
                   reaches_live_level=bool(d["reaches_live_level"]),
                   gaps=tuple(dict(g) for g in d.get("gaps") or ()),
                   fingerprint=_text(d.get("fingerprint")),
                   failures=_strs(failures) if failures is not None else None)

    def to_json(self) -> dict[str, Any]:
        return {"live_highest": self.live_highest, "rebuilt_highest": self.rebuilt_highest,
                "reaches_live_level": self.reaches_live_level,
                "gaps": [dict(g) for g in self.gaps], **_some(
                    fingerprint=self.fingerprint,
                    failures=list(self.failures) if self.failures is not None else None)}


@dataclass(frozen=True)
class VerifyFingerprint:
    """Live vs rebuilt fingerprints (``fingerprint``): the summary readers use, typed;
    ``raw`` is the whole section (the comparison's free-form JSON is kept as written)."""

    status: str
    reason: str | None
    #: Whether the two fingerprints are equal; None unless ``status`` is ``compared``.
    equal: bool | None
    unexplained: tuple[str, ...]
    explained: tuple[str, ...]
    raw: Mapping[str, Any]

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> VerifyFingerprint:
        compared = d.get("status") == "compared"
        return cls(status=str(d["status"]), reason=_text(d.get("reason")),
                   equal=_flag(d.get("equal")) if compared else None,
                   unexplained=_strs(d.get("unexplained") or ()),
                   explained=_strs(d.get("explained") or ()), raw=d)

    def to_json(self) -> dict[str, Any]:
        return dict(self.raw)


@dataclass(frozen=True)
class VerifyExport:
    """The artifact ``verify RUN --rebuild`` rebuilt (``export``): exported, or reused."""

    artifact_dir: str
    reused: bool
    why: str

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> VerifyExport:
        return cls(artifact_dir=str(d["artifact_dir"]), reused=bool(d["reused"]),
                   why=str(d["why"]))

    def to_json(self) -> dict[str, Any]:
        return {"artifact_dir": self.artifact_dir, "reused": self.reused, "why": self.why}


@dataclass(frozen=True)
class VerifyArtifactCheck:
    """The artifact's files against its manifest, before the rebuild (``artifact_check``)."""

    files: int | None
    problems: tuple[str, ...]
    allow_modified: bool

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> VerifyArtifactCheck:
        return cls(files=_opt_int(d.get("files")), problems=_strs(d["problems"]),
                   allow_modified=bool(d["allow_modified"]))

    def to_json(self) -> dict[str, Any]:
        return {**_some(files=self.files), "problems": list(self.problems),
                "allow_modified": self.allow_modified}


def _optional(cls: Any, value: Any) -> Any:
    return cls.from_json(value) if value is not None else None


@dataclass(frozen=True)
class VerifyDocument:
    """``verify.json``: what one ``synth verify`` found (docs/verify.md). The writer
    (:func:`synth.verify.outcome.to_document`) makes one from the typed outcome and writes
    its ``to_json``;
    readers get one from :func:`synth.formats.store.read_verify`. ``reports`` are verify's own
    :class:`~synth.pyramid.result.Report` by key (rebuilt, live, host); ``scores`` the sections
    of other scorings (``scores.<name>``), kept as written."""

    synth_version: str
    target: VerifyTarget
    require: str
    levels_selected: tuple[str, ...]
    build: VerifyBuild | None
    fidelity: VerifyFidelity | None
    fingerprint: VerifyFingerprint | None
    reports: Mapping[str, Report]
    #: The report whose levels decide the verdict.
    decides: str
    passed: bool
    export: VerifyExport | None = None
    artifact_check: VerifyArtifactCheck | None = None
    #: Why fidelity failed the verdict (its first failures), when it did.
    fidelity_failed: str | None = None
    scores: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def deciding(self) -> Report:
        """The report that decided the verdict."""
        return self.reports[self.decides]

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> VerifyDocument:
        return cls(
            synth_version=str(d["synth_version"]), target=VerifyTarget.from_json(d["target"]),
            require=str(d["require"]), levels_selected=_strs(d["levels_selected"]),
            build=_optional(VerifyBuild, d.get("build")),
            fidelity=_optional(VerifyFidelity, d.get("fidelity")),
            fingerprint=_optional(VerifyFingerprint, d.get("fingerprint")),
            reports={str(k): Report.from_json(r) for k, r in d["reports"].items()},
            decides=str(d["decides"]), passed=bool(d["passed"]),
            export=_optional(VerifyExport, d.get("export")),
            artifact_check=_optional(VerifyArtifactCheck, d.get("artifact_check")),
            fidelity_failed=_text(d.get("fidelity_failed")),
            scores={str(k): dict(v) for k, v in (d.get("scores") or {}).items()})

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "format": VERIFY_FORMAT, "synth_version": self.synth_version,
            "target": self.target.to_json(), "require": self.require,
            "levels_selected": list(self.levels_selected),
            "build": self.build.to_json() if self.build else None,
            "fidelity": self.fidelity.to_json() if self.fidelity else None,
            "fingerprint": self.fingerprint.to_json() if self.fingerprint else None,
            "reports": {k: r.to_json() for k, r in self.reports.items()},
            "decides": self.decides, "passed": self.passed,
        }
        optional = _some(export=self.export, artifact_check=self.artifact_check)
        doc.update({k: v.to_json() for k, v in optional.items()})
        doc.update(_some(fidelity_failed=self.fidelity_failed))
        if self.scores:
            doc["scores"] = {k: dict(v) for k, v in sorted(self.scores.items())}
        return doc


@dataclass(frozen=True)
class VerificationRecord:
    """``verification.json``: what one ``synth verify --rebuild`` of an artifact found,
    kept in the artifact folder and travelling with it (the archive and the bundle carry
    it; a re-export keeps it). ``raw`` is the whole document; the typed fields are what a
    later verify compares its own result with (synth.verify.record)."""

    date: str
    synth_version: str
    passed: bool
    levels: Mapping[str, str]
    highest: str | None
    fidelity: bool | None
    #: sha256 of the artifact's manifest.json (which hashes every file) it verified.
    artifact_sha256: str | None
    #: The rebuilt image's ID and the base it was built on.
    image_id: str | None
    base_digest: str | None
    docker_version: str | None
    architecture: str | None
    gpu_driver: str | None
    raw: Mapping[str, Any]

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> VerificationRecord:
        fidelity = d.get("fidelity")
        return cls(date=str(d["date"]), synth_version=str(d["synth_version"]),
                   passed=bool(d["passed"]),
                   levels={str(k): str(v) for k, v in (d.get("levels") or {}).items()},
                   highest=_text(d.get("highest")),
                   fidelity=fidelity if isinstance(fidelity, bool) else None,
                   artifact_sha256=_text(d.get("artifact_sha256")),
                   image_id=_text(d.get("image_id")), base_digest=_text(d.get("base_digest")),
                   docker_version=_text(d.get("docker_version")),
                   architecture=_text(d.get("architecture")),
                   gpu_driver=_text(d.get("gpu_driver")), raw=d)
