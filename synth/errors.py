"""One error hierarchy for synth, caught once at the CLI edge.

Each kind has its own exit code so scripts can tell failures apart, and a hint that says
what to do about it. Library code raises these; it never calls ``sys.exit``.
"""

from __future__ import annotations


class SynthError(Exception):
    """Base of every error synth reports to a user."""

    exit_code = 10
    default_hint: str | None = None

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint if hint is not None else self.default_hint

    def __str__(self) -> str:
        return self.message


class UsageError(SynthError):
    """The command line asks for something that cannot be done as asked."""

    exit_code = 11


class TaskError(SynthError):
    """A task file is malformed; the message names the file, the field and the line."""

    exit_code = 12


class EngineUnavailableError(SynthError):
    """No container engine answers."""

    exit_code = 13
    default_hint = (
        "Start the Docker engine: `systemctl start docker`, or as root without systemd "
        "`nohup dockerd >/var/log/dockerd.log 2>&1 &`. Install it on Debian with "
        "`apt-get install docker.io`. Set DOCKER_HOST if the engine listens elsewhere."
    )


class EngineError(SynthError):
    """The engine answered but an operation failed."""

    exit_code = 14


class BuildError(SynthError):
    """An image build failed; the message ends with the tail of the build log."""

    exit_code = 15


class BaseImageError(SynthError):
    """A base image is missing and cannot be made."""

    exit_code = 16


class RunError(SynthError):
    """An agent session could not be started or recorded."""

    exit_code = 17


class ExportError(SynthError):
    """A run cannot be distilled into an artifact."""

    exit_code = 18


class LockError(SynthError):
    """Pinned packages could not be locked with hashes."""

    exit_code = 19
    default_hint = "Check that the package index is reachable (and --ca-bundle behind a proxy)."


class VerifyError(SynthError):
    """Verification could not be carried out (not: a level failed)."""

    exit_code = 20


class NotFoundError(SynthError):
    """A run, artifact, task or image named on the command line does not exist."""

    exit_code = 21


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
    Raised only by :mod:`synth.formats.store`."""

    exit_code = 23
    default_hint = "Check the file against docs/formats.md; synth never repairs or guesses."


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
