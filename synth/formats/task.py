"""Task files: ``tasks/<name>/task.toml`` — what to set up and how to probe it per level.

The format is documented in ``docs/task-format.md``. Errors name the file, the field and
the line: pydantic validates, and :func:`_locate` maps a field path back to its TOML line.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from synth.errors import NotFoundError, SynthError, TaskError, UsageError
from synth.formats.limits import Limits, from_options

Level = Literal["C0", "C0i", "C1", "C2", "C3", "C4", "C5"]
LEVELS: tuple[Level, ...] = ("C0", "C0i", "C1", "C2", "C3", "C4", "C5")

_Strict = ConfigDict(extra="forbid", frozen=True, strict=True)
#: A dotted Python module name.
_MODULE = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"
#: A task file is a few lines; anything bigger is not one.
MAX_TASK_FILE_BYTES = 1 << 20


#: The schemes a repository URL may have: git's own transports, never ``ext::`` or ``fd::``
#: (which run commands) nor an scp-like ``host:path`` (write ``ssh://host/path``).
URL_SCHEMES = ("https", "http", "ssh", "git", "file")
_COMMIT = re.compile(r"[0-9a-f]{7,40}")


def repo_url_problem(url: str) -> str | None:
    """Why ``url`` is not a repository URL synth hands to ``git clone``, or None.

    An allowed scheme (:data:`URL_SCHEMES`) with ``://``; no whitespace or control
    character; nothing that reads as an option (a leading ``-`` in the URL, its user or its
    host: ``ssh://-oProxyCommand=…``); no credentials (a password anywhere, a user name in an
    http(s) URL, where it is a token: a lock or report would carry it); a host except for
    ``file:///absolute/path``."""
    if not url or len(url) > 2048:
        return "must be a URL of at most 2048 characters"
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url):
        return "must not hold whitespace or control characters"
    if url.startswith("-"):
        return "must not start with `-` (git would read it as an option)"
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in URL_SCHEMES:
        return (f"must be a URL with one of the schemes {', '.join(URL_SCHEMES)} "
                "(`ssh://host/path` for an scp-like `host:path`)")
    if scheme.lower() == "file":
        return None if rest.startswith("/") else "a file:// URL needs an absolute path"
    netloc = rest.split("/", 1)[0]
    userinfo, at, host = netloc.rpartition("@")
    if not host or host.startswith("-") or userinfo.startswith("-"):
        return "needs a host, and neither host nor user may start with `-`"
    if ":" in userinfo or (at and scheme.lower() in ("http", "https")):
        return "must not carry credentials (a user or password before `@`)"
    return None


def commit_problem(commit: str) -> str | None:
    """Why ``commit`` is not a hex commit id (7 to 40 lower-case hex digits), or None."""
    return None if _COMMIT.fullmatch(commit) else "must be a hex commit id (7-40 of 0-9a-f)"


class RepoSpec(BaseModel):
    model_config = _Strict
    #: A folder relative to the task directory ...
    path: str | None = None
    #: ... or a git URL pinned at a commit.
    url: str | None = None
    commit: str | None = None

    @field_validator("path")
    @classmethod
    def _path_inside(cls, path: str | None) -> str | None:
        if path is not None:
            _inside_task_folder(path)
        return path

    @field_validator("url")
    @classmethod
    def _url_allowed(cls, url: str | None) -> str | None:
        problem = None if url is None else repo_url_problem(url)
        if problem:
            raise ValueError(problem)
        return url

    @field_validator("commit")
    @classmethod
    def _commit_hex(cls, commit: str | None) -> str | None:
        problem = None if commit is None else commit_problem(commit)
        if problem:
            raise ValueError(problem)
        return commit

    @model_validator(mode="after")
    def _one_source(self) -> RepoSpec:
        if (self.path is None) == (self.url is None):
            raise ValueError("give exactly one of `path` or `url`")
        if self.url is not None and not self.commit:
            raise ValueError("a git `url` needs `commit`, a hex commit id")
        return self


def _inside_task_folder(path: str, field: str = "path", what: str = "folder") -> None:
    """``repo.path`` (or another ``field``) names a ``what`` inside the task folder:
    relative, never climbing out."""
    if "\x00" in path or not path.strip():
        raise ValueError(f"`{field}` must be a {what} name, not empty and without NUL bytes")
    if path.startswith(("/", "~")) or posixpath.normpath(path).split("/")[0] == "..":
        raise ValueError(f"`{field}` {path[:200]!r} leaves the task folder; give a {what} "
                         "relative to it")


class PythonSpec(BaseModel):
    model_config = _Strict
    #: The Python version the research code targets (a hint for agents and reports).
    version: str | None = None
    #: True when the setup takes packages (e.g. a CPU torch) from a wheelhouse if one exists.
    wheelhouse: bool = False


class Probe(BaseModel):
    model_config = _Strict
    command: str = Field(min_length=1)
    timeout: Annotated[int, Field(gt=0, le=24 * 3600)] = 300

    @field_validator("command")
    @classmethod
    def _no_nul(cls, command: str) -> str:
        if "\x00" in command:
            raise ValueError("a command cannot hold a NUL byte")
        return command


class DdpProbe(Probe):
    gpus: Annotated[int, Field(ge=2)] = 2


class Probes(BaseModel):
    model_config = _Strict
    #: An absolute path in the image, without ``..``.
    workdir: str = "/workspace"
    cpu: Probe | None = None
    gpu: Probe | None = None
    ddp: DdpProbe | None = None
    #: Compiled modules of the repo (e.g. ``fastops._ext``) smoke-tested by import, and on GPU.
    native_modules: list[Annotated[str, Field(pattern=_MODULE)]] = Field(default_factory=list)

    @field_validator("workdir")
    @classmethod
    def _absolute(cls, workdir: str) -> str:
        if (not workdir.startswith("/") or ".." in workdir.split("/")
                or any(ord(ch) < 32 or ord(ch) == 127 for ch in workdir)):
            raise ValueError("must be an absolute path, without `..` or control characters")
        return workdir


class C0Settings(BaseModel):
    """``[verify.c0]``: which files C0 (and the C0i import check) judge, and how strictly."""

    model_config = _Strict
    #: Globs over repo-relative POSIX paths (``*`` also crosses ``/``); None: the default
    #: scope, the repo's importable packages and the probes' entrypoint files.
    include: list[str] | None = None
    #: Globs left out of the scope; None: tests/, test/, docs/, examples/, demo*/ at any depth.
    exclude: list[str] | None = None
    #: C0 fails when missing required import statements / required import statements
    #: exceeds this (0: any missing required import fails C0).
    max_missing_ratio: Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)] = 0.0


class VerifySettings(BaseModel):
    model_config = _Strict
    c0: C0Settings = C0Settings()


class LimitsSpec(BaseModel):
    """``[limits]``: the session's and verify's containers run under these (the host's
    defaults where absent; the command line overrides; :mod:`synth.formats.limits`)."""

    model_config = _Strict
    #: Memory with no swap beyond it: ``"8g"``, ``"512m"`` or bytes.
    memory: str | Annotated[int, Field(gt=0)] | None = None
    pids: Annotated[int, Field(ge=16)] | None = None
    cpus: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    #: The container's writable layer, where the storage driver can cap it.
    disk: str | Annotated[int, Field(gt=0)] | None = None

    @model_validator(mode="after")
    def _sizes(self) -> LimitsSpec:
        self.limits()  # a size that does not parse or a limit too low is refused here
        return self

    def limits(self) -> Limits:
        try:
            return from_options(self.memory, self.pids, self.cpus, self.disk)
        except ValueError as exc:
            raise ValueError(str(exc)) from None


class CitationSpec(BaseModel):
    """``[citation]``: who made the environment and under which licence it is published
    (the artifact's CITATION.cff, .zenodo.json, OCI labels and RO-Crate; docs/export.md)."""

    model_config = _Strict
    #: ``"Given Family <email>"`` or ``"Family, Given"`` each.
    authors: list[Annotated[str, Field(min_length=1, max_length=300)]] = Field(
        default_factory=list)
    #: An SPDX licence id; the artifact carries the research code, so usually its licence.
    license: str | None = None
    #: Where the research code lives, for a task whose repo is a local folder.
    repository: str | None = None


class CondaChannelSpec(BaseModel):
    """``[conda_channel]``: a channel the task makes for itself, where none is reachable."""

    model_config = _Strict
    #: A script in the task folder (standard library only) that writes a conda channel into
    #: the folder its one argument names; it runs in the task's base image, and the channel
    #: is served to the session and the rebuild (:mod:`synth.record.task_channel`).
    script: str

    @field_validator("script")
    @classmethod
    def _script_inside(cls, script: str) -> str:
        _inside_task_folder(script, "script", "file")
        return script


class Task(BaseModel):
    model_config = _Strict
    name: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=100)]
    description: str = ""
    base_image: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._/:@+-]*$",
                                     max_length=512)]
    repo: RepoSpec
    python: PythonSpec = PythonSpec()
    probes: Probes = Probes()
    #: Levels that do not apply to this task, each with the reason shown in reports.
    not_applicable: dict[Level, str] = Field(default_factory=dict)
    #: How verification judges this task (``[verify.c0]``).
    verify: VerifySettings = VerifySettings()
    #: Resource limits of its containers (``[limits]``).
    limits: LimitsSpec = LimitsSpec()
    #: Who made it and its licence, for the published artifact (``[citation]``).
    citation: CitationSpec = CitationSpec()
    #: The conda channel its transcripts install from, made and served by synth
    #: (``[conda_channel]``); they name its address ``@CONDA_CHANNEL@``.
    conda_channel: CondaChannelSpec | None = None

    # Set by load_task, not part of the file.
    task_dir: Path = Field(default=Path(), exclude=True)
    task_file: Path = Field(default=Path("task.toml"), exclude=True)

    @model_validator(mode="after")
    def _levels_consistent(self) -> Task:
        for level, probe in (("C1", self.probes.cpu), ("C3", self.probes.gpu),
                             ("C4", self.probes.ddp)):
            if probe is None and level not in self.not_applicable:
                raise ValueError(
                    f"no probe for {level}: add its probe or say why in "
                    f"[not_applicable] {level} = \"reason\""
                )
        return self

    @property
    def repo_path(self) -> Path | None:
        return (self.task_dir / self.repo.path).resolve() if self.repo.path else None

    @property
    def agents_dir(self) -> Path:
        return self.task_dir / "agents"


def find_task_file(ref: str | Path, tasks_root: Path | None = None) -> Path:
    """A task named by directory, by ``task.toml`` path, or by name under ``tasks/``."""
    try:
        p = Path(ref)
        candidates = [p / "task.toml" if p.is_dir() else p]
        if tasks_root is not None and not p.exists():
            candidates.append(tasks_root / str(ref) / "task.toml")
        for cand in candidates:
            if cand.is_file():
                return cand.resolve()
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte
        raise NotFoundError(f"No task file at {str(ref)[:200]!r}: {exc}.",
                            ref=str(ref)[:200], what="task") from None
    raise NotFoundError(
        f"No task file at {ref}.",
        hint="Name a task directory holding task.toml, or a task under tasks/.",
        ref=str(ref), what="task",
    )


def _read_task_text(path: Path) -> str:
    try:  # without blocking on a FIFO; a regular file only
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise TaskError(f"{path}: not a regular file; not a task file")
            data = fh.read(MAX_TASK_FILE_BYTES + 1)
    except OSError as exc:
        raise TaskError(f"{path}: cannot be read ({exc.strerror or exc})", path=path) from None
    if len(data) > MAX_TASK_FILE_BYTES:
        raise TaskError(f"{path}: over {MAX_TASK_FILE_BYTES} bytes; not a task file", path=path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TaskError(f"{path}:{line}: not UTF-8 (byte {exc.start})", path=path,
                        line=line) from None


def load_task(ref: str | Path, tasks_root: Path | None = None, *,
              require_repo: bool = True) -> Task:
    """Read and check a task file. ``require_repo=False`` for a task file copied away from
    its repository (an artifact's ``task.toml``): ``repo.path`` need not exist there."""
    path = find_task_file(ref, tasks_root)
    text = _read_task_text(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TaskError(f"{path}: not valid TOML: {exc}", path=path) from exc
    except RecursionError:
        raise TaskError(f"{path}: not a task file: tables or arrays nested too deeply",
                        path=path) from None
    try:
        task = Task.model_validate({**data, "task_dir": path.parent, "task_file": path})
    except ValidationError as exc:
        raise _validation_error(path, text, exc) from exc
    except RecursionError:
        raise TaskError(f"{path}: not a task file: values nested too deeply",
                        path=path) from None
    if require_repo:
        _check_repo_folder(task, path, text)
    return task


def _check_repo_folder(task: Task, path: Path, text: str) -> None:
    """``repo.path`` exists and, links followed, stays inside the task folder."""
    repo = task.repo_path
    if repo is None:
        return
    line = _locate(text, ("repo", "path"))

    def bad(what: object) -> TaskError:
        return TaskError(f"{path}:{line}: field `repo.path`: {what}", path=path,
                         field="repo.path", line=line)

    if not repo.is_relative_to(task.task_dir.resolve()):
        raise bad(f"{repo} is outside the task folder {task.task_dir.resolve()}")
    try:
        is_dir = repo.is_dir()
    except OSError as exc:  # a name too long for the file system
        raise bad(exc.strerror) from None
    if not is_dir:
        raise bad(f"{repo} is not a directory")


def _validation_error(path: Path, text: str, exc: ValidationError) -> TaskError:
    """One line per field at fault; the error's ``field`` and ``line`` are the first's."""
    found = _field_errors(path, text, exc)
    first_field, first_line = (found[0][0], found[0][1]) if found else (None, None)
    return TaskError("\n".join(msg for _f, _l, msg in found), path=path,
                     field=first_field, line=first_line)


def _field_errors(path: Path, text: str, exc: ValidationError) -> list[tuple[str, int, str]]:
    """(field, line, message line) per validation error."""
    lines = []
    for err in exc.errors():
        loc = tuple(
            str(p) for p in err["loc"]
            if not str(p).startswith("function-after") and str(p) != "[key]"
        )
        field = ".".join(loc) or "(file)"
        msg = err["msg"]
        if err["type"] == "missing":
            msg = "required field is missing"
            line = _locate(text, loc[:-1]) if len(loc) > 1 else 1
        else:
            line = _locate(text, loc)
        got = err.get("input")
        if err["type"] not in ("missing",) and not isinstance(got, dict):
            shown = repr(got)
            msg += f" (got {shown[:200]}{'…' if len(shown) > 200 else ''})"
        lines.append((field, line, f"{path}:{line}: field `{field}`: {msg}"))
    return lines


_HEADER = re.compile(r"^\s*\[\s*([A-Za-z0-9_.\-\" ]+?)\s*\]\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-\"]+)\s*=")


def _locate(text: str, loc: tuple[str, ...]) -> int:
    """Best line for a field path: its key line, else its table, else line 1."""
    if not loc:
        return 1
    best = 1
    table: tuple[str, ...] = ()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0] if "=" not in raw else raw
        header = _HEADER.match(line)
        if header:
            table = tuple(part.strip().strip('"') for part in header.group(1).split("."))
            if loc[: len(table)] == table:
                best = number
                if table == loc:
                    return number
            continue
        key = _KEY.match(line)
        if key:
            path = (*table, key.group(1).strip('"'))
            if loc[: len(path)] == path:
                if path == loc:
                    return number
                best = number  # an inline table holding the field
                rest = loc[len(path):]
                if rest and re.search(rf"\b{re.escape(rest[0])}\s*=", raw):
                    return number
    return best


def discover_tasks(root: Path) -> list[Path]:
    """Every task directory under ``root`` (sorted)."""
    return sorted(p.parent for p in root.glob("*/task.toml"))


# ------------------------------------------------------------------ synth task check
@dataclass(frozen=True)
class TaskCheck:
    """One path of ``synth task check``: ``ok`` None when it is not a task (skipped)."""

    path: str
    ok: bool | None
    name: str | None = None
    error: str | None = None
    skipped: str | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"path": self.path, "ok": self.ok}
        for key in ("name", "error", "skipped"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


@dataclass(frozen=True)
class TaskCheckReport:
    """``synth task check``'s outcome: one result per path, in the order given."""

    results: tuple[TaskCheck, ...]

    @property
    def ok(self) -> bool:
        return not any(r.ok is False for r in self.results)

    def to_json(self) -> dict[str, object]:
        return {"ok": self.ok, "tasks": [r.to_json() for r in self.results]}


def check_tasks(paths: list[Path]) -> TaskCheckReport:
    """Load each task file; a path that is not a task is skipped, and none at all is an
    error."""
    results = []
    for p in paths:
        if not is_task_path(p):
            results.append(TaskCheck(str(p), None, skipped="not a task: no task.toml"))
            continue
        try:
            results.append(TaskCheck(str(p), True, name=load_task(p).name))
        except SynthError as exc:
            results.append(TaskCheck(str(p), False, error=exc.message))
    if not any(r.ok is not None for r in results):
        raise UsageError(f"No task among {', '.join(str(p) for p in paths)}.",
                         hint="Name task directories (holding task.toml) or task.toml files.")
    return TaskCheckReport(tuple(results))


def is_task_path(p: Path) -> bool:
    """A task directory or a .toml file; what else a glob like tasks/* matches is skipped.
    A path that does not exist is kept, so that loading it says so."""
    if p.is_dir():
        return (p / "task.toml").is_file()
    return not p.exists() or p.suffix == ".toml"
