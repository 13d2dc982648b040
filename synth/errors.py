"""One error hierarchy for synth, caught once at the CLI edge.

Each kind has its own exit code so scripts can tell failures apart, and a hint that says
what to do about it. Library code raises these; it never calls ``sys.exit``.
"""

from __future__ import annotations

from os import PathLike
from typing import ClassVar


class SynthError(Exception):
    """Base of every error synth reports to a user.

    Besides the message (for people) and the hint, each kind carries typed fields a caller
    can use without reading the message (:attr:`FIELDS`: a task error's ``path``, ``field``
    and ``line``, an engine error's ``engine`` and ``operation``, ...); a field that the
    raising site did not know is None. ``--json`` prints them in the error envelope."""

    exit_code = 10
    default_hint: str | None = None
    #: The names of this kind's typed fields, in the order the ``--json`` envelope lists them.
    FIELDS: ClassVar[tuple[str, ...]] = ()

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint if hint is not None else self.default_hint

    def __str__(self) -> str:
        return self.message

    def fields(self) -> dict[str, object]:
        """The kind's fields by name (None where unknown), for the ``--json`` envelope."""
        return {name: getattr(self, name) for name in self.FIELDS}


def _text(value: str | PathLike[str] | None) -> str | None:
    return None if value is None else str(value)


class UsageError(SynthError):
    """The command line asks for something that cannot be done as asked."""

    exit_code = 11
    FIELDS = ("option",)

    def __init__(self, message: str, *, hint: str | None = None,
                 option: str | None = None) -> None:
        super().__init__(message, hint=hint)
        #: The command-line option at fault (``--include``), when one is.
        self.option = option


class TaskError(SynthError):
    """A task file is malformed; the message names the file, the field and the line."""

    exit_code = 12
    FIELDS = ("path", "field", "line")

    def __init__(self, message: str, *, hint: str | None = None,
                 path: str | PathLike[str] | None = None, field: str | None = None,
                 line: int | None = None) -> None:
        super().__init__(message, hint=hint)
        #: The task file; the field (dotted, ``repo.path``) and the line (1-based) at fault.
        self.path = _text(path)
        self.field = field
        self.line = line


class EngineUnavailableError(SynthError):
    """No container engine answers."""

    exit_code = 13
    default_hint = (
        "Start the Docker engine: `systemctl start docker`, or as root without systemd "
        "`nohup dockerd >/var/log/dockerd.log 2>&1 &`. Install it on Debian with "
        "`apt-get install docker.io`. Set DOCKER_HOST if the engine listens elsewhere."
    )
    FIELDS = ("engine",)

    def __init__(self, message: str, *, hint: str | None = None,
                 engine: str | None = None) -> None:
        super().__init__(message, hint=hint)
        #: Where the engine was looked for (``DOCKER_HOST``).
        self.engine = engine


class EngineError(SynthError):
    """The engine answered but an operation failed."""

    exit_code = 14
    FIELDS = ("engine", "operation")

    def __init__(self, message: str, *, hint: str | None = None, engine: str | None = None,
                 operation: str | None = None) -> None:
        super().__init__(message, hint=hint)
        #: The engine (its address) and the operation that failed (``create``, ``exec``,
        #: ``commit``...).
        self.engine = engine
        self.operation = operation


class BuildError(SynthError):
    """An image build failed; the message ends with the tail of the build log."""

    exit_code = 15
    FIELDS = ("image", "log")

    def __init__(self, message: str, *, hint: str | None = None, image: str | None = None,
                 log: str | PathLike[str] | None = None) -> None:
        super().__init__(message, hint=hint)
        #: The tag being built, and the file holding the whole build log.
        self.image = image
        self.log = _text(log)


class BaseImageError(SynthError):
    """A base image is missing and cannot be made."""

    exit_code = 16
    FIELDS = ("image",)

    def __init__(self, message: str, *, hint: str | None = None,
                 image: str | None = None) -> None:
        super().__init__(message, hint=hint)
        #: The base image's reference.
        self.image = image


class RunError(SynthError):
    """An agent session could not be started or recorded."""

    exit_code = 17
    FIELDS = ("run_dir",)

    def __init__(self, message: str, *, hint: str | None = None,
                 run_dir: str | PathLike[str] | None = None) -> None:
        super().__init__(message, hint=hint)
        #: The run's directory, when it was made.
        self.run_dir = _text(run_dir)


class ExportError(SynthError):
    """A run cannot be distilled into an artifact."""

    exit_code = 18
    FIELDS = ("path",)

    def __init__(self, message: str, *, hint: str | None = None,
                 path: str | PathLike[str] | None = None) -> None:
        super().__init__(message, hint=hint)
        #: The run, the destination or the container path the refusal is about.
        self.path = _text(path)


class LockError(SynthError):
    """Pinned packages could not be locked with hashes."""

    exit_code = 19
    default_hint = "Check that the package index is reachable (and --ca-bundle behind a proxy)."
    FIELDS = ("lock_file",)

    def __init__(self, message: str, *, hint: str | None = None,
                 lock_file: str | None = None) -> None:
        super().__init__(message, hint=hint)
        #: The lock being made (``requirements.lock``...).
        self.lock_file = lock_file


class VerifyError(SynthError):
    """Verification could not be carried out (not: a level failed)."""

    exit_code = 20
    FIELDS = ("path",)

    def __init__(self, message: str, *, hint: str | None = None,
                 path: str | PathLike[str] | None = None) -> None:
        super().__init__(message, hint=hint)
        #: The file or folder at fault (a run's state, an artifact's manifest), when one is.
        #: (A level that fails is no error: verify.json names it, and the exit code is 1.)
        self.path = _text(path)


class NotFoundError(SynthError):
    """A run, artifact, task or image named on the command line does not exist."""

    exit_code = 21
    FIELDS = ("ref", "what")

    def __init__(self, message: str, *, hint: str | None = None, ref: str | None = None,
                 what: str | None = None) -> None:
        super().__init__(message, hint=hint)
        #: What the command line named, and what it was taken for (``run``, ``artifact``,
        #: ``task``, ``image``).
        self.ref = ref
        self.what = what


class GpuRuntimeUnavailableError(EngineError):
    """The engine cannot give containers a GPU."""

    exit_code = 22
    default_hint = (
        "Install the NVIDIA Container Toolkit and register its runtime "
        "(`nvidia-ctk runtime configure --runtime=docker`), or verify on the GPU host "
        "itself with `--runtime host --python PATH`."
    )


class InputFileError(SynthError):
    """A run or artifact file is missing, oversized, malformed or of a newer format.

    Missing, unreadable, oversized, not UTF-8, not JSON, not in its schema or of a newer
    format: the message names the file (and the line of a JSONL file) and what is wrong.
    Raised by :mod:`synth.formats.store` (and the few readers of an artifact's files)."""

    exit_code = 23
    default_hint = "Check the file against docs/formats.md; synth never repairs or guesses."
    FIELDS = ("path", "line")

    def __init__(self, message: str, *, hint: str | None = None,
                 path: str | PathLike[str] | None = None, line: int | None = None) -> None:
        super().__init__(message, hint=hint)
        #: The file, and the line (1-based) of a JSONL file's bad record.
        self.path = _text(path)
        self.line = line


class DiskFullError(SynthError):
    """A file system synth writes to is full; the message names it and what to free.

    ``path`` is the file being written, ``mount`` the mount point of its file system (the
    engine's data root for a build or a commit), ``needed`` the bytes it needed where known
    and ``free`` the bytes it had where measured."""

    exit_code = 24
    default_hint = (
        "Free space: `synth gc --images --dry-run` lists the images synth can remove (then "
        "without --dry-run), `docker system df` shows what the engine holds; or set "
        "SYNTH_ARTIFACTS to a folder on another file system."
    )

    def __init__(self, message: str, *, path: str | None = None, mount: str | None = None,
                 needed: int | None = None, free: int | None = None,
                 hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.path = path
        self.mount = mount
        self.needed = needed
        self.free = free


# ------------------------------------------------------------------- exit codes
#: Exit codes that report an outcome rather than a SynthError (each kind above has its own).
EXIT_OK = 0
#: A negative answer: `diff` found a difference, `verify` a failing level, `doctor` a failing
#: check. (An invalid task file in `task check` exits with TaskError's code.)
EXIT_NEGATIVE = 1
#: The command line does not parse (click), or `diff` could not compare.
EXIT_USAGE = 2
#: `synth run`: the agent exited non-zero (the run is recorded all the same).
EXIT_AGENT_FAILED = 3
#: `synth run`: the agent was killed at --timeout (the run is recorded all the same).
EXIT_AGENT_TIMEOUT = 4
#: Ctrl-C or SIGTERM; containers were removed.
EXIT_INTERRUPTED = 130

_OUTCOMES: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "success; diff: equal"),
    (EXIT_NEGATIVE, "diff: the sides differ; verify: a level up to --require fails; "
     "doctor: a check fails"),
    (EXIT_USAGE, "the command line does not parse; diff: could not compare"),
    (EXIT_AGENT_FAILED, "run: the agent exited non-zero (the run is recorded)"),
    (EXIT_AGENT_TIMEOUT, "run: the agent was killed at --timeout (the run is recorded)"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C, SIGTERM); containers were removed"),
)


def error_kinds() -> list[type[SynthError]]:
    """Every SynthError kind, ordered by exit code."""
    found: list[type[SynthError]] = []
    todo: list[type[SynthError]] = [SynthError]
    while todo:
        kind = todo.pop()
        found.append(kind)
        todo.extend(kind.__subclasses__())
    return sorted(set(found), key=lambda k: k.exit_code)


def exit_codes() -> list[tuple[int, str]]:
    """Every exit code synth uses and what it means, in order (``--help``, README)."""
    errors = [(k.exit_code, f"{k.__name__}: {(k.__doc__ or '').strip().splitlines()[0]}")
              for k in error_kinds()]
    return sorted([*_OUTCOMES, *errors])
